"""The weight diagnostics (NegativeStrategy.diagnostics) on hand-made batches."""

from __future__ import annotations

import math

import pytest
import torch

from qt_hard.losses import ContextLoss
from qt_hard.negatives import make_strategy
from qt_hard.negatives.scores import ContrastScores, context_scores, two_view_scores


def scores(b=6, d=4, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g) * scale
    z2 = torch.randn(b, d, generator=g) * scale
    return two_view_scores(z1, z2, temperature=1.0, normalize=False)


def test_uniform_has_full_ess_and_pushes_nothing_up():
    d = make_strategy("uniform").diagnostics(scores())
    assert d["ess_frac"] == pytest.approx(1.0, abs=1e-6)
    assert d["w_ratio_median"] == pytest.approx(1.0, abs=1e-6)
    assert d["pushed_up_frac"] == 0.0
    assert d["floor_binds_frac"] == 0.0
    assert "beta" not in d


def test_hand_made_tilt_matches_closed_form():
    # One anchor per row of scores; with the plain tilt beta the normalized weights of anchor i are
    # softmax(beta s_i.), so ESS and w_max / w_min follow from the logits alone.
    sc = scores(b=5, scale=0.8, seed=1)
    d = make_strategy("hard", beta=2.0, tau_plus=0.0, floor="none", clip="none").diagnostics(sc)
    s = sc.neg.masked_fill(~sc.neg_valid, float("-inf"))
    q = torch.softmax(2.0 * s, dim=1)
    n = sc.neg_valid.sum(1)
    ess = (1 / q.pow(2).sum(1) / n).mean()
    ratio = (2.0 * (s.amax(1) - sc.neg.masked_fill(~sc.neg_valid, float("inf")).amin(1))).exp().median()
    assert d["ess_frac"] == pytest.approx(float(ess), rel=1e-5)
    assert d["w_ratio_median"] == pytest.approx(float(ratio), rel=1e-5)
    assert d["beta"] == 2.0 and d["tilt"] == 2.0
    assert d["score_std"] == pytest.approx(float(sc.neg[sc.neg_valid].std()), rel=1e-6)


def test_weights_with_gradient_push_easy_negatives_up_and_detached_ones_do_not():
    sc = scores(b=8, scale=1.5, seed=2)
    through = make_strategy("hard", beta=3.0, floor="none").diagnostics(sc)
    detached = make_strategy("hard", beta=3.0, floor="none", detach=True).diagnostics(sc)
    assert through["pushed_up_frac"] > 0.1
    assert detached["pushed_up_frac"] == 0.0


def test_pushed_up_agrees_with_autograd_on_the_loss():
    sc = scores(b=7, scale=1.2, seed=3)
    strat = make_strategy("hard", beta=2.0, clip="rescaled", floor="none")
    d = strat.diagnostics(sc)
    leaf = sc.neg.detach().clone().requires_grad_()
    import dataclasses

    loss = strat(dataclasses.replace(sc, neg=leaf))
    (g,) = torch.autograd.grad(loss, leaf)
    # two views: entries (i, j) and (j, i) are one inner product, whose gradient is their sum
    once = torch.triu(sc.neg_valid, 1)
    assert d["pushed_up_frac"] == pytest.approx(float(((g + g.T)[once] < 0).float().mean()), abs=1e-12)


def test_floor_binding_is_reported():
    sc = scores(b=6, seed=4)
    far = dataclasses_replace(sc, neg=sc.neg - 10.0)  # every negative far below e^{-1/t}
    assert make_strategy("hard", beta=1.0, tau_plus=0.0).diagnostics(far)["floor_binds_frac"] == 1.0
    assert make_strategy("hard", beta=1.0, tau_plus=0.0, floor="none").diagnostics(far)["floor_binds_frac"] == 0.0


def dataclasses_replace(sc, **kw):
    import dataclasses

    return dataclasses.replace(sc, **kw)


