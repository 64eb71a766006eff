"""Weightings: *which* candidates count as negatives and *how much* (DESIGN.md's third stage).

A weighting maps a :class:`~qt_hard.negatives.scores.ContrastScores` and the current candidate mask
(A, C) to log-weights (A, C): ``-inf`` removes a candidate, finite values tilt the negative
distribution ``q(x^- | x) proportional to w``. Weightings compose by adding log-weights (multiplying
weights, intersecting supports), so ``[SameLabelMask(), HardWeighting(beta)]`` is H-SCL(beta).
The estimator normalizes the weights per anchor; no weighting needs to.

Parameters may be plain numbers or schedules (:mod:`qt_hard.schedules`), resolved at the current
training progress.
"""

from __future__ import annotations

import math

import torch

from ..schedules import at
from .distributed import world
from .ot import sinkhorn_log_coupling
from .scores import ContrastScores

NEG_INF = float("-inf")


class Weighting:
    """Base class. ``restricts_support`` marks weightings whose negative set is a *subset* summed
    over (Ring's ``logsumexp(ring)``), which makes "support" the natural count of negatives."""

    restricts_support = False
    drops = False  # may exclude allowed candidates (then the strategy counts the support)

    def log_weights(self, scores: ContrastScores, mask: torch.Tensor, progress: float) -> torch.Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def rescale_scores(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The clipping trick of HCL Fig. 14 / App. D.2, D.3: ``2 * s / max(|max s|, |min s|)`` over the
    batch's allowed candidates, which maps the scores into [-2, 2] before they enter the weights
    (for unnormalized embeddings: Quick-Thoughts, bag-of-words, InfoGraph). We follow the paper's
    ``+2q``; the official graph code has ``-2q``, which would favour *easy* negatives."""
    # The bound is a batch statistic: treated as a constant (detached) and, under torch.distributed,
    # taken over the global batch so that N processes rescale exactly as one process would.
    bound = scores.detach().masked_fill(~mask, 0.0).abs().amax()
    if world()[1] > 1:
        torch.distributed.all_reduce(bound, op=torch.distributed.ReduceOp.MAX)
    return 2.0 * scores / bound.clamp_min(torch.finfo(scores.dtype).tiny)


class UniformWeighting(Weighting):
    """q = p: every allowed candidate weighs the same (SimCLR / InfoNCE)."""

    def log_weights(self, scores, mask, progress):
        return torch.zeros_like(scores.neg).masked_fill(~mask, NEG_INF)


class HardWeighting(Weighting):
    """Hard negatives by importance weighting, Robinson et al. (2021) section 3, eq. 5-6:
    ``q_beta(x^-) proportional to exp(beta * s(x, x^-)) p(x^-)``, with ``s`` the logit
    ``<f(x), f(x^-)> / t`` as in the official HCL code (``imp = exp(beta * log neg)``; the paper's
    Fig. 13 pseudocode is loose on this).

    Args:
        beta: concentration (number or schedule); beta = 0 is uniform.
        clip: rescale the scores into [-2, 2] before weighting (Fig. 14; unnormalized embeddings).
        detach: stop gradients through the weights. The official code does not (False), so the
            weights are part of the computation graph; OT weights are always detached.
    """

    def __init__(self, beta=1.0, clip: bool = False, detach: bool = False):
        self.beta, self.clip, self.detach = beta, clip, detach

    def log_weights(self, scores, mask, progress):
        beta = float(at(self.beta, progress))
        s = scores.neg.detach() if self.detach else scores.neg
        if self.clip:
            s = rescale_scores(s, mask)
        return (beta * s).masked_fill(~mask, NEG_INF)


class RingWeighting(Weighting):
    """Ring negatives, Wu et al. (2021) section 4 and Alg. 1: keep, per anchor, the candidates whose
    similarity lies between the ``lower``-th and ``upper``-th percentile of that anchor's candidates.

    As in Alg. 1 the candidates are sorted from farthest to closest and the slice
    ``[floor(lower/100 * n), floor(upper/100 * n))`` is kept (n the anchor's candidate count), so
    [0, 100] keeps everything. A non-empty band always keeps at least one candidate. The ring's loss
    sums over the ring (``logsumexp(ring_dps)``), hence ``restricts_support``.

    Args:
        lower, upper: percentiles in [0, 100] (numbers or schedules; Wu et al. anneal them).
    """

    drops = True

    restricts_support = True

    def __init__(self, lower=0.0, upper=100.0):
        self.lower, self.upper = lower, upper

    def log_weights(self, scores, mask, progress):
        lower, upper = float(at(self.lower, progress)), float(at(self.upper, progress))
        if not 0.0 <= lower < upper <= 100.0:
            raise ValueError(f"ring percentiles need 0 <= lower < upper <= 100, got [{lower}, {upper}]")
        n = mask.sum(dim=1, keepdim=True)
        lo = torch.floor(n * (lower / 100.0)).long()
        hi = torch.maximum(torch.floor(n * (upper / 100.0)).long(), lo + 1)
        # Rank of each candidate from farthest (0) to closest, disallowed ones sorted last.
        key = scores.neg.detach().masked_fill(~mask, float("inf"))
        order = key.argsort(dim=1)
        rank = torch.empty_like(order)
        rank.scatter_(1, order, torch.arange(order.shape[1], device=order.device).expand_as(order))
        keep = mask & (rank >= lo) & (rank < hi)
        return torch.zeros_like(scores.neg).masked_fill(~keep, NEG_INF)


class SameLabelMask(Weighting):
    """Drop candidates that share the anchor's label: the indicator 1(y(x^-) != y(x)) of H-SCL,
    Jiang et al. (2022) section II, the definition of q_H-SCL."""

    drops = True

    def log_weights(self, scores, mask, progress):
        keep = mask & ~scores.same_label()
        return torch.zeros_like(scores.neg).masked_fill(~keep, NEG_INF)


class ThresholdWeighting(Weighting):
    """The thresholded hardening function eta(t) = 1(e^t >= tau) of Jiang et al. (2022), section
    III-A: keep candidates whose logit s satisfies e^s >= tau.

    Args:
        tau: threshold on e^s (number or schedule, e.g. :func:`qt_hard.schedules.hscl_threshold`,
            their eq. 4: tau = exp(l / t)).
    """

    drops = True

    def __init__(self, tau=1.0):
        self.tau = tau

    def log_weights(self, scores, mask, progress):
        tau = float(at(self.tau, progress))
        if not tau > 0:
            raise ValueError(f"threshold tau must be > 0, got {tau}")
        keep = mask & (scores.neg.detach() >= math.log(tau))
        return torch.zeros_like(scores.neg).masked_fill(~keep, NEG_INF)


class OTWeighting(Weighting):
    """Negatives from an entropic optimal-transport coupling, Jiang, Ishwar & Aeron (2023), eq. 5:
    ``P* = argmin E[c(x, x^-)] + epsilon KL(P || P_mar x P_mar)`` over couplings with uniform
    marginals, solved by Sinkhorn in the log domain on *detached* costs; self- and positive-coupling
    are forbidden (cost infinity, i.e. the candidate mask). The negative distribution of anchor i is
    row i of the coupling (the estimator normalizes it).

    Args:
        epsilon: entropic regularization (number or schedule).
        cost: "sqeuclidean", ``0.5 * ||f(x) - f(x')||^2`` (section III), or "exp",
            ``exp(||f(x) - f(x')||^2 - kappa)`` (their alternative cost, section IV-C).
        kappa: offset of the "exp" cost.
        iters: Sinkhorn iterations.
        marginals: "uniform" (the OT problem) or "none": only the Gibbs kernel exp(-c / epsilon),
            i.e. the exponential tilt of Lemma 3 / eq. 7 that equals HCL with beta = t / epsilon
            in logit units.

    Under torch.distributed the coupling is solved between this process's anchors and the global
    candidates (marginals 1/A_local, 1/C_global), which is not the same problem as one process's
    global coupling: OT is the one strategy whose N-process loss differs from the one-process loss.
    """

    def __init__(self, epsilon=0.5, cost: str = "sqeuclidean", kappa: float = 0.0, iters: int = 20,
                 marginals: str = "uniform"):
        if cost not in ("sqeuclidean", "exp"):
            raise ValueError(f"OT cost must be 'sqeuclidean' or 'exp', got {cost!r}")
        if marginals not in ("uniform", "none"):
            raise ValueError(f"OT marginals must be 'uniform' or 'none', got {marginals!r}")
        if not isinstance(iters, int) or iters < 0:
            raise ValueError(f"sinkhorn iterations must be a non-negative integer, got {iters!r}")
        self.epsilon, self.cost, self.kappa, self.iters, self.marginals = epsilon, cost, kappa, iters, marginals

    def cost_matrix(self, scores: ContrastScores) -> torch.Tensor:
        if scores.anchor_sqnorm is None or scores.cand_sqnorm is None:
            raise ValueError("OT negatives need the embeddings' squared norms in ContrastScores")
        sim = scores.neg.detach() / scores.scale
        sq = (scores.anchor_sqnorm[:, None] + scores.cand_sqnorm[None, :] - 2.0 * sim).clamp_min(0.0)
        if self.cost == "sqeuclidean":
            return 0.5 * sq
        return torch.exp(sq - self.kappa)

    def log_weights(self, scores, mask, progress):
        eps = float(at(self.epsilon, progress))
        if not eps > 0:
            raise ValueError(f"OT epsilon must be > 0, got {eps}")
        log_kernel = (-self.cost_matrix(scores) / eps).masked_fill(~mask, NEG_INF)
        if self.marginals == "none":
            return log_kernel
        return sinkhorn_log_coupling(log_kernel, self.iters)
