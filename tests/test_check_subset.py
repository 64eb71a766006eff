"""scripts/check_subset.py: the fast solver against converged lbfgs per C on bench_eval's subset,
row by row, and a rerun that skips the C already checked."""

from __future__ import annotations

import json

import _scripts


def test_small_check_per_c_and_resume(tmp_path, capsys):
    _scripts.senteval_root_or_skip("CR")
    cs = _scripts.load_script("check_subset")
    out = tmp_path / "check.jsonl"
    args = ["--task", "CR", "--width", "8", "--output", str(out)]
    assert cs.main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["C"] for r in rows] == [2.0**t for t in range(-2, 4)]  # SentEval's inner grid
    for r in rows:
        assert r["features"] == "hashbow:8" and r["n_train"] > r["n_held"] > 0
        assert abs(r["acc_fast"] - r["acc_converged"]) <= 0.5
        assert r["prediction_agreement_pct"] >= 99.0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("CR hashbow:8: 6 of 6 C checked")
    cs.main(args)  # every C is there: nothing runs again
    assert len(out.read_text().splitlines()) == 6
