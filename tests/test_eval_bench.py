"""scripts/bench_eval.py senteval: the summary (six-task sums, CPU-time width exponents, the accuracy
check) from synthetic rows, and one small real run that resumes instead of re-running."""

from __future__ import annotations

import json
import math

import _scripts
import pytest


def _row(task, width, fast, ref, diff):
    return {
        "task": task,
        "width": width,
        "fast_seconds": fast * 3,
        "fast_cpu_seconds": fast,
        "reference_seconds": ref * 3,
        "reference_cpu_seconds": ref,
        "reference_extrapolated": True,
        "speedup": ref / fast,
        "cpu_speedup": ref / fast,
        "reference_mode": "subset",
        "check": {"max_abs_diff_converged": diff, "max_abs_diff_reference": 2 * diff},
    }


def test_summary_sums_exponents_and_check():
    be = _scripts.load_script("bench_eval")
    rows = [
        _row("MR", 600, 10.0, 100.0, 0.0),
        _row("MR", 2400, 160.0, 800.0, 0.1),
        _row("CR", 600, 4.0, 40.0, 0.2),
        _row("CR", 2400, 32.0, 640.0, 0.0),
    ]
    s = be.summarize(rows, [600, 2400], ["MR", "CR"])
    assert s["widths"][2400]["fast_cpu_seconds"] == 192.0
    assert s["widths"][2400]["cpu_speedup"] == round(1440 / 192, 2)
    # exponents from CPU seconds: 16x over a 4x width is 2, 8x is 1.5
    assert s["exponents"] == {"MR": 2.0, "CR": round(math.log(8) / math.log(4), 2)}
    assert s["widths"][600]["check_max_abs_diff_converged"] == 0.2
    assert s["widths"][2400]["check_max_abs_diff_converged"] == 0.1
    # a width with a missing task gives no six-task figure
    assert 2400 not in be.summarize(rows[:3], [600, 2400], ["MR", "CR"])["widths"]


def test_small_real_run_and_resume(tmp_path, capsys):
    _scripts.senteval_root_or_skip("CR")
    be = _scripts.load_script("bench_eval")
    out = tmp_path / "bench.jsonl"
    args = ["senteval", "--widths", "8,16", "--tasks", "CR", "--reference", "subset", "--check", "--output", str(out)]
    assert be.main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["width"], r["task"]) for r in rows] == [(8, "CR"), (16, "CR")]
    for r in rows:
        assert r["reference_fits_timed"] == 6 and r["reference_extrapolated"]
        # the fast solver and converged scikit-learn agree on the held-out rows of the subset
        assert r["check"]["max_abs_diff_converged"] <= 0.5
        assert 40 < r["fast_acc"] < 90
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("six-task classifier time: 8-d")
    be.main(args)  # every row is there: nothing re-runs
    assert len(out.read_text().splitlines()) == 2
    # --retime-fast: the fast side again, the reference figures and converged accuracies kept
    # from the earlier rows (said so); the same tag resumes, a missing width is measured in full
    be.main(args[:2] + ["8,16,24"] + args[3:] + ["--retime-fast", "t1"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["width"], r.get("retime_tag")) for r in rows[2:]] == [(8, "t1"), (16, "t1"), (24, "t1")]
    for old, new in zip(rows[:2], rows[2:4]):
        assert new["reference_from_earlier_row"] and new["reference_cpu_seconds"] == old["reference_cpu_seconds"]
        assert new["check"]["acc_converged"] == old["check"]["acc_converged"]
        assert new["check"]["max_abs_diff_converged"] <= 0.5
    assert "reference_from_earlier_row" not in rows[4] and rows[4]["reference_fits_timed"] == 6
    be.main(args[:2] + ["8,16,24"] + args[3:] + ["--retime-fast", "t1"])
    assert len(out.read_text().splitlines()) == 5


def test_encoder_projections_one_model_at_every_width():
    """The projected features: width d is the first d columns of the full-width table, full rank,
    scaled to the bag of words' mean squared norm at the model's width; wider than the model is an
    error."""
    import numpy as np

    ref = _scripts.load_script("bench_eval")._reference_module()
    texts = ["a good movie .", "bad", "the plot is thin", "bad", "a very good plot and a bad ending"]
    full = ref.encoder_projections(texts, 32, encoder="bigru", hidden=8)  # 4 x 8 = 32-d model
    part = ref.encoder_projections(texts, 12, encoder="bigru", hidden=8)
    assert full.shape == (5, 32) and part.shape == (5, 12)
    np.testing.assert_allclose(part, full[:, :12])
    np.testing.assert_allclose(full[1], full[3])  # one text, one row
    target = (ref.HashBagOfWords(32).encode(texts) ** 2).sum(axis=1).mean()
    assert (full**2).sum(axis=1).mean() == pytest.approx(target, rel=1e-9)
    assert np.linalg.matrix_rank(full[[0, 1, 2, 4]]) == 4
    with pytest.raises(ValueError, match="full rank"):
        ref.encoder_projections(texts, 33, encoder="bigru", hidden=8)


def test_feature_kinds_resume_separately(tmp_path, monkeypatch):
    """A row of one feature kind does not count as done for another; the encoded table is cached
    and reused."""
    import numpy as np

    _scripts.senteval_root_or_skip("CR")
    be = _scripts.load_script("bench_eval")
    calls = []

    def cheap(kind, texts, width):  # stands in for the 4,800-d encoder: only the bookkeeping is tested
        calls.append((kind, width))
        return be._reference_module().HashBagOfWords(width).encode(texts)

    monkeypatch.setattr(be, "_encode", cheap)
    monkeypatch.setitem(be.FULL_WIDTH, "bigru", 16)
    out, cache = tmp_path / "bench.jsonl", tmp_path / "cache"
    base = ["senteval", "--widths", "8", "--tasks", "CR", "--reference", "none", "--output", str(out)]
    be.main(base)
    be.main(base + ["--features", "bigru", "--feature-cache", str(cache)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["features"] for r in rows] == ["hashbow:8", "bigru:8"]
    assert calls == [("hashbow", 8), ("bigru", 16)] and (cache / "bigru_CR.npy").is_file()
    be.main(
        [
            "senteval",
            "--widths",
            "12",
            "--tasks",
            "CR",
            "--reference",
            "none",
            "--output",
            str(out),
            "--features",
            "bigru",
            "--feature-cache",
            str(cache),
        ]
    )
    assert len(calls) == 2  # the 16-d table was loaded, not encoded again
    assert np.load(cache / "bigru_CR.npy").shape[1] == 16
