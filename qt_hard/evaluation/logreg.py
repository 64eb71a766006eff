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
``R + C * X^T diag(dbar_k) X``, block-diagonal over the classes k of the multinomial model (each
class with its own average curvature, cross-class terms dropped); because the problems' row sets overlap heavily, it is close to every
problem's own Hessian and CG needs only a few iterations. Warm starts (``W0``) along an
increasing C path cut the Newton iterations further.

What keeps wide embeddings (d in the thousands) fast, none of which moves the solution:

* **Row-space reduction when d >= n.** Every problem's penalized weights lie in the span of its
  training rows (the gradient of the loss is ``X^T r``), hence in the row space of X. With
  ``X = R^T Q^T`` (a QR factorization of ``X^T``, Q with orthonormal columns) the substitution
  ``w = Q v`` leaves ``X w = R^T v`` and ``||w|| = ||v||`` unchanged, so the problems are solved
  exactly in n instead of d coordinates and mapped back with Q for new rows.
* **A reused, single-precision preconditioner.** The Gram matrix ``X^T diag(dbar) X`` (the
  ``n d^2`` step) and its Cholesky factors are computed and applied in float32 (a preconditioner
  only has to be positive definite: its accuracy changes how many CG steps are taken, never the
  point they converge to). The Gram is kept across Newton iterations and across the fits of a C
  path, and refreshed when its staleness has cost as much as a refresh: after each Newton step,
  the CG work beyond what the step would have taken at the rate right after the last refresh
  (CG steps per e-fold of residual reduction) is added up, in a flop model of the products and
  solves, and the Gram is rebuilt once that sum reaches the model's cost of a rebuild (Gram and
  factorizations). This is the rent-or-buy rule: never more than twice the work of the best
  refresh schedule in hindsight, with no threshold to tune per width (a fixed ratio of rates
  refreshed TREC's six 2,401-d class Grams at every C of its path and cost 1.4x the CPU time at
  2,400-d). Only the ``d^3 / 3`` factorization is redone per C.
* **Single-precision Hessian-vector products.** CG only has to reach the forcing tolerance
  ``eta * ||g||`` (``eta >= 1e-4`` in practice); the gradient, objective, line search and
  stopping rule stay in float64, so the iterates still converge to the float64 optimum
  (an inexact Newton method).
* **Products laid out for few problems.** ``X @ V`` and ``X^T @ B`` are computed as
  ``(V^T X^T)^T`` and ``(B^T X)^T`` against row-major copies of X and X^T: with F * H in the
  tens (TREC, MRPC, the refits) the plain forms ran at a fifteenth of the speed.
* **CG on the problems still iterating.** The batched CG loop multiplies only the columns of
  problems whose CG has not yet reached its tolerance (problems converge, and leave the Newton
  loop, at different times): the same arithmetic per column, fewer columns (MPQA, whose 100
  fold problems' CG counts spread widely near separability: 27.6 -> 24.4 CPU s at 1,200-d,
  851 -> 464 at 2,400-d).
* **The multinomial model on its sum-zero subspace.** Adding one vector to every class's weights
  moves no probability, so the optimum's class weights sum to zero; Newton's system is solved on
  that subspace (starting point, preconditioned residuals projected), where the unpenalized
  intercepts' common shift, a zero-curvature direction the block-diagonal preconditioner cannot
  see, is gone.

``penalize_intercept=True`` gives liblinear's objective instead (scikit-learn's
``solver="liblinear"``, the default before scikit-learn 0.22, used by the skip-thoughts
evaluators): the intercept is a constant feature 1 whose weight is penalized like the others.
``fit(targets=...)`` gives every problem its own 0/1 labels (binary model), which is how
one-vs-rest multi-class problems are batched.

