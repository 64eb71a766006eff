"""The benchmarks' tables: the losses' and the guard's cost, the evaluation solver, training speed,
the similarity suite, CI timing, augmentation, encoding, and the Wiki-50 smoke models."""

from __future__ import annotations

import statistics
from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.specs import qt_table

from docgen.markdown import captioned, join_lines, measured_on, span
from docgen.pages import table
from docgen.results import latest_records, read_jsonl


LOSS_BENCH = "results/bench_losses_cpu.jsonl"
GUARD_BENCH = "results/bench_guard.jsonl"


def loss_ratio(root: Path, strategy: str, k, B: int) -> str:
    """The loss-cost ratio of a row as it trained: ``strategy`` at ``k`` and batch size ``B`` from the
    loss benchmark's rows; "-" where no benchmark row matches the row's strategy, k and batch size."""
    path = root / LOSS_BENCH
    rows = read_jsonl(path) if path.is_file() else []
    rows = [r for r in rows if r["strategy"] == strategy and str(r["k"]) == str(k) and r["B"] == B]
    return f"x{rows[-1]['ratio']:.2f}" if rows else "-"


# The loss benchmark ran beside other work: what that means for its ratios.
LOAD_NOTE = (
    "It ran beside other work, at a 1-minute load average of {load} on the 2 cores when it started: a ratio "
    "below 1 (a strategy that does the baseline's work and more, timed as faster) is that load's noise, and "
    "differences of that size between strategies are too."
)


def loss_bench_load(root: Path) -> str:
    """The 1-minute load average when the loss benchmark's first row started."""
    return f"{read_jsonl(root / LOSS_BENCH)[0]['load_average'][0]:.1f}"


@table("loss_cost", spread=False)
def _loss_cost(root: Path) -> str:
    """Each strategy's loss over plain InfoNCE (forward + backward), per batch size and k."""
    rows = read_jsonl(root / LOSS_BENCH)
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    keys = list(dict.fromkeys((r["B"], str(r["k"])) for r in rows))
    body = []
    for B, k in keys:
        mine = {r["strategy"]: r for r in rows if (r["B"], str(r["k"])) == (B, k)}
        base = statistics.median(r["baseline_s"] for r in mine.values())
        body.append([str(B), k, f"{base:.4f}", *(f"{mine[s]['ratio']:.2f}" if s in mine else "-" for s in strategies)])
        body[-1].append(f"{max(r['largest_tensor_vs_inputs'] for r in mine.values()):.1f}")
    r0 = rows[0]
    return join_lines(
        f"Ratio of each strategy's seconds per forward + backward to plain `F.cross_entropy` NT-Xent on the same (2B, "
        f"{r0['d']}) embeddings (baseline s: its median seconds), from `{LOSS_BENCH}`: {r0['device']}, torch "
        f"{r0['torch']}, {r0['threads']} thread(s), {r0['machine']}, commit {r0['commit']}, {r0['utc'][:10]}. "
        "Command: `python scripts/bench_losses.py infonce --batch-sizes 256,1024 --reps 5 --out results/bench_losses_cpu.jsonl`. "
        + LOAD_NOTE.format(load=loss_bench_load(root)),
        "",
        report.markdown_table(
            ["B", "k", "baseline s", *strategies, "largest tensor"], body, "lrr" + "r" * len(strategies) + "r"
        ),
    )


@table("guard_cost", spread=False)
def _guard_cost(root: Path) -> str:
    """The sentence-transformers plugin against MNRL, seconds per loss call, from the guard benchmark's
    newest run (the rows of the last commit measured)."""
    rows = read_jsonl(root / GUARD_BENCH)
    rows = [r for r in rows if (r["commit"], r["measured"]) == (rows[-1]["commit"], rows[-1]["measured"])]
    body = [
        [
            r["case"],
            "yes" if r["explicit_negatives"] else "no",
            f"{1000 * r['mnrl_s']:.2f}",
            f"{1000 * r['ours_s']:.2f}",
            f"{r['ratio']:.2f}",
            "-" if r["guard_removed_frac"] is None else f"{100 * r['guard_removed_frac']:.2f}%",
        ]
        for r in rows
    ]
    r0 = rows[0]
    head = ["case", "mined negative per pair", "MNRL ms", "ours ms", "ratio", "candidates the guard removed"]
    return join_lines(
        f"B = {r0['B']} pairs, d = {r0['d']}, forward + backward of the loss, from `{GUARD_BENCH}`: {r0['device']}, "
        f"torch {r0['torch']}, {r0['threads']} thread(s), commit {r0['commit']}, {r0['measured']}. Command: "
        f"`{r0['command']}`.",
        "",
        report.markdown_table(head, body, "llrrrr"),
    )


