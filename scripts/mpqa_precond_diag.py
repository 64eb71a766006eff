"""Diagnostic: why MPQA's CG steps grow with the width. CG steps per Newton step of the batched
solver on a few of MPQA's nested fold problems, with the solver's shared preconditioner and with
alternatives that are too costly to ship but say what the shared one misses.

The problems: SentEval's 10 x 10 nested folds of MPQA (``protocol.inner_kfold``'s splits), the
(o, o) inner fold of each outer fold o (``--problems ten``) or two of them (``two``), fitted along
the C path 2^-2 .. 2^3 with warm starts as the protocol does, on the hashed bag of words of
``scripts/bench_mpqa_width.py`` (first ``d`` coordinates). Preconditioners (``--modes``):

* ``shared``: the solver's own, ``R + c X^T diag(dbar) X`` with the curvature ``p (1 - p)``
  averaged over the problems (here: over the chosen problems, times each row's inclusion fraction
  over all 100, so that it weighs the rows as the 100-problem fit does).
* ``shared64``: the same with float64 Hessian-vector products and preconditioner.
* ``geo``: the shared Gram with the geometric mean of the including problems' curvatures.
* ``exact``: one Gram per problem with that problem's exact support (its training rows) and the
  arithmetic-mean curvature of the problems that include each row.
* ``own``: one Gram per problem with its own support and its own curvature: its exact Hessian at
  the refresh (one n p^2 Gram per problem per refresh: for the 100 problems at 2,400-d ~6 TFLOP).
* suffix ``+fresh``: rebuild the Gram(s) at every Newton step instead of when CG slows down.

Prints one JSON line per (width, mode): CPU seconds, Newton steps, batched CG steps, CG per
Newton step, and per C the last Newton step's per-problem CG counts.

    QT_HARD_DATA=/work/shared/data python scripts/mpqa_precond_diag.py --widths 600 --modes shared,exact
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qt_hard.evaluation import protocol  # noqa: E402
from qt_hard.evaluation.logreg import BatchedLogReg  # noqa: E402
from qt_hard.evaluation.senteval import default_senteval_dir  # noqa: E402
from qt_hard.evaluation.tasks import load_task  # noqa: E402

MODES = ("shared", "shared64", "geo", "exact", "own")


class DiagLogReg(BatchedLogReg):
    """BatchedLogReg with the preconditioner of ``mode`` (see the module docstring)."""

    def __init__(self, X, y, mode: str, full_frac, **kw):
        super().__init__(X, y, 2, **kw)
        self.mode, self.full_frac = mode, full_frac

    def _refresh_gram(self, P, M, groups=None):
        curv = (P * (1 - P))[..., 0]  # (n, F)
        cnt = M.sum(1)
        if self.mode in ("shared", "shared64", "geo"):
            if self.mode == "geo":
                mean = torch.exp((torch.log(curv.clamp(min=1e-300)) * M).sum(1) / cnt.clamp(min=1))
            else:
                mean = curv.mean(1)
            dbar = mean * self.full_frac
            X = self.X if self.mode == "shared64" else self.X32
            gram = X.T @ (X * dbar.to(X.dtype)[:, None])
            # (G, H, p, p) for the solver's own factorization; (1, p, p) for shared64's.
            self._gram = gram[None] if self.mode == "shared64" else gram[None, None]
        else:
            dinc = torch.where(cnt > 0, (curv * M).sum(1) / cnt.clamp(min=1), curv.mean(1))
            grams = []
            for f in range(M.shape[1]):
                w = M[:, f] * (curv[:, f] if self.mode == "own" else dinc)
                grams.append(self.X32.T @ (self.X32 * w.to(torch.float32)[:, None]))
            self._gram = torch.stack(grams)
        self.n_gram += 1

    def _preconditioners(self, C, groups):
        if self.mode in ("shared", "geo"):
            return super()._preconditioners(C, groups)
        dtype = torch.float64 if self.mode == "shared64" else torch.float32
        A = torch.diag(self.R[:, 0, 0]).to(dtype) + float(C[0]) * self._gram.to(dtype)
        A = A + (1e-5 * (1.0 + A.diagonal(dim1=1, dim2=2).mean(dim=1)))[:, None, None] * torch.eye(self.p, dtype=dtype)
        self.n_factor += A.shape[0]
        return {"L": torch.linalg.cholesky(A)}

    def _apply_prec(self, factors, C, groups, Rv):
        if self.mode in ("shared", "geo"):
            return super()._apply_prec(factors, C, groups, Rv)
        L = factors["L"]
        if self.mode == "shared64":
            return torch.cholesky_solve(Rv.permute(2, 0, 1), L).permute(1, 2, 0)
        # Per-problem modes fit with groups = the problems' indices: Rv's columns' factors.
        L = L[groups]
        out = torch.cholesky_solve(Rv.permute(1, 0, 2).to(torch.float32), L)
        return out.permute(1, 0, 2).to(Rv.dtype)

    def _hvp(self, V, P32, M32, C):
        if self.mode != "shared64":
            return super()._hvp(V, P32, M32, C)
        p, F, H = V.shape
        A = self._times(V.reshape(p, F * H)).reshape(-1, F, H)
        B = self._curv_times(P32.double(), A) * M32.double()[:, :, None]
        return self.R * V + C[None, :, None] * self._t_times(B.reshape(-1, F * H)).reshape(p, F, H)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="600,1200")
    ap.add_argument("--modes", default="shared,exact")
    ap.add_argument("--problems", choices=("ten", "two"), default="ten")
    ap.add_argument("--data", default=None)
    args = ap.parse_args(argv)
    modes = args.modes.split(",")
    bad = [m for m in modes if m.replace("+fresh", "") not in MODES]
    if bad:
        ap.error(f"unknown mode(s) {bad}; choose from {MODES} (optionally with +fresh)")
    torch.set_num_threads(1)
    spec = importlib.util.spec_from_file_location("bench_mpqa_width", ROOT / "scripts" / "bench_mpqa_width.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    task = load_task("MPQA", str(args.data or default_senteval_dir()))
    y = np.asarray(task.labels)
    widths = [int(w) for w in args.widths.split(",")]
    Xf = bench._features(task, max(widths))
    skf = protocol.StratifiedKFold(n_splits=10, shuffle=True, random_state=protocol.INNER_SPLIT_SEED)
    flat = [(tr[itr], tr[ite]) for tr, _ in skf.split(Xf, y) for itr, ite in skf.split(Xf[tr], y[tr])]
    masks = protocol._fold_masks(len(y), flat)
    sel = [0, 11] if args.problems == "two" else [o * 10 + o for o in range(10)]
    for d in widths:
        X = Xf[:, :d].astype(np.float64)
        for mode in modes:
            fresh = mode.endswith("+fresh")
            m = DiagLogReg(X, y, mode.replace("+fresh", ""), masks.mean(1),
                           **(dict(refresh_cg=0, refresh_ratio=0) if fresh else {}))
            W, per_c, newton, cg = None, [], 0, 0
            c0 = time.process_time()
            for C in protocol.INNER_REGS:
                own = m.mode in ("exact", "own")
                W = m.fit(masks[:, sel], C, W0=W, tol=protocol.FAST_TOL,
                          groups=np.arange(len(sel)) if own else None)
                newton, cg = newton + m.n_newton, cg + m.n_cg
                per_c.append({"C": C, "newton": m.n_newton, "cg": m.n_cg,
                              "last_step_cg_per_problem": m.cg_log[-1].tolist() if m.cg_log else []})
            print(json.dumps({"width": d, "mode": mode, "problems": len(sel),
                              "cpu_seconds": round(time.process_time() - c0, 1), "newton": newton, "cg": cg,
                              "cg_per_newton": round(cg / max(newton, 1), 1), "grams": m.n_gram,
                              "per_C": per_c}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