def test_diagnostics_leave_the_generator_and_the_loss_alone():
    g = torch.Generator().manual_seed(5)
    f, h = torch.randn(12, 4), torch.randn(12, 4)
    loss = ContextLoss("hard", beta=1.0, clip="rescaled", k=4)
    loss.generator = g
    state = g.get_state()
    plain = loss(f, h)
    after_plain = g.get_state()
    g.set_state(state)
    loss.want_diagnostics = True
    diag_run = loss(f, h)
    assert torch.equal(g.get_state(), after_plain)
    assert float(diag_run) == float(plain)
    d = loss.last_diagnostics
    assert set(d) >= {"ess_frac", "w_ratio_median", "pushed_up_frac", "score_std", "beta", "tilt"}
    assert not loss.want_diagnostics
    assert math.isfinite(d["tilt"]) and d["beta"] == 1.0
    sc = context_scores(f, h, context=1)
    assert 0.0 < make_strategy("hard", beta=1.0, clip="rescaled", k=4).diagnostics(sc, None)["ess_frac"] <= 1.0


def _qt_batch_ess(reading: str, beta: float, score_std: float, batch: int = 40, dim: int = 32) -> float:
    """The hard weights' effective sample size on one Quick-Thoughts batch (the quick start's context
    layout, joint positives, t = 1, unnormalized, tau+ 0, no floor) whose f and g are Gaussian, scaled so
    that the scores <f_i, g_j> have standard deviation ``score_std`` (Var <f, g> = dim sigma^4)."""
    g = torch.Generator().manual_seed(0)
    sigma = math.sqrt(score_std / math.sqrt(dim))
    f, h = torch.randn(batch, dim, generator=g) * sigma, torch.randn(batch, dim, generator=g) * sigma
    sc = context_scores(f, h, context=1, temperature=1.0, normalize=False, doc_ids=torch.zeros(batch))
    strategy = make_strategy("hard", beta=beta, clip=reading, tau_plus=0.0, floor="none", positives="joint")
    return strategy.diagnostics(sc)["ess_frac"]


def test_the_scale_free_readings_keep_their_ess_as_the_scores_grow():
    """The rescaled reading keeps its ESS from scores of std 0.02 (a bag of words at initialisation) to
    2, the plain tilt does not, and fig14's weights ignore beta."""
    assert _qt_batch_ess("rescaled", 2.0, 0.02) == pytest.approx(_qt_batch_ess("rescaled", 2.0, 2.0), abs=1e-3)
    assert _qt_batch_ess("none", 1.0, 2.0) < _qt_batch_ess("none", 1.0, 0.02) - 0.2
    assert _qt_batch_ess("fig14", 1.0, 2.0) == pytest.approx(_qt_batch_ess("fig14", 2.0, 2.0), abs=1e-6)


def test_floor_binds_reads_the_smooth_estimate_under_the_smooth_floor():
    # tau_plus e^{s+} = 0.7 >= E_hat / 2 = 0.5: the exact estimate (1 - 0.7) / 0.9 is below e^{-1} and
    # binds the hard floor, the smooth one (1 / (4 * 0.7)) / 0.9 = 0.397 > e^{-1} does not.
    sc = ContrastScores(
        pos=torch.tensor([[math.log(7.0)]]),
        pos_valid=torch.ones(1, 1, dtype=torch.bool),
        neg=torch.zeros(1, 3),
        neg_valid=torch.ones(1, 3, dtype=torch.bool),
        scale=1.0,
        normalized=False,
    )
    assert make_strategy("debiased", tau_plus=0.1, floor="hard").diagnostics(sc)["floor_binds_frac"] == 1.0
    assert make_strategy("debiased", tau_plus=0.1, floor="smooth").diagnostics(sc)["floor_binds_frac"] == 0.0
    # the smooth estimate below the floor does bind it
    low = dataclasses_replace(sc, neg=torch.full((1, 3), -3.0))
    assert make_strategy("debiased", tau_plus=0.1, floor="smooth").diagnostics(low)["floor_binds_frac"] == 1.0


