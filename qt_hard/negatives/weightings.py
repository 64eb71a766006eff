"""Weightings: *which* candidates count as negatives and *how much* (docs/architecture.md's third stage).

A weighting maps a :class:`~qt_hard.negatives.scores.ContrastScores` and the current candidate mask
(A, C) to log-weights ``log w`` (A, C): ``-inf`` removes a candidate, finite values tilt the negative
distribution ``q(x^- | x) proportional to w``. Weightings compose by adding log-weights (multiplying
weights, intersecting supports), so ``[SameLabelMask(), HardWeighting(beta)]`` is H-SCL(beta).
The estimator normalizes the weights per anchor; no weighting needs to.

Every weighting of the five papers returns the factored form of :class:`LogWeights` (a tilt is one
number, not an (A, C) table; :mod:`qt_hard.negatives.logmeanexp`). Parameters may be plain numbers or
schedules (:mod:`qt_hard.schedules`), resolved at the current training progress.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import torch

from ..schedules import HSCLThreshold, at
from .distributed import gather, world
from .ot import sinkhorn_log_coupling
from .sampler import count_rows
from .scores import ContrastScores
from .select import row_order_statistics

NEG_INF = float("-inf")


@dataclass
class LogWeights:
    """Log-weights in factored form: ``log w_ij = gamma * s_ij + dense_ij`` for ``keep_ij``, else -inf.

    Attributes:
        keep: (A, C) bool support, or None (no candidate removed).
        gamma: exponential tilt on the logits s (HCL's beta; 0 = none): a float, or a 0-dim tensor
            that carries a gradient (a tilt computed from the scores, e.g. the official graph code's
            ``-2 beta / bound`` with the bound in the graph).
        gamma_grad: the tilt's coefficient in the gradient through ``s`` directly: ``gamma`` when
            gradients flow through the weights (the official HCL code), 0 when they are detached.
        dense: (A, C) further log-weights (OT's log coupling, or any custom table), or None.
        absolute: (A, C) detached log-multipliers of each negative's term that the estimator does
            *not* normalize: ``E_hat = sum_j w_j e^{A_j} e^{s_j} / sum_j w_j`` (MNRL's hardness
            penalty, :class:`HardnessTilt`), or None. The other fields are importance weights (a
            distribution over the negatives, normalized per anchor); this one rescales the integrand.
        log_scale: a constant added to ``log E_hat`` (``E_hat`` multiplied by ``e^{log_scale}``): the
            literal reading of HCL Fig. 14, where beta multiplies the weighted negative term.
    """

    keep: torch.Tensor | None = None
    gamma: float | torch.Tensor = 0.0
    gamma_grad: float = 0.0
    dense: torch.Tensor | None = None
    absolute: torch.Tensor | None = None
    log_scale: float = 0.0

    def __add__(self, other: "LogWeights") -> "LogWeights":
        """Weights multiply: supports intersect, tilts and dense (and absolute) log-weights add."""
        return LogWeights(
            _combine(self.keep, other.keep, operator.and_),
            self.gamma + other.gamma,
            self.gamma_grad + other.gamma_grad,
            _combine(self.dense, other.dense),
            _combine(self.absolute, other.absolute),
            self.log_scale + other.log_scale,
        )

    @property
    def tilted(self) -> bool:
        """Whether the weights carry an exponential tilt of the logits."""
        return float(self.gamma.detach() if torch.is_tensor(self.gamma) else self.gamma) != 0.0

    def materialize(self, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The dense (A, C) table ``log w`` over ``mask`` (gradients as the factored form has them).

        Absolute multipliers are not weights of a distribution and have no place in it: an error."""
        if self.absolute is not None:
            raise ValueError(
                "absolute log-multipliers (hardness_mode) have no normalized dense form; "
                "only the NCE estimator reads them"
            )
        lw = torch.zeros_like(s)
        if self.gamma_grad != 0:
            lw = lw + self.gamma_grad * s
        if torch.is_tensor(self.gamma) or self.gamma != self.gamma_grad:
            # The rest of the tilt through the detached scores; a tensor tilt gets its gradient here.
            lw = lw + (self.gamma - self.gamma_grad) * s.detach()
        if self.dense is not None:
            lw = lw + self.dense
        keep = mask if self.keep is None else mask & self.keep
        return lw.masked_fill(~keep, NEG_INF)


def _combine(a, b, op=operator.add):
    """``op(a, b)``, or the one of them that is not None (None when both are)."""
    return b if a is None else a if b is None else op(a, b)


class Weighting:
    """Base class. ``restricts_support`` marks weightings whose negative set is a *subset* summed
    over (Ring's ``logsumexp(ring)``), which makes "support" the natural count of negatives;
    ``on_support`` those that choose among the negatives the others leave (given that support as
    their mask, and applied after them).

    Subclasses implement :meth:`weigh` (factored) or, for a custom table, just :meth:`log_weights`."""

    restricts_support = False
    # True for a weighting whose removals are candidates that are no negatives at all (of the anchor's
    # class), not a choice among the negatives: an anchor it leaves with none has no negative.
    drops_non_negatives = False
    # True for a weighting that selects among the negatives the earlier weightings leave (a miner's
    # top-m): it is given the candidate mask intersected with their support, and composes last.
    on_support = False

    def weigh(self, scores: ContrastScores, mask: torch.Tensor, progress: float) -> LogWeights:
        """Factored log-weights over the (A, C) candidates allowed by ``mask``."""
        if type(self).log_weights is Weighting.log_weights:
            raise NotImplementedError(f"{type(self).__name__} must implement weigh() or log_weights()")
        return LogWeights(dense=self.log_weights(scores, mask, progress))

    def log_weights(self, scores: ContrastScores, mask: torch.Tensor, progress: float) -> torch.Tensor:
        """(A, C) log-weights, ``-inf`` outside the negative set."""
        return self.weigh(scores, mask, progress).materialize(scores.neg, mask)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def clip_bound(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``max |s|`` over the batch's allowed candidates (0-dim, detached): the bound by which the
    clipping trick of HCL Fig. 14 / App. D.2, D.3 rescales the scores into [-2, 2]
    (``2 s / bound``) before they enter the weights of unnormalized embeddings.

    A batch statistic, treated as a constant and, under torch.distributed, taken over the global
    batch so that N processes rescale exactly as one process would."""
    bound = scores.detach().masked_fill(~mask, 0.0).abs().amax()
    if world()[1] > 1:
        torch.distributed.all_reduce(bound, op=torch.distributed.ReduceOp.MAX)
    return bound.clamp_min(torch.finfo(scores.dtype).tiny)


def graph_code_bound(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``max(s.max(), |s.min()|)`` over the batch's allowed candidates, *with* its gradient: the bound
    of the official HCL graph code (joshr17/HCL, ``graph/cortex_DIM/functions/gan_losses.py``,
    ``JSD_hard``: ``max(q_samples.max(), q_samples.min().abs())``, inside the computation graph).

    Its value is ``max |s|`` (if the largest score is negative, the smallest one's magnitude is the
    larger), so only the gradient differs from :func:`clip_bound`: it flows to the one score that
    sets the bound. Under torch.distributed each process's bound is gathered with its gradient
    (:func:`qt_hard.negatives.distributed.gather`), so the gradient reaches the process that owns the
    global extreme, summed over every process's loss."""
    big = torch.finfo(scores.dtype).max
    top = scores.masked_fill(~mask, -big).amax()
    bottom = scores.masked_fill(~mask, big).amin()
    bound = torch.maximum(top, bottom.abs())
    if world()[1] > 1:
        bound = gather(bound.reshape(1))[0].amax()
    return bound.clamp_min(torch.finfo(scores.dtype).tiny)


class UniformWeighting(Weighting):
    """q = p: every allowed candidate weighs the same (SimCLR / InfoNCE)."""

    def weigh(self, scores, mask, progress):
        return LogWeights()


CLIP_READINGS = ("none", "rescaled", "fig14", "graph_code", "clamp")
# App. D.2's interval for the inner products of the "clamp" reading.
CLAMP_RANGE = 2.0
# The reading that ``clip="auto"`` (the default) takes for unnormalized embeddings, chosen by the
# readings table on SentEval dev scores (docs/concepts-hard-readings.md, results/readings/): the best
# reading at beta 1 over 5 seeds (clamp 77.35 +- 0.13 against rescaled 77.26 +- 0.19).
UNNORMALIZED_CLIP = "clamp"


class HardWeighting(Weighting):
    """Hard negatives by importance weighting, Robinson et al. (2021) section 3, eq. 5-6:
    ``q_beta(x^-) proportional to exp(beta * s(x, x^-)) p(x^-)``, with ``s`` the logit
    ``<f(x), f(x^-)> / t`` as in the official HCL code (``imp = exp(beta * log neg)``; the paper's
    Fig. 13 pseudocode is loose on this). The estimator normalizes the weights per anchor.

    For unnormalized embeddings (Quick-Thoughts, bag of words, InfoGraph) the paper "clips" the scores
    (App. D.2, D.3, Fig. 14), and its sources disagree on what that means. ``clip`` names the reading
    (``CLIP_READINGS``: "none", "rescaled", "fig14", "graph_code", "clamp"), each after its source and
    defined, with its weights, on docs/concepts-hard-readings.md; ``"auto"`` (the default) is "none"
    on scores of normalized embeddings and ``UNNORMALIZED_CLIP`` on raw inner products
    (``ContrastScores.normalized`` False; None gets "none").

    Args:
        beta: concentration >= 0 (number or schedule); beta = 0 is uniform (under "fig14": no
            negative term). Easy negatives (a negative tilt) are the "graph_code" reading's, not a
            negative beta.
        clip: one of ``CLIP_READINGS`` (above), or ``"auto"``.
        detach: stop gradients through the weights (the tilt, the bound and the weights' own
            dependence on the scores). The official code does not (False).
    """

    def __init__(self, beta=1.0, clip: str = "auto", detach: bool = False):
        if isinstance(clip, bool) or clip not in (*CLIP_READINGS, "auto"):
            raise ValueError(
                f"clip must name a reading of the hard weights: {', '.join(CLIP_READINGS)} or auto "
                f"(the earlier clip=true is 'rescaled'), got {clip!r}"
            )
        if isinstance(beta, (int, float)):
            _check_beta(beta)
        self.beta, self.clip, self.detach = beta, clip, detach

    def beta_at(self, progress: float) -> float:
        beta = float(at(self.beta, progress))
        _check_beta(beta)
        return beta

    def reading(self, scores: ContrastScores) -> str:
        """The reading in effect on these scores (``clip``, with ``"auto"`` resolved)."""
        if self.clip != "auto":
            return self.clip
        return UNNORMALIZED_CLIP if scores.normalized is False else "none"

    def weigh(self, scores, mask, progress):
        beta = self.beta_at(progress)
        clip = self.reading(scores)
        if clip == "none":
            gamma = beta
        elif clip == "rescaled":
            gamma = beta * 2.0 / float(clip_bound(scores.neg, mask))
        elif clip == "fig14":
            log_scale = math.log(beta) if beta > 0 else NEG_INF
            return LogWeights(gamma=1.0, gamma_grad=0.0 if self.detach else 1.0, log_scale=log_scale)
        elif clip == "clamp":
            neg = scores.neg if scores.neg.dtype not in (torch.float16, torch.bfloat16) else scores.neg.float()
            if self.detach:
                neg = neg.detach()
            return LogWeights(dense=(neg / scores.scale).clamp(-CLAMP_RANGE, CLAMP_RANGE) * beta)
        else:  # graph_code
            bound = graph_code_bound(scores.neg, mask)
            if self.detach:
                gamma = -2.0 * beta / float(bound.detach())
            else:
                tilt = -2.0 * beta / bound.to(scores.neg.dtype)
                return LogWeights(gamma=tilt, gamma_grad=float(tilt.detach()))
        return LogWeights(gamma=gamma, gamma_grad=0.0 if self.detach else gamma)


def _check_beta(beta: float) -> None:
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(
            f"beta must be a finite number >= 0, got {beta!r} (easy negatives, the official graph "
            "code's sign, are clip='graph_code')"
        )


HARDNESS_MODES = ("in_batch_negatives", "hard_negatives", "all_negatives")


class HardnessTilt(Weighting):
    """sentence-transformers' MNRL hardness weighting (its ``hardness_mode`` / ``hardness_strength``,
    PR #3667): the logit of a chosen negative becomes ``s_j + alpha * stop_grad(s_j / scale)``, i.e.
    ``alpha * stop_grad(cos)`` added to the scaled cosine, *not* divided by the temperature (Lan et al.
    2025, Eq. 5, alpha = 9 on in-batch negatives; EmbeddingGemma, Schechter Vera et al. 2025, alpha = 5
    on the explicit hard negatives).

    In weights this is a multiplier ``e^{alpha cos_j}`` on negative j's term that nothing normalizes
    (:attr:`LogWeights.absolute`): the denominator is ``e^{s+} + sum_j e^{s_j + alpha cos_j}``. How it
    differs from HCL's importance weights (:class:`HardWeighting`) is on docs/guides/sentence-transformers.md
    ("MNRL and HardNegativesLoss side by side"); with them the tilt rescales the integrand of their mean.

    Args:
        strength: alpha >= 0 (number or schedule).
        mode: which negatives are tilted (the anchor's own positive never is):
            ``"in_batch_negatives"`` every candidate that is not one of the anchor's own explicit
            negatives (other pairs' positives and explicit negatives, queue rows); ``"hard_negatives"``
            only the anchor's own explicit negatives (none in layouts without them); ``"all_negatives"``
            every negative.
    """

    def __init__(self, strength, mode: str = "in_batch_negatives"):
        if mode not in HARDNESS_MODES:
            raise ValueError(f"hardness_mode must be one of {', '.join(HARDNESS_MODES)}, got {mode!r}")
        if isinstance(strength, (int, float)) and not (math.isfinite(strength) and strength >= 0):
            raise ValueError(f"hardness_strength must be a finite number >= 0, got {strength!r}")
        self.strength, self.mode = strength, mode

    def weigh(self, scores, mask, progress):
        alpha = float(at(self.strength, progress))
        if not (math.isfinite(alpha) and alpha >= 0):
            raise ValueError(f"hardness_strength must be a finite number >= 0, got {alpha}")
        if alpha == 0:
            return LogWeights()
        # alpha * cos = (alpha / scale) * logit, detached; masked entries are never read.
        tilt = scores.neg.detach() * (alpha / scores.scale)
        if self.mode != "all_negatives":
            own = scores.own_explicit()
            if own is not None:
                chosen = own if self.mode == "hard_negatives" else ~own
                tilt = tilt.masked_fill(~chosen, 0.0)
            elif self.mode == "hard_negatives":
                return LogWeights()  # no explicit negatives in this batch: nothing to tilt
        if scores.tilt_columns is not None:  # MNRL tilts its query-to-document block only
            tilt = tilt.masked_fill(~scores.column(scores.tilt_columns), 0.0)
        return LogWeights(absolute=tilt)


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

    restricts_support = True

    def __init__(self, lower=0.0, upper=100.0):
        self.lower, self.upper = lower, upper

    def weigh(self, scores, mask, progress):
        lower, upper = float(at(self.lower, progress)), float(at(self.upper, progress))
        if not 0.0 <= lower < upper <= 100.0:
            raise ValueError(f"ring percentiles need 0 <= lower < upper <= 100, got [{lower}, {upper}]")
        n = count_rows(mask).to(torch.int64)
        lo = torch.floor(n * (lower / 100.0)).long()
        hi = torch.maximum(torch.floor(n * (upper / 100.0)).long(), lo + 1).minimum(n)
        # The slice [lo, hi) of the candidates sorted from farthest to closest, as value thresholds:
        # keep v_lo <= s <= v_hi with v_lo / v_hi the lo-th / (hi-1)-th smallest. (Exact ties at a
        # boundary are all kept, where a sort would keep an arbitrary one of them.)
        ranks = torch.stack([lo, hi - 1], dim=1).clamp_min(0)
        s = scores.neg.detach()
        empty = n == 0
        if bool(empty.any()):  # rows without candidates: any entry will do, nothing is kept there
            ranks = ranks.masked_fill(empty[:, None], 0)
            mask_for_bounds = mask | empty[:, None]
        else:
            mask_for_bounds = mask
        bounds = row_order_statistics(s, mask_for_bounds, ranks)
        keep = mask & (s >= bounds[:, :1]) & (s <= bounds[:, 1:])
        return LogWeights(keep=keep)


class SameLabelMask(Weighting):
    """Drop candidates that share the anchor's label: the indicator 1(y(x^-) != y(x)) of H-SCL,
    Jiang et al. (2022) section II, the definition of q_H-SCL. With ``relation`` (see
    :meth:`ContrastScores.same_label`), "shares the label" is the relation's: a candidate can be the
    anchor's own without an equal label, as a document judged relevant to several queries is."""

    drops_non_negatives = True

    def __init__(self, relation=None):
        self.relation = relation

    def weigh(self, scores, mask, progress):
        return LogWeights(keep=~scores.same_label(self.relation))


class ThresholdWeighting(Weighting):
    """The thresholded hardening function eta(t) = 1(e^t >= tau) of Jiang et al. (2022), section
    III-A: keep candidates whose logit s satisfies e^s >= tau.

    Their experiments (section V, eq. 4) set ``tau = e^{l / gamma}`` with gamma the loss's own
    temperature, i.e. they threshold the *similarity*: ``e^{s} >= e^{l / t}`` is ``s * t >= l``. Give
    that level ``l`` as ``level`` (number or schedule, e.g. :class:`qt_hard.schedules.HSCLThreshold`):
    it is compared with ``s / scale``, so the temperature comes from the scores and the cut stays
    ``cos >= l`` at any temperature. ``tau`` (a threshold on e^s at whatever temperature the scores
    have) is the paper's general definition. Exactly one of the two.

    Args:
        tau: threshold on e^s (number or schedule), or None.
        level: threshold on the similarity s / scale (number or schedule), or None.
    """

    def __init__(self, tau=None, level=None):
        if (tau is None) == (level is None):
            raise ValueError(
                "thresholded negatives need exactly one of tau (on e^logit) or level (on the "
                "similarity, e.g. the H-SCL schedule of eq. 4)"
            )
        if isinstance(tau, HSCLThreshold):
            raise ValueError("HSCLThreshold yields the level l of eq. 4: pass it as level, not tau")
        self.tau, self.level = tau, level

    def weigh(self, scores, mask, progress):
        if self.level is not None:
            cut = float(at(self.level, progress)) * scores.scale  # e^{s} >= e^{l / t}
        else:
            tau = float(at(self.tau, progress))
            if not tau > 0:
                raise ValueError(f"threshold tau must be > 0, got {tau}")
            cut = math.log(tau)
        return LogWeights(keep=scores.neg.detach() >= cut)


class OTWeighting(Weighting):
    """Negatives from an entropic optimal-transport coupling, Jiang, Ishwar & Aeron (2023), eq. 5:
    ``P* = argmin E[c(x, x^-)] + epsilon KL(P || P_mar x P_mar)`` over couplings with uniform
    marginals, solved by Sinkhorn in the log domain on *detached* costs; self- and positive-coupling
    are forbidden (cost infinity, i.e. the candidate mask). The negative distribution of anchor i is
    row i of the coupling (the estimator normalizes it).

    With k-sampling (Ash et al.) only k drawn columns per anchor enter the estimate; ``coupling``
    says which coupling weighs them:

    * ``"full"`` (default): solve the coupling on the full (A, C) candidate table, as without k,
      then draw: the drawn columns carry their entries of the full coupling, so the weighted
      mean over the draws is a self-normalized importance-sampling estimate of the full-batch
      OT negative term (the draws are uniform, the target distribution is the coupling's row).
    * ``"drawn"``: solve on the drawn support only (every other entry forbidden). Each column's
      marginal is then forced onto the few anchors that drew it, which distorts the weights: at
      B = 32, k = 4 the mean error of E[log E_hat] against the full-batch OT is about twice that
      of ``"full"`` (see the tests). Costs O(A k) cost entries instead of O(A C).

    Args:
        epsilon: entropic regularization (number or schedule).
        cost: "sqeuclidean", ``0.5 * ||f(x) - f(x')||^2`` (section III), or "exp",
            ``exp(||f(x) - f(x')||^2 - kappa)`` (their alternative cost, section IV-C).
        kappa: offset of the "exp" cost.
        iters: Sinkhorn iterations.
        marginals: "uniform" (the OT problem) or "none": only the Gibbs kernel exp(-c / epsilon),
            i.e. the exponential tilt of Lemma 3 / eq. 7 that equals HCL with beta = t / epsilon
            in logit units.
        coupling: "full" or "drawn", see above (only matters with k).

    Under torch.distributed the coupling is solved between this process's anchors and the global
    candidates (marginals 1/A_local, 1/C_global), which is not the same problem as one process's
    global coupling: OT is the one strategy whose N-process loss differs from the one-process loss.
    """

    def __init__(
        self,
        epsilon=0.5,
        cost: str = "sqeuclidean",
        kappa: float = 0.0,
        iters: int = 20,
        marginals: str = "uniform",
        coupling: str = "full",
    ):
        if cost not in ("sqeuclidean", "exp"):
            raise ValueError(f"OT cost must be 'sqeuclidean' or 'exp', got {cost!r}")
        if marginals not in ("uniform", "none"):
            raise ValueError(f"OT marginals must be 'uniform' or 'none', got {marginals!r}")
        if coupling not in ("full", "drawn"):
            raise ValueError(f"OT coupling must be 'full' or 'drawn', got {coupling!r}")
        if not isinstance(iters, int) or iters < 0:
            raise ValueError(f"sinkhorn iterations must be a non-negative integer, got {iters!r}")
        self.epsilon, self.cost, self.kappa, self.iters, self.marginals = epsilon, cost, kappa, iters, marginals
        self.coupling = coupling

    def cost_matrix(self, scores: ContrastScores) -> torch.Tensor:
        """(A, C) detached cost c(x_i, x_j) (for the candidates ``scores`` holds)."""
        anchor_sqnorm, cand_sqnorm = scores.sqnorms()
        # ||a - c||^2 = |a|^2 + |c|^2 - 2 <a, c>, built in place on one (A, C) buffer.
        sq = scores.neg.detach() * (-2.0 / scores.scale)
        sq.add_(anchor_sqnorm[:, None]).add_(scores.column(cand_sqnorm)).clamp_min_(0.0)
        if self.cost == "sqeuclidean":
            return sq.mul_(0.5)
        return sq.sub_(self.kappa).exp_()

    def _log_kernel(self, scores: ContrastScores, mask: torch.Tensor, eps: float) -> torch.Tensor:
        return self.cost_matrix(scores).mul_(-1.0 / eps).masked_fill_(~mask, NEG_INF)

    def weigh(self, scores, mask, progress):
        eps = float(at(self.epsilon, progress))
        if not eps > 0:
            raise ValueError(f"OT epsilon must be > 0, got {eps}")
        if self.marginals == "none":  # a per-entry kernel: the drawn entries are all it needs
            return LogWeights(dense=self._log_kernel(scores, mask, eps))
        if scores.cand_index is None:
            return LogWeights(dense=sinkhorn_log_coupling(self._log_kernel(scores, mask, eps), self.iters))
        # The coupling of an (A, C) problem, read at the drawn entries.
        if self.coupling == "full":  # the full candidate table's
            if scores.full is None:
                raise ValueError("OT coupling='full' needs the full table the k columns were drawn from")
            full = self._log_kernel(scores.full, scores.full_allowed, eps)
        else:  # "drawn": every entry but the drawn ones forbidden
            log_kernel = self._log_kernel(scores, mask, eps)
            full = log_kernel.new_full((log_kernel.shape[0], scores.n_columns), NEG_INF)
            full.scatter_(1, scores.cand_index, log_kernel)
        return LogWeights(dense=sinkhorn_log_coupling(full, self.iters).gather(1, scores.cand_index))
