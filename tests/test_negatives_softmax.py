"""The uniform fast path: a strategy that reweights, filters and samples nothing is one cross-entropy over
the table's logits, with the numbers of the general path and of sentence-transformers' MNRL."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from qt_hard.negatives import (
    LogWeights,
    NegativeStrategy,
    Weighting,
    context_scores,
    directional_scores,
    make_strategy,
    node_graph_scores,
    one_directional_scores,
    two_view_scores,
)

TOL = 1e-6


def close(a: torch.Tensor, b: torch.Tensor, tol: float) -> bool:
    """Equal to ``tol``, absolute, or relative to the size of ``b`` (float32 losses of size 20 at
    temperature 0.05 differ by their rounding, ~2e-6)."""
    return bool(((a - b).abs() <= tol * b.abs().clamp_min(1.0)).all())


class _Nothing(Weighting):
    """Weighs nothing: a strategy holding it is the uniform loss computed by the general path."""

    def weigh(self, scores, mask, progress):
        return LogWeights()


def _general(strategy: NegativeStrategy) -> NegativeStrategy:
    """The same strategy on the general path (the log-mean-exp of the weights and the estimator)."""
    return NegativeStrategy(
        [_Nothing()],
        strategy.estimator,
        include_positive=strategy.include_positive,
        positives=strategy.positives,
    )


def _leaves(dtype, *shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g, dtype=dtype).requires_grad_() for s in shapes]


def _layout(name, dtype):
    """(the leaves, a function of them returning the list of tables) of one layout."""
    b, d = 12, 8
    if name == "pairs":
        leaves = _leaves(dtype, (b, d), (b, d))
        return leaves, lambda a, p: [one_directional_scores(a, p, temperature=0.05, gather_candidates=False)]
    if name == "triplets":
        leaves = _leaves(dtype, (b, d), (b, d), (b, 2, d))
        return leaves, lambda a, p, n: [one_directional_scores(a, p, n, temperature=0.05, gather_candidates=False)]
    if name == "queue":
        leaves = _leaves(dtype, (b, d), (b, d), (5, d))
        return leaves, lambda a, p, q: [
            one_directional_scores(a, p, temperature=0.1, extra_candidates=q, gather_candidates=False)
        ]
    if name == "per_direction":
        leaves = _leaves(dtype, (b, d), (b, d))
        kw = dict(directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction")
        return leaves, lambda a, p: directional_scores(a, p, temperature=0.05, gather_candidates=False, **kw)
    if name == "two_view":
        leaves = _leaves(dtype, (b, d), (b, d))
        return leaves, lambda a, p: [two_view_scores(a, p, temperature=0.5, gather_candidates=False)]
    if name == "node_graph":
        leaves = _leaves(dtype, (b, d), (4, d))
        batch = torch.arange(b) % 4
        return leaves, lambda x, g: [node_graph_scores(x, g, batch, temperature=0.5, gather_candidates=False)]
    assert name == "context"  # several positive slots: the general path, in both strategies
    leaves = _leaves(dtype, (b, d), (b, d))
    return leaves, lambda f, g: [context_scores(f, g, context=2, temperature=1.0, gather_candidates=False)]


LAYOUTS = ["pairs", "triplets", "queue", "per_direction", "two_view", "node_graph", "context"]


def _loss(strategy, tables):
    return torch.stack([strategy(t) for t in tables]).mean()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_fast_path_equals_the_general_path_values_and_gradients(layout, dtype):
    leaves, tables_of = _layout(layout, dtype)
    plain = make_strategy("uniform")
    assert plain.plain_softmax and not _general(plain).plain_softmax
    ours = _loss(plain, tables_of(*leaves))
    ours_grads = torch.autograd.grad(ours, leaves)
    ref = _loss(_general(plain), tables_of(*leaves))
    ref_grads = torch.autograd.grad(ref, leaves)
    tol = TOL if dtype == torch.float32 else 1e-12
    assert close(ours, ref, tol)
    assert all(close(a, b, tol) for a, b in zip(ours_grads, ref_grads))
    per_anchor, counted = plain.per_anchor(tables_of(*leaves)[0])
    ref_anchor, ref_counted = _general(plain).per_anchor(tables_of(*leaves)[0])
    assert torch.equal(counted, ref_counted)
    assert close(per_anchor, ref_anchor, tol)


@pytest.mark.parametrize("layout", ["pairs", "triplets", "queue", "per_direction", "node_graph"])
def test_a_builder_that_marks_its_table_hands_it_to_the_cross_entropy_as_it_is(layout):
    leaves, tables_of = _layout(layout, torch.float64)
    for table in tables_of(*leaves):
        logits, target = table.softmax()
        assert logits is table.neg
        assert torch.allclose(logits.gather(1, target[:, None]), table.pos, atol=1e-12)  # the positive's column
        assert torch.equal(table.neg_valid.sum(1), torch.full_like(target, table.neg.shape[1] - 1))


@pytest.mark.parametrize("layout", ["pairs", "two_view"])
def test_the_plain_strategy_never_reaches_the_log_mean_exp(monkeypatch, layout):
    import qt_hard.negatives.strategy as strategy_module

    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(strategy_module, "tilted_log_mean_exp", refuse)
    leaves, tables_of = _layout(layout, torch.float32)
    (table,) = tables_of(*leaves)
    assert torch.isfinite(make_strategy("uniform")(table))
    assert torch.isfinite(make_strategy("uniform", positives="joint")(table))  # one positive: the same form
    for general in (dict(k=4), dict(tau_plus=0.1), dict(include_positive=False), dict(guard="absolute")):
        with pytest.raises(AssertionError, match="the general path ran"):
            make_strategy("uniform", **general)(table)


def test_a_table_changed_after_its_builder_marked_it_is_read_from_its_masks():
    a, p = _leaves(torch.float64, (8, 4), (8, 4))
    table = one_directional_scores(a, p, temperature=0.5, gather_candidates=False)
    drop = torch.zeros_like(table.neg_valid)
    drop[:, 3] = True  # candidate 3 is no negative of anyone (anchor 3's own positive is out already)
    plain, general = make_strategy("uniform"), _general(make_strategy("uniform"))
    fewer = dataclasses.replace(table, neg_valid=table.neg_valid & ~drop)
    assert fewer.softmax()[0] is not fewer.neg  # replaced: the mark is gone
    expected = general(fewer).item()
    assert plain(fewer).item() == pytest.approx(expected, abs=1e-12)
    assigned = one_directional_scores(a, p, temperature=0.5, gather_candidates=False)
    assigned.neg_valid = assigned.neg_valid & ~drop
    assert plain(assigned).item() == pytest.approx(expected, abs=1e-12)
    in_place = one_directional_scores(a, p, temperature=0.5, gather_candidates=False)
    in_place.neg_valid[:, 3] = False
    assert plain(in_place).item() == pytest.approx(expected, abs=1e-12)
    assert abs(plain(table).item() - expected) > 1e-3  # the unchanged table: another loss


def test_half_precision_logits_go_to_the_cross_entropy_in_float32():
    a, p = _leaves(torch.float32, (16, 8), (16, 8))
    table = two_view_scores(a.bfloat16(), p.bfloat16(), temperature=0.5, gather_candidates=False)
    ours = make_strategy("uniform")(table)
    assert ours.dtype == torch.float32
    assert ours.item() == pytest.approx(_general(make_strategy("uniform"))(table).item(), abs=1e-6)


def test_a_table_with_an_anchor_without_its_positive_takes_the_general_path():
    a, p = _leaves(torch.float64, (6, 4), (6, 4))
    table = two_view_scores(a, p, temperature=0.5, gather_candidates=False)
    missing = table.pos_valid.clone()
    missing[2, 0] = False
    table = dataclasses.replace(table, pos_valid=missing)
    assert table.softmax() is None
    per_anchor, counted = make_strategy("uniform").per_anchor(table)
    assert not bool(counted[2]) and per_anchor[2].item() == 0.0
    ref = _general(make_strategy("uniform"))(table)
    assert make_strategy("uniform")(table).item() == pytest.approx(ref.item(), abs=1e-12)


# MNRL's arguments and the plugin's that must give its loss (the plugin's defaults first).
MNRL_CASES = [
    pytest.param({}, 0, id="default-pairs"),
    pytest.param({}, 1, id="default-triplets"),
    pytest.param(dict(directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"), 0, id="symmetric"),
    pytest.param(dict(directions=("query_to_doc", "doc_to_query"), partition_mode="joint"), 1, id="joint-d2q"),
]


@pytest.mark.parametrize("arguments, n_neg", MNRL_CASES)
def test_the_plugin_equals_mnrl_values_and_gradients(arguments, n_neg):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from torch import nn

    from qt_hard.integrations.sentence_transformers import HardNegativesLoss

    g = torch.Generator().manual_seed(4)
    base = torch.randn(64, 32, generator=g)
    columns = [base + 2.0 * torch.randn(64, 32, generator=g) for _ in range(2 + n_neg)]
    results = []
    for loss_fn in (
        MultipleNegativesRankingLoss(nn.Identity(), scale=20.0, **arguments),
        HardNegativesLoss(nn.Identity(), **arguments),
    ):
        leaves = [c.clone().requires_grad_() for c in columns]
        value = loss_fn.compute_loss_from_embeddings(leaves, None)
        results.append((value, torch.autograd.grad(value, leaves)))
    (ref, ref_grads), (ours, ours_grads) = results
    assert ref.item() > 0.1  # not a degenerate comparison
    assert close(ours, ref, TOL)
    assert all(close(a, b, TOL) for a, b in zip(ours_grads, ref_grads))
