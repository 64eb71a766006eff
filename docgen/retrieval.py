"""Retrieval on SciFact and NFCorpus: each grid's and recipe's tables from their ledgers, what there is
for a filter to catch, the retrieval benchmark, and each dataset's answer (the guide's and the decision
page's)."""

from __future__ import annotations

from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.specs import scifact
from qt_hard.experiments.specs.nfcorpus import steps_per_epoch

from docgen.markdown import captioned, measured_on
from docgen.pages import table
from docgen.results import grid_tables, read_jsonl


def _cell_hours(records: list[dict], fields=("wall_s",)) -> float:
    return sum(float(r.get(f) or 0.0) for r in records for f in fields) / 3600


def _grid_block(
    root: Path, name: str, table: str, missing: str, caption: str, hours=("wall_s",), folder="results/scifact"
) -> str:
    """Experiment ``name``'s table file ``table`` from its ledger in ``folder``, captioned with the
    ledger's file, its machines and its hours of cell time; ``missing`` while the ledger has no records."""
    tables, records = grid_tables(root, name, folder)
    if not records or table not in tables:
        return missing
    machines = ", ".join(sorted({r["machine"] for r in records}))
    runs = f"{len(records)} run" + ("" if len(records) == 1 else "s")
    return tables[table] + "\n\n" + caption.format(runs=runs, machines=machines, hours=_cell_hours(records, hours))


@table("scifact", spread=False)
def _scifact(root: Path) -> str:
    """The SciFact retrieval comparison from ``results/scifact``: the recipe chosen on dev, each row's
    dev and test metrics over seeds, the guard audit, and the paired verdicts against both baselines."""
    return _grid_block(
        root,
        "scifact",
        "table.md",
        "Not measured yet: the recipe and the grid run with the commands above.",
        "`results/scifact/results.jsonl`: {runs} on {machines}, one torch thread a process, "
        "{hours:.1f} hours of cell time in all.",
    )


@table("scifact-recipe", spread=False)
def _scifact_recipe(root: Path) -> str:
    """The recipe choice on dev (``results/scifact/recipe.jsonl``): dev nDCG@10 of MNRL, seed 0, at each
    learning rate and step count tried, and the choice."""
    return _grid_block(
        root,
        "scifact-recipe",
        "recipe.md",
        "Not measured yet: `qt-hard grid run scifact-recipe` above chooses it.",
        "`results/scifact/recipe.jsonl`: MNRL, seed 0, on {machines}, one torch thread, "
        "{hours:.1f} hours of training and evaluation in all.",
        hours=("train_s", "eval_s"),
    )


NFCORPUS = "results/nfcorpus"


@table("nfcorpus", spread=False)
def _nfcorpus(root: Path) -> str:
    """The NFCorpus comparison from ``results/nfcorpus`` (SciFact's tables on NFCorpus); "being measured"
    while its ledger has no records."""
    return _grid_block(
        root,
        "nfcorpus",
        "table.md",
        f"Being measured: `{NFCORPUS}/results.jsonl` has no records yet, so this page shows no NFCorpus numbers.",
        f"`{NFCORPUS}/results.jsonl`: {{runs}} on {{machines}}, one torch thread a process, "
        "{hours:.1f} hours of cell time in all.",
        folder=NFCORPUS,
    )


@table("nfcorpus-recipe", spread=False)
def _nfcorpus_recipe(root: Path) -> str:
    """The NFCorpus recipe choice on dev (``results/nfcorpus/recipe.jsonl``); "being measured" before it."""
    return _grid_block(
        root,
        "nfcorpus-recipe",
        "recipe.md",
        f"Being measured: `{NFCORPUS}/recipe.jsonl` has no records yet (`qt-hard grid run nfcorpus-recipe` "
        "chooses the recipe on dev).",
        f"`{NFCORPUS}/recipe.jsonl`: MNRL, seed 0, on {{machines}}, one or two torch threads (the commands "
        f"in `{NFCORPUS}/README.md`), {{hours:.1f}} hours of training and evaluation in all.",
        hours=("train_s", "eval_s"),
        folder=NFCORPUS,
    )


IN_BATCH = "results/in_batch_relevance.jsonl"


