"""The weighted log-mean-exp every strategy reduces to, as one autograd function.

For each anchor i (a row), with logits ``s_ij``, a support ``K_i`` (the ``keep`` mask), an exponential
tilt ``gamma`` and optional further log-weights ``D_ij``, the weights are
``log w_ij = gamma * s_ij + D_ij`` on ``K_i`` and the estimator's input is the log of the weighted mean

    log E_hat_i = log( sum_j w_ij e^{s_ij} / sum_j w_ij )
                = LSE_{j in K_i}((1 + gamma) s_ij + D_ij) - LSE_{j in K_i}(gamma s_ij + D_ij).

A further detached table ``A_ij`` of *absolute* log-multipliers enters the first log-sum-exp only,
``log E_hat_i = LSE((1 + gamma) s + D + A) - LSE(gamma s + D)``: each negative's term ``e^{s_ij}`` is
multiplied by ``e^{A_ij}`` without that factor being normalized away (sentence-transformers' MNRL
``hardness_mode``, Lan et al. 2025 Eq. 5: ``A = alpha * stop_grad(cos)``). Being detached it adds
nothing to the backward but the softmax ``p`` it shifts.

Every weighting of the five papers is of the first form: uniform (gamma = 0; the second term is log |K_i|),
hard negatives (HCL eq. 6: gamma = beta, or 2 beta / bound with the clip of Fig. 14), ring and
label/threshold (H-SCL) negatives (the support ``K_i``), and OT (``D`` = the log coupling). Written as
autograd ops the two log-sum-exps and their backward take ~12 full passes over the (A, C) table;
here the forward keeps the exponentials it computes and the backward is two fused passes:

    d log E_hat_i / d s_ij = (1 + gamma_g) p_ij - gamma_g q_ij,       d / d D_ij = p_ij - q_ij,

``p`` and ``q`` the softmaxes of the two log-sum-exps, ``gamma_g`` the tilt's coefficient in the
gradient (``gamma``, or 0 when the weights are detached). A tilt that is itself a function of the
scores (a 0-dim tensor with a gradient) also gets ``d log E_hat_i / d gamma = sum_j (p_ij - q_ij) s_ij``.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

NEG_INF = float("-inf")


def _stable_exp(z: torch.Tensor):
    """In place: ``z <- exp(z - m)`` with m the row max (0 for all -inf rows); returns (z, m, row sums)."""
    m = z.amax(dim=1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    z.sub_(m).exp_()
    return z, m[:, 0], z.sum(dim=1)


class _TiltedLogMeanExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s, keep, gamma, gamma_grad, dense, count, absolute, gamma_t):
        tiny = torch.finfo(s.dtype).tiny
        if dense is None and absolute is None and gamma >= 0:
            # y = x - rowmax <= 0 with max 0: gamma * y and (1 + gamma) * y need no further shift.
            # One fresh (A, C) buffer, shifted and exponentiated in place.
            x = s if keep is None else torch.where(keep, s, NEG_INF)
            m = x.amax(dim=1, keepdim=True)
            m = torch.where(torch.isfinite(m), m, 0.0)
            y = x - m if keep is None else x.sub_(m)
            if gamma == 0:
                e1 = y.exp_()
                s1 = e1.sum(dim=1)
                out = s1.clamp_min(tiny).log() + m[:, 0] - count.clamp_min(1).to(s.dtype).log()
                ctx.save_for_backward(e1, s1)
                ctx.mode = "uniform"
            else:
                e0 = y * gamma
                e1 = y.add_(e0).exp_()  # (1 + gamma) * y
                e0.exp_()
                s1, s0 = e1.sum(dim=1), e0.sum(dim=1)
                out = s1.clamp_min(tiny).log() - s0.clamp_min(tiny).log() + m[:, 0]
                ctx.save_for_backward(e1, s1, e0, s0)
                ctx.mode = "tilt"
        else:
            # One buffer each for the two log-sum-exps, updated in place (tables of B x candidates are
            # large; fresh ones cost page faults as much as arithmetic).
            if gamma != 0:
                lw = s * gamma
                if dense is not None:
                    lw.add_(dense)
            else:
                lw = dense.detach().clone() if dense is not None else torch.zeros_like(s)
            if keep is not None:
                lw.masked_fill_(~keep, NEG_INF)
            first = torch.add(lw, s)
            if absolute is not None:
                first.add_(absolute)
            e1, m1, s1 = _stable_exp(first)
            e0, m0, s0 = _stable_exp(lw)
            out = (m1 + s1.clamp_min(tiny).log()) - (m0 + s0.clamp_min(tiny).log())
            ctx.save_for_backward(e1, s1, e0, s0)
            ctx.mode = "tilt"
        ctx.gamma_grad = float(gamma_grad)
        ctx.dense_grad = dense is not None and dense.requires_grad
        ctx.tilt_grad = gamma_t is not None
        if ctx.tilt_grad:  # d/d gamma needs the logits (0 outside the support, where p = q = 0)
            ctx.s_for_tilt = s.detach() if keep is None else s.detach().masked_fill(~keep, 0.0)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        tiny = torch.finfo(g.dtype).tiny
        if ctx.mode == "uniform":
            e1, s1 = ctx.saved_tensors
            return e1 * (g / s1.clamp_min(tiny))[:, None], None, None, None, None, None, None, None
        e1, s1, e0, s0 = ctx.saved_tensors
        c1 = (g / s1.clamp_min(tiny))[:, None]  # dL/dLSE1 * p = e1 * c1
        c0 = (g / s0.clamp_min(tiny))[:, None]
        gg = ctx.gamma_grad
        grad_s = e1 * (c1 * (1.0 + gg))
        if gg != 0:
            grad_s.addcmul_(e0, c0, value=-gg)
        grad_d = None
        if ctx.dense_grad:
            grad_d = e1 * c1
            grad_d.addcmul_(e0, c0, value=-1.0)
        grad_t = None
        if ctx.tilt_grad:  # d log E_hat_i / d gamma = sum_j (p_ij - q_ij) s_ij
            grad_t = ((e1 * c1 - e0 * c0) * ctx.s_for_tilt).sum().reshape(())
        return grad_s, None, None, None, grad_d, None, None, grad_t


def tilted_log_mean_exp(
    s: torch.Tensor,
    keep: torch.Tensor | None = None,
    gamma: float = 0.0,
    gamma_grad: float | None = None,
    dense: torch.Tensor | None = None,
    count: torch.Tensor | None = None,
    absolute: torch.Tensor | None = None,
) -> torch.Tensor:
    """``log E_hat`` of the module docstring, one value per row.

    Args:
        s: (A, C) logits.
        keep: (A, C) bool support, or None for every column.
        gamma: the exponential tilt: a float, or a 0-dim tensor whose gradient is returned (a tilt
            computed from the scores with the graph, e.g. the official HCL graph code's bound).
        gamma_grad: the tilt's coefficient in the gradient (default ``gamma``; 0 = detached weights).
        dense: (A, C) further log-weights (``-inf`` allowed), or None; its gradient is returned when it
            requires one.
        count: (A,) the support sizes |K_i|, needed only when ``gamma == 0`` and ``dense`` is None (the
            uniform mean); computed from ``keep`` if not given.
        absolute: (A, C) finite log-multipliers of the negatives' terms that are not normalized (the
            first log-sum-exp only; see the module docstring), or None. Treated as a constant
            (detached): no gradient flows into it.

    Returns:
        (A,) log of the weighted mean of ``e^s`` over each row's support. A row with an empty support
        gives a finite, meaningless value with zero gradient; the caller masks it.
    """
    if s.dim() != 2:
        raise ValueError(f"logits must be (anchors, candidates), got shape {tuple(s.shape)}")
    gamma_t = gamma if torch.is_tensor(gamma) and gamma.requires_grad else None
    gamma = float(gamma.detach()) if torch.is_tensor(gamma) else float(gamma)
    if abs(gamma) < torch.finfo(s.dtype).tiny:  # would round to 0 in the table's dtype: 0 * -inf is NaN
        gamma = 0.0
    if gamma_grad is None:
        gamma_grad = gamma
    if count is None and gamma == 0 and dense is None:
        count = (
            keep.view(torch.uint8).sum(dim=1, dtype=torch.int32)
            if keep is not None
            else torch.full((s.shape[0],), s.shape[1], dtype=torch.int32, device=s.device)
        )
    if absolute is not None:
        if absolute.shape != s.shape:
            raise ValueError(
                f"absolute log-weights must have the logits' shape {tuple(s.shape)}, got {tuple(absolute.shape)}"
            )
        absolute = absolute.detach().to(s.dtype)
    return _TiltedLogMeanExp.apply(s, keep, gamma, gamma_grad, dense, count, absolute, gamma_t)
