"""The false-negative guard (qt_hard.negatives.guard) in float64: its rule against transcriptions of
GISTEmbedLoss's and NV-Retriever's / mine_hard_negatives' rules, its place in the strategy (before the
k-sampler, out of the count, composing with every strategy and every score layout), the guide's
similarities and the diagnostic it adds."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from qt_hard.errors import NotEnoughCandidatesError
from qt_hard.negatives import (
    ContrastScores,
    FalseNegativeGuard,
    attach_guide,
    context_scores,
    make_strategy,
    node_graph_scores,
    one_directional_scores,
    registry,
    two_view_scores,
)

D = torch.float64


def embeddings(b=8, d=6, seed=0, n_neg=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(b, d, generator=g, dtype=D)
    # positives near their anchors, so that cos+ is mostly positive and some negatives come close to it
    p = a + 0.9 * torch.randn(b, d, generator=g, dtype=D)
    n = torch.randn(b, n_neg, d, generator=g, dtype=D) if n_neg else None
    return a, p, n


# ------------------------------------------------------------------ transcriptions of the published rules
def gist_removed(anchor, positive, negative, strategy, margin):
    """GISTEmbedLoss (sentence-transformers 6, contrast_anchors/positives off), transcribed: cosine matrices
    anchor x positives and anchor x negatives; the anchor's own positive is the threshold; a guided
    similarity above ``pos - margin`` (absolute) or ``pos - |pos| * margin`` (relative) is masked, the own
    positive never. Returns the (b, b + b) removed mask in the candidate order [positives, negatives]."""
    cos = lambda x, y: F.normalize(x, dim=-1) @ F.normalize(y, dim=-1).T  # noqa: E731
    blocks = [cos(anchor, positive)] + ([cos(anchor, negative[:, 0])] if negative is not None else [])
    threshold = cos(anchor, positive).diagonal()[:, None]
    removed = []
    for sim in blocks:
        if strategy == "absolute":
            removed.append(sim > threshold - margin)
        else:
            removed.append(sim > threshold - threshold.abs() * margin)
    out = torch.cat(removed, dim=1)
    out[torch.arange(anchor.shape[0]), torch.arange(anchor.shape[0])] = False  # the true positive is kept
    return out


def nv_retriever_kept(neg_scores, pos_scores, margin, rule):
    """NV-Retriever (arXiv 2407.15831, sec. 3), transcribed: TopK-MarginPos keeps negatives scoring below
    ``pos - margin``; TopK-PercPos below ``pos * perc`` with ``perc = 1 - margin`` (the paper's 95% is
    margin 0.05). mine_hard_negatives' margins: with several positives the smallest positive score is used."""
    pos = pos_scores.amin(dim=1, keepdim=True)
    if rule == "absolute":
        return ~(neg_scores + margin > pos)
    return ~(neg_scores > pos * (1.0 - margin))


@pytest.mark.parametrize("n_neg", [0, 1])
@pytest.mark.parametrize("rule, margin", [("absolute", 0.0), ("absolute", 0.1), ("relative", 0.05), ("relative", 0.3)])
def test_guard_is_gists_rule(rule, margin, n_neg):
    a, p, n = embeddings(n_neg=n_neg)
    scores = one_directional_scores(a, p, n, temperature=0.05, gather_candidates=False)
    keep = FalseNegativeGuard(rule, margin).keep(scores)
    removed = gist_removed(a, p, n, rule, margin) & scores.neg_valid
    assert torch.equal(~keep & scores.neg_valid, removed)
    assert 0 < int(removed.sum()) < int(scores.neg_valid.sum()), "a rule that removes nothing or all proves little"


@pytest.mark.parametrize("rule, margin", [("absolute", 0.05), ("relative", 0.05), ("relative", 0.2)])
def test_guard_is_nv_retrievers_rule_for_positive_scores(rule, margin):
    g = torch.Generator().manual_seed(1)
    pos = torch.rand(16, 1, generator=g, dtype=D) * 0.8 + 0.1  # positive cosines
    neg = torch.rand(16, 30, generator=g, dtype=D) * 1.2 - 0.2
    scores = _table(pos, neg)
    keep = FalseNegativeGuard(rule, margin).keep(scores)
    assert torch.equal(keep, nv_retriever_kept(neg, pos, margin, rule))
    assert 0 < int((~keep).sum()) < keep.numel()


def test_relative_rule_is_sign_safe_for_negative_positives():
    """For a negative positive score the product form ``pos * (1 - m)`` would *raise* the threshold
    (sentence-transformers #3819); the guard subtracts ``|pos| * m`` as sentence-transformers 6 does."""
    pos = torch.tensor([[-0.4]], dtype=D)
    neg = torch.tensor([[-0.41, -0.43, -0.38, -0.30]], dtype=D)
    keep = FalseNegativeGuard("relative", 0.1).keep(_table(pos, neg))
    # threshold -0.4 - 0.04 = -0.44: every candidate is above it and goes
    assert keep.tolist() == [[False, False, False, False]]
    assert nv_retriever_kept(neg, pos, 0.1, "relative").tolist() == [[True, True, True, False]]  # cut at -0.36


