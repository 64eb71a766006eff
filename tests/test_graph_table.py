"""The graph table (``qt_hard.experiments.specs.graph_table``, ``scripts/graph_table.py``) without
training: finished and claimed cells are skipped, one folder holds one setup, the table keeps the
papers' column order, and the figure is written."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from qt_hard.experiments.ledger import LedgerError
from qt_hard.experiments.specs import graph_table as GT

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "graph_table.py"


def _main(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def _line(row, ds, rep, acc):
    return {
        "row": row,
        "dataset": ds,
        "repeat": rep,
        "svm_acc": acc,
        "svm_acc_std": 0.0,
        "epochs": 1,
        "steps": 1,
        "wall_s": 1.0,
        "final_loss": 0.0,
    }


def test_run_cell_records_once_and_skips_claimed_cells(tmp_path, monkeypatch):
    gt = GT
    trained = []
    monkeypatch.setattr(gt, "train_cell", lambda out, row, ds, rep, *a: trained.append(rep) or _line(row, ds, rep, 0.8))
    cell = (str(tmp_path), "hard_b1", "MUTAG", 0, 1.0, ["eval.folds=2"], False)
    assert gt.run_cell(*cell)["svm_acc"] == 0.8
    assert gt.run_cell(*cell) is None  # finished: its record is there
    led = gt.ledger(tmp_path, 1.0, ["eval.folds=2"])
    with led.claim(("hard_b1", "MUTAG", 1)):  # another worker is training repeat 1
        assert gt.run_cell(*cell[:3], 1, *cell[4:]) is None
    assert trained == [0] and led.done() == {("hard_b1", "MUTAG", 0)}
    with pytest.raises(LedgerError, match="epochs: 1.0 there, 2.0 here"):
        gt.run_cell(*cell[:4], 2.0, *cell[5:])


def test_no_run_prints_table_in_paper_order_and_plots(tmp_path):
    out = tmp_path / "gt"
    led = GT.ledger(out, 1.0, [])
    for ds, acc in (("IMDB-BINARY", 0.7), ("MUTAG", 0.9), ("MUTAG", 0.8)):
        led.append(_line("hard_b1", ds, int(acc * 10), acc))
    done = _main("--out", str(out), "--no-run", "--rows", "infograph,hard_b1")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    header = next(line for line in text.splitlines() if line.startswith("| row"))
    assert (
        header.index("MUTAG")
        < header.index("ENZYMES")
        < header.index("PTC")
        < header.index("IMDB-B")
        < header.index("IMDB-M")
    )
    hard = next(line for line in text.splitlines() if line.startswith("| hard_b1"))
    # sample standard deviation of 90 and 80: 7.07
    assert "85.0 ± 7.1 (n=2)" in hard and "87.2 / 50.4 / 57.3 / 72.8 / 49.6" in hard
    assert text.splitlines()[-1].startswith("graph table: 3 cells; infograph on MUTAG: no result")
    assert (out / "table.md").read_text().splitlines()[-1] == text.splitlines()[-1]
    assert (out / "graph_fig3.png").stat().st_size > 1000
    with (out / "results.csv").open() as fh:
        assert [r["dataset"] for r in csv.DictReader(fh)] == ["IMDB-BINARY", "MUTAG", "MUTAG"]
    assert _main("--out", str(out), "--rows", "nope").returncode == 2
    refused = _main("--out", str(out), "--epochs", "3", "--rows", "infograph", "--datasets", "MUTAG", "--repeats", "1")
    assert refused.returncode != 0 and "another setup" in refused.stderr


@pytest.mark.parametrize("row", list(GT.ROWS))
def test_every_row_is_a_valid_config(row):
    """Each row's overrides load on the script's config (the commands marker trains only some rows),
    and the learning-rate rows set the rate they are named for."""
    from qt_hard.training.config import load_config

    cfg = load_config(GT.ROOT / GT.CONFIG, [*GT.ROWS[row].overrides, "data.name=MUTAG"])
    if row.endswith("_lr0.01"):
        assert cfg.train.lr == 0.01
    if row.endswith("_lr1e-3"):
        assert cfg.train.lr == 0.001
    if row.startswith("hcl_code"):
        assert cfg.objective.estimator == "jsd_code" and cfg.objective.options["tau_plus"] == 0.5
