"""scripts/s2v_curve.py: the precision check (which can fail), the held-out books it reads from the
config, the curve CSV's columns and figure. The whole script runs in the dry run of
scripts/device_s2v.sh (the commands marker)."""

from __future__ import annotations

import csv

import pytest
from _scripts import load_script

S = load_script("s2v_curve")


def row(name, mean_loss, losses, rate=100.0):
    return {"precision": name, "mean_loss": mean_loss, "losses": losses, "sentences_per_s": rate, "batch_size": 400}


def test_a_precision_passes_only_within_the_tolerance_of_float32():
    rows = S.compare_precisions(
        [row("fp32", 5.0, [6.0, 4.0]), row("tf32", 5.04, [6.05, 4.03]), row("bf16", 5.2, [6.0, 4.4])], 0.01
    )
    by = {r["precision"]: r for r in rows}
    assert by["fp32"]["passed"] and by["fp32"]["rel_diff_mean_loss"] == 0
    assert by["tf32"]["passed"] and by["tf32"]["rel_diff_mean_loss"] == pytest.approx(0.008)
    assert not by["bf16"]["passed"] and by["bf16"]["rel_diff_mean_loss"] == pytest.approx(0.04)
    assert by["bf16"]["max_rel_diff_window"] == pytest.approx(0.1)
    # Without float32 nothing can be compared, so nothing passes.
    assert not any(r["passed"] for r in S.compare_precisions([row("bf16", 5.0, [5.0])], 0.01))


def test_held_out_books_come_from_the_config(tmp_path):
    from types import SimpleNamespace

    cfg = SimpleNamespace(data=SimpleNamespace(exclude_books=[8, 9, 10]))
    assert S.held_out_range(cfg, SimpleNamespace(heldout=None)) == (8, 11)
    assert S.held_out_range(cfg, SimpleNamespace(heldout="2,3")) == (2, 3)
    cfg.data.exclude_books = [1, 5]
    with pytest.raises(SystemExit, match="--heldout FIRST,LAST is needed"):
        S.held_out_range(cfg, SimpleNamespace(heldout=None))


def test_curve_columns_and_figure(tmp_path):
    for col in ("step", "six_task_mean", "MR", "MRPC", "heldout_next_top1", "control_untrained_mean"):
        assert col in S.CURVE_COLUMNS
    assert "control_bow2400_mean" in S.CURVE_COLUMNS
    path = tmp_path / "curve.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, S.CURVE_COLUMNS)
        w.writeheader()
        for step, mean in ((10, 70.0), (20, 71.5)):
            w.writerow(
                {"step": step, "six_task_mean": mean, "heldout_next_top1": 0.2, "control_untrained_mean": 72.0}
                | {"control_bow2400_mean": "", "precision": "tf32", "device": "test"}
            )
    S.plot(path, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").stat().st_size > 1000


def test_unknown_task_is_refused(capsys):
    with pytest.raises(SystemExit):
        S.main(["controls", "--tasks", "MR,XX"])
    assert "unknown task(s) ['XX']" in capsys.readouterr().err