def test_several_positives_use_the_smallest():
    pos = torch.tensor([[0.9, 0.5, 0.95]], dtype=D)
    valid = torch.tensor([[True, True, False]])
    neg = torch.tensor([[0.45, 0.55, 0.8, 0.92]], dtype=D)
    scores = dataclasses.replace(_table(pos, neg), pos_valid=valid)
    assert FalseNegativeGuard("absolute", 0.0).keep(scores).tolist() == [[True, False, False, False]]
    # nothing valid: nothing to compare with, everything stays
    none = dataclasses.replace(scores, pos_valid=torch.zeros_like(valid))
    for rule in ("absolute", "relative"):
        assert FalseNegativeGuard(rule, 0.0).keep(none).all()


def _table(pos, neg, scale=1.0):
    return ContrastScores(
        pos=pos * scale,
        pos_valid=torch.ones_like(pos, dtype=torch.bool),
        neg=neg * scale,
        neg_valid=torch.ones_like(neg, dtype=torch.bool),
        scale=scale,
        normalized=True,
    )


# ------------------------------------------------------------------ in the strategy
def test_uniform_with_the_guard_by_hand():
    """Uniform InfoNCE over the surviving candidates only: -s+ + log(e^{s+} + sum_kept e^{s})."""
    a, p, _ = embeddings()
    scores = one_directional_scores(a, p, temperature=0.1, gather_candidates=False)
    strategy = make_strategy("uniform", guard="absolute", guard_margin=0.05)
    keep = FalseNegativeGuard("absolute", 0.05).keep(scores) & scores.neg_valid
    expected = []
    for i in range(8):
        s_pos = scores.pos[i, 0]
        kept = scores.neg[i][keep[i]]
        expected.append(-s_pos + torch.logsumexp(torch.cat([s_pos[None], kept]), 0))
    assert torch.allclose(strategy(scores), torch.stack(expected).mean(), atol=1e-12)
    assert strategy(scores).item() < make_strategy("uniform")(scores).item()


def test_hard_with_the_guard_by_hand():
    """HCL over the survivors: weights exp(beta s) normalized over the kept set, Q = its size."""
    a, p, _ = embeddings(seed=3)
    scores = one_directional_scores(a, p, temperature=0.5, gather_candidates=False)
    beta = 0.7
    strategy = make_strategy("hard", beta=beta, floor="none", guard="relative", guard_margin=0.1)
    keep = FalseNegativeGuard("relative", 0.1).keep(scores) & scores.neg_valid
    expected = []
    for i in range(8):
        s = scores.neg[i][keep[i]]
        w = torch.softmax(beta * s, 0)
        e_hat = (w * s.exp()).sum()
        s_pos = scores.pos[i, 0]
        expected.append(-s_pos + torch.log(s_pos.exp() + s.numel() * e_hat))
    assert torch.allclose(strategy(scores), torch.stack(expected).mean(), atol=1e-12)


LAYOUTS = ["one_directional", "two_view", "context", "node_graph"]


def _layout(name, seed=0):
    a, p, n = embeddings(b=8, seed=seed, n_neg=1)
    labels = torch.arange(8) % 3
    if name == "one_directional":
        return one_directional_scores(a, p, n, temperature=0.2, labels=labels, gather_candidates=False)
    if name == "two_view":
        return two_view_scores(a, p, temperature=0.5, labels=labels, gather_candidates=False)
    if name == "context":
        return context_scores(a, p, context=2, temperature=1.0, normalize=True, gather_candidates=False)
    batch = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    return node_graph_scores(
        a, p[:4], batch, temperature=0.5, normalize=True, labels=torch.tensor([0, 1, 0, 1]), gather_candidates=False
    )


# Every registered part's example but the guard's own.
STRATEGIES = [(part, negatives, options) for part, negatives, options in registry.examples() if "guard" not in options]


# Label-aware negatives need a layout whose anchors carry labels.
CASES = [
    pytest.param(layout, negatives, options, id=f"{part}-{layout}")
    for layout in LAYOUTS
    for part, negatives, options in STRATEGIES
    if not make_strategy(negatives, **options).needs_labels or _layout(layout).anchor_labels is not None
]


@pytest.mark.parametrize("layout, negatives, options", CASES)
def test_guard_equals_removing_the_candidates(layout, negatives, options):
    """For every strategy and every layout, the guard is the same loss as a table whose removed candidates
    were never candidates: weight zero *and* out of the count (the estimator sees fewer candidates)."""
    scores = _layout(layout)
    guard = FalseNegativeGuard("absolute", 0.1)
    removed = scores.neg_valid & ~guard.keep(scores)
    assert int(removed.sum()) > 0
    guarded = make_strategy(negatives, guard="absolute", guard_margin=0.1, **options)
    reduced = dataclasses.replace(scores, neg_valid=scores.neg_valid & ~removed)
    # An anchor the guard empties has no candidate at all in the reference table: skipped there, not refused.
    plain = make_strategy(negatives, skip_anchors_without_negatives=True, **options)
    ours, ref = guarded.per_anchor(scores)[0], plain.per_anchor(reduced)[0]
    assert torch.allclose(ours, ref, atol=1e-12, rtol=0)
    # and it is not the unguarded loss
    assert not torch.allclose(ours, plain.per_anchor(scores)[0], atol=1e-9)