@table("in-batch-relevance", spread=False)
def _in_batch_relevance(root: Path) -> str:
    """What there is for a false-negative filter to catch on each dataset, before any filter: the newest
    run of ``results/in_batch_relevance.jsonl`` per (dataset, steps), the share of MNRL's in-batch
    candidates judged relevant to the anchor's query and the share of anchors with at least one."""
    path = root / IN_BATCH
    rows = read_jsonl(path) if path.is_file() else []
    if not rows:
        return f"Not measured yet: `python scripts/in_batch_relevance.py --output {IN_BATCH}` measures it."
    newest: dict = {}
    for r in rows:
        newest.setdefault((r["dataset"], r["steps"]), {})[r["seed"]] = r  # later lines replace earlier ones
    body = []
    for (name, steps), by_seed in sorted(newest.items(), key=lambda kv: (kv[0][0] != "scifact", kv[0][1])):
        runs = list(by_seed.values())
        frac = sum(r["relevant_frac"] for r in runs) / len(runs)
        anchors = sum(r["anchors_with_relevant_frac"] for r in runs) / len(runs)
        seeds = ",".join(str(s) for s in sorted(by_seed))
        body.append(
            [name, str(runs[0]["batch_size"]), str(steps), seeds, f"{100 * frac:.3f}%", f"{100 * anchors:.1f}%"]
        )
    r = rows[-1]
    return captioned(
        f"Over every batch a run of that many steps trains on (mean over the seeds; no model is run): "
        f"`{r['command']}` and its earlier runs in `{IN_BATCH}`, on {r['machine']}"
        + (f", {r['wall_s']:.0f} s wall for the newest." if "wall_s" in r else "."),
        ["dataset", "batch", "steps", "seeds", "candidates relevant to the anchor's query", "anchors with one"],
        body,
        "lrrlrr",
    )


DEBIASED_FLOOR = "results/debiased_floor.jsonl"


@table("debiased-floor", spread=False)
def _debiased_floor(root: Path) -> str:
    """Where the debiased estimator's floor binds under the starting model: the newest run of
    ``results/debiased_floor.jsonl``, per dataset and row, the mean share of anchors on the floor over
    the batches measured, and the least and most of one batch."""
    path = root / DEBIASED_FLOOR
    rows = read_jsonl(path) if path.is_file() else []
    if not rows:
        return f"Not measured yet: `python scripts/debiased_floor.py --output {DEBIASED_FLOOR}` measures it."
    newest = [r for r in rows if r["utc"] == rows[-1]["utc"]]
    body = [
        [
            r["dataset"],
            f"`{r['row']}`",
            r["floor"],
            f"{r['tau_plus']:g}",
            f"{100 * r['floor_binds_frac']:.1f}%",
            f"{100 * r['floor_binds_min']:.0f}-{100 * r['floor_binds_max']:.0f}%",
        ]
        for r in newest
    ]
    r = newest[0]
    return captioned(
        f"The starting model on the first {r['batches']} training batches of {r['batch_size']} of seed {r['seed']}, "
        f"scale {r['scale']:g}: `{r['command']}` on {r['machine']}, commit {r['commit']}, {r['wall_s']:.0f} s wall.",
        ["dataset", "row", "floor", "tau+", "anchors on the floor", "one batch, least-most"],
        body,
        "llllrr",
    )


@table("retrieval_bench", spread=False)
def _retrieval_bench(root: Path) -> str:
    """qt-hard's retrieval evaluation beside InformationRetrievalEvaluator: every run of
    ``results/bench_retrieval.jsonl`` (a run's rows share one ``utc``), newest last."""
    path = root / "results" / "bench_retrieval.jsonl"
    rows = read_jsonl(path) if path.is_file() else []
    if not rows:
        return "No measurement yet: run the command above."
    runs: dict[str, list] = {}
    for r in rows:
        runs.setdefault(r["utc"], []).append(r)
    body = []
    for run in runs.values():
        r = run[0]
        corpus = "whole corpus" if r["docs"] == "all" else f"first {r['docs']} documents + the judged"
        for x in run:
            body.append(
                [
                    f"`{x['case']}`",
                    corpus,
                    f"{x['ndcg@10']:.2f}",
                    f"{x['seconds_median']:.1f} ({len(x['seconds'])} round(s))",
                    f"{x['ratio']:.3f} of {x['ratio_of']}",
                    measured_on(x),
                ]
            )
    r = rows[-1]
    return captioned(
        f"SciFact test; the sides alternate and each time is the median of its rounds; `{r['command']}` (with "
        f"`--docs` and `--reps` as the rows say) on {r['machine']}, torch {r['torch']}, threads pinned.",
        ["side", "corpus", "nDCG@10", "seconds", "time ratio", "date, commit, threads, load"],
        body,
        "llrrll",
    )