def _bench_eval(root: Path, features: str) -> str:
    """Fast solver against SentEval's reference, CPU seconds per task and width (the newest row of each)."""
    rows = [r for r in read_jsonl(root / "results" / "bench_eval.jsonl") if r["features"].split(":")[0] == features]
    last = {(r["width"], r["task"]): r for r in rows}
    body = []
    for width in sorted({w for w, _ in last}):
        cells, fast, ref, diffs, checked, n = [], 0.0, 0.0, [], 0, 0
        for task in qt_table.TASKS:
            r = last.get((width, task))
            if r is None:
                cells.append("-")
                continue
            n += 1
            fast, ref = fast + r["fast_cpu_seconds"], ref + r["reference_cpu_seconds"]
            ratio = r["reference_cpu_seconds"] / r["fast_cpu_seconds"]
            cells.append(f"{r['fast_cpu_seconds']:.0f} / {r['reference_cpu_seconds']:.0f} ({ratio:.1f}x)")
            if r.get("check"):
                checked += 1
                diffs.append(float(r["check"]["max_abs_diff_converged"]))
        check = f"{max(diffs):.2f}" if diffs else "-"
        if diffs and checked < n:
            check += f" ({checked} of {n} checked)"
        body.append([f"{width:,}", *cells, f"{fast:.0f} / {ref:.0f} ({ref / fast:.1f}x)", check])
    head = ["width", *qt_table.TASKS, "six tasks", "check: max abs diff"]
    return join_lines(
        "CPU seconds of the fast solver / of the reference (ratio), the newest row of each (width, task) in "
        "`results/bench_eval.jsonl`; check: the largest difference in points between the fast solver's held-out "
        "accuracy and converged lbfgs on the timed problems.",
        "",
        report.markdown_table(head, body),
    )


table("bench_eval_bigru", spread=False)(lambda root: _bench_eval(root, "bigru"))
table("bench_eval_hashbow", spread=False)(lambda root: _bench_eval(root, "hashbow"))


@table("bench_train_speed", spread=False)
def _bench_train_speed(root: Path) -> str:
    """The loop against a bare step, before and after, median over rounds of each (case, code)."""
    rows = read_jsonl(root / "results" / "bench_train_speed_cpu.jsonl")
    labels = {
        "bow_wiki": "bag of words, Wiki-50 pairs, B 256",
        "bow_books": "Quick-Thoughts bag of words, 8 books, B 400",
        "gru_books": "Quick-Thoughts GRU 64/128, 8 books, B 64",
    }
    summary = {(r["case"], r["code"]): r for r in rows if "ratio" in r}  # the script's headline row per run
    body = []
    for case in dict.fromkeys(r["case"] for r in rows):
        cells = []
        for code in ("before", "after"):
            r = summary[(case, code)]
            cells += [f"{r['loop_sentences_per_s']:,.0f} / {r['bare_sentences_per_s']:,.0f}", f"{r['ratio']:.2f}"]
        body.append([labels.get(case, case), *cells])
    head = ["case", "before: loop / bare (sentences/s)", "ratio", "after: loop / bare (sentences/s)", "ratio"]
    commits = sorted({f"{r.get('code')} {r['commit']}" for r in rows})
    return join_lines(
        "Median sentences/s over rounds; ratio: the median over rounds of each round's loop / bare (the script's "
        "headline row of each run). From "
        f"`results/bench_train_speed_cpu.jsonl` ({rows[0]['device']}, {rows[0]['threads']} thread; commits: "
        f"{', '.join(commits)}).",
        "",
        report.markdown_table(head, body, "lrrrr"),
    )


@table("bench_similarity", spread=False)
def _bench_similarity(root: Path) -> str:
    """Wall seconds of the similarity suite and of the six transfer tasks (encoding in brackets)."""
    labels = {"random:bow": "random 768-d bag of words", "minilm": "all-MiniLM-L6-v2"}
    body = []
    for r in read_jsonl(root / "results" / "bench_similarity.jsonl"):
        sim, tr = r["similarity"], r["transfer"]
        body.append(
            [
                labels.get(r["model"], r["model"]),
                f"{sim['seconds']:.1f} s ({sim['encode_seconds']:.1f} s)",
                f"{tr['seconds']:.1f} s ({tr['encode_seconds']:.1f} s)",
                " / ".join(
                    f"{x:.1f}"
                    # the after-load: older rows' own field, else the stamp's (taken after the run)
                    for x in (r.get("load_average_before") or [])[:1]
                    + (r.get("load_average_after") or [r.get("load_average_1min")])[:1]
                ),
                r.get("commit", ""),
            ]
        )
    head = ["model", "similarity suite", "six transfer tasks", "1-min load before / after", "commit"]
    return join_lines(
        "From `results/bench_similarity.jsonl`, one line per row:", "", report.markdown_table(head, body, "lrrrl")
    )