def test_diagnostics_with_hardness_mode_read_the_multiplied_terms():
    # MNRL's hardness tilt multiplies negative j's term by e^{alpha cos_j}, unnormalized: the weights
    # the diagnostics describe are those products, here e^{5 s_j} (temperature 1, uniform strategy).
    g = torch.Generator().manual_seed(6)
    f, h = torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)
    loss = ContextLoss("uniform", hardness_mode="in_batch_negatives", hardness_strength=5.0)
    loss.want_diagnostics = True
    value = loss(f, h)
    d = loss.last_diagnostics
    assert math.isfinite(float(value))
    sc = context_scores(f, h, context=1)
    s = sc.neg.masked_fill(~sc.neg_valid, float("-inf"))
    q = torch.softmax(5.0 * s, dim=1)
    ess = (1 / q.pow(2).sum(1) / sc.neg_valid.sum(1)).mean()
    assert d["ess_frac"] == pytest.approx(float(ess), rel=1e-5)
    low = sc.neg.masked_fill(~sc.neg_valid, float("inf")).amin(1)
    assert d["w_ratio_median"] == pytest.approx(float((5.0 * (s.amax(1) - low)).exp().median()), rel=1e-5)
    # The debiased estimator's floor reads E_hat with the multipliers in it: every negative at s = 1 and
    # tau_plus e^{s+} = e: the exact estimate is 0 (the floor binds); multiplied by e^{1 * cos} = e,
    # E_hat = e^2 and the estimate (e^2 - e) / 0.9 is far above e^{-1}.
    one = ContrastScores(
        pos=torch.tensor([[1.0 + math.log(10.0)]]),
        pos_valid=torch.ones(1, 1, dtype=torch.bool),
        neg=torch.ones(1, 3),
        neg_valid=torch.ones(1, 3, dtype=torch.bool),
        scale=1.0,
        normalized=True,
    )
    assert make_strategy("debiased", tau_plus=0.1).diagnostics(one)["floor_binds_frac"] == 1.0
    strat = make_strategy("debiased", tau_plus=0.1, hardness_mode="all_negatives", hardness_strength=1.0)
    assert strat.diagnostics(one)["floor_binds_frac"] == 0.0


def _gram_reference_pushed_up(z1, z2, beta):
    """Fraction of distinct negative inner products u_pq (p < q) with d loss / d u_pq < 0, the loss
    written on the Gram matrix of the 2b views (HCL's hard loss, plain tilt, no floor)."""
    out = torch.cat([z1, z2]).double()
    n, b = out.shape[0], z1.shape[0]
    iu = torch.triu_indices(n, n, 1)
    u = (out @ out.T)[iu[0], iu[1]].clone().requires_grad_()
    gram = torch.zeros(n, n, dtype=torch.float64).index_put((iu[0], iu[1]), u).index_put((iu[1], iu[0]), u)
    partner = torch.cat([torch.arange(b) + b, torch.arange(b)])
    neg_pair = torch.ones(n, n, dtype=torch.bool)
    neg_pair[torch.arange(n), torch.arange(n)] = False
    neg_pair[torch.arange(n), partner] = False
    loss = 0.0
    for i in range(n):
        s = gram[i][neg_pair[i]]
        imp = (beta * s).exp()
        ng = (imp * s.exp()).sum() / imp.mean()
        pos = gram[i, partner[i]].exp()
        loss = loss - torch.log(pos / (pos + ng))
    (g,) = torch.autograd.grad(loss / n, u)
    negative = neg_pair[iu[0], iu[1]]
    return float((g[negative] < 0).double().mean())