Shapes: X (n, d); y (n,) integer labels in [0, K); train_mask (n, F); C (F,);
weights (q + 1, F, H) with H = 1 for K = 2 and H = K otherwise (last row is the intercept) and
q = d, or q = n when the row-space reduction is on (:meth:`BatchedLogReg.full_weights` maps back).
"""

from __future__ import annotations

import os

import numpy as np
import torch

from qt_hard.errors import ArgumentError, DeviceUnavailableError
from qt_hard.threads import torch_threads

__all__ = ["BatchedLogReg", "decision_logreg", "label_of", "predict_logreg", "torch_threads"]

# Threads for the solver. One by default: the products here are mid-sized, and on a shared
# machine extra torch threads that wait on busy cores slow the solve down many times over (and a
# fixed thread count keeps results bit-for-bit reproducible). QT_HARD_EVAL_THREADS overrides.
DEFAULT_THREADS = int(os.environ.get("QT_HARD_EVAL_THREADS", "1"))
# Where the solver's tensors live: "cpu" by default; "cuda" (or "cuda:N") solves on a GPU, same
# arithmetic (float64 objective and line search, float32 products and preconditioner), different
# kernels, so results agree to rounding, not bit for bit. QT_HARD_EVAL_DEVICE overrides; so does
# ``qt-hard eval senteval --device``.
DEFAULT_DEVICE = os.environ.get("QT_HARD_EVAL_DEVICE", "cpu")


def check_device(device, what: str = "solver device") -> torch.device:
    """``device`` as a ``torch.device``; ``DeviceUnavailableError`` (a ``ValueError``, a one-line
    user error on the command line) when it names CUDA and torch sees no CUDA device. ``what``
    names the setting in the message (``--device``, ``--eval-device``); ``ArgumentError`` for a
    string that names no device."""
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ArgumentError(f"{what} {device!r}: not a device (cpu, cuda, cuda:N)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError(f"{what} {device}: torch sees no CUDA device on this machine")
    return dev


def _cholesky_solve(B: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """``(L L^T)^{-1} B`` for factors L (H, p, p) and B (H, p, k), as two triangular solves per
    block: the same arithmetic as ``torch.cholesky_solve``, which on one CPU thread ran 2-5x slower
    with the few right-hand sides CG has here (p = 2,401, 6 blocks of 5 columns: 0.119 against
    0.026 s; p = 4,077, 5 columns: 0.062 against 0.013 s)."""
    return torch.stack(
        [
            torch.linalg.solve_triangular(L[h].mT, torch.linalg.solve_triangular(L[h], B[h], upper=False), upper=True)
            for h in range(L.shape[0])
        ]
    )


def _as_tensor(a, dtype=torch.float64, device=None) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        return a.to(dtype=dtype, device=device if device is not None else a.device)
    return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)


def _checked_problem(X, y, n_classes: int, reduce, device) -> tuple[torch.Tensor, torch.Tensor]:
    """X (n, d) as a float64 tensor and y (n,) as a long tensor on ``device``, after
    :class:`BatchedLogReg`'s checks of X, y, ``n_classes`` and ``reduce`` (ValueError otherwise)."""
    X = _as_tensor(X, device=device)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty (n, d) matrix, got shape {tuple(X.shape)}")
    if not torch.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values")
    y = torch.as_tensor(np.asarray(y), dtype=torch.long, device=device)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {tuple(y.shape)}")
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2, got {n_classes}")
    if y.min() < 0 or y.max() >= n_classes:
        raise ValueError(f"labels must lie in [0, {n_classes}), got [{int(y.min())}, {int(y.max())}]")
    if reduce not in ("auto", True, False):
        raise ValueError(f"reduce must be 'auto', True or False, got {reduce!r}")
    return X, y


