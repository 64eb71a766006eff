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
* ``wood<k>`` (e.g. ``wood200``): the shared preconditioner corrected per problem by Woodbury on
  the k rows where the problem's curvature (times its mask) differs most from the shared one:
  ``P + c X_S^T diag(D_f - Dbar)_S X_S`` (the rows of S then weigh exactly as in the problem's
  own Hessian, so it stays positive definite); cost per refresh and problem ``2 p^2 k``, per CG
  step and problem ``4 p k``.
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

MODES = ("shared", "shared64", "geo", "exact", "own", "wood", "woodr")


class DiagLogReg(BatchedLogReg):
    """BatchedLogReg with the preconditioner of ``mode`` (see the module docstring)."""

    def __init__(self, X, y, mode: str, full_frac, **kw):
        super().__init__(X, y, 2, **kw)
        self.mode, self.full_frac = mode, full_frac

    def _refresh_gram(self, P, M, groups=None):
        curv = (P * (1 - P))[..., 0]  # (n, F)
        cnt = M.sum(1)
        if self.mode.startswith("wood"):
            dbar = curv.mean(1) * self.full_frac
            self._gram = (self.X32.T @ (self.X32 * dbar.to(torch.float32)[:, None]))[None, None]
            self._E = (curv * M - dbar[:, None]).to(torch.float32)  # (n, F)
            # woodr: rank the problem's own rows by curvature ratio |log(D_f / Dbar)| (its
            # excluded rows, ratio 0, left to the shared part); wood: by |D_f - Dbar|.
            ratio = torch.log((curv * M).clamp(min=1e-30) / dbar.clamp(min=1e-30)[:, None]).abs()
            self._score = (ratio * (M > 0)).to(torch.float32) if self.mode.startswith("woodr") \
                else self._E.abs()
        elif self.mode in ("shared", "shared64", "geo"):
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
        if self.mode.startswith("wood"):
            k = int(self.mode.lstrip("woodr"))
            c = float(C[0])
            L = super()._preconditioners(C[:1], groups[:1] * 0)[(c, 0)]  # (1, p, p)
            Us, Zs, Ss = [], [], []
            for f in range(self._E.shape[1]):
                e = self._E[:, f]
                S = self._score[:, f].topk(k).indices
                U = self.X32[S].T  # (p, k)
                Z = torch.cholesky_solve(U[None], L)[0]  # P^{-1} U
                small = torch.diag(1.0 / (c * e[S])) + U.T @ Z
                Us.append(U), Zs.append(Z), Ss.append(torch.linalg.inv(small))
            self.n_factor += 1
            return {"L": L, "U": torch.stack(Us), "Z": torch.stack(Zs), "S": torch.stack(Ss)}
        dtype = torch.float64 if self.mode == "shared64" else torch.float32
        A = torch.diag(self.R[:, 0, 0]).to(dtype) + float(C[0]) * self._gram.to(dtype)
        A = A + (1e-5 * (1.0 + A.diagonal(dim1=1, dim2=2).mean(dim=1)))[:, None, None] * torch.eye(self.p, dtype=dtype)
        self.n_factor += A.shape[0]
        return {"L": torch.linalg.cholesky(A)}

    def _apply_prec(self, factors, C, groups, Rv):
        if self.mode in ("shared", "geo"):
            return super()._apply_prec(factors, C, groups, Rv)
        if self.mode.startswith("wood"):
            # Woodbury: (P + U E U^T)^{-1} r = y - Z (E^{-1} + U^T Z)^{-1} U^T y, y = P^{-1} r.
            y0 = torch.cholesky_solve(Rv[:, :, 0].to(torch.float32)[None], factors["L"])[0]  # (p, F)
            U, Z, S = factors["U"][groups], factors["Z"][groups], factors["S"][groups]
            a = torch.einsum("fpk,pf->fk", U, y0)
            b = torch.bmm(S, a[:, :, None])[:, :, 0]
            return (y0 - torch.einsum("fpk,fk->pf", Z, b)).to(Rv.dtype)[:, :, None]
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
    bad = [m for m in modes if m.replace("+fresh", "").rstrip("0123456789") not in MODES]
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
                           **(dict(refresh_cost=0) if fresh else {}))
            W, per_c, newton, cg = None, [], 0, 0
            c0 = time.process_time()
            for C in protocol.INNER_REGS:
                own = m.mode in ("exact", "own") or m.mode.startswith("wood")
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
