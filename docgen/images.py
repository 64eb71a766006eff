"""Images (``qt-hard grid run vision-table``): the SimCLR and MoCo tables with their paired differences."""

from __future__ import annotations

from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.specs import vision_table

from docgen.markdown import join_lines
from docgen.pages import table
from docgen.results import grid_tables, read_csv


def vision_rows(root: Path, source: str) -> list[dict]:
    """``source``: a results folder of ``qt-hard grid run vision-table`` (its latest records) or a CSV
    of cells."""
    path = root / source
    return read_csv(path) if path.suffix == ".csv" else grid_tables(root, "vision-table", source)[1]


def _vision_block(root: Path, source: str, strategies: list[str]) -> str:
    rows = vision_rows(root, source)
    strategies = [s for s in strategies if any(r["strategy"] == s for r in rows)]
    runs = {
        s: {int(r["seed"]): [float(r["knn_acc"]), float(r["linear_acc"])] for r in rows if r["strategy"] == s}
        for s in strategies
    }
    diff, _ = report.paired_table(strategies[0], runs, ["kNN acc. (points)", "linear readout (points)"])
    return join_lines(
        f"Mean ± spread over seeds, from `{source}`:",
        "",
        vision_table.table(rows, strategies),
        "",
        f"Difference to {strategies[0]}, paired by seed: the mean of the per-seed differences [its 95% t-interval]; "
        "* where the interval excludes 0; the mean alone, not judged, below 3 paired seeds; the last line is "
        f"{strategies[0]}'s spread, for context:",
        "",
        diff,
    )


_VISION = ["uniform", "debiased", "hard", "ring", "ot"]
table("vision_cpu")(lambda root: _vision_block(root, "docs/img/vision_table_cpu.csv", _VISION))
table("vision_gpu")(lambda root: _vision_block(root, "results/simclr_gpu", _VISION))
table("vision_gpu_ot")(lambda root: _vision_block(root, "results/simclr_gpu", ["uniform", "hard", "ot"]))
table("vision_gpu_ring")(lambda root: _vision_block(root, "results/simclr_gpu", ["uniform", "ring"]))
table("moco_ring_cpu")(lambda root: _vision_block(root, "results/moco_ring_cpu", ["uniform", "ring"]))
table("moco_ring_gpu")(lambda root: _vision_block(root, "results/moco_ring_gpu", ["uniform", "ring"]))