@table("ci_timing", spread=False)
def _ci_timing(root: Path) -> str:
    rows = read_jsonl(root / "results" / "ci_timing.jsonl")
    body = []
    for r in rows:
        body.append(
            [
                r["commit"],
                f"{r['pytest_q_s']:.0f} s ({r['pytest_q']})",
                f"{r['commands_marker_s']:.0f} s ({r['commands_marker']})",
                f"{r['ci_run_wall_s']:.0f} s",
            ]
        )
    head = ["commit", "`python -m pytest -q`", "`pytest -q -m commands -n 2 --dist loadgroup`", "`.ci/run` in all"]
    return join_lines(
        f"`bash .ci/run` on a clean clone, from `results/ci_timing.jsonl` ({rows[0]['machine']}):",
        "",
        report.markdown_table(head, body, "lrrr"),
    )


@table("bench_augment", spread=False)
def _bench_augment(root: Path) -> str:
    """Images/s of SimCLR's batch augmentation, ours against kornia's, one line per run of the script."""
    runs: dict[tuple, dict] = {}
    for r in read_jsonl(root / "results" / "bench_augment.jsonl"):
        runs.setdefault((r["utc"], r["commit"]), {})[r["impl"].split(" ")[0]] = r
    body = []
    for run in runs.values():
        ours, kornia = run["qt_hard"], run.get("kornia", {})
        other = kornia.get("images_per_s")
        body.append(
            [
                f"{ours['batch']} of {ours['size']}x{ours['size']}, {ours['device']}",
                f"{ours['images_per_s']:,.0f}",
                f"{other:,.0f} ({kornia['impl']})" if other else "not installed",
                f"{ours['images_per_s'] / other:.2f}x" if other else "",
                measured_on(ours),
            ]
        )
    head = ["batch", "ours, images/s", "kornia, images/s", "ours / kornia", "date, commit, threads, load"]
    return captioned(
        "Best of the repeats, one line per run of the script, from `results/bench_augment.jsonl` (machine: "
        f"{next(iter(runs.values()))['qt_hard']['machine']}).",
        head,
        body,
        "lrrrl",
    )


@table("bench_encode", spread=False)
def _bench_encode(root: Path) -> str:
    """Sentences/s of ``encode`` and of the evaluation's ``EmbeddingCache``, three repetitions a run."""
    rows = read_jsonl(root / "results" / "bench_encode.jsonl")
    body = [
        [
            f"`{r['model'] or r['config']}`, {r['dim']}-d, {r['n']:,} MR sentences",
            ", ".join(f"{x:,}" for x in r["encode_sent_s"]),
            ", ".join(f"{x:,}" for x in r["embedding_cache_sent_s"]),
            measured_on(r),
        ]
        for r in rows
    ]
    head = ["model", "`encode`, sentences/s", "`EmbeddingCache`, sentences/s", "date, commit, threads, load"]
    return captioned(
        f"Three repetitions each, from `results/bench_encode.jsonl` (machine: {rows[0]['machine']}); command "
        f"of the last row: `{rows[-1]['command']}`.",
        head,
        body,
        "lrrl",
    )


@table("wiki_smoke", spread=False)
def _wiki_smoke(root: Path) -> str:
    """The Wiki-50 smoke models and their controls: the table ``qt-hard grid run wiki-smoke --out results
    --summary-only`` writes (``results/wiki_smoke.md``), from each row's newest line of the ledger."""
    from qt_hard.experiments.specs import wiki_smoke

    records = latest_records(root / "results", wiki_smoke.WikiSmoke.key, "wiki_smoke.jsonl")
    return wiki_smoke.table(records, "results/wiki_smoke.jsonl", "qt-hard grid run wiki-smoke --out results")


@table("readme_test_time", spread=False)
def _readme_test_time(root: Path) -> str:
    """The README's sentence on how long its test command and ``.ci/run`` take: the span over the runs
    of ``results/ci_timing.jsonl``."""
    rows = read_jsonl(root / "results" / "ci_timing.jsonl")
    machines = ", ".join(sorted({r["machine"] for r in rows}))
    return (
        f"The default suite took {span([r['pytest_q_s'] for r in rows])}; `.ci/run` as a whole "
        f"{span([r['ci_run_wall_s'] for r in rows])}, of which the `commands` marker (every command of the README "
        f"and the pages, run small) {span([r['commands_marker_s'] for r in rows])} on both cores; over "
        f"{len(rows)} runs on {machines}, at commits {', '.join(r['commit'] for r in rows)} "
        "(`results/ci_timing.jsonl`).\n"
    )
