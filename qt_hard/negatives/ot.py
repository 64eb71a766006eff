"""Entropic optimal transport (Cuturi 2013; Jiang, Ishwar & Aeron 2023, eq. 5).

Plain torch rather than POT: the coupling is needed on the same device as the scores every step,
for a masked (A, C) kernel. The iterates are the log-domain Sinkhorn iterates; only their
floating-point representation changes after the first one:

* iteration 1 runs in the log domain (``f = log a - LSE_j(log K + g)``, then the same for g), which
  absorbs the kernel's scale: afterwards every column of ``K~ = exp(log K + f + g)`` sums to exactly
  1/C' and every row holds an entry >= 1/(A' C');
* iterations 2..n scale ``K~`` in the exp domain, ``u = a / (K~ v)``, ``v = b / (K~^T u)``: two
  matrix-vector products per iteration instead of two log-sum-exps (each several passes with an
  ``exp``), which is what makes 20 iterations cheap;
* whenever a scaling leaves ``[e^-T, e^T]`` it is absorbed into (f, g) and ``K~`` recomputed
  (Schmitzer 2019's stabilized scaling), so an entry that underflows in ``K~`` stays negligible;
* ``log P = log K + (f + log u) + (g + log v)``, exact ``-inf`` where coupling is forbidden.

Should a scaling still turn non-finite, the whole solve is redone in the log domain: same iterates,
slower.
"""

from __future__ import annotations

import math

import torch


def _marginals(log_kernel: torch.Tensor):
    allowed = torch.isfinite(log_kernel)
    rows_ok, cols_ok = allowed.any(dim=1), allowed.any(dim=0)
    log_a = -math.log(max(int(rows_ok.sum()), 1))
    log_b = -math.log(max(int(cols_ok.sum()), 1))
    return rows_ok, cols_ok, log_a, log_b


def sinkhorn_log_domain(log_kernel: torch.Tensor, iters: int = 20) -> torch.Tensor:
    """The reference solver: every iteration in the log domain (see :func:`sinkhorn_log_coupling`)."""
    with torch.no_grad():
        log_kernel = log_kernel.detach()
        rows_ok, cols_ok, log_a, log_b = _marginals(log_kernel)
        f = log_kernel.new_zeros(log_kernel.shape[0])
        g = log_kernel.new_zeros(log_kernel.shape[1])
        for _ in range(iters):
            f = torch.where(rows_ok, log_a - torch.logsumexp(log_kernel + g[None, :], dim=1), 0.0)
            g = torch.where(cols_ok, log_b - torch.logsumexp(log_kernel + f[:, None], dim=0), 0.0)
        return f[:, None] + log_kernel + g[None, :]


def sinkhorn_log_coupling(log_kernel: torch.Tensor, iters: int = 20) -> torch.Tensor:
    """Log of the entropic OT coupling with uniform marginals.

    Args:
        log_kernel: (A, C) ``-cost / epsilon``, ``-inf`` where coupling is forbidden.
        iters: Sinkhorn iterations (each one row and one column projection).

    Returns:
        (A, C) ``log P`` with ``P = diag(e^f) K diag(e^g)``; after the last column projection the
        column sums are 1/C' and the row sums approach 1/A' (A', C' the rows / columns with at least
        one allowed entry). Forbidden entries stay ``-inf``. No gradient (costs are detached).
    """
    if iters <= 1:
        return sinkhorn_log_domain(log_kernel, iters)
    with torch.no_grad():
        log_kernel = log_kernel.detach()
        rows_ok, cols_ok, log_a, log_b = _marginals(log_kernel)
        f = torch.where(rows_ok, log_a - torch.logsumexp(log_kernel, dim=1), 0.0)
        # The first column step and the exp-domain kernel share one buffer: with t = log K + f and
        # m_j its column max, e^{t - m} gives the column sums S_j, g_j = log b - m_j - log S_j, and
        # K~ = e^{t - m} * e^{m + g} column-wise.
        kernel = log_kernel + f[:, None]
        m = kernel.amax(dim=0)
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        kernel.sub_(m[None, :]).exp_()
        g = torch.where(cols_ok, log_b - m - kernel.sum(dim=0).log(), 0.0)
        kernel.mul_(torch.exp(m + g)[None, :])
        a, b = math.exp(log_a), math.exp(log_b)
        # Absorb beyond e^T: products u_i v_j then stay below e^{2T}, far inside the float range.
        limit = 0.25 * math.log(torch.finfo(kernel.dtype).max)
        u = torch.ones_like(f)
        v = torch.ones_like(g)
        for _ in range(iters - 1):
            u = torch.where(rows_ok, a / (kernel @ v), 1.0)
            v = torch.where(cols_ok, b / (kernel.T @ u), 1.0)
            log_u, log_v = u.log(), v.log()
            if float(torch.maximum(log_u.abs().max(), log_v.abs().max())) > limit:
                f, g = f + log_u, g + log_v
                if not bool(torch.isfinite(f).all() & torch.isfinite(g).all()):
                    return sinkhorn_log_domain(log_kernel, iters)
                kernel = (log_kernel + f[:, None]).add_(g[None, :]).exp_()
                u, v = torch.ones_like(f), torch.ones_like(g)
        fu, gv = f + u.log(), g + v.log()
        if not bool(torch.isfinite(fu).all() & torch.isfinite(gv).all()):
            return sinkhorn_log_domain(log_kernel, iters)
        return (log_kernel + fu[:, None]).add_(gv[None, :])