class BatchedLogReg:
    """F logistic regressions on the rows of one feature matrix (see module docstring).

    Args:
        X: (n, d) features.
        y: (n,) integer class labels in ``[0, n_classes)``.
        n_classes: K >= 2. Two classes use the binary (sigmoid) model, more the multinomial one.
        penalize_intercept: liblinear's objective (the intercept's weight is penalized).
        reduce: solve in the row space of X (exact; see module docstring): ``"auto"`` when
            d >= n, or True / False.
        refresh_cost: recompute the preconditioner's Gram matrix once the modelled cost of the
            CG steps that its staleness added since the last refresh reaches ``refresh_cost``
            times the modelled cost of a refresh (see the module docstring; 0: at every Newton
            step, ``float('inf')``: never after the first).
    """

    def __init__(
        self,
        X,
        y,
        n_classes: int,
        penalize_intercept: bool = False,
        reduce: bool | str = "auto",
        refresh_cost: float = 1.0,
        device: str | torch.device | None = None,
    ):
        self.device = check_device(DEFAULT_DEVICE if device is None else device)
        X, y = _checked_problem(X, y, n_classes, reduce, self.device)
        n, d = X.shape
        self.d = d
        self.Q = None  # (Householder reflectors, their scales) of X^T's QR, when reduced
        if reduce is True or (reduce == "auto" and d >= n):
            X = self._row_space(X)
        # The intercept is a constant feature (penalized or not, see R below).
        self.X = torch.cat([X, torch.ones(n, 1, dtype=X.dtype, device=self.device)], dim=1)
        # float32 copy for the Hessian-vector products and the preconditioner's Gram matrix, and
        # transposed copies: see _times.
        self.X32 = self.X.to(torch.float32)
        self.XT = self.X.T.contiguous()
        self.XT32 = self.X32.T.contiguous()
        self.y = y
        self.K = n_classes
        self.H = 1 if n_classes == 2 else n_classes
        self.p = self.X.shape[1]
        self.Y = self._targets_from_labels()
        # Penalty mask: 1 for weights, 0 for the intercept row unless liblinear's objective.
        self.R = torch.ones(self.p, 1, 1, dtype=X.dtype, device=self.device)
        if not penalize_intercept:
            self.R[-1] = 0.0
        if not refresh_cost >= 0:
            raise ValueError(f"refresh_cost must be >= 0, got {refresh_cost}")
        self.refresh_cost = refresh_cost
        self._gram = None  # float32 (H, p, p) Grams with averaged curvature, reused across steps
        self._base_rate = None  # CG steps per e-fold of residual right after the last refresh
        self._excess = 0.0  # modelled CG work that staleness added since the last refresh
        self.n_gram = 0
        self.n_factor = 0

    def _row_space(self, X: torch.Tensor) -> torch.Tensor:
        """(n, min(n, d)) the rows of X (n, d) in an orthonormal basis of their span; keeps it in ``self.Q``."""
        n = X.shape[0]
        # X^T = Q R  =>  X = R^T Q^T: the rows of R^T are the rows of X in the orthonormal
        # basis Q of their span (n <= d coordinates instead of d).
        # Only R is formed: Q stays as its Householder reflectors (geqrf), applied to the
        # few weight columns by ormqr when mapping back. Forming Q (orgqr) cost as much again
        # (MRPC at 2,400-d, X^T 4,800 x 4,076: 4.4 s for geqrf, 3.9 s more for Q).
        a, tau = torch.geqrf(X.T)
        self.Q = (a, tau)
        return torch.triu(a[:n]).T

    def _targets_from_labels(self) -> torch.Tensor:
        if self.H == 1:
            return self.y.to(self.X.dtype)[:, None, None]  # (n, 1, 1)
        return torch.nn.functional.one_hot(self.y, self.K).to(self.X.dtype)[:, None, :]  # (n, 1, K)

    # ----- products with X -----
    # Both are written with the few problem columns as the rows of the left operand, against a
    # row-major copy of X or X^T: with F * H in the tens, ``X^T @ B`` as written ran 15-30x
    # slower (1.6 against 25 GFLOP/s on one core, n = 4,076, p = 1,201 to 4,801, F = 10) and
    # ``X @ V`` 2.5x slower than ``(B^T X)^T`` and ``(V^T X^T)^T``; equal at F = 100.
    def _times(self, V: torch.Tensor, single: bool = False) -> torch.Tensor:
        """X @ V for V (p, k): (n, k); in float32 with ``single``."""
        return (V.T @ (self.XT32 if single else self.XT)).T

    def _t_times(self, B: torch.Tensor, single: bool = False) -> torch.Tensor:
        """X^T @ B for B (n, k): (p, k); in float32 with ``single``."""
        return (B.T @ (self.X32 if single else self.X)).T

    # ----- pieces of the objective -----
    def logits(self, W: torch.Tensor) -> torch.Tensor:
        """(p, F, H) weights -> (n, F, H) logits."""
        p, F, H = W.shape
        return self._times(W.reshape(p, F * H)).reshape(-1, F, H)

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
        g = self._t_times(resid.reshape(-1, F * H)).reshape(p, F, H)
        return self.R * W + C[None, :, None] * g

    def _curv_times(self, P, A) -> torch.Tensor:
        """Per-row Hessian of the loss in the logits applied to A (n, F, H)."""
        if self.H == 1:
            return P * (1.0 - P) * A
        return P * A - P * (P * A).sum(dim=2, keepdim=True)

    def _hvp(self, V, P32, M32, C) -> torch.Tensor:
        """Hessian of J_f times V (p, F, H), the two products in float32 (see module docstring)."""
        p, F, H = V.shape
        A = self._times(V.to(torch.float32).reshape(p, F * H), single=True).reshape(-1, F, H)
        B = self._curv_times(P32, A) * M32[:, :, None]
        XtB = self._t_times(B.reshape(-1, F * H), single=True).reshape(p, F, H).to(V.dtype)
        return self.R * V + C[None, :, None] * XtB

    def _refresh_gram(self, P, M) -> None:
        """Gram matrices ``X^T diag(dbar_k) X``, one per output column k (H of them), with
        ``dbar_k`` the per-row curvature ``p_k (1 - p_k)`` of column k averaged over the problems,
        masks included, so that ``C * Gram_k`` is close to each problem's diagonal Hessian block
        of class k (the multinomial model's classes differ a lot in curvature: a rare class has
        small p_k). Float32: only the preconditioner uses them. Shape (H, p, p)."""
        curv = P * (1.0 - P)  # (n, F, H) diagonal of the per-row Hessian
        dbar = (curv * M[:, :, None]).mean(dim=1).to(torch.float32)  # (n, H)
        X32 = self.X32
        self._gram = torch.stack([X32.T @ (X32 * dbar[:, k : k + 1]) for k in range(self.H)])
        self.n_gram += 1

    def _preconditioners(self, C):
        """Cholesky factors (H, p, p) of ``R + c * Gram_k`` for every distinct C value c of the
        problems (keyed by c). Float32 (a
        preconditioner only has to be symmetric positive definite: its accuracy changes how many
        CG steps are taken, not the point they converge to); float64 where float32 rounding
        breaks positive definiteness."""
        Rdiag = torch.diag(self.R[:, 0, 0]).to(torch.float32)
        eye = torch.eye(self.p, dtype=torch.float32, device=self.device)
        factors = {}
        for c in sorted(set(C.tolist())):
            A = Rdiag + c * self._gram
            # A ridge keeps the factorization defined for an all-zero feature column and for the
            # float32 rounding of the Gram matrix; it changes the preconditioner, not the solution.
            ridge = 1e-5 * (1.0 + A.diagonal(dim1=1, dim2=2).mean(dim=1))
            A = A + ridge[:, None, None] * eye
            L, info = torch.linalg.cholesky_ex(A)
            if (info != 0).any():
                # float32 rounding broke positive definiteness: factor in float64, and where the
                # Gram's own rounding exceeded the ridge (seen on a GPU with features of a wide
                # dynamic range) grow the ridge tenfold until it holds. The solution does not
                # move, only CG's step count.
                A64, eye64 = A.to(torch.float64), eye.to(torch.float64)
                scale = 1.0 + A64.diagonal(dim1=1, dim2=2).abs().amax(dim=1)
                boost = torch.zeros_like(scale)
                while True:
                    L, info = torch.linalg.cholesky_ex(A64 + boost[:, None, None] * eye64)
                    if not (info != 0).any():
                        break
                    boost = torch.where(boost > 0, 10.0 * boost, 1e-4 * scale)
                    if bool((boost > 1e6 * scale).any()):
                        raise FloatingPointError("the preconditioner could not be made positive definite")
                L = L.to(torch.float32)
            factors[c] = L
            self.n_factor += 1
        return factors

    # ----- the flop model of the rent-or-buy refresh rule -----
    # Triangular solves and Cholesky factorizations ran at about a third of the float32 matrix
    # product's rate on one core (TREC, p = 2,401: products 70-80, solves 29, factorization 26
    # GFLOP/s), so they count SLOW times their flops.
    SLOW = 2.5

    def _cg_cost(self, column_steps: int) -> float:
        """Modelled cost of ``column_steps`` CG steps of one problem each: two products with X
        (4 n p flops per output column) and two triangular solves (2 p^2 per output column)."""
        n, p = self.X.shape
        return column_steps * self.H * (4.0 * n * p + self.SLOW * 2.0 * p * p)

    def _refresh_cost(self, C) -> float:
        """Modelled cost of a refresh: the Grams (2 n p^2 flops each) and the factorizations of
        every distinct C (p^3 / 3 each), per preconditioner block."""
        n, p = self.X.shape
        blocks = self._gram.shape[0] if self._gram is not None else self.H
        return blocks * (2.0 * n * p * p + len(set(C.tolist())) * self.SLOW * p**3 / 3.0)

    def _apply_prec(self, factors, C, Rv) -> torch.Tensor:
        """The preconditioner's inverse applied to Rv (p, F, H): each problem through the factor
        of its C, class k through its own block (float32 triangular solves); for the multinomial
        model projected on the weights whose classes sum to zero (see ``_project``). ``C``: (F,)
        of Rv's columns."""
        p, F, H = Rv.shape
        if len(factors) == 1:  # one C: no gather / scatter of columns
            (L,) = factors.values()
            out = _cholesky_solve(Rv.permute(2, 0, 1).to(torch.float32), L)
            return self._project(out.permute(1, 2, 0).to(Rv.dtype))
        out = torch.empty_like(Rv)
        for c, L in factors.items():
            idx = (C == c).nonzero(as_tuple=True)[0]
            if len(idx) == 0:  # no column of this C is still iterating
                continue
            block = Rv[:, idx, :].permute(2, 0, 1).to(torch.float32)  # (H, p, n_cols)
            out[:, idx, :] = _cholesky_solve(block, L).permute(1, 2, 0).to(Rv.dtype)
        return self._project(out)

    def _project(self, V) -> torch.Tensor:
        """Multinomial model: V minus its mean over the classes (identity for the binary one).
        Adding one vector to every class's weights moves no probability, so the objective's
        minimizer has classes summing to zero (its penalty alone decides that direction); the
        Newton system is solved on that subspace, where the softmax Hessian is not singular
        (with the unpenalized intercepts' common shift it is, and a block-diagonal
        preconditioner does not see that direction)."""
        if self.H == 1:
            return V
        return V - V.mean(dim=2, keepdim=True)

    # ----- the solver -----
    def fit(
        self,
        train_mask,
        C,
        W0=None,
        tol: float = 1e-8,
        max_newton: int = 100,
        max_cg: int = 200,
        threads: int | None = None,
        targets=None,
    ) -> torch.Tensor:
        """Solve the F problems; returns weights (q + 1, F, H), on the CPU whatever the solver's
        device (inputs may live anywhere: they are moved to the solver's device).

        Args:
            train_mask: (n, F) 0/1 (or bool): which rows problem f trains on.
            C: scalar or (F,) inverse regularization strengths (scikit-learn's C), > 0.
            W0: optional (q + 1, F, H) warm start.
            tol: stop problem f when the max-abs gradient of J_f / (C_f n_f) (scikit-learn's
                scaling of the objective) is below ``tol``.
            threads: torch threads for the solve (default ``DEFAULT_THREADS``).
            targets: optional (n, F) 0/1 labels, one column per problem (binary model only),
                in place of ``y``: e.g. one-vs-rest columns.
        """
        with torch_threads(DEFAULT_THREADS if threads is None else threads):
            if targets is None:
                return self._fit(train_mask, C, W0, tol, max_newton, max_cg)
            if self.H != 1:
                raise ValueError("per-problem targets need the binary model (n_classes=2)")
            T = _as_tensor(targets, self.X.dtype, self.device)
            if T.ndim != 2 or T.shape[0] != self.X.shape[0] or ((T != 0) & (T != 1)).any():
                raise ValueError(f"targets must be 0/1 of shape ({self.X.shape[0]}, F), got {tuple(T.shape)}")
            self.Y = T[:, :, None]
            try:
                return self._fit(train_mask, C, W0, tol, max_newton, max_cg)
            finally:
                self.Y = self._targets_from_labels()

    def _fit(self, train_mask, C, W0, tol, max_newton, max_cg) -> torch.Tensor:
        """:meth:`fit` on ``self.Y``: truncated Newton steps until every problem's scaled gradient is
        below ``tol`` (or ``max_newton`` steps), each a preconditioned CG direction
        (:meth:`_newton_direction`) and an Armijo line search (:meth:`_line_search`)."""
        M, C, n_f, W = self._fit_inputs(train_mask, C, W0)
        F = M.shape[1]
        scale = C * n_f  # J_f / scale is scikit-learn's objective
        M32 = M.to(torch.float32)

        Z = self.logits(W)
        J = self._objective(W, Z, M, C)
        active = torch.ones(F, dtype=torch.bool, device=self.device)
        self.n_newton = 0
        self.n_cg = 0
        factors, last_cg = None, None
        last_eta, last_on, last_cols = None, None, 0  # the previous Newton step's CG (set below)
        for _ in range(max_newton):
            P = self._probs(Z)
            g = self._gradient(W, P, M, C)
            gmax = g.abs().amax(dim=(0, 2)) / scale
            active = gmax > tol
            if not active.any():
                break
            self.n_newton += 1
            g = g * active[None, :, None]
            # Forcing term: loose far from the optimum, tight near it (superlinear convergence).
            eta = torch.clamp(torch.sqrt(gmax), max=0.1)
            # CG steps per factor e of residual reduction: a preconditioner that has gone stale
            # (the curvature moved since its Gram) shows as a rising rate.
            cg_rate = None if last_cg is None else last_cg / float(torch.log(1.0 / last_eta[last_on]).max())
            factors = self._current_preconditioners(factors, cg_rate, last_cols, P, M, C)
            last_eta, last_on = eta, active
            s, last_cg, last_cols = self._newton_direction(W, g, P, M32, C, factors, eta, active, max_cg)
            W, Z, J, t = self._line_search(W, Z, J, g, s, M, C, active)
            if not (active & (t > 0)).any():
                break
        self.converged = (~active).cpu()
        return W.cpu()

    def _fit_inputs(self, train_mask, C, W0):
        """(train mask, C per problem, training rows per problem, starting weights) of a fit, each
        checked against the others' shapes; the start projected onto classes summing to zero."""
        dev = self.device
        M = _as_tensor(train_mask, device=dev)
        n = self.X.shape[0]
        if M.ndim != 2 or M.shape[0] != n:
            raise ValueError(f"train_mask must have shape ({n}, F), got {tuple(M.shape)}")
        F = M.shape[1]
        if self.Y.shape[1] not in (1, F):
            raise ValueError(f"targets have {self.Y.shape[1]} columns for {F} problems")
        C = _as_tensor(C, device=dev)
        if C.ndim == 0:
            C = C.repeat(F)
        if C.shape != (F,):
            raise ValueError(f"C must be a scalar or have shape ({F},), got {tuple(C.shape)}")
        if not (C > 0).all():
            raise ValueError("every C must be positive")
        n_f = M.sum(dim=0)
        if (n_f == 0).any():
            raise ValueError("a problem has an empty training set (an all-zero train_mask column)")
        W = (
            torch.zeros(self.p, F, self.H, dtype=self.X.dtype, device=dev)
            if W0 is None
            else _as_tensor(W0, device=dev).clone()
        )
        if W.shape != (self.p, F, self.H):
            raise ValueError(f"W0 must have shape {(self.p, F, self.H)}, got {tuple(W.shape)}")
        # Classes summing to zero (see _project): moving W0 there lowers the penalty only.
        return M, C, n_f, self._project(W)

    def _current_preconditioners(self, factors, cg_rate, last_cols: int, P, M, C):
        """The preconditioner's Cholesky factors for this Newton step: the Gram matrices are kept
        (across steps and fits) until the CG work their staleness added has cost as much as
        rebuilding them (rent or buy); only their factors depend on this fit's C. ``factors`` are the
        previous step's (None at the first), ``cg_rate`` the previous CG's steps per e-fold of
        residual, ``last_cols`` its column-steps."""
        if cg_rate is not None and self._base_rate is not None and cg_rate > self._base_rate:
            self._excess += (1.0 - self._base_rate / cg_rate) * self._cg_cost(last_cols)
        stale = (
            cg_rate is not None
            and self._base_rate is not None
            and self._excess >= self.refresh_cost * self._refresh_cost(C)
        )
        if self._gram is None or self.refresh_cost == 0 or stale:
            self._refresh_gram(P, M)
            factors, self._base_rate, self._excess = None, None, 0.0
        elif self._base_rate is None and cg_rate is not None:
            self._base_rate = cg_rate
        if factors is None:
            factors = self._preconditioners(C)
        return factors

    def _newton_direction(self, W, g, P, M32, C, factors, eta, active, max_cg):
        """The truncated Newton direction at ``W``: H s = -g solved by preconditioned CG per problem,
        to the forcing tolerance ``eta * |g|``. Returns (s, CG steps taken, column-steps taken)."""
        P32 = P.to(torch.float32)
        s = torch.zeros_like(W)
        r = -g
        zr = self._apply_prec(factors, C, r)
        d = zr.clone()
        rz = (r * zr).sum(dim=(0, 2))
        gnorm = g.norm(dim=(0, 2))
        cg_on = active.clone()
        steps = 0
        cg_each = torch.zeros(g.shape[1], dtype=torch.long, device=self.device)
        # CG runs on the columns still iterating only: problems converge (and leave the
        # Newton loop) at different times, and the Hessian-vector product costs the same per
        # column whether its problem is done or not.
        cols = None
        for _ in range(max_cg):
            on = cg_on.nonzero(as_tuple=True)[0]
            if len(on) == 0:
                break
            if cols is None or len(on) != len(cols):  # gather when a column has left
                cols = on
                Pc, Mc, Cc, tol_c = P32[:, cols], M32[:, cols], C[cols], (eta * gnorm)[cols]
            self.n_cg += 1
            steps += 1
            live = cg_on[cols]
            cg_each[cols] += live
            dc = d[:, cols]
            Hd = self._hvp(dc, Pc, Mc, Cc)
            dHd = (dc * Hd).sum(dim=(0, 2))
            rz_c = rz[cols]
            alpha = torch.where(live & (dHd > 0), rz_c / torch.where(dHd > 0, dHd, 1.0), 0.0)
            s[:, cols] += alpha[None, :, None] * dc
            r_c = r[:, cols] - alpha[None, :, None] * Hd
            r[:, cols] = r_c
            # Stop at the forcing tolerance (inexact Newton, Eisenstat & Walker 1996, SIAM J.
            # Sci. Comput. 17(1)).
            still = live & (r_c.norm(dim=(0, 2)) > tol_c)
            cg_on[cols] = still
            zr = self._apply_prec(factors, Cc, r_c)
            rz_new = (r_c * zr).sum(dim=(0, 2))
            beta = torch.where(still, rz_new / torch.where(rz_c > 0, rz_c, 1.0), 0.0)
            d[:, cols] = zr + beta[None, :, None] * dc
            rz[cols] = rz_new
        return s, steps, int(cg_each.sum())  # column-steps: for the rent-or-buy rule

    def _line_search(self, W, Z, J, g, s, M, C, active):
        """Armijo backtracking along ``s`` for the ``active`` problems (logits are linear in the step:
        Z + t * X s). Returns the new (W, Z, J) and the step lengths t (0 for a problem whose line
        search failed, at the limit of float precision: it keeps its weights)."""
        Zs = self.logits(s)
        slope = (g * s).sum(dim=(0, 2))  # < 0 for a descent direction
        t = torch.ones(W.shape[1], dtype=W.dtype, device=self.device)
        accepted = ~active
        for _ in range(60):
            Wt = W + t[None, :, None] * s
            Jt = self._objective(Wt, Z + t[None, :, None] * Zs, M, C)
            ok = Jt <= J + 1e-4 * t * slope
            accepted = accepted | ok
            if accepted.all():
                break
            t = torch.where(accepted, t, 0.5 * t)
        t = torch.where(active & accepted, t, 0.0)
        W = W + t[None, :, None] * s
        Z = Z + t[None, :, None] * Zs
        return W, Z, self._objective(W, Z, M, C), t

    def full_weights(self, W: torch.Tensor) -> torch.Tensor:
        """Weights (d + 1, F, H) on the original features (undoes the row-space reduction), on the
        solver's device."""
        W = _as_tensor(W, device=self.device)
        if self.Q is None:
            return W
        p, F, H = W.shape
        a, tau = self.Q
        V = torch.zeros(self.d, F * H, dtype=a.dtype, device=a.device)
        V[: p - 1] = W[:-1].reshape(p - 1, F * H)
        Wd = torch.ormqr(a, tau, V).reshape(self.d, F, H)  # Q [v; 0] = (the first n columns of Q) v
        return torch.cat([Wd, W[-1:]], dim=0)

    def decision(self, W: torch.Tensor) -> torch.Tensor:
        """Logits (n, F, H) of every problem on the training rows, on the CPU."""
        return self.logits(_as_tensor(W, device=self.device)).cpu()


