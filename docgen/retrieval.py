"""Retrieval on SciFact: the grid's and the recipe's tables from their ledger, the retrieval
benchmark, and the decision page's answer."""

from __future__ import annotations

from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.specs import scifact

from docgen.markdown import captioned, measured_on
from docgen.pages import table
from docgen.results import grid_tables, latest_records, read_jsonl


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


SCIFACT_LEDGER = "results/scifact/results.jsonl"


@table("scifact-answer", spread=False)
def _scifact_answer(root: Path) -> str:
    """Retrieval fine-tuning on SciFact: "not measured yet" until its ledger exists; then the row
    chosen on dev nDCG@10 (each row against MNRL on the same data) and its test nDCG@10 effect."""
    if not (root / SCIFACT_LEDGER).is_file():
        return f"Not measured yet: `{SCIFACT_LEDGER}` does not exist."
    recs, dev, test = scifact_runs(root)
    if scifact.BASELINES[0] not in dev:
        return f"Not measured yet: `{SCIFACT_LEDGER}` has no `{scifact.BASELINES[0]}` row."
    base_of = scifact.baseline_of
    judged = [r for r in dev if base_of(r) in dev and len(set(dev[r]) & set(dev[base_of(r)])) >= 3]
    if not judged:
        return (
            f"Not judged yet: no row has 3 seeds paired with its baseline in `{SCIFACT_LEDGER}` "
            f"({len(recs)} records; rows so far: {', '.join(f'`{r}`' for r in sorted(dev))})."
        )
    c = report.choose_on_dev(dev, base_of, scifact.BASELINES[0], "dev nDCG@10")
    said = f"Chosen on dev nDCG@10 (each row against MNRL on the same data): `{c.row}`"
    if c.verdict is None:
        said += f", no row is better than its baseline on dev ({len(recs)} records in `{SCIFACT_LEDGER}`)."
    else:
        base = base_of(c.row)
        t = report.paired_verdict(test.get(base, {}), test.get(c.row, {}))
        said += (
            f": against `{base}` on dev {c.verdict.cell()}, **{c.verdict.verdict}**; on test nDCG@10 "
            f"{t.cell()}, **{t.verdict}** (`{SCIFACT_LEDGER}`)."
        )
    return " ".join([said, *_mining_effect(dev, test), *_guards_acted(recs)])


def scifact_runs(root: Path) -> tuple[list[dict], dict, dict]:
    """The SciFact ledger's latest records, and its dev and test nDCG@10 as row -> seed -> value (the
    starting model left out); empty without the ledger."""
    recs = latest_records((root / SCIFACT_LEDGER).parent, scifact.KEY)

    def runs(metric):
        out: dict = {}
        for r in recs:
            if r.get(metric) is not None and r["row"] != "before":
                out.setdefault(r["row"], {})[r["seed"]] = float(r[metric])
        return out

    return recs, runs("dev_ndcg@10"), runs("test_ndcg@10")


def _mining_effect(dev: dict, test: dict) -> list[str]:
    """A sentence on the one change of the mined triplets: ``mnrl+mined`` against ``mnrl``, paired by seed."""
    pairs, mined = scifact.BASELINES
    if pairs not in dev or mined not in dev:
        return []
    d, t = (report.paired_verdict(m[pairs], m[mined]) for m in (dev, test))
    return [
        f"The mined triplets alone (`{mined}` against `{pairs}`, {d.n} seeds): dev {d.cell()}, **{d.verdict}**; "
        f"test {t.cell()}, **{t.verdict}**."
    ]


def _guards_acted(recs: list[dict]) -> list[str]:
    """A sentence on how much the guards removed: the range of the guarded rows' mean shares of the
    candidates, and of the removed that were cited abstracts of the same claim."""
    by: dict = {}
    unread = set()  # GISTEmbedLoss rows: sentence-transformers' own filter, which the audit does not read
    for r in recs:
        spec = scifact.ROWS[scifact.parse_row(r["row"])[0]].changes if r["row"] != "before" else {"kwargs": {}}
        if "guard" in spec["kwargs"] and r.get("guard_removed_frac") is not None:
            by.setdefault(r["row"], []).append(r)
        elif spec.get("loss") == "gist":
            unread.add(r["row"])
    if not by:
        return []
    removed = [100 * sum(r["guard_removed_frac"] for r in rs) / len(rs) for rs in by.values()]
    tps = [
        100 * sum(x) / len(x)
        for rs in by.values()
        if (x := [r["guard_removed_tp_frac"] for r in rs if r.get("guard_removed_tp_frac") is not None])
    ]
    tp = f" ({_span(tps, 0)}% of them cited abstracts of the same claim)" if tps else ""
    rows = "the audited guarded row" if len(by) == 1 else f"the {len(by)} audited guarded rows"
    said = f"The guards acted: {rows} removed {_span(removed, 2)}% of the candidates on average{tp}"
    if unread:  # said, so that the count above is not read as every guarded row
        said += (
            f"; {', '.join(f'`{r}`' for r in sorted(unread))} filters inside GISTEmbedLoss, which the audit does "
            "not read (its reproduction, GIST's filter alone, is among the audited)"
        )
    return [said + "."]


def _span(values: list[float], digits: int) -> str:
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return low if low == high else f"{low}-{high}"
