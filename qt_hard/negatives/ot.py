"""Entropic optimal transport in the log domain (Cuturi 2013; Jiang, Ishwar & Aeron 2023, eq. 5).

Plain torch rather than POT: the coupling is needed on the same device as the scores every step,
for a masked (A, C) kernel, and a few dozen batched ``logsumexp`` passes are all it takes.
"""

from __future__ import annotations

import math

import torch


def sinkhorn_log_coupling(log_kernel: torch.Tensor, iters: int = 20) -> torch.Tensor:
    """Log of the entropic OT coupling with uniform marginals.

    Args:
        log_kernel: (A, C) ``-cost / epsilon``, ``-inf`` where coupling is forbidden.
        iters: Sinkhorn iterations (each one row and one column projection).

    Returns:
        (A, C) ``log P`` with ``P = diag(e^f) K diag(e^g)``; after the last column projection the
        column sums are exactly 1/C' and the row sums approach 1/A' (A', C' the rows / columns with
        at least one allowed entry). Forbidden entries stay ``-inf``.
    """
    with torch.no_grad():
        log_kernel = log_kernel.detach()
        rows_ok = torch.isfinite(log_kernel).any(dim=1)
        cols_ok = torch.isfinite(log_kernel).any(dim=0)
        log_a = -math.log(max(int(rows_ok.sum()), 1))
        log_b = -math.log(max(int(cols_ok.sum()), 1))
        f = torch.zeros(log_kernel.shape[0], dtype=log_kernel.dtype, device=log_kernel.device)
        g = torch.zeros(log_kernel.shape[1], dtype=log_kernel.dtype, device=log_kernel.device)
        # Column sums as row sums of a contiguous transposed copy: reductions along the fast axis.
        log_kernel_t = log_kernel.T.contiguous()
        for _ in range(iters):
            f = torch.where(rows_ok, log_a - torch.logsumexp(log_kernel + g[None, :], dim=1), 0.0)
            g = torch.where(cols_ok, log_b - torch.logsumexp(log_kernel_t + f[None, :], dim=1), 0.0)
        return f[:, None] + log_kernel + g[None, :]
