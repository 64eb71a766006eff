"""Why a task's classifier is slow at a width: the conditioning of its fold problems' Newton
systems under the fast solver's shared preconditioner (issue 14).

The fast SentEval path (``qt_hard/evaluation/logreg.py``) solves every fold problem's Newton
system ``H_f s = -g_f``, ``H_f = R + C X^T diag(m_f c_f) X`` (``c_f`` the per-row logistic
curvature ``p (1 - p)`` at problem f's iterate, ``m_f`` its training mask), by conjugate
gradients preconditioned with one matrix shared by all problems, ``P = R + C X^T diag(cbar) X``
with ``cbar`` the curvature averaged over the problems (masks included). CG's step count follows
the spectrum of ``P^{-1} H_f``: close to 1 when the problems' curvatures are alike, spread when
they are not.

This script runs ``qt-hard eval senteval``'s fast path on one task at each width, stops it once
the inner fold problems at ``--C`` are solved, and measures at their optimum:

* the training rows' margins ``|x_i . w_f|`` and curvatures, and, per row, how many decades its
  curvature spans across the problems that train on it;
* for a few problems (``--problems``): the extreme eigenvalues of ``H_f`` itself, those of the
  preconditioned matrix ``L^{-1} H_f L^{-T}`` (``P = L L^T``, the solver's preconditioner, in
  float64), its condition number, how many of its eigenvalues lie below 0.1, and the CG steps
  that reach a residual of ``--rtol`` on a random right-hand side with that preconditioner and
  with none.

Features as in ``scripts/bench_eval.py`` (``--features hashbow`` or ``bigru``, the first d
coordinates of a fixed encoding). Prints one JSON object per width, then a headline line.

    QT_HARD_DATA=../shared/data python scripts/precond_spectrum.py --task MPQA --features hashbow \\
        --widths 600,2400 --C 8 --output results/precond_spectrum.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from qt_hard.evaluation import logreg  # noqa: E402
from qt_hard.evaluation.senteval import default_senteval_dir, evaluate_task  # noqa: E402
from qt_hard.evaluation.tasks import load_task  # noqa: E402

import bench_eval as be  # noqa: E402  (scripts/: its features)

QUANTILES = (0.1, 0.5, 0.9, 0.99)


class _Captured(Exception):
    """Raised by the hook once the wanted fit is solved (ends the evaluation early)."""

    def __init__(self, state):
        super().__init__("captured")
        self.state = state


def capture_inner_optimum(task, cache, C: float, kfold: int = 10, seed: int = 1111) -> dict:
    """Runs the fast path on ``task`` with ``cache``'s features until the first fit at ``C``
    with more than one problem (the inner folds) is solved. Returns the solver's (intercept-
    augmented) features ``X`` (n, p), its targets ``Y`` (n, 1, H), masks ``M`` (n, F), the optimum
    ``W`` (p, F, H), ``C`` and ``R`` (the penalty mask, (p,))."""
    orig = logreg.BatchedLogReg._fit

    def hooked(self, train_mask, C_fit, *a, **kw):
        W = orig(self, train_mask, C_fit, *a, **kw)
        Cs = torch.as_tensor(C_fit, dtype=torch.float64).flatten()
        M = torch.as_tensor(train_mask, dtype=torch.float64)
        if M.shape[1] > 1 and bool((Cs == C).all()):
            raise _Captured({"X": self.X.cpu(), "Y": self.Y.cpu(), "M": M.cpu(), "W": W, "C": float(C),
                             "R": self.R[:, 0, 0].cpu()})
        return W

    logreg.BatchedLogReg._fit = hooked
    try:
        evaluate_task(task, cache, kfold=kfold, seed=seed, fast=True)
    except _Captured as got:
        return got.state
    finally:
        logreg.BatchedLogReg._fit = orig
    raise ValueError(f"no inner fit at C={C} (the task's C grid does not contain it)")


def _pcg_steps(hv, prec, b: torch.Tensor, rtol: float, max_steps: int) -> int:
    """Steps of preconditioned CG on ``hv(x) = b`` from 0 until ``||r|| <= rtol ||b||``."""
    x = torch.zeros_like(b)
    r = b.clone()
    z = prec(r)
    d = z.clone()
    rz = r @ z
    for step in range(1, max_steps + 1):
        Hd = hv(d)
        a = rz / (d @ Hd)
        x += a * d
        r -= a * Hd
        if r.norm() <= rtol * b.norm():
            return step
        z = prec(r)
        rz_new = r @ z
        d = z + (rz_new / rz) * d
        rz = rz_new
    return max_steps


def analyze(state: dict, problems: list[int], rtol: float = 1e-4, max_steps: int = 3000,
            seed: int = 0) -> dict:
    """The measurements listed in the module docstring, in float64, for the binary model (H = 1;
    the multinomial one's class blocks are not coupled here). ``problems``: column indices."""
    X, M, W, C, R = state["X"], state["M"], state["W"], state["C"], state["R"]
    if W.shape[2] != 1:
        raise ValueError("analyze() covers the binary model (two classes) only")
    n, p = X.shape
    Z = X @ W[:, :, 0]  # (n, F) logits
    P = torch.sigmoid(Z)
    curv = P * (1.0 - P)
    wc = curv * M  # per-row Hessian weights of every problem (merged rows carry their count)
    train = M > 0
    cbar = wc.mean(dim=1)  # the solver's averaged curvature (logreg._refresh_gram)
    q = torch.tensor(QUANTILES, dtype=torch.float64)
    margins = Z.abs()[train]
    # Per row: decades spanned by its curvature over the problems that train on it (floored at
    # 1e-300 so that a curvature that underflowed to 0 still counts, as 300 decades at most).
    lc = curv.clamp(min=1e-300).log10()
    hi = torch.where(train, lc, torch.tensor(-math.inf, dtype=lc.dtype)).amax(dim=1)
    lo = torch.where(train, lc, torch.tensor(math.inf, dtype=lc.dtype)).amin(dim=1)
    several = train.sum(dim=1) >= 2
    spread = (hi - lo)[several]

    def gram(v):
        return X.T @ (X * v[:, None])

    eye = torch.eye(p, dtype=torch.float64)
    Pm = torch.diag(R) + C * gram(cbar)
    L = torch.linalg.cholesky(Pm + 1e-10 * (1.0 + Pm.diagonal().mean()) * eye)
    gen = torch.Generator().manual_seed(seed)

    def shared(r):
        return torch.cholesky_solve(r[:, None], L)[:, 0]

    per_problem = []
    for f in problems:
        Hf = torch.diag(R) + C * gram(wc[:, f])
        ev_h = torch.linalg.eigvalsh(Hf)
        A = torch.linalg.solve_triangular(L, torch.linalg.solve_triangular(L, Hf, upper=False).T, upper=False)
        ev = torch.linalg.eigvalsh((A + A.T) / 2)
        b = torch.randn(p, dtype=torch.float64, generator=gen)

        def hv(v, f=f):
            return R * v + C * (X.T @ (wc[:, f] * (X @ v)))

        per_problem.append({
            "problem": f,
            "hessian_eig_min": round(float(ev_h[0]), 4), "hessian_eig_max": round(float(ev_h[-1]), 2),
            "precond_eig_min": round(float(ev[0]), 5), "precond_eig_max": round(float(ev[-1]), 4),
            "precond_condition": round(float(ev[-1] / ev[0]), 1),
            "precond_eigs_below_0.1": int((ev < 0.1).sum()),
            "cg_steps_shared_precond": _pcg_steps(hv, shared, b, rtol, max_steps),
            "cg_steps_no_precond": _pcg_steps(hv, lambda r: r, b, rtol, max_steps),
        })
    return {
        "n_rows": n, "p": p, "n_problems": int(M.shape[1]), "C": C,
        "margin_quantiles": dict(zip(map(str, QUANTILES), [round(float(v), 2) for v in torch.quantile(margins, q)])),
        "train_entries_curvature_below_1e-3": round(float((curv[train] < 1e-3).double().mean()), 4),
        "row_curvature_decades_across_problems": dict(
            zip(map(str, QUANTILES), [round(float(v), 2) for v in torch.quantile(spread, q)])),
        "rtol": rtol, "problems": per_problem,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="MPQA", help="a binary SentEval task: MR, CR, SUBJ or MPQA")
    ap.add_argument("--features", choices=("hashbow", "bigru"), default="hashbow")
    ap.add_argument("--widths", default="600,2400")
    ap.add_argument("--C", type=float, default=8.0, help="the inner fits' C to stop at (SentEval's grid: 0.25 to 8)")
    ap.add_argument("--problems", default="0,37,81", help="fold problems to analyze (column indices)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--feature-cache", default=None, help="as scripts/bench_eval.py's")
    ap.add_argument("--data", default=None, help="SentEval data folder (default: $QT_HARD_DATA/senteval)")
    ap.add_argument("--kfold", type=int, default=10)
    ap.add_argument("--output", default=None, help="append one JSON row per width here")
    args = ap.parse_args(argv)
    if args.task.upper() not in ("MR", "CR", "SUBJ", "MPQA"):
        ap.error(f"--task must be a binary nested task (MR, CR, SUBJ, MPQA), got {args.task!r}")
    widths = [int(w) for w in args.widths.split(",")]
    problems = [int(f) for f in args.problems.split(",")]
    if any(f < 0 or f >= args.kfold * args.kfold for f in problems):
        ap.error(f"--problems must lie in [0, {args.kfold * args.kfold})")
    torch.set_num_threads(1)
    task = load_task(args.task.upper(), args.data or default_senteval_dir())
    table = be.task_features(args.features, task, max(widths), args.feature_cache)
    rows = []
    for w in widths:
        t0 = time.process_time()
        state = capture_inner_optimum(task, be.PrefixCache(table, w), args.C, kfold=args.kfold)
        row = {"task": task.name, "features": f"{args.features}:{w}", "width": w, **analyze(state, problems, args.rtol)}
        row["cpu_seconds"] = round(time.process_time() - t0, 1)
        print(json.dumps(row), flush=True)
        rows.append(row)
        if args.output:
            with open(args.output, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    parts = []
    for r in rows:
        conds = [pp["precond_condition"] for pp in r["problems"]]
        steps = [pp["cg_steps_shared_precond"] for pp in r["problems"]]
        parts.append(f"{r['width']}-d: condition {min(conds):,.1f}-{max(conds):,.1f}, CG {min(steps)}-{max(steps)} steps, "
                     f"median row curvature span {r['row_curvature_decades_across_problems']['0.5']} decades")
    print(f"{args.task} {args.features} at C={args.C:g}, shared preconditioner: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