def test_guard_acts_before_k():
    """With k the draws come from the survivors; an anchor left with fewer than k keeps them all."""
    a, p, n = embeddings(b=8, seed=5, n_neg=1)
    scores = one_directional_scores(a, p, n, temperature=0.2, gather_candidates=False)
    keep = FalseNegativeGuard("absolute", 0.0).keep(scores) & scores.neg_valid
    remaining = keep.sum(1)
    k = int(remaining.max()) - 1  # some anchors have more than k survivors, the fewest fewer
    assert int(remaining.min()) < k
    strategy = make_strategy("uniform", k=k, guard="absolute")
    drawn = strategy.candidate_mask(scores, torch.Generator().manual_seed(0))
    assert not bool((drawn & ~keep).any())
    assert torch.equal(drawn.sum(1), remaining.clamp(max=k))
    loss = strategy(scores, torch.Generator().manual_seed(0))
    assert math.isfinite(loss.item())
    # the same draw reaches the loss: uniform InfoNCE over the drawn columns, Q = their number
    ref = make_strategy("uniform")(dataclasses.replace(scores, neg_valid=drawn))
    assert torch.allclose(loss, ref, atol=1e-12)
    # with every anchor keeping at least k the draw is the plain sampler's k of the survivors
    k_small = int(remaining.min())
    small = make_strategy("uniform", k=k_small, guard="absolute").candidate_mask(scores, torch.Generator())
    assert torch.equal(small.sum(1), torch.full_like(remaining, k_small)) and not bool((small & ~keep).any())
    # asking for more than the batch holds (before the guard) stays an error
    with pytest.raises(NotEnoughCandidatesError):
        make_strategy("uniform", k=scores.neg.shape[1], guard="absolute")(scores)


def test_an_anchor_left_without_negatives_contributes_zero():
    pos = torch.tensor([[0.5], [0.9]], dtype=D)
    neg = torch.tensor([[0.6, 0.7], [0.1, 0.2]], dtype=D)
    scores = _table(pos, neg, scale=10.0)
    per_anchor, counted = make_strategy("uniform", guard="absolute").per_anchor(scores)
    assert per_anchor[0].item() == 0.0 and counted.tolist() == [True, True]
    expected = -9.0 + math.log(math.exp(9.0) + math.exp(1.0) + math.exp(2.0))
    assert per_anchor[1].item() == pytest.approx(expected, abs=1e-12)


def test_the_guide_sets_the_cut():
    a, p, n = embeddings(seed=2, n_neg=1)
    ga, gp, gn = embeddings(seed=7, n_neg=1)  # an unrelated "guide"
    scores = one_directional_scores(a, p, n, temperature=0.05, gather_candidates=False)
    guide = one_directional_scores(ga, gp, gn, temperature=1.0, gather_candidates=False)
    guarded = attach_guide(scores, guide)
    keep = FalseNegativeGuard("absolute", 0.1, source="guide").keep(guarded)
    assert torch.equal(~keep, gist_removed(ga, gp, gn, "absolute", 0.1) | ~guide.neg_valid & ~keep)
    assert not torch.equal(keep, FalseNegativeGuard("absolute", 0.1).keep(scores))
    with pytest.raises(ValueError, match="attach_guide"):
        make_strategy("uniform", guard="absolute", guard_source="guide")(scores)
    with pytest.raises(ValueError, match="does not match"):
        attach_guide(scores, one_directional_scores(ga, gp, None, temperature=1.0, gather_candidates=False))


def test_removed_share_is_a_diagnostic():
    a, p, n = embeddings(seed=4, n_neg=1)
    scores = one_directional_scores(a, p, n, temperature=0.05, gather_candidates=False)
    keep = FalseNegativeGuard("relative", 0.2).keep(scores)
    share = 1.0 - int((keep & scores.neg_valid).sum()) / int(scores.neg_valid.sum())
    diag = make_strategy("hard", beta=1.0, guard="relative", guard_margin=0.2).diagnostics(scores)
    assert diag["guard_removed_frac"] == pytest.approx(share) and share > 0
    assert "guard_removed_frac" not in make_strategy("hard").diagnostics(scores)


def test_guard_options_are_checked():
    with pytest.raises(ValueError, match="guard_margin do not apply"):
        make_strategy("hard", guard_margin=0.1)
    with pytest.raises(ValueError, match="guard must be one of"):
        make_strategy("uniform", guard="percent")
    with pytest.raises(ValueError, match="guard_source must be one of"):
        make_strategy("uniform", guard="absolute", guard_source="teacher")
    with pytest.raises(ValueError, match="finite number"):
        make_strategy("uniform", guard="absolute", guard_margin=float("nan"))
    assert "guard=FalseNegativeGuard" in repr(make_strategy("ring", guard="relative", guard_margin=0.05))
