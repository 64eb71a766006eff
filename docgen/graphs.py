"""Graphs (``qt-hard grid run graph-table``): the tables of its CSV and of the controls' ledger,
and the paired differences."""

from __future__ import annotations

from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.specs import graph_table

from docgen.markdown import join_lines
from docgen.pages import table
from docgen.results import grid_tables, read_csv


def graph_records(root: Path, source: str) -> list[dict]:
    """``source``: a results folder of ``qt-hard grid run graph-table`` under results/ (its latest
    records) or a CSV of cells."""
    path = root / "results" / source
    return read_csv(path) if path.suffix == ".csv" else grid_tables(root, "graph-table", f"results/{source}")[1]


def _graph_block(root: Path, source: str, rows: list[str], datasets: list[str]) -> str:
    recs = graph_records(root, source)
    summary = graph_table.summarize(recs, rows, datasets)
    note = report.commits_note(r for r in recs if r["row"] in rows and r["dataset"] in datasets)
    return join_lines(
        f"SVM accuracy (%), mean ± spread over repeats (n: repeats), from `results/{source}`; the papers' "
        "numbers as printed in the table named.",
        "",
        graph_table.table_lines(summary, rows, datasets),
        *(["", note] if note else []),
    )


def _graph_differences(root: Path, source: str, baseline: str, rows: list[str], datasets: list[str]) -> str:
    """Each row minus ``baseline``, paired by repeat (the same seed), per dataset."""
    recs = graph_records(root, source)
    runs: dict = {}
    for name in [baseline, *rows]:
        for r in recs:
            if r["row"] == name and r["dataset"] in datasets:
                vals = runs.setdefault(name, {}).setdefault(int(r["repeat"]), [None] * len(datasets))
                vals[datasets.index(r["dataset"])] = 100 * float(r["svm_acc"])
    lines, _ = report.paired_table(baseline, runs, [graph_table.SHORT[d] for d in datasets], digits=1)
    return join_lines(
        f"Difference to `{baseline}` (points), paired by repeat: the mean of the per-repeat differences [its 95% "
        f"t-interval]; * where the interval excludes 0 (better or worse), none where it holds 0 (level); the last "
        f"line is `{baseline}`'s spread, for context. From `results/{source}`.",
        "",
        lines,
    )


GT_SETS = ["MUTAG", "ENZYMES", "PTC_MR", "IMDB-BINARY", "IMDB-MULTI"]
GC_SETS = ["MUTAG", "PTC_MR", "IMDB-BINARY", "ENZYMES", "IMDB-MULTI"]
GC_ROWS = [
    "infograph",
    "infograph_lr0.01",
    "hscl_b1",
    "hscl_b1_lr1e-3",
    "infograph_code",
    "hcl_code_b1",
    "hcl_code_b2",
    "hcl_code_b10",
    "hard_b1",
    "hard_b2",
    "hard_b10",
]
for _name, _rows in (
    ("graph_table", ["infograph", "infograph_code", "hard_b1", "hard_b2", "hard_b10"]),
    ("graph_table_hscl", ["infograph", "hscl_b1", "hscl_b2", "hscl_b10"]),
    ("graph_table_ot", ["infograph", "ot_e0.1"]),
):
    table(_name)(lambda root, rows=_rows: _graph_block(root, "graph_table.csv", rows, GT_SETS))
table("graph_table_ot_diff")(
    lambda root: _graph_differences(root, "graph_table.csv", "infograph", ["ot_e0.1"], GT_SETS)
)
table("graph_ot_enzymes_lr")(lambda root: _graph_block(root, "graph_ot_enzymes_lr1e-3.csv", ["ot_e0.1"], ["ENZYMES"]))
table("graph_controls")(lambda root: _graph_block(root, "graph_controls", GC_ROWS, GC_SETS))
table("graph_controls_hscl")(lambda root: _graph_block(root, "graph_controls", GC_ROWS[:4], GC_SETS))
table("graph_controls_hard_diff")(
    lambda root: _graph_differences(root, "graph_controls", "infograph", ["hard_b1", "hard_b2", "hard_b10"], GC_SETS)
)
table("graph_controls_code_diff")(
    lambda root: _graph_differences(
        root, "graph_controls", "infograph_code", ["hcl_code_b1", "hcl_code_b2", "hcl_code_b10"], GC_SETS
    )
)
table("graph_controls_lr_diff")(
    lambda root: _graph_differences(
        root, "graph_controls", "infograph", ["infograph_lr0.01", "hscl_b1_lr1e-3"], GC_SETS
    )
)
table("graph_controls_hscl_diff")(
    lambda root: _graph_differences(root, "graph_controls", "infograph_lr0.01", ["hscl_b1"], GC_SETS)
)
