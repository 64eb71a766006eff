"""Many L2-regularized logistic regressions at once: a batched truncated-Newton solver.

SentEval's scikit-learn path (Conneau & Kiela 2018, ``senteval/tools/validation.py``) fits
``LogisticRegression(C=reg)`` once per regularization strength per (inner) fold: 6 x 10 x 10 + 10
fits for MR. All those problems share one feature matrix and differ only in *which rows* they
train on and in ``C``. This module solves them together: the weights of F problems are the
columns of one matrix, so every pass over the data is a single matrix product ``X @ W``.

Each problem f minimizes exactly scikit-learn's objective (up to the positive factor C * n_f,
which does not move the minimizer):

    J_f(w) = 1/2 ||w_{:d}||^2 + C_f * sum_i m_{if} * loss(y_i, x_i . w + b)

with an unpenalized intercept b, ``loss`` the binary logistic loss (sigmoid, one weight vector)
for two classes and the multinomial (softmax, one weight vector per class, all penalized) loss for
more, as scikit-learn's ``lbfgs`` solver does.

The solver is Newton's method with the step found by preconditioned conjugate gradients
(Hessian-vector products cost two matrix products) and an Armijo backtracking line search that
needs no further pass over the data (the logits are linear in the step length). The
preconditioner is the Hessian with the per-row curvature averaged over the problems,
``R + C * X^T diag(dbar) X``, factorized once per Newton iteration and per distinct C; because the
problems' row sets overlap heavily, it is close to every problem's own Hessian and CG needs only a
few iterations. Warm starts (``W0``) along an increasing C path cut the Newton iterations further.

Shapes: X (n, d); y (n,) integer labels in [0, K); train_mask (n, F); C (F,);
weights (d + 1, F, H) with H = 1 for K = 2 and H = K otherwise (last row is the intercept).
"""

from __future__ import annotations

import os

import numpy as np
import torch

from qt_hard.threads import torch_threads

__all__ = ["BatchedLogReg", "fit_logreg", "predict_logreg", "torch_threads"]

# Threads for the solver. One by default: the products here are mid-sized, and on a shared
# machine extra torch threads that wait on busy cores slow the solve down many times over (and a
# fixed thread count keeps results bit-for-bit reproducible). QT_HARD_EVAL_THREADS overrides.
DEFAULT_THREADS = int(os.environ.get("QT_HARD_EVAL_THREADS", "1"))


def _as_tensor(a, dtype=torch.float64) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a.to(dtype)
    return torch.as_tensor(np.asarray(a), dtype=dtype)