def test_pushed_up_counts_each_inner_product_once_in_the_two_view_layout():
    # A hand-made batch of 2 pairs: 8 table entries, 4 distinct inner products. Entry by entry 3 of
    # 8 gradients are negative; summed per inner product only 1 of 4 is.
    z1 = 0.5 * torch.tensor([[-1.0, -1.0], [-1.0, -1.0]])
    z2 = 0.5 * torch.tensor([[-1.0, 0.0], [1.0, 2.0]])
    sc = two_view_scores(z1, z2, temperature=1.0, normalize=False)
    strat = make_strategy("hard", beta=3.0, clip="none", floor="none")
    d = strat.diagnostics(sc)
    assert d["pushed_up_frac"] == pytest.approx(_gram_reference_pushed_up(z1, z2, 3.0), abs=1e-12)
    assert d["pushed_up_frac"] == 0.25
    leaf = sc.neg.detach().clone().requires_grad_()
    (g,) = torch.autograd.grad(strat(dataclasses_replace(sc, neg=leaf)), leaf)
    assert float((g[sc.neg_valid] < 0).float().mean()) == 0.375  # the entry count the layout must not use
    # with k drawn per anchor, the inner products of the drawn entries are counted
    gen = torch.Generator().manual_seed(0)
    drawn = make_strategy("hard", beta=3.0, clip="none", floor="none", k=1).diagnostics(sc, gen)
    assert 0.0 <= drawn["pushed_up_frac"] <= 1.0


def test_pushed_up_on_a_random_two_view_batch_matches_the_gram_reference():
    g = torch.Generator().manual_seed(11)
    z1, z2 = torch.randn(6, 3, generator=g), torch.randn(6, 3, generator=g)
    sc = two_view_scores(z1, z2, temperature=1.0, normalize=False)
    d = make_strategy("hard", beta=2.0, clip="none", floor="none").diagnostics(sc)
    assert d["pushed_up_frac"] == pytest.approx(_gram_reference_pushed_up(z1, z2, 2.0), abs=1e-6)


def test_pushed_up_in_the_quick_thoughts_layout_counts_entries():
    # f.g is not symmetric: every entry is its own inner product, counted as it is.
    g = torch.Generator().manual_seed(12)
    f, h = torch.randn(8, 4, generator=g), torch.randn(8, 4, generator=g)
    sc = context_scores(f, h, context=1)
    assert sc.anchor_column is None
    strat = make_strategy("hard", beta=2.0, clip="none", floor="none", positives="joint")
    d = strat.diagnostics(sc)
    leaf = sc.neg.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad(strat(dataclasses_replace(sc, neg=leaf)), leaf)
    assert d["pushed_up_frac"] == pytest.approx(float((grad[sc.neg_valid] < 0).float().mean()), abs=1e-12)


def test_floor_binds_alone_equals_the_diagnostics_share():
    # Anchors whose positive dominates their negatives sit on the hard floor; the others do not.
    g = torch.Generator().manual_seed(7)
    neg = torch.randn(8, 7, generator=g)
    pos = torch.where(torch.arange(8)[:, None] % 2 == 0, torch.full((8, 1), 12.0), torch.zeros(8, 1))
    sc = ContrastScores(
        pos=pos,
        pos_valid=torch.ones(8, 1, dtype=torch.bool),
        neg=neg,
        neg_valid=torch.ones(8, 7, dtype=torch.bool),
        scale=20.0,
        normalized=False,
    )
    for floor in ("hard", "smooth", "none"):
        s = make_strategy("debiased", tau_plus=0.05, floor=floor)
        assert s.floor_binds(sc) == s.diagnostics(sc)["floor_binds_frac"]
    assert make_strategy("debiased", tau_plus=0.05, floor="hard").floor_binds(sc) == 0.5
    assert make_strategy("debiased", tau_plus=0.05, floor="smooth").floor_binds(sc) == 0.0
    assert make_strategy("uniform").floor_binds(sc) == 0.0


def test_floor_binds_leaves_the_k_samplers_generator_where_it_was():
    sc = scores(b=8, seed=2)
    g = torch.Generator().manual_seed(5)
    before = g.get_state().clone()
    make_strategy("debiased", tau_plus=0.1, k=3).floor_binds(sc, g)
    assert torch.equal(g.get_state(), before)
