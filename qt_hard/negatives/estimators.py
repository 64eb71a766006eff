"""Estimators of the negative term (docs/architecture.md's fourth stage), in log space.

Input: ``log_e`` (A,), the log of the weighted mean ``E_hat = sum_j w_j e^{s_j} / sum_j w_j`` over
each anchor's negatives, and the positive logits ``pos`` (A, P). Output: (A, P) the log of the
per-negative term that the loss multiplies by the number of negatives Q.

* :class:`PlainEstimator`: ``E_hat`` itself (InfoNCE, HCL with tau_plus = 0 up to the floor).
* :class:`DebiasedEstimator`: Chuang et al. (2020) eq. 6 / Robinson et al. (2021) eq. 15 and
  Fig. 13: ``max((E_hat - tau_plus e^{s+}) / (1 - tau_plus), e^{-1/t})``. Nothing is
  exponentiated: with ``r = tau_plus e^{s+} / E_hat``, ``log(E_hat - tau_plus e^{s+}) =
  log E_hat + log(1 - r)``, and ``log(1 - r)`` is computed by ``log1p`` / ``expm1`` from
  ``log r = log tau_plus + s+ - log E_hat``.
"""

from __future__ import annotations

import math

import torch

from ..schedules import at

_LOG_HALF = math.log(0.5)


def log1mexp(u: torch.Tensor) -> torch.Tensor:
    """log(1 - e^u) for u < 0 (Maechler's split at -log 2), -inf for u >= 0, no NaN gradients."""
    neg = u < 0
    safe = torch.where(neg, u, torch.full_like(u, -1.0))
    val = torch.where(safe > _LOG_HALF, torch.log(-torch.expm1(safe)), torch.log1p(-torch.exp(safe)))
    return torch.where(neg, val, torch.full_like(u, float("-inf")))


def smooth_log1mexp(u: torch.Tensor) -> torch.Tensor:
    """log(1 - e^u) for u <= log(1/2), continued beyond as ``-log 4 - u`` (i.e. ``1 - r`` continued
    by ``1 / (4 r)`` for r = e^u >= 1/2): equal in value and slope at r = 1/2, positive and
    decreasing for every r, so the debiased estimate never collapses onto the floor."""
    below = u <= _LOG_HALF
    exact = log1mexp(torch.where(below, u, torch.full_like(u, _LOG_HALF)))
    return torch.where(below, exact, -math.log(4.0) - u)


class PlainEstimator:
    """The plain Monte-Carlo estimate: log E_hat, the same for every positive of the anchor."""

    def log_negative(self, log_e: torch.Tensor, pos: torch.Tensor, scale: float, progress: float):
        return log_e[:, None].expand_as(pos)

    def __repr__(self) -> str:
        return "PlainEstimator()"


FLOORS = ("hard", "smooth", "none")


class DebiasedEstimator:
    """Debiased (and, with hard weights, HCL's) estimator of the negative term, in log space.

    ``D = (E_hat - tau_plus * e^{s+}) / (1 - tau_plus)`` floored at ``e^{-1/t}``, the smallest
    ``e^s`` on the sphere of radius 1/t (Chuang et al. 2020, eq. 6; HCL Fig. 13, official code
    ``torch.clamp(Ng, min=N * e^{-1/t})``). The multiplication by N happens in the loss.

    Args:
        tau_plus: class prior tau^+ in [0, 1) (number or schedule).
        floor: "hard" is the papers' clamp; wherever it binds, the anchor gets no gradient at all, which
            at low temperature (t = 0.05, scale 20) is almost always. "smooth" keeps the exact estimator
            while ``tau_plus e^{s+} <= E_hat / 2`` and continues ``1 - r`` by ``1/(4r)`` beyond (C1,
            see :func:`smooth_log1mexp`), so the estimate stays positive and keeps a gradient; the
            floor e^{-1/t} is then applied as a clamp to that positive estimate. "none": no floor,
            the exact estimator (for unnormalized embeddings, where ``e^{-1/t}`` is no bound of
            ``e^s``; with tau_plus = 0 this is the plain estimator, so hard and uniform rows can share
            one estimator). Where ``tau_plus e^{s+} >= E_hat`` the estimate is then 0 (log -inf):
            the anchor's negative term vanishes and it gets no gradient.
    """

    def __init__(self, tau_plus=0.1, floor: str = "hard"):
        if floor not in FLOORS:
            raise ValueError(f"floor must be one of {', '.join(FLOORS)}, got {floor!r}")
        self.tau_plus, self.floor = tau_plus, floor

    def log_negative(self, log_e: torch.Tensor, pos: torch.Tensor, scale: float, progress: float):
        log_d = self.log_estimate(log_e, pos, progress)
        return log_d if self.floor == "none" else torch.clamp(log_d, min=-scale)

    def log_estimate(self, log_e: torch.Tensor, pos: torch.Tensor, progress: float) -> torch.Tensor:
        """(A, P) the log of the estimate before the floor: exact, or smooth under ``floor="smooth"``."""
        tau = float(at(self.tau_plus, progress))
        if not 0.0 <= tau < 1.0:
            raise ValueError(f"tau_plus must be in [0, 1), got {tau}")
        log_e = log_e[:, None]
        if tau == 0:
            return log_e.expand_as(pos)
        log_r = math.log(tau) + pos - log_e
        corr = smooth_log1mexp(log_r) if self.floor == "smooth" else log1mexp(log_r)
        return log_e + corr - math.log1p(-tau)

    def __repr__(self) -> str:
        return f"DebiasedEstimator(tau_plus={self.tau_plus!r}, floor={self.floor!r})"