class BatchedLogReg:
    """F logistic regressions on the rows of one feature matrix (see module docstring).

    Args:
        X: (n, d) features.
        y: (n,) integer class labels in ``[0, n_classes)``.
        n_classes: K >= 2. Two classes use the binary (sigmoid) model, more the multinomial one.
    """

    def __init__(self, X, y, n_classes: int):
        X = _as_tensor(X)
        if X.ndim != 2 or X.shape[0] == 0:
            raise ValueError(f"X must be a non-empty (n, d) matrix, got shape {tuple(X.shape)}")
        if not torch.isfinite(X).all():
            raise ValueError("X contains NaN or infinite values")
        y = torch.as_tensor(np.asarray(y), dtype=torch.long)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {tuple(y.shape)}")
        if n_classes < 2:
            raise ValueError(f"n_classes must be at least 2, got {n_classes}")
        if y.min() < 0 or y.max() >= n_classes:
            raise ValueError(f"labels must lie in [0, {n_classes}), got [{int(y.min())}, {int(y.max())}]")
        n, d = X.shape
        # The intercept is a constant feature whose weight the penalty leaves out.
        self.X = torch.cat([X, torch.ones(n, 1, dtype=X.dtype)], dim=1)
        self.y = y
        self.K = n_classes
        self.H = 1 if n_classes == 2 else n_classes
        self.p = d + 1
        if self.H == 1:
            self.Y = y.to(X.dtype)[:, None, None]  # (n, 1, 1)
        else:
            self.Y = torch.nn.functional.one_hot(y, n_classes).to(X.dtype)[:, None, :]  # (n, 1, K)
        # Penalty mask: 1 for weights, 0 for the intercept row.
        self.R = torch.ones(self.p, 1, 1, dtype=X.dtype)
        self.R[-1] = 0.0

    # ----- pieces of the objective -----
    def logits(self, W: torch.Tensor) -> torch.Tensor:
        """(p, F, H) weights -> (n, F, H) logits."""
        p, F, H = W.shape
        return (self.X @ W.reshape(p, F * H)).reshape(-1, F, H)

    def _row_loss(self, Z: torch.Tensor) -> torch.Tensor:
        """Per-row loss (n, F) from logits (n, F, H)."""
        if self.H == 1:
            z = Z[..., 0]
            # log(1 + e^z) - y z, written with softplus so that nothing overflows.
            return torch.nn.functional.softplus(z) - self.Y[..., 0] * z
        return torch.logsumexp(Z, dim=2) - (Z * self.Y).sum(dim=2)

    def _probs(self, Z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(Z) if self.H == 1 else torch.softmax(Z, dim=2)

    def _objective(self, W, Z, M, C) -> torch.Tensor:
        """(F,) values of J_f."""
        pen = 0.5 * (self.R * W * W).sum(dim=(0, 2))
        return pen + C * (M * self._row_loss(Z)).sum(dim=0)

    def _gradient(self, W, P, M, C) -> torch.Tensor:
        """(p, F, H) gradient of J_f; P are the probabilities at W."""
        p, F, H = W.shape
        resid = (P - self.Y) * M[:, :, None]
        g = (self.X.T @ resid.reshape(-1, F * H)).reshape(p, F, H)
        return self.R * W + C[None, :, None] * g

    def _curv_times(self, P, A) -> torch.Tensor:
        """Per-row Hessian of the loss in the logits applied to A (n, F, H)."""
        if self.H == 1:
            return P * (1.0 - P) * A
        return P * A - P * (P * A).sum(dim=2, keepdim=True)

    def _hvp(self, V, P, M, C) -> torch.Tensor:
        p, F, H = V.shape
        A = self.logits(V)
        B = self._curv_times(P, A) * M[:, :, None]
        return self.R * V + C[None, :, None] * (self.X.T @ B.reshape(-1, F * H)).reshape(p, F, H)

    def _preconditioners(self, P, M, C):
        """Cholesky factors of R + c X^T diag(dbar) X for every distinct c in C."""
        # dbar: per-row curvature averaged over the problems (and over classes), including the
        # row masks, so that it is close to each problem's own Hessian.
        curv = P * (1.0 - P)  # (n, F, H) diagonal of the per-row Hessian
        dbar = (curv.mean(dim=2) * M).mean(dim=1)  # (n,)
        G = self.X.T @ (self.X * dbar[:, None])  # (p, p)
        # M has rows that each problem uses with prob. ~ mean(M); dbar already includes that.
        Rdiag = torch.diag(self.R[:, 0, 0])
        factors = {}
        for c in torch.unique(C).tolist():
            A = Rdiag + c * G
            # A tiny ridge keeps the factorization defined for an all-zero feature column.
            A = A + 1e-10 * (1.0 + A.diagonal().mean()) * torch.eye(self.p, dtype=A.dtype)
            factors[c] = torch.linalg.cholesky(A)
        return factors

    @staticmethod
    def _apply_prec(factors, C, Rv) -> torch.Tensor:
        out = torch.empty_like(Rv)
        p, F, H = Rv.shape
        for c, L in factors.items():
            cols = (C == c).nonzero(as_tuple=True)[0]
            block = Rv[:, cols, :].reshape(p, -1)
            out[:, cols, :] = torch.cholesky_solve(block, L).reshape(p, len(cols), H)
        return out

    # ----- the solver -----
    def fit(self, train_mask, C, W0=None, tol: float = 1e-8, max_newton: int = 100,
            max_cg: int = 200, threads: int | None = None) -> torch.Tensor:
        """Solve the F problems; returns weights (d + 1, F, H).

        Args:
            train_mask: (n, F) 0/1 (or bool): which rows problem f trains on.
            C: scalar or (F,) inverse regularization strengths (scikit-learn's C), > 0.
            W0: optional (d + 1, F, H) warm start.
            tol: stop problem f when the max-abs gradient of J_f / (C_f n_f) (scikit-learn's
                scaling of the objective) is below ``tol``.
            threads: torch threads for the solve (default ``DEFAULT_THREADS``).
        """
        with torch_threads(DEFAULT_THREADS if threads is None else threads):
            return self._fit(train_mask, C, W0, tol, max_newton, max_cg)

    def _fit(self, train_mask, C, W0, tol, max_newton, max_cg) -> torch.Tensor:
        M = _as_tensor(train_mask)
        n = self.X.shape[0]
        if M.ndim != 2 or M.shape[0] != n:
            raise ValueError(f"train_mask must have shape ({n}, F), got {tuple(M.shape)}")
        F = M.shape[1]
        C = _as_tensor(C)
        if C.ndim == 0:
            C = C.repeat(F)
        if C.shape != (F,):
            raise ValueError(f"C must be a scalar or have shape ({F},), got {tuple(C.shape)}")
        if not (C > 0).all():
            raise ValueError("every C must be positive")
        n_f = M.sum(dim=0)
        if (n_f == 0).any():
            raise ValueError("a problem has an empty training set (an all-zero train_mask column)")
        W = torch.zeros(self.p, F, self.H, dtype=self.X.dtype) if W0 is None else _as_tensor(W0).clone()
        if W.shape != (self.p, F, self.H):
            raise ValueError(f"W0 must have shape {(self.p, F, self.H)}, got {tuple(W.shape)}")
        scale = C * n_f  # J_f / scale is scikit-learn's objective

        Z = self.logits(W)
        J = self._objective(W, Z, M, C)
        active = torch.ones(F, dtype=torch.bool)
        self.n_newton = 0
        self.n_cg = 0
        for _ in range(max_newton):
            P = self._probs(Z)
            g = self._gradient(W, P, M, C)
            gmax = g.abs().amax(dim=(0, 2)) / scale
            active = gmax > tol
            if not active.any():
                break
            self.n_newton += 1
            g = g * active[None, :, None]
            # ---- truncated Newton direction: solve H s = -g by preconditioned CG ----
            factors = self._preconditioners(P, M, C)
            s = torch.zeros_like(W)
            r = -g
            zr = self._apply_prec(factors, C, r)
            d = zr.clone()
            rz = (r * zr).sum(dim=(0, 2))
            gnorm = g.norm(dim=(0, 2))
            # Forcing term: loose far from the optimum, tight near it (superlinear convergence).
            eta = torch.clamp(torch.sqrt(gmax), max=0.1)
            cg_on = active.clone()
            for _ in range(max_cg):
                if not cg_on.any():
                    break
                self.n_cg += 1
                Hd = self._hvp(d, P, M, C)
                dHd = (d * Hd).sum(dim=(0, 2))
                alpha = torch.where(cg_on & (dHd > 0), rz / torch.where(dHd > 0, dHd, 1.0), 0.0)
                s = s + alpha[None, :, None] * d
                r = r - alpha[None, :, None] * Hd
                cg_on = cg_on & (r.norm(dim=(0, 2)) > eta * gnorm)
                zr = self._apply_prec(factors, C, r)
                rz_new = (r * zr).sum(dim=(0, 2))
                beta = torch.where(cg_on, rz_new / torch.where(rz > 0, rz, 1.0), 0.0)
                d = zr + beta[None, :, None] * d
                rz = rz_new
            # ---- Armijo backtracking; logits are linear in the step: Z + t * X s ----
            Zs = self.logits(s)
            slope = (g * s).sum(dim=(0, 2))  # < 0 for a descent direction
            t = torch.ones(F, dtype=W.dtype)
            accepted = ~active
            for _ in range(60):
                Wt = W + t[None, :, None] * s
                Jt = self._objective(Wt, Z + t[None, :, None] * Zs, M, C)
                ok = Jt <= J + 1e-4 * t * slope
                accepted = accepted | ok
                if accepted.all():
                    break
                t = torch.where(accepted, t, 0.5 * t)
            # A problem whose line search failed is at the limit of float precision: keep it.
            t = torch.where(active & accepted, t, 0.0)
            W = W + t[None, :, None] * s
            Z = Z + t[None, :, None] * Zs
            J = self._objective(W, Z, M, C)
            if not (active & (t > 0)).any():
                break
        self.converged = ~active
        return W

    def decision(self, W: torch.Tensor, rows=None) -> torch.Tensor:
        """Logits (n_rows, F, H) of every problem on the given rows (all rows by default)."""
        X = self.X if rows is None else self.X[torch.as_tensor(rows)]
        p, F, H = W.shape
        return (X @ W.reshape(p, F * H)).reshape(-1, F, H)

    def predict(self, W: torch.Tensor, rows=None) -> torch.Tensor:
        """(n_rows, F) predicted labels, with scikit-learn's rule: binary ``z > 0`` -> class 1,
        multinomial the first class of largest logit."""
        Z = self.decision(W, rows)
        if self.H == 1:
            return (Z[..., 0] > 0).long()
        return Z.argmax(dim=2)


def fit_logreg(X, y, C: float, n_classes: int | None = None, **kw):
    """One logistic regression on all rows of X (convenience wrapper); returns (model, W)."""
    y = np.asarray(y)
    K = int(y.max()) + 1 if n_classes is None else n_classes
    model = BatchedLogReg(X, y, max(K, 2))
    W = model.fit(torch.ones(len(y), 1, dtype=torch.float64), C, **kw)
    return model, W


def predict_logreg(model: BatchedLogReg, W: torch.Tensor, X) -> np.ndarray:
    """Labels for new rows X (m, d) from weights W (d + 1, F, H); returns (m, F)."""
    X = _as_tensor(X)
    Xa = torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype)], dim=1)
    p, F, H = W.shape
    Z = (Xa @ W.reshape(p, F * H)).reshape(-1, F, H)
    if H == 1:
        return (Z[..., 0] > 0).long().numpy()
    return Z.argmax(dim=2).numpy()