def label_of(Z: torch.Tensor) -> torch.Tensor:
    """(m, F) labels from logits (m, F, H), with scikit-learn's rule: binary ``z > 0`` -> class 1,
    multinomial the first class of largest logit."""
    return (Z[..., 0] > 0).long() if Z.shape[2] == 1 else Z.argmax(dim=2)


def decision_logreg(model: BatchedLogReg, W: torch.Tensor, X) -> torch.Tensor:
    """Logits (m, F, H) of new rows X (m, d) under the weights W that ``model.fit`` returned (on
    the CPU)."""
    X = _as_tensor(X, device=model.device)
    Wf = model.full_weights(W)
    if X.ndim != 2 or X.shape[1] != Wf.shape[0] - 1:
        raise ValueError(f"X must be (m, {Wf.shape[0] - 1}), got {tuple(X.shape)}")
    Xa = torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device)], dim=1)
    p, F, H = Wf.shape
    return (Xa @ Wf.reshape(p, F * H)).reshape(-1, F, H).cpu()


def predict_logreg(model: BatchedLogReg, W: torch.Tensor, X) -> np.ndarray:
    """Labels for new rows X (m, d) from weights W (as ``model.fit`` returned); returns (m, F)."""
    return label_of(decision_logreg(model, W, X)).numpy()