# dataset -> (title, whether false negatives are rare there: a SciFact claim cites about one abstract)
DATASETS = {"scifact": ("SciFact", True), "nfcorpus": ("NFCorpus", False)}
# where each dataset's comparison table stands (the retrieval guide's headings)
TABLES = {
    "scifact": "guides/retrieval.md#scifact-the-rows-the-verdicts-and-the-guard-audit",
    "nfcorpus": "guides/retrieval.md#nfcorpus-the-rows-the-verdicts-and-the-guard-audit",
}
NAMES = {"ndcg@10": "nDCG@10", "recall@100": "Recall@100"}
METRICS = ("ndcg@10", "recall@100")


def comparison_records(root: Path, name: str) -> tuple[dict[str, list[dict]], list[dict], dict]:
    """``results/<name>/results.jsonl``, read once: row -> its latest records (the starting model left
    out, rows in the table's order), the starting model's records, and the ledger's setup line."""
    folder = root / "results" / name
    if not (folder / "results.jsonl").is_file():
        return {}, [], {}
    ledger = Ledger(folder, scifact.KEY)
    grouped: dict = {}
    for r in ledger.latest():
        grouped.setdefault(r["row"], []).append(r)
    order = [*scifact.DEFAULT_ROWS, *sorted(set(grouped) - set(scifact.DEFAULT_ROWS) - {"before"})]
    return {row: grouped[row] for row in order if row in grouped}, grouped.get("before", []), ledger.setup or {}


def dataset_answer(root: Path, name: str) -> dict | None:
    """The row chosen on dev on dataset ``name`` against MNRL itself, at two levels, Holm over the
    candidates (:func:`qt_hard.experiments.report.choose_retrieval_row`), with its test nDCG@10 and
    Recall@100 against MNRL, the recipe and MNRL on test, and the rows still under 3 seeds ("" once the grid
    is complete): ``{"row", "use", "evidence", "waiting"}``. None while
    there is nothing to choose from: no MNRL, no row beside it, or a record without per-query scores
    (its table says which)."""
    by, before, setup = comparison_records(root, name)
    if "mnrl" not in by or len(by) < 2 or any("per_query" not in r for rs in by.values() for r in rs):
        return None
    c = report.choose_retrieval_row(by, "mnrl", [r for r in by if r != "mnrl"])
    context = f"{_recipe_words(setup)}; {_mnrl_on_test(by['mnrl'], before)}"
    # a row is judged from 3 seeds on (report.MIN_PAIRS); one with fewer is still being measured
    missing = [r for r in scifact.DEFAULT_ROWS if len({x["seed"] for x in by.get(r, ())}) < report.MIN_PAIRS]
    rows = len(scifact.DEFAULT_ROWS) - 1  # beside MNRL
    so_far = f" (so far {rows - len(set(missing) - {'mnrl'})} of the grid's {rows} rows judged)" if missing else ""
    context += _test_moves(by)
    # an answer over part of the grid says which rows it waits for (the guide lists them; the decision
    # page, one screen for every setting, gives only the count in "use")
    waiting = f"Under {report.MIN_PAIRS} seeds yet: " + ", ".join(f"`{r}`" for r in missing) if missing else ""
    if c.row == "mnrl":
        use = f"MNRL: no row better on dev{so_far}"
        return {"row": "mnrl", "use": use, "evidence": f"{c.why} {context}", "waiting": waiting}
    test = {m: report.two_level_family({c.row: (by["mnrl"], by[c.row])}, "test", m)[c.row] for m in METRICS}
    return {
        "row": c.row,
        "use": f"`{c.row}`, better than MNRL on dev{so_far}",
        "evidence": f"dev {c.verdicts[c.row].cell()}; test "
        + ", ".join(f"{NAMES[m]} {v.cell()} **{v.verdict}**" for m, v in test.items())
        + f". {context}",
        "waiting": waiting,
    }


def _test_verdicts(by: dict[str, list[dict]]) -> dict[tuple[str, str], object]:
    """``{(row, metric): TwoLevelVerdict}``: every row against MNRL itself on test nDCG@10 and Recall@100,
    Holm over the judged rows per metric, as the dev choice is made."""
    rows = {r: (by["mnrl"], by[r]) for r in by if r != "mnrl"}
    return {(row, m): v for m in METRICS for row, v in report.two_level_family(rows, "test", m).items()}