_LOG2 = math.log(2.0)


class JSDEstimator:
    """The Jensen-Shannon estimator of InfoGraph (Sun et al. 2020, eq. 4; Robinson et al. 2021,
    App. B.1-B.2), the negated MI bound as a loss, per anchor u and positive s+ = T(h_u, H(G)):

        paper:  sp(-s+) + (E_q sp(s) - tau_plus * sp(s+)) / (1 - tau_plus)

    ``sp`` = softplus, ``E_q`` the mean of ``sp(s_j)`` over the anchor's negatives under the
    weighting's distribution ``q_j = w_j / sum w`` (uniform: InfoGraph; hard: HCL App. B.2 with
    ``w_j = exp(beta s_j)`` on clipped scores; OT, ring, label masks, k-sampling compose unchanged).
    Debiasing is DCL's correction applied to the negative expectation (the derivation of Chuang et
    al. 2020, eq. 5, with sp(T) in place of e^s), without a clamp. With uniform weights and tau_plus
    = 0 this is InfoGraph's ``local_global_loss_`` (JSD) plus the constant 2 log 2.

    ``variant="code"`` is the official HCL graph code instead (joshr17/HCL, graph/losses.py
    ``local_global_loss_`` with ``measure='JSD_hard'`` as graph/deepinfomax.py hard-codes it,
    cortex_DIM/functions/gan_losses.py), constants included, for M negatives of the anchor:

        sp(-s+) + c sp(s+) + M c log 2 - log 2 + N,   c = tau_plus / (1 - tau_plus)
        N = (E_q sp(s) - log 2) / (1 - tau_plus)                (no tilt: beta = 0; or masks, OT)
        N = (M + 1) / M * ((sum_j w_j sp(s_j) + log 2) / (sum_j w_j + 1) / (1 - tau_plus) - log 2)
                                                        (an exponential tilt w_j = e^{gamma s_j})

    i.e. the positive correction enters with the opposite sign of the derivation (``+ c sp(s+)``),
    and with a tilt the masked-out positive column (score 0, unnormalized weight e^0 = 1, sp(0) =
    log 2) joins the weighted mean. The code's tilt ``exp(-2 beta s / bound)`` (sign flipped against
    App. B.2) is a weighting matter: ``HardWeighting(beta, clip="graph_code")``, whose bound carries a
    gradient as the code's does; the code's default tau_plus is 0.5. Weightings
    the code does not have (OT's coupling, label masks, ring) enter as ``E_q`` of the untilted line:
    the OT paper ran this code with only the negative distribution replaced.

    For tau_plus > 0 the paper form is unbounded below, the code's is not (docs/guides/graphs.md).

    Shapes: ``s`` (A, C) logits with ``log_w`` (A, C) log-weights (-inf outside the negatives),
    ``pos`` (A, P) -> (A, P) per-positive losses.
    """

    is_divergence = True

    def __init__(self, tau_plus=0.0, variant: str = "paper"):
        if variant not in ("paper", "code"):
            raise ValueError(f"JSD variant must be 'paper' or 'code', got {variant!r}")
        self.tau_plus, self.variant = tau_plus, variant

    def per_positive(
        self,
        s: torch.Tensor,
        log_w: torch.Tensor,
        n_neg: torch.Tensor,
        tilted: bool,
        pos: torch.Tensor,
        progress: float,
        log_scale: float = 0.0,
    ) -> torch.Tensor:
        """(A, P) losses; ``log_scale`` multiplies ``E_q sp(s)`` by ``e^{log_scale}`` (HCL Fig. 14 read
        literally: beta multiplies the negative term)."""
        tau = float(at(self.tau_plus, progress))
        if not 0.0 <= tau < 1.0:
            raise ValueError(f"tau_plus must be in [0, 1), got {tau}")
        sp_neg = torch.nn.functional.softplus(s)
        inside = torch.isfinite(log_w)
        m = n_neg.clamp_min(1).to(s.dtype)[:, None]
        if self.variant == "code" and tilted:
            # The positive column joins with score 0: log-weight 0 and sp(0) = log 2.
            log_w = torch.cat([log_w, torch.zeros_like(log_w[:, :1])], dim=1)
            sp_neg = torch.cat([sp_neg, torch.full_like(sp_neg[:, :1], _LOG2)], dim=1)
            inside = torch.cat([inside, torch.ones_like(inside[:, :1])], dim=1)
        q = torch.softmax(log_w.masked_fill(~inside, float("-inf")), dim=1)
        # 0 * sp outside the support (q is exactly 0 there); rows without negatives give NaN in q.
        e_neg = torch.where(inside, q * sp_neg, torch.zeros_like(sp_neg)).sum(dim=1, keepdim=True)
        e_neg = torch.nan_to_num(e_neg, nan=0.0)
        if log_scale != 0.0:
            e_neg = e_neg * math.exp(log_scale)
        sp_minus_pos = torch.nn.functional.softplus(-pos)
        sp_pos = torch.nn.functional.softplus(pos)
        if self.variant == "paper":
            return sp_minus_pos + (e_neg - tau * sp_pos) / (1.0 - tau)
        c = tau / (1.0 - tau)
        if tilted:
            neg_term = (m + 1) / m * (e_neg / (1.0 - tau) - _LOG2)
        else:
            neg_term = (e_neg - _LOG2) / (1.0 - tau)
        return sp_minus_pos + c * sp_pos + m * c * _LOG2 - _LOG2 + neg_term

    def __repr__(self) -> str:
        return f"JSDEstimator(tau_plus={self.tau_plus!r}, variant={self.variant!r})"
