"""scripts/precond_spectrum.py: the conditioning measurements on synthetic states (where the
answers are known) and one small real run that stops at the wanted C."""

from __future__ import annotations

import json

import _scripts
import pytest
import torch



def _state(masks, W):
    gen = torch.Generator().manual_seed(3)
    n, p = masks.shape[0], W.shape[0]
    X = torch.cat([torch.randn(n, p - 1, dtype=torch.float64, generator=gen), torch.ones(n, 1, dtype=torch.float64)], 1)
    R = torch.ones(p, dtype=torch.float64)
    R[-1] = 0.0
    return {"X": X, "M": masks, "W": W, "C": 2.0, "R": R}


def test_identical_problems_are_perfectly_preconditioned():
    """Every problem with the same rows and weights: the averaged curvature is each problem's own,
    the preconditioner is each H_f, its spectrum is 1 and CG ends in one step."""
    ps = _scripts.load_script("precond_spectrum")
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(7, 1, 1, dtype=torch.float64, generator=gen)
    st = _state(torch.ones(80, 3, dtype=torch.float64), w.repeat(1, 3, 1))
    out = ps.analyze(st, [0, 2])
    for pr in out["problems"]:
        assert pr["precond_eig_min"] == pytest.approx(1.0, abs=1e-6)
        assert pr["precond_condition"] == pytest.approx(1.0, abs=1e-3)
        assert pr["cg_steps_shared_precond"] == 1
        assert pr["cg_steps_no_precond"] <= 7 + 2  # CG ends within p steps in exact arithmetic
    assert out["row_curvature_decades_across_problems"]["0.99"] == pytest.approx(0.0, abs=1e-9)


def test_different_problems_spread_the_spectrum_and_hessian_extremes_are_exact():
    ps = _scripts.load_script("precond_spectrum")
    gen = torch.Generator().manual_seed(1)
    n, p, F = 120, 9, 4
    masks = (torch.rand(n, F, generator=gen) < 0.7).double()
    W = 3.0 * torch.randn(p, F, 1, dtype=torch.float64, generator=gen)
    st = _state(masks, W)
    out = ps.analyze(st, [1])
    pr = out["problems"][0]
    assert pr["precond_condition"] > 1.5
    assert pr["precond_eig_min"] < 1.0 < pr["precond_eig_max"]
    # the Hessian's own extremes, computed here directly
    X = st["X"]
    P = torch.sigmoid(X @ W[:, 1, 0])
    H = torch.diag(st["R"]) + 2.0 * X.T @ (X * (P * (1 - P) * masks[:, 1])[:, None])
    ev = torch.linalg.eigvalsh(H)
    assert pr["hessian_eig_min"] == pytest.approx(float(ev[0]), abs=1e-4)
    assert pr["hessian_eig_max"] == pytest.approx(float(ev[-1]), abs=1e-2)
    assert out["n_problems"] == F and out["p"] == p
    with pytest.raises(ValueError, match="binary"):
        ps.analyze(_state(masks, W.repeat(1, 1, 3)), [0])


def test_small_real_run_stops_at_the_wanted_c(tmp_path, capsys):
    root = _scripts.senteval_root_or_skip("CR")
    ps = _scripts.load_script("precond_spectrum")
    out = tmp_path / "spec.jsonl"
    assert ps.main(["--task", "CR", "--widths", "8,16", "--C", "2", "--problems", "0,5",
                    "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["width"] for r in rows] == [8, 16] and all(r["C"] == 2.0 for r in rows)
    assert all(r["n_problems"] == 100 and len(r["problems"]) == 2 for r in rows)
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("CR hashbow at C=2, shared preconditioner: 8-d")
    with pytest.raises(SystemExit):
        ps.main(["--task", "TREC"])
    from qt_hard.evaluation.tasks import load_task
    be = _scripts.load_script("bench_eval")
    task = load_task("CR", root / "senteval")
    texts = list(dict.fromkeys(task.texts()))
    cache = be.PrefixCache(dict(zip(texts, be._encode("hashbow", texts, 4))), 4)
    with pytest.raises(ValueError, match="C=3"):
        ps.capture_inner_optimum(task, cache, 3.0)