def _test_moves(by: dict[str, list[dict]]) -> str:
    """The rows whose test nDCG@10 or Recall@100 moved against MNRL itself (better or worse at both
    levels, :func:`_test_verdicts`): the gains and costs a user trades against the default, whatever else
    the row changes (its one-change effect is in its table); "" when none moved."""
    moved = [
        f"`{row}` {NAMES[m]} {v.cell()} **{v.verdict}**"
        for (row, m), v in _test_verdicts(by).items()
        if v.verdict in ("better", "worse")
    ]
    return f". Against MNRL on test: {'; '.join(moved)}" if moved else ""


def disagreements(root: Path, each: list, agree: bool | None) -> list[str]:
    """Where the two datasets' answers differ, once both grids are complete: the row each chooses on dev
    (when they differ), then each row both grids ran whose test nDCG@10 or Recall@100 against MNRL is
    better or worse on one dataset and not the same on the other (each dataset's verdicts as its answer
    gives them; ``each`` and ``agree``: :func:`answers`, already read by the caller). [] while a grid is
    incomplete or where they agree throughout."""
    if agree is None:
        return []
    out = []
    if not agree:
        out.append(", ".join(f"{title} chooses `{a['row']}`" for _, title, _, a in each))
    verdicts = {name: _test_verdicts(comparison_records(root, name)[0]) for name, *_ in each}
    titles = {name: title for name, title, *_ in each}
    (a_name, a), (b_name, b) = verdicts.items()
    for key in (k for k in a if k in b):
        va, vb = a[key].verdict, b[key].verdict
        if va != vb and {va, vb} & {"better", "worse"}:
            row, m = key
            out.append(f"`{row}` {NAMES[m]} on test: {va} on {titles[a_name]}, {vb} on {titles[b_name]}")
    return out


def _recipe_words(setup: dict) -> str:
    """The recipe a comparison ran at (its ledger's setup line), its steps in epochs of the training data
    (every training query, or pair, once: :func:`qt_hard.experiments.specs.nfcorpus.steps_per_epoch`)."""
    r, data = setup["recipe"], setup["data"]
    per = steps_per_epoch(data.get("training_queries") or data["training_pairs"], r["batch_size"])
    return (
        f"Recipe (chosen on dev): lr {r['lr']:g}, {r['steps']} steps of {r['batch_size']} ({r['steps'] / per:g} epochs)"
    )


def _mnrl_on_test(mnrl: list[dict], before: list[dict]) -> str:
    """MNRL's mean test nDCG@10 and Recall@100 over its seeds, beside the starting model's."""
    mean = {m: sum(r[f"test_{m}"] for r in mnrl) / len(mnrl) for m in METRICS}
    words = ", ".join(f"{NAMES[m]} {mean[m]:.2f}" for m in METRICS)
    start = ", ".join(f"{before[0]['test_' + m]:.2f}" for m in METRICS) if before else ""
    start = f" (the starting model: {start})" if start else ""
    return f"MNRL on test, {len(mnrl)} seeds: {words}{start}"


def answers(root: Path) -> tuple[list[tuple[str, str, str, dict | None]], bool | None]:
    """(dataset, title, how common false negatives are there, :func:`dataset_answer`) per dataset, and
    whether the datasets choose the same row (None until each grid is complete: two partial answers that
    both keep MNRL agree only on what is not yet judged)."""
    out = []
    for name, (title, rare) in DATASETS.items():
        out.append(
            (name, title, "false negatives rare" if rare else "false negatives common", dataset_answer(root, name))
        )
    chosen = {a["row"] for *_, a in out if a is not None}
    return out, (len(chosen) == 1 if all(a is not None and not a["waiting"] for *_, a in out) else None)


@table("retrieval-answer", spread=False)
def _retrieval_answer(root: Path) -> str:
    """Per dataset, the row chosen on dev against MNRL itself and its test effects (:func:`dataset_answer`),
    or "being measured"; then whether the two datasets agree."""
    each, agree = answers(root)
    lines = [
        f"* **{title}** ({few}): "
        + (
            f"{a['use']}. {a['evidence']}" + (f". {a['waiting']}" if a["waiting"] else "")
            if a
            else f"being measured (`results/{name}/`: its table below says what is in)."
        )
        for name, title, few, a in each
    ]
    if agree is not None:
        differ = disagreements(root, each, agree)
        if not differ:
            lines += ["", "The two datasets agree: the same choice, and the same verdicts against MNRL on test."]
        else:
            head = "The two datasets agree on the choice" if agree else "The two datasets disagree"
            lines += ["", f"{head}; where they differ: " + "; ".join(differ) + "."]
    elif all(a is not None for *_, a in each):
        lines += ["", "Whether the two datasets agree is said once both grids are complete."]
    return "\n".join(lines)
