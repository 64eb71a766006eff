"""scripts/graph_table.py without training: result lines appended by parallel processes stay whole,
finished cells are skipped, the table keeps the papers' column order, and the figure is written."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import _scripts
import pytest


def load_script():
    return _scripts.load_script("graph_table")


def _append_many(path, worker):
    gt = load_script()
    for rep in range(40):
        gt.append_row(Path(path), {"row": "infograph", "dataset": "MUTAG", "repeat": worker * 100 + rep,
                                   "svm_acc": 0.5 + rep / 1000, "svm_acc_std": 0.01, "epochs": 1, "steps": 2,
                                   "wall_s": 1.0, "final_loss": "x" * 200})


def test_parallel_appends_stay_whole(tmp_path):
    path = tmp_path / "results.csv"
    procs = [mp.get_context("spawn").Process(target=_append_many, args=(str(path), w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    rows = load_script().read_results(path)
    assert len(rows) == 120 and len({r["repeat"] for r in rows}) == 120
    assert path.read_text().count("row,dataset") == 1  # one header


def test_no_run_prints_table_in_paper_order_and_plots(tmp_path, capsys):
    gt = load_script()
    out = tmp_path / "gt"
    out.mkdir()
    for ds, acc in (("IMDB-BINARY", 0.7), ("MUTAG", 0.9), ("MUTAG", 0.8)):
        gt.append_row(out / "results.csv", {"row": "hard_b1", "dataset": ds, "repeat": int(acc * 10),
                                            "svm_acc": acc, "svm_acc_std": 0.0, "epochs": 1, "steps": 1,
                                            "wall_s": 1.0, "final_loss": 0.0})
    assert gt.main(["--out", str(out), "--no-run", "--rows", "infograph,hard_b1"]) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("| row"))
    assert header.index("MUTAG") < header.index("ENZYMES") < header.index("PTC") < header.index("IMDB-B") \
        < header.index("IMDB-M")
    hard = next(line for line in text.splitlines() if line.startswith("| hard_b1"))
    assert "85.0 ± 5.0 (n=2)" in hard and "87.2 / 50.4 / 57.3 / 72.8 / 49.6" in hard
    assert (out / "graph_fig3.png").stat().st_size > 1000
    with pytest.raises(SystemExit):
        gt.main(["--out", str(out), "--rows", "nope"])
