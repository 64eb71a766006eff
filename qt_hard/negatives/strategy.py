"""A negative strategy: sampler + weightings + estimator, assembled into the contrastive loss.

For anchor i with positive logits s+_p (p = 1..P_i) and candidate logits s_j, after the sampler has
picked the candidate set K_i (all allowed candidates, or k of them drawn uniformly without
replacement) and the weightings have produced log-weights ``log w_ij`` (``-inf`` outside the
negative set), the loss of one positive is

    l_ip = -s+_p + log(e^{s+_p} + Q_i * D_ip)      (include_positive=True: InfoNCE / HCL eq. 15)
    l_ip = -s+_p + log(Q_i * D_ip)                  (include_positive=False: Ash et al. D.1)

with ``D_ip`` the estimator's negative term built on ``log E_hat_i = logsumexp_j(s_j + log w_ij) -
logsumexp_j(log w_ij)`` and ``Q_i`` the number of negatives: the size of K_i ("candidates": k, or
2B-2 in the two-view layout, HCL's N and H-SCL's M), or the number with non-zero weight ("support":
Ring's sum over the ring). The anchor's loss is the mean over its positives (several positives share
one negative set: Quick-Thoughts' context window), the batch loss the mean over anchors with at least
one positive; what becomes of an anchor without negatives is on docs/concepts.md ("Sampler").

With several positives there is a second form, ``positives="joint"``: all of the anchor's P_i positives
share one denominator,

    l_i = -(1/P_i) sum_p s+_p + log(sum_p e^{s+_p} + Q_i * D_i)     (include_positive=True)
    l_i = -(1/P_i) sum_p s+_p + log(Q_i * D_i)                      (include_positive=False)

With uniform weights ``Q_i * E_hat_i`` is the plain sum of e^{s_j} over the negatives, so the joint
form is the cross-entropy of one softmax over every other sentence of the batch against the soft
target 1/P_i on each positive: exactly Quick-Thoughts' objective as released (S2V, ``s2v_model.py``,
``build_loss``), except that S2V sets the anchor's own logit to 0 (``matrix_set_diag``), which leaves
a spurious e^0 = 1 in every denominator; here the anchor's own column is removed. Hard, ring, OT and
label weights change only ``E_hat_i``.

MNRL's hardness multipliers (:class:`HardnessTilt`, NCE only) enter ``E_hat_i`` unnormalized
(:attr:`LogWeights.absolute`). The debiased estimator, whose Chuang et al. / HCL form has one
positive, subtracts ``tau_plus * (1/P_i) sum_p e^{s+_p}`` from ``E_hat_i`` (the mean positive term):
this several-positive extension is ours, since HCL released no code for its text experiments. With
one positive the two forms coincide.

Everything is computed on logits in log space; ``exp(score)`` is never materialized. The weighted
log-mean-exp is one fused autograd function (:mod:`.logmeanexp`) on the factored weights, and with
k-sampling every stage after the sampler works on the (A, k) drawn columns only; where nothing
reweights, filters or samples, the loss is one cross-entropy (:attr:`NegativeStrategy.plain_softmax`).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import torch
import torch.nn.functional as F

from . import registry
from .estimators import DebiasedEstimator, PlainEstimator
from .guard import FalseNegativeGuard
from .logmeanexp import tilted_log_mean_exp
from .papers import Paper
from .sampler import _check as check_k
from .sampler import count_rows, sample_k_indices
from .scores import ContrastScores
from .weightings import LogWeights, UniformWeighting, Weighting


class NegativeStrategy:
    """Which negatives, with which weights, estimated how.

    Args:
        weightings: composable :class:`Weighting` objects (log-weights add up); empty = uniform.
        estimator: :class:`PlainEstimator` (default), :class:`DebiasedEstimator` or
            :class:`JSDEstimator` (InfoGraph's Jensen-Shannon loss per positive instead of the NCE form).
        k: negatives per anchor drawn uniformly without replacement from the allowed candidates,
            independently per anchor (Ash et al. section 5); None = all.
        collision_free: drop candidates of the anchor's class before sampling (needs labels;
            Ash et al. section 5, Fig. 3 right).
        include_positive: keep e^{s+} in the denominator (InfoNCE, HCL) or not (Ash et al. D.1).
        count: "candidates", "support" or "auto" (support if a weighting restricts the support,
            e.g. Ring; candidates otherwise). See the module docstring.
        positives: "per_positive" (each positive its own denominator of the negatives, the mean over
            positives) or "joint" (the positives share one denominator, S2V's Quick-Thoughts loss).
            See the module docstring; identical when every anchor has one positive.
        guard: a :class:`~qt_hard.negatives.guard.FalseNegativeGuard` or None. It acts first, next to
            collision removal: a candidate it removes is neither drawn, weighed nor counted. With ``k``,
            an anchor it leaves with fewer than k candidates keeps all of them (its Q is their number);
            every other anchor draws k. An anchor it leaves with none contributes 0, as an empty
            threshold set does.
        papers: the :class:`~qt_hard.negatives.papers.Paper` s of the parts it was assembled from
            (:func:`make_strategy` passes those of the parts that act); see :attr:`papers`.
        needs_labels: whether a part it was assembled from reads class labels; see :attr:`needs_labels`.
        skip_anchors_without_negatives: an anchor that has no negative candidate (every candidate is
            its own positive, or of its class under ``collision_free`` or a label mask) is left out of
            the loss; without it such an anchor makes the batch a ``NotEnoughCandidatesError``, since
            its loss would be a meaningless 0.
    """

    def __init__(
        self,
        weightings: Sequence[Weighting] = (),
        estimator=None,
        *,
        k: int | None = None,
        collision_free: bool = False,
        include_positive: bool = True,
        count: str = "auto",
        positives: str = "per_positive",
        guard: FalseNegativeGuard | None = None,
        papers: Sequence[Paper] = (),
        needs_labels: bool = False,
        skip_anchors_without_negatives: bool = False,
    ):
        if positives not in POSITIVE_FORMS:
            raise ValueError(f"positives must be one of {', '.join(POSITIVE_FORMS)}, got {positives!r}")
        if count not in ("auto", "candidates", "support"):
            raise ValueError(f"count must be 'auto', 'candidates' or 'support', got {count!r}")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
            raise ValueError(f"k must be a positive integer or None (all candidates), got {k!r}")
        kept = [w for w in weightings if not isinstance(w, UniformWeighting)]
        self.weightings = sorted(kept, key=lambda w: w.on_support)  # miners last, over the others' support
        self.estimator = estimator if estimator is not None else PlainEstimator()
        self.k = k
        self.collision_free = collision_free
        self.include_positive = include_positive
        if count == "auto":
            count = "support" if any(w.restricts_support for w in self.weightings) else "candidates"
        self.count = count
        self.positives = positives
        self.guard = guard
        self.parts_papers = tuple(papers)
        self.parts_need_labels = bool(needs_labels)
        self.skip_anchors_without_negatives = bool(skip_anchors_without_negatives)
        self.progress = 0.0

    @property
    def papers(self) -> tuple[Paper, ...]:
        """The papers of what the loss computes: those of its parts, then Ash et al.'s when a structural
        option of theirs is set (k, collision_free, include_positive=False), each once."""
        structural = self.k is not None or self.collision_free or not self.include_positive
        return tuple(dict.fromkeys((*self.parts_papers, *(registry.STRUCTURAL_PAPER,) * structural)))

    @property
    def plain_softmax(self) -> bool:
        """True when nothing reweights, filters or samples: no weighting, the plain NCE estimator, no k,
        no guard, no collision removal, e^{s+} in the denominator. ``Q_i E_hat_i`` is then the plain sum
        of e^{s_j} over the valid negatives and ``l_i`` InfoNCE, the cross-entropy of one softmax over the
        anchor's positive and negatives: one ``F.cross_entropy`` over the table's logits wherever the
        table is one softmax per anchor (:meth:`ContrastScores.softmax`; the table itself where its
        builder marked it, as the MNRL layout's), the same numbers as the general path."""
        return (
            not self.weightings
            and type(self.estimator) is PlainEstimator
            and self.k is None
            and self.guard is None
            and not self.collision_free
            and self.include_positive
        )

    def _softmax(self, scores: ContrastScores) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(logits, target) of the cross-entropy that is this strategy's loss on ``scores``, or None where
        the general path computes it (not :attr:`plain_softmax`, or a table of several positive slots)."""
        if not self.plain_softmax:
            return None
        softmax = scores.softmax()
        if softmax is not None and softmax[0].dtype in (torch.float16, torch.bfloat16):
            return softmax[0].float(), softmax[1]  # as the general path: log-sum-exps in float32
        return softmax

    @property
    def needs_labels(self) -> bool:
        """Whether the loss reads class labels (a part that needs them, or collision-free sampling)."""
        return self.parts_need_labels or self.collision_free

    def set_progress(self, progress: float) -> None:
        """Training progress in [0, 1]; schedules among the parameters are evaluated at it."""
        self.progress = float(progress)

    def _allowed(self, scores: ContrastScores, guarded: bool = True) -> torch.Tensor:
        mask = scores.neg_valid
        if self.collision_free:
            mask = mask & ~scores.same_label()
        if guarded and self.guard is not None:
            mask = self.guard.keep(scores).logical_and_(mask)  # the guard's table is fresh: and in place
        return mask

    @torch.no_grad()
    def guard_masks(self, scores: ContrastScores) -> tuple[torch.Tensor, torch.Tensor]:
        """(A, C) bool masks of the candidates before the guard (valid, and of another class when
        collision-free) and of those it keeps: what the guard removed is ``before & ~kept``. Without a
        guard the two are equal."""
        before = self._allowed(scores, guarded=False)
        if self.guard is None:
            return before, before.clone()
        return before, before & self.guard.keep(scores)

    def _draw(self, scores: ContrastScores, mask: torch.Tensor, generator: torch.Generator | None):
        """The k-sampler's stage: (scores, mask, candidate count (A,), support base or None).

        Without k the table is returned whole. With k the table is cut to the (A, k) drawn columns; where
        the guard has left an anchor fewer than k candidates, that anchor keeps all of them and the rest
        of its k slots are masked out (the base mask is then returned for the later stages)."""
        if self.k is None:
            return scores, mask, count_rows(mask), mask
        if self.guard is not None:
            counts = count_rows(mask)
            if counts.numel() and int(counts.min()) < self.k:
                check_k(self._allowed(scores, guarded=False), self.k)  # k against the batch, before the guard
                # Random keys (as the sampler's key path): allowed columns first, in uniformly random order.
                keys = torch.rand(mask.shape, generator=generator, device=mask.device).masked_fill(~mask, 2.0)
                index = keys.topk(self.k, dim=1, largest=False, sorted=False).indices
                valid = mask.gather(1, index)
                picked = dataclasses.replace(scores.select(index, mask), neg_valid=valid)
                return picked, valid, count_rows(valid), valid
        picked = scores.select(sample_k_indices(mask, self.k, generator), mask)
        n_cand = torch.full((mask.shape[0],), self.k, dtype=torch.int32, device=mask.device)
        return picked, picked.neg_valid, n_cand, None

    def candidate_mask(self, scores: ContrastScores, generator: torch.Generator | None = None) -> torch.Tensor:
        """(A, C) bool: the candidates each anchor draws its negatives from (after collision removal
        and the k-sampler); the same draw as :meth:`per_anchor` with the same generator state."""
        mask = self._allowed(scores)
        if self.k is None:
            return mask
        picked, valid, _, _ = self._draw(scores, mask, generator)
        return torch.zeros_like(mask).scatter_(1, picked.cand_index, valid)

    def fewest_candidates(self, scores: ContrastScores) -> int:
        """The smallest number of candidates an anchor may draw from (the largest k that fits)."""
        counts = count_rows(self._allowed(scores, guarded=False))  # the guard's shortfall is per anchor
        return int(counts.min()) if counts.numel() else 0

    def weigh(self, scores: ContrastScores, mask: torch.Tensor) -> LogWeights:
        """The composed factored log-weights of the negatives over ``mask``."""
        total = LogWeights()
        for w in self.weightings:
            # A weighting that selects among the negatives (a miner) sees the support the others left.
            over = mask & total.keep if w.on_support and total.keep is not None else mask
            total = total + w.weigh(scores, over, self.progress)
        return total

    def per_anchor(self, scores: ContrastScores, generator: torch.Generator | None = None):
        """Per-anchor losses (A,) and which anchors count (A,) bool (those with a positive)."""
        softmax = self._softmax(scores)
        lacking = self._refuse_no_negative(scores)
        if softmax is not None:  # every anchor has its positive (ContrastScores.softmax)
            return F.cross_entropy(*softmax, reduction="none"), ~lacking
        allowed = self._allowed(scores)
        # With k only the drawn columns matter from here on: work on (A, k), not (A, C).
        scores, mask, n_cand, base = self._draw(scores, allowed, generator)
        neg, pos = scores.neg, scores.pos
        if neg.dtype in (torch.float16, torch.bfloat16):  # log-sum-exps over candidates need float32
            neg, pos = neg.float(), pos.float()
        lw = self.weigh(scores, mask)
        # After the sampler every drawn column is allowed (base None): only the weightings' support remains.
        keep = lw.keep if base is None else base if lw.keep is None else base & lw.keep
        n_support = n_cand if lw.keep is None else count_rows(keep)
        empty = n_support == 0
        if getattr(self.estimator, "is_divergence", False):
            if lw.absolute is not None:
                raise ValueError("hardness_mode (absolute multipliers) needs the NCE estimator, not JSD")
            # JSD (InfoGraph): a weighted mean of softplus(s) over the negatives, not a log-mean-exp.
            # One positive per node (its graph), so the two positive forms coincide.
            per_pos = self.estimator.per_positive(
                neg, lw.materialize(neg, mask), n_cand, lw.tilted, pos, self.progress, log_scale=lw.log_scale
            )
        else:
            log_e = tilted_log_mean_exp(neg, keep, lw.gamma, lw.gamma_grad, lw.dense, n_support, lw.absolute)
            log_e = torch.where(empty, 0.0, log_e)  # keep NaN out of empty rows
            if lw.log_scale != 0.0:  # HCL Fig. 14 read literally: beta multiplies the negative term
                log_e = log_e + lw.log_scale
            q = (n_support if self.count == "support" else n_cand).clamp_min(1).to(neg.dtype)
            if self.positives == "joint":
                return self._joint(pos, scores.pos_valid, log_e, q, empty, scores.scale)
            log_neg = torch.log(q)[:, None] + self.estimator.log_negative(log_e, pos, scores.scale, self.progress)
            if self.include_positive:
                per_pos = torch.logaddexp(pos, log_neg) - pos
            else:
                per_pos = log_neg - pos
        valid = scores.pos_valid & ~empty[:, None]
        if per_pos.shape[1] == 1:  # one positive slot: its loss is the anchor's (the mean over one)
            return torch.where(valid[:, 0], per_pos[:, 0], 0.0), scores.pos_valid[:, 0] & ~lacking
        per_pos = torch.where(valid, per_pos, 0.0)
        n_pos = scores.pos_valid.sum(dim=1)
        per_anchor = per_pos.sum(dim=1) / n_pos.clamp_min(1).to(neg.dtype)
        return per_anchor, (n_pos > 0) & ~lacking

    def negatives(self, scores: ContrastScores) -> torch.Tensor:
        """(A, C) bool: each anchor's negative candidates, before any selection among them: valid, not
        of its class under ``collision_free`` or a weighting that drops what is of it (``SameLabelMask``).
        The guard, a threshold or a miner choose among these; they do not make an anchor lack one."""
        mask = self._allowed(scores, guarded=False)
        for w in self.weightings:
            if w.drops_non_negatives:
                mask = mask & w.weigh(scores, mask, self.progress).keep
        return mask

    def _refuse_no_negative(self, scores: ContrastScores) -> torch.Tensor:
        """(A,) bool: the anchors with a positive and no negative (:meth:`negatives`), when the caller
        asked to skip them (``skip_anchors_without_negatives``); otherwise such an anchor is a
        ``NotEnoughCandidatesError`` (a ValueError): a batch of one pair, one graph, one class under a
        label mask or ``collision_free``. Its loss would be a meaningless 0, whichever strategy."""
        negatives = self.negatives(scores)
        lacking = scores.pos_valid.any(dim=1) & ~negatives.any(dim=1)
        if not bool(lacking.any()) or self.skip_anchors_without_negatives:
            return lacking
        from qt_hard.errors import NotEnoughCandidatesError

        labels = (
            " or of its own class" if self.collision_free or any(w.drops_non_negatives for w in self.weightings) else ""
        )
        if not bool(negatives.any()):
            raise NotEnoughCandidatesError(
                f"the batch has no negative: none of its {negatives.shape[0]} anchors has a candidate that is not its "
                f"own positive{labels}; a contrastive loss needs at least two pairs (or graphs, or classes) in a batch"
            )
        raise NotEnoughCandidatesError(
            f"{int(lacking.sum())} of the batch's {negatives.shape[0]} anchors have no negative (every candidate is "
            f"their own positive{labels}); their loss would be 0: pass skip_anchors_without_negatives=True to leave "
            "them out of the loss, or batch more classes together"
        )

    def _joint(self, pos, pos_valid, log_e, q, empty, scale):
        """Per-anchor losses of the joint form (module docstring): one denominator for all positives."""
        n_pos = pos_valid.sum(dim=1)
        has_pos = n_pos > 0
        masked = pos.masked_fill(~pos_valid, float("-inf"))
        lse_pos = torch.logsumexp(masked, dim=1)  # log sum_p e^{s+_p}; -inf without positives
        # Anchors without a positive get a finite stand-in so that no NaN reaches the gradient.
        lse_pos = torch.where(has_pos, lse_pos, torch.zeros_like(lse_pos))
        n = n_pos.clamp_min(1).to(pos.dtype)
        log_mean_pos = (lse_pos - torch.log(n))[:, None]  # the debiased estimator's e^{s+}, (A, 1)
        log_neg = torch.log(q) + self.estimator.log_negative(log_e, log_mean_pos, scale, self.progress)[:, 0]
        mean_pos = torch.where(pos_valid, pos, torch.zeros_like(pos)).sum(dim=1) / n
        log_den = torch.logaddexp(lse_pos, log_neg) if self.include_positive else log_neg
        per_anchor = log_den - mean_pos
        per_anchor = torch.where(has_pos & ~empty, per_anchor, torch.zeros_like(per_anchor))
        return per_anchor, has_pos

    @torch.no_grad()
    def floor_binds(self, scores: ContrastScores, generator: torch.Generator | None = None) -> float:
        """The fraction of anchors (with a negative) whose debiased estimate sits on the estimator's
        floor, where the anchor gets no gradient (Chuang et al. 2020, eq. 6, the clamp at ``e^{-1/t}``);
        0.0 without a floor. The ``floor_binds_frac`` of :meth:`diagnostics` alone, without its gradient
        pass: cheap enough for every training batch. The k-sampler draws from a copy of ``generator``'s
        state, so the caller's generator does not move."""
        if not isinstance(self.estimator, DebiasedEstimator) or getattr(self.estimator, "floor", "none") == "none":
            return 0.0
        state = generator.get_state() if generator is not None else None
        base = dataclasses.replace(
            scores, neg=scores.neg.detach().float(), pos=scores.pos.detach().float(), full=None, full_allowed=None
        )
        sel, lw, log_w = self._diagnostic_weights(base, generator_at(generator, state))
        rows = torch.isfinite(log_w).any(dim=1)
        return self._floor_binds(sel, log_w, lw.absolute, lw.log_scale, rows)

    @torch.no_grad()
    def diagnostics(self, scores: ContrastScores, generator: torch.Generator | None = None) -> dict[str, float]:
        """What the weights do to one batch, for logging (no gradient reaches the model).

        On a detached copy of ``scores`` (the k-sampler draws from a copy of ``generator``'s state, so
        the caller's generator does not move), over each anchor's negatives (drawn, in the support):

        (With ``hardness_mode`` the weights below are the products ``w_j e^{A_j}`` of the importance
        weights and the unnormalized multipliers: what each negative's term is scaled by.)

        * ``ess_frac``: mean over anchors of the effective sample size of the normalized weights,
          ``1 / sum_j q_j^2``, as a fraction of the anchor's negatives (1 = uniform);
        * ``w_ratio_median``: median over anchors of ``w_max / w_min``;
        * ``pushed_up_frac``: the fraction of negatives whose total gradient (through the scores and
          through the weights, as training sees it) pushes their score *up* (d loss / d s_j < 0);
          0 for uniform weights, whose every negative is pushed down. Counted per distinct inner
          product: in the two-view layout entries (i, j) and (j, i) are one, and their gradients add
          (``ContrastScores.anchor_column``); in the other layouts every entry is its own;
        * ``score_std``: the standard deviation of the negatives' logits;
        * ``floor_binds_frac``: the fraction of anchors whose estimate sits on the estimator's floor
          (0 without a floor);
        * ``beta`` and ``tilt``: the hard weights' beta in effect and their tilt in logit units
          (``log w = tilt * s + const``), where the strategy has hard weights.
        """
        state = generator.get_state() if generator is not None else None
        neg = scores.neg.detach().float().clone()
        base = dataclasses.replace(scores, neg=neg, pos=scores.pos.detach().float(), full=None, full_allowed=None)
        sel, lw, log_w = self._diagnostic_weights(base, generator_at(generator, state))
        out, inside, rows = _weight_spread(sel, log_w)
        pushed_up = self._pushed_up_frac(base, neg, sel, inside, generator_at(generator, state))
        if pushed_up is not None:
            out["pushed_up_frac"] = pushed_up
        out["floor_binds_frac"] = self._floor_binds(sel, log_w, lw.absolute, lw.log_scale, rows)
        if self.guard is not None:
            before, kept = self.guard_masks(base)
            total = int(before.sum())
            out["guard_removed_frac"] = 1.0 - int(kept.sum()) / total if total else float("nan")
        hard = [w for w in self.weightings if hasattr(w, "beta_at")]
        if hard:
            out["beta"] = hard[0].beta_at(self.progress)
            out["tilt"] = float(lw.gamma.detach() if torch.is_tensor(lw.gamma) else lw.gamma)
        return out

    def _diagnostic_weights(self, base: ContrastScores, generator: torch.Generator | None):
        """The drawn table, its LogWeights and (A, C') the log-weights of each drawn negative's term
        (``-inf`` outside the support), absolute multipliers included."""
        sel, mask, _, _ = self._draw(base, self._allowed(base), generator)
        lw = self.weigh(sel, mask)
        # Absolute multipliers (hardness_mode) scale each negative's term like a weight that is not
        # normalized: the terms' relative sizes, which the diagnostics describe, are w_j e^{A_j}.
        absolute = lw.absolute
        log_w = dataclasses.replace(lw, absolute=None).materialize(sel.neg, mask)
        if absolute is not None:
            log_w = log_w + absolute
        return sel, lw, log_w

    def _pushed_up_frac(self, base, neg, sel, inside, generator: torch.Generator | None) -> float | None:
        """The fraction of distinct inner products among the drawn negatives ``inside`` whose total
        gradient of the batch loss is negative (pushes the score up); None when no anchor counts."""
        # The total gradient of the batch loss with respect to each drawn negative's logit.
        with torch.enable_grad():
            leaf = neg.clone().requires_grad_()
            per_anchor, counted = self.per_anchor(dataclasses.replace(base, neg=leaf), generator)
            grad = torch.autograd.grad(per_anchor[counted].mean(), leaf)[0] if bool(counted.any()) else None
        if grad is None:
            return None
        if sel.cand_index is not None:  # the drawn entries, placed in the full table
            inside = torch.zeros_like(grad, dtype=torch.bool).scatter_(1, sel.cand_index, inside)
        g = _per_inner_product(grad, inside, base.anchor_column)
        return float((g < 0).float().mean()) if g.numel() else float("nan")

    def _floor_binds(self, sel, log_w, absolute, log_scale: float, rows: torch.Tensor) -> float:
        """Fraction of anchors whose per-negative term is raised to the estimator's floor (``log_w``
        the terms' log-weights, absolute multipliers included: ``absolute`` is taken out of the
        normalizer, as the estimator leaves it out)."""
        floor = getattr(self.estimator, "floor", "none")
        if not isinstance(self.estimator, DebiasedEstimator) or floor == "none" or not bool(rows.any()):
            return 0.0
        norm = log_w if absolute is None else log_w - absolute
        log_e = torch.logsumexp(sel.neg[rows] + log_w[rows], dim=1) - torch.logsumexp(norm[rows], dim=1) + log_scale
        pos = sel.pos[rows].masked_fill(~sel.pos_valid[rows], float("-inf"))
        n_pos = sel.pos_valid[rows].sum(dim=1).clamp_min(1).to(pos.dtype)
        log_mean_pos = (torch.logsumexp(pos, dim=1) - n_pos.log())[:, None]
        # The estimate the floor is applied to: exact under "hard", smooth under "smooth".
        log_d = self.estimator.log_estimate(log_e, log_mean_pos, self.progress)[:, 0]
        return float((log_d < -sel.scale).float().mean())

    def __call__(self, scores: ContrastScores, generator: torch.Generator | None = None) -> torch.Tensor:
        """The batch loss: mean over anchors with at least one positive (and a negative)."""
        softmax = self._softmax(scores)
        if softmax is not None and not bool(self._refuse_no_negative(scores).any()):
            return F.cross_entropy(*softmax)
        per_anchor, counted = self.per_anchor(scores, generator)
        if bool(counted.all()):  # the usual batch: no selection to make (nor to differentiate)
            return per_anchor.mean()
        if not bool(scores.pos_valid.any()):
            raise ValueError("no anchor in the batch has a positive (check context / doc_ids / batch size)")
        if not bool(counted.any()):  # every anchor skipped, as the caller asked: no loss, no gradient
            return per_anchor.sum() * 0.0
        return per_anchor[counted].mean()

    def __repr__(self) -> str:
        return (
            f"NegativeStrategy(weightings={self.weightings!r}, estimator={self.estimator!r}, k={self.k!r}, "
            f"collision_free={self.collision_free!r}, include_positive={self.include_positive!r}, "
            f"count={self.count!r}, positives={self.positives!r}"
            + (f", guard={self.guard!r})" if self.guard is not None else ")")
        )


def generator_at(generator: torch.Generator | None, state) -> torch.Generator | None:
    """A new generator at ``state`` (the caller's, saved), on ``generator``'s device (the sampler draws
    there); None without one."""
    if state is None:
        return None
    g = torch.Generator(device=generator.device)
    g.set_state(state)
    return g


def _weight_spread(sel: ContrastScores, log_w: torch.Tensor):
    """``ess_frac``, ``w_ratio_median`` and ``score_std`` of :meth:`NegativeStrategy.diagnostics` from the
    (A, C') log-weights ``log_w``, with the (A, C') support and the (A,) anchors that have one."""
    inside = torch.isfinite(log_w)
    n = inside.sum(dim=1)
    rows = n > 0
    q = torch.softmax(log_w[rows], dim=1)
    ess = 1.0 / q.pow(2).sum(dim=1)
    lw_rows = log_w[rows]
    top = lw_rows.amax(dim=1)
    bottom = lw_rows.masked_fill(~inside[rows], float("inf")).amin(dim=1)
    out = {
        "ess_frac": float((ess / n[rows].to(ess.dtype)).mean()) if bool(rows.any()) else float("nan"),
        "w_ratio_median": float((top - bottom).exp().median()) if bool(rows.any()) else float("nan"),
        "score_std": float(sel.neg[inside].std()) if int(inside.sum()) > 1 else float("nan"),
    }
    return out, inside, rows


def _per_inner_product(grad: torch.Tensor, inside: torch.Tensor, anchor_column) -> torch.Tensor:
    """The total gradient of each distinct inner product among the entries ``inside`` (A, C).

    Without ``anchor_column`` every entry is one inner product. With it, the entry (i, c) whose
    column c holds local anchor j and the entry (j, anchor_column[i]) are one inner product: their
    gradients add, and it is counted once (at the smaller anchor index) if either entry is inside."""
    if anchor_column is None:
        return grad[inside]
    n_anchors, n_cols = grad.shape
    rows = torch.arange(n_anchors, device=grad.device)
    owner = torch.full((n_cols,), -1, dtype=torch.long, device=grad.device)
    owner[anchor_column] = rows
    j = owner[None, :].expand(n_anchors, n_cols)
    mirrored = j >= 0
    back = anchor_column[:, None].expand(n_anchors, n_cols)
    j_safe = j.clamp_min(0)
    total = torch.where(mirrored, grad + grad[j_safe, back], grad)
    either = inside | (mirrored & inside[j_safe, back])
    once = ~mirrored | (rows[:, None] < j)
    return total[either & once]


POSITIVE_FORMS = ("per_positive", "joint")


def make_strategy(negatives="uniform", **options) -> NegativeStrategy:
    """Build a strategy from a name and keyword options (the functional and config entry point).

    ``negatives`` names a strategy of :mod:`qt_hard.negatives.registry` (uniform, debiased, hard, ring,
    label, threshold, ot, and any registered later: :func:`~qt_hard.negatives.registry.strategy_names`);
    ``options`` are the options of that strategy and of the modifiers that
    compose with every strategy (estimator and tau_plus, the guard, MNRL's hardness tilt, ...), each
    validated by its part's constructor (:func:`qt_hard.negatives.registry.option_table` lists them).
    ``k``, ``collision_free``, ``include_positive``, ``count`` and ``positives`` are
    :class:`NegativeStrategy`'s own. An option the chosen parts do not read is an error that names it
    (so is an unknown one); ``None`` stands for "not given". A :class:`NegativeStrategy` is returned as
    is (options must then be empty); a config's validated negatives (a :class:`registry.Chosen`) build
    their own parts, so only the structural keywords may come beside them.
    """
    structural = {key: options.pop(key) for key in registry.STRUCTURAL if key in options}
    if isinstance(negatives, (NegativeStrategy, registry.Chosen)) and options:
        raise ValueError(f"{type(negatives).__name__} carries its own options; pass them to it, not here")
    if isinstance(negatives, NegativeStrategy):
        return negatives
    built = negatives.assemble() if isinstance(negatives, registry.Chosen) else registry.assemble(negatives, options)
    return NegativeStrategy(
        built.weightings,
        built.estimator,
        guard=built.guard,
        papers=built.papers,
        needs_labels=built.needs_labels,
        **structural,
    )
