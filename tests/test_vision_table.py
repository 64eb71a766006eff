"""The image table (``qt-hard grid run vision-table``, ``qt_hard.experiments.specs.vision_table``)
without training: each cell runs once, the table and CSV come from the ledger, one folder holds one
setup, and an unknown row is refused before anything is written."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from _refusals import assert_refused

from qt_hard.cli import main
from qt_hard.experiments.ledger import Ledger
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


def _grid(out, *args):
    return main(["grid", "run", "vision-table", "--out", str(out), "--config", CONFIG, *args])


def test_cells_run_once_and_the_table_reads_the_ledger(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(vt, "check_setup", lambda *a: None)  # no CIFAR-10 needed
    monkeypatch.setattr(vt, "cell_row", lambda base, s, seed, out, extra: calls.append((s, seed)) or _fake_row(s, seed))
    monkeypatch.setattr(vt, "plot", lambda out, *a: out / "knn_curves.png")
    cells = ["--rows", "uniform,hard", "--seeds", "0,1", "--set", "train.epochs=1"]
    assert _grid(tmp_path, *cells) == 0
    assert calls == [("uniform", 0), ("hard", 0), ("uniform", 1), ("hard", 1)]
    assert _grid(tmp_path, *cells) == 0 and len(calls) == 4  # all finished: nothing runs again
    out = capsys.readouterr().out
    # kNN 35 and 37 for hard: mean 36, sample standard deviation 1.41
    assert "| hard | 36.0 ± 1.4 |" in out and out.startswith("SimCLR on CIFAR-10 subset (80 train / 40 test")
    command = f"qt-hard grid run vision-table --config {CONFIG} --out {tmp_path} --rows uniform,hard --seeds 0,1"
    assert (tmp_path / "table.md").read_text().endswith(f"\ncommand: {command} --set train.epochs=1\n")
    with (tmp_path / "results.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 4
    led = Ledger(tmp_path, vt.KEY, {"config": CONFIG, "overrides": ["train.epochs=1"]})
    with led.claim(("ot", 0)):  # another copy trains it
        assert _grid(tmp_path, "--rows", "ot", "--seeds", "0", "--set", "train.epochs=1") == 0
    assert len(calls) == 4 and ("ot", 0) not in led.done()
    capsys.readouterr()
    assert _grid(tmp_path, "--rows", "ot", "--seeds", "0", "--set", "train.epochs=2") == 2
    assert "another setup" in capsys.readouterr().err and len(calls) == 4


def test_report_only_records_the_finished_run_folders_alone(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(vt, "cell_row", lambda base, s, seed, out, extra: calls.append((s, seed)) or _fake_row(s, seed))
    monkeypatch.setattr(vt, "plot", lambda out, *a: out / "knn_curves.png")
    (tmp_path / "hard_s1").mkdir()
    (tmp_path / "hard_s1" / "eval.json").write_text("{}")
    assert _grid(tmp_path, "--rows", "uniform,hard", "--report-only") == 0
    assert calls == [("hard", 1)]


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--rows", "uniform,bogus"], "qt-hard: error: --rows: unknown row 'bogus'; rows are uniform, debiased, "),
        (["--seeds", "x"], "qt-hard: error: --seeds must be comma-separated integers, got 'x'"),
        (["--set", "train.lr=abc"], "qt-hard: error: train.lr: expected a number, got 'abc'"),
    ],
)
def test_refusals_are_one_line_and_write_nothing(args, expected, tmp_path, capsys):
    assert_refused(_grid(tmp_path / "o", *args), capsys.readouterr().err, expected, tmp_path / "o")


def test_a_config_that_is_not_yaml_or_absent_data_is_refused_before_anything_is_written(tmp_path, monkeypatch, capsys):
    (tmp_path / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    assert (
        main(["grid", "run", "vision-table", "--out", str(tmp_path / "o"), "--config", str(tmp_path / "binary.yaml")])
        == 2
    )
    assert capsys.readouterr().err.startswith(f"qt-hard: error: config file {tmp_path / 'binary.yaml'}")
    monkeypatch.setenv("QT_HARD_DATA", str(tmp_path / "dataroot"))
    (tmp_path / "dataroot").mkdir()
    assert _grid(tmp_path / "o", "--seeds", "0") == 2
    assert capsys.readouterr().err.startswith(f"qt-hard: error: {tmp_path / 'dataroot' / 'cifar10'} does not exist")
    assert not (tmp_path / "o").exists()


def test_the_title_names_the_method():
    from qt_hard.training.config import load_config

    root = Path(CONFIG).parent
    assert vt.method_name(load_config(CONFIG, []).model) == "SimCLR"
    moco = load_config(str(root / "moco_cifar10_cpu.yaml"), ["model.queue_size=512"]).model
    assert vt.method_name(moco) == "MoCo-v2 (queue 512, momentum 0.99)"
