"""The image table (``qt_hard.experiments.specs.vision_table``, ``scripts/vision_table.py``) without
training: each cell runs once, the table and CSV come from the ledger, and one folder holds one setup."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from qt_hard.experiments.ledger import LedgerError
from qt_hard.experiments.specs import vision_table as vt

CONFIG = str(Path(__file__).resolve().parents[1] / "configs" / "simclr_cifar10_smoke.yaml")


def _fake_row(strategy, seed):
    return {
        "strategy": strategy,
        "seed": seed,
        "knn_acc": 30.0 + 2 * seed + (5 if strategy == "hard" else 0),
        "linear_acc": "",
        "knn_init": 20.0,
        "epochs": 1.0,
        "steps": 10,
        "arch": "resnet_tiny",
        "width": "",
        "batch_size": 8,
        "train_images": 80,
        "test_images": 40,
        "wall_s": "1.0",
        "images_per_s": 5.0,
        "device": "CPU",
        "machine": "m",
    }


def test_cells_run_once_and_the_table_reads_the_ledger(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(vt, "cell_row", lambda base, s, seed, out, extra: calls.append((s, seed)) or _fake_row(s, seed))
    monkeypatch.setattr(vt, "plot", lambda out, *a: out / "knn_curves.png")
    extra = ["train.epochs=1"]

    def table():
        for seed in (0, 1):
            for s in ("uniform", "hard"):
                vt.run_cell(CONFIG, s, seed, tmp_path, extra)
        return vt.write_report(tmp_path, CONFIG, extra, ["uniform", "hard"], [0, 1], "python the-command")

    assert len(table()) == 4
    assert sorted(calls) == [("hard", 0), ("hard", 1), ("uniform", 0), ("uniform", 1)]
    assert len(table()) == 4 and len(calls) == 4  # all finished: nothing runs again
    out = capsys.readouterr().out
    # kNN 35 and 37 for hard: mean 36, sample standard deviation 1.41
    assert "| hard | 36.0 ± 1.4 |" in out and "best kNN hard" in out.splitlines()[-1]
    assert (tmp_path / "table.md").read_text().endswith("\ncommand: python the-command\n")
    with (tmp_path / "results.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 4
    with vt.ledger(tmp_path, CONFIG, extra).claim(("ot", 0)):  # another copy trains it
        assert vt.run_cell(CONFIG, "ot", 0, tmp_path, extra) is None
    with pytest.raises(LedgerError, match="another setup"):
        vt.run_cell(CONFIG, "ot", 0, tmp_path, ["train.epochs=2"])


def test_the_title_names_the_method():
    from qt_hard.training.config import load_config

    root = Path(CONFIG).parent
    assert vt.method_name(load_config(CONFIG, []).model) == "SimCLR"
    moco = load_config(str(root / "moco_cifar10_cpu.yaml"), ["model.queue_size=512"]).model
    assert vt.method_name(moco) == "MoCo-v2 (queue 512, momentum 0.99)"
