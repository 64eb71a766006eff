"""Special cases, gradients, the sampler's distribution, numerical safety, and the floor."""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.stats import chisquare

from qt_hard.losses import ContrastiveLoss, contrastive_loss
from qt_hard.negatives import (
    HardWeighting,
    NegativeStrategy,
    OTWeighting,
    Weighting,
    make_strategy,
    registry,
    sample_k_negatives,
    two_view_scores,
)
from qt_hard.negatives.registry import options_read
from qt_hard.schedules import BetaAnnealing, HSCLThreshold, Linear, Step, make_schedule


def pair(b=6, d=5, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, d, generator=g, dtype=dtype), torch.randn(b, d, generator=g, dtype=dtype)


# ---------------------------------------------------------------- special cases
def test_beta_zero_hard_is_debiased():
    z = pair()
    assert contrastive_loss(*z, "hard", beta=0.0, tau_plus=0.1).item() == pytest.approx(
        contrastive_loss(*z, "debiased", tau_plus=0.1).item(), abs=1e-12
    )


def test_tau_zero_debiased_is_uniform():
    z = pair()
    assert contrastive_loss(*z, "debiased", tau_plus=0.0).item() == pytest.approx(
        contrastive_loss(*z, "uniform").item(), abs=1e-12
    )


def test_full_ring_is_uniform():
    z = pair()
    assert contrastive_loss(*z, "ring", lower=0, upper=100).item() == pytest.approx(
        contrastive_loss(*z, "uniform").item(), abs=1e-12
    )


def test_ot_large_epsilon_is_uniform():
    z = pair()
    assert contrastive_loss(*z, "ot", epsilon=1e8, sinkhorn_iters=50).item() == pytest.approx(
        contrastive_loss(*z, "uniform").item(), abs=1e-6
    )


def test_ot_without_marginals_is_exponential_tilt():
    """Lemma 3 / eq. 7: the Gibbs kernel exp(-c/eps) on the sphere is proportional to exp(<u,v>/eps),
    i.e. HCL's weights with beta = t / eps in logit units. Values and (detached) gradients agree."""
    t, eps = 0.5, 0.25
    z1, z2 = pair()
    z1a, z1b = z1.clone().requires_grad_(), z1.clone().requires_grad_()
    ot = contrastive_loss(z1a, z2, "ot", temperature=t, epsilon=eps, marginals="none")
    hard = contrastive_loss(z1b, z2, "hard", temperature=t, beta=t / eps, detach=True, tau_plus=None)
    assert ot.item() == pytest.approx(hard.item(), abs=1e-10)
    ot.backward(), hard.backward()
    assert torch.allclose(z1a.grad, z1b.grad, atol=1e-10)


def test_ot_coupling_has_uniform_marginals_and_no_self_coupling():
    scores = two_view_scores(*pair(), temperature=0.5)
    log_pi = OTWeighting(epsilon=0.2, iters=200).log_weights(scores, scores.neg_valid, 0.0)
    pi = log_pi.exp()
    n = pi.shape[0]
    assert torch.allclose(pi.sum(0), torch.full((n,), 1 / n, dtype=pi.dtype), atol=1e-9)
    assert torch.allclose(pi.sum(1), torch.full((n,), 1 / n, dtype=pi.dtype), atol=1e-6)
    assert bool((pi[~scores.neg_valid] == 0).all())


def test_labels_required_and_k_too_large_are_clear_errors():
    z = pair()
    with pytest.raises(ValueError, match="need labels"):
        contrastive_loss(*z, "label")
    with pytest.raises(ValueError, match="k=11 negatives requested"):
        contrastive_loss(*z, k=11)  # 2B - 2 = 10 candidates
    with pytest.raises(ValueError, match="unknown negatives"):
        contrastive_loss(*z, "hardest")
    with pytest.raises(TypeError, match="unknown option"):
        contrastive_loss(*z, "hard", betta=1.0)


def test_collision_free_drops_same_class_before_sampling():
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    scores = two_view_scores(*pair(), temperature=0.5, labels=labels)
    strat = make_strategy("uniform", k=6, collision_free=True)
    mask = strat.candidate_mask(scores, torch.Generator().manual_seed(0))
    assert bool((mask.sum(1) == 6).all())
    assert not bool((mask & scores.same_label()).any())
    # 12 views - itself - its partner - the 2 views of the other same-class pair = 8 candidates
    assert bool((make_strategy("uniform", k=8, collision_free=True).candidate_mask(scores).sum(1) == 8).all())
    with pytest.raises(ValueError, match="k=9"):
        make_strategy("uniform", k=9, collision_free=True).candidate_mask(scores)


# Both samplers: first distinct draws (k = 5: the draw count is the same for 118 and 116 allowed
# candidates) and random keys (k = 70 > half the candidates).
@pytest.mark.parametrize("k", [5, 70])
def test_collision_free_differs_from_plain_only_by_the_removed_candidates(k):
    """From one generator state, collision-free sampling draws the plain draw with its same-class
    candidates replaced (the other draws kept), consumes the generator alike (seeds stay paired
    across the modes), and gives the loss of every anchor that drew no same-class candidate
    unchanged: the count k and the log-mean-exp normalisation do not depend on the mode."""
    b = 60
    labels = torch.arange(b) % 45  # 15 classes hold two pairs: few collisions, as Wiki-1000 at B = 1000
    scores = two_view_scores(*pair(b, 8, seed=3), temperature=1.0, labels=labels, normalize=False)
    plain = make_strategy("uniform", k=k, include_positive=False)
    free = make_strategy("uniform", k=k, include_positive=False, collision_free=True)
    g_plain, g_free = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    drawn_plain, drawn_free = plain.candidate_mask(scores, g_plain), free.candidate_mask(scores, g_free)
    assert torch.equal(g_plain.get_state(), g_free.get_state())
    same = scores.same_label() & scores.neg_valid
    hits = (drawn_plain & same).sum(1)
    assert int(hits.sum()) > 0 and bool((hits == 0).any())
    assert torch.equal((drawn_plain & drawn_free).sum(1), k - hits)
    assert bool((drawn_free.sum(1) == k).all()) and not bool((drawn_free & same).any())
    loss_plain, _ = plain.per_anchor(scores, torch.Generator().manual_seed(11))
    loss_free, _ = free.per_anchor(scores, torch.Generator().manual_seed(11))
    clean = hits == 0
    torch.testing.assert_close(loss_free[clean], loss_plain[clean])
    assert not torch.allclose(loss_free[~clean], loss_plain[~clean])


# ---------------------------------------------------------------- gradients
PARTS = {cls.name: cls for cls in registry.parts()}
# Every registered part's example whose autograd gradient is the loss's derivative (OT's coupling and
# MNRL's hardness tilt are held fixed: a finite difference sees them move), and two structural forms.
# (clip: its bound is a detached batch statistic, no gradcheck.)
GRADCHECK = [
    pytest.param(negatives, options, id=part)
    for part, negatives, options in registry.examples()
    if PARTS[part].true_gradient and registry.strategy_class(negatives).true_gradient
] + [("uniform", {"include_positive": False}), ("debiased", {"tau_plus": 0.3, "floor": "smooth"})]


@pytest.mark.parametrize("name,opts", GRADCHECK)
def test_gradcheck(name, opts):
    z1, z2 = pair(4, 3, seed=5)
    z1.requires_grad_(), z2.requires_grad_()
    labels = torch.tensor([0, 1, 0, 1])
    fn = lambda a, b: contrastive_loss(a, b, name, temperature=0.5, labels=labels, **opts)
    assert torch.autograd.gradcheck(fn, (z1, z2), eps=1e-6, atol=1e-5)


class _FixedWeights(Weighting):
    """Weights held constant (a given log-weight table), to gradcheck the loss around OT's coupling.
    (A custom weighting that implements only ``log_weights``: the dense path of the core.)"""

    def __init__(self, log_w):
        self.log_w = log_w

    def log_weights(self, scores, mask, progress):
        return self.log_w.masked_fill(~mask, float("-inf"))


def test_ot_gradient_is_the_loss_gradient_at_a_fixed_coupling():
    """The coupling is computed on detached costs (Jiang et al.), so the OT loss's gradient must be that
    of the same loss with the coupling frozen; the frozen-weights loss passes gradcheck."""
    z1, z2 = pair(4, 3, seed=5)
    z1.requires_grad_(), z2.requires_grad_()
    scores = two_view_scores(z1, z2, temperature=0.5)
    log_pi = OTWeighting(epsilon=0.5).log_weights(scores, scores.neg_valid, 0.0).detach()
    frozen = NegativeStrategy([_FixedWeights(log_pi)])
    fn = lambda a, b: frozen(two_view_scores(a, b, temperature=0.5))
    assert torch.autograd.gradcheck(fn, (z1, z2), eps=1e-6, atol=1e-5)
    g_ot = torch.autograd.grad(contrastive_loss(z1, z2, "ot", epsilon=0.5), (z1, z2))
    g_frozen = torch.autograd.grad(fn(z1, z2), (z1, z2))
    assert all(torch.allclose(a, b, atol=1e-12) for a, b in zip(g_ot, g_frozen))


# ---------------------------------------------------------------- sampler
def test_sampler_exact_k_distinct_valid():
    g = torch.Generator().manual_seed(0)
    mask = torch.rand(50, 40, generator=g) > 0.3
    mask[:, :10] = True  # every row has at least 10
    out = sample_k_negatives(mask, 10, g)
    assert bool((out.sum(1) == 10).all())
    assert not bool((out & ~mask).any())


def test_sampler_is_uniform_chi_square():
    """Every allowed candidate is drawn with probability k / n: chi-square on 20,000 draws."""
    mask = torch.ones(20000, 12, dtype=torch.bool)
    mask[:, [0, 5, 7]] = False  # 9 allowed candidates per row
    out = sample_k_negatives(mask, 4, torch.Generator().manual_seed(1))
    counts = out.sum(0)[mask[0]].double().numpy()
    assert counts.sum() == 4 * 20000
    assert chisquare(counts).pvalue > 1e-3
    # and subsets: each row's pair frequency for (1,2) is C(7,2)/C(9,4)... check pairwise inclusion
    both = (out[:, 1] & out[:, 2]).double().mean().item()
    assert both == pytest.approx((4 / 9) * (3 / 8), abs=0.015)


def test_sampler_rejects_bad_k():
    mask = torch.ones(3, 5, dtype=torch.bool)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError):
            sample_k_negatives(mask, bad)


# ---------------------------------------------------------------- numerical safety
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    b=st.integers(2, 9),
    d=st.integers(1, 6),
    norm=st.floats(1e-3, 1e3),
    t=st.floats(0.05, 2.0),
    beta=st.floats(0.0, 10.0),
    tau_plus=st.floats(0.0, 0.5),
    normalize=st.booleans(),
    example=st.sampled_from(registry.examples()),  # every registered part
    floor=st.sampled_from(["hard", "smooth", "none"]),
    clip=st.sampled_from(["none", "rescaled", "fig14", "graph_code", "clamp"]),
    seed=st.integers(0, 10_000),
)
def test_finite_loss_and_gradients(b, d, norm, t, beta, tau_plus, normalize, example, floor, clip, seed):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g)
    z1 = (z1 / z1.norm(dim=1, keepdim=True).clamp_min(1e-6) * norm).requires_grad_()
    z2 = (torch.randn(b, d, generator=g) * norm).requires_grad_()
    labels = torch.arange(b) % 2
    _, name, options = example
    opts = {**options, **dict(beta=beta, tau_plus=tau_plus, floor=floor, clip=clip)}
    opts = {key: v for key, v in opts.items() if key in options_read(name, opts)}  # others are errors
    loss = contrastive_loss(z1, z2, name, temperature=t, normalize=normalize, labels=labels, **opts)
    assert torch.isfinite(loss)
    loss.backward()
    assert torch.isfinite(z1.grad).all() and torch.isfinite(z2.grad).all()


# ---------------------------------------------------------------- the floor at low temperature
def _anchor_grad_norms(t, floor):
    g = torch.Generator().manual_seed(0)
    base = torch.randn(32, 16, generator=g)
    z1 = (base + 0.3 * torch.randn(32, 16, generator=g)).requires_grad_()
    z2 = (base + 0.3 * torch.randn(32, 16, generator=g)).requires_grad_()
    strat = make_strategy("debiased", tau_plus=0.1, floor=floor)
    scores = two_view_scores(z1, z2, temperature=t)
    per_anchor, _ = strat.per_anchor(scores)
    # gradient of each anchor's own loss with respect to the positive logit of that anchor
    grads = torch.autograd.grad(per_anchor.sum(), scores.pos)[0].abs().squeeze(1)
    masked = scores.neg.detach().masked_fill(~scores.neg_valid, float("-inf"))
    log_e = torch.logsumexp(masked, 1) - math.log(scores.neg_valid.sum(1)[0].item())
    r = 0.1 * torch.exp(scores.pos.detach().squeeze(1) - log_e)  # tau+ e^{s+} / E_hat
    return per_anchor.detach(), grads, r


def test_hard_floor_kills_gradients_at_low_temperature_smooth_floor_does_not():
    """t = 0.05 (scale 20): tau+ e^{s+} exceeds E_hat for nearly every anchor, the clamp binds and the
    anchor's gradient is exactly zero; the smooth floor keeps every anchor learning. At t = 0.5 the
    floor rarely binds and both floors give the same loss wherever r <= 1/2."""
    _, g_hard, _ = _anchor_grad_norms(0.05, "hard")
    _, g_smooth, _ = _anchor_grad_norms(0.05, "smooth")
    assert (g_hard == 0).float().mean() > 0.9
    assert bool((g_smooth > 0).all())
    l_hard, g_hard, r = _anchor_grad_norms(0.5, "hard")
    l_smooth, g_smooth, _ = _anchor_grad_norms(0.5, "smooth")
    assert (g_hard == 0).float().mean() < 0.1 and bool((g_smooth > 0).all())
    exact = r <= 0.5
    assert bool(exact.any()) and bool((~exact).any())  # at t = 0.5 both regimes occur ...
    assert torch.allclose(l_hard[exact], l_smooth[exact], atol=1e-6)  # ... where nothing changes
    assert bool((l_smooth[~exact] > l_hard[~exact]).all())  # elsewhere the estimate stays larger


# ---------------------------------------------------------------- schedules and the module
def test_beta_annealing_hcl_d1():
    down = BetaAnnealing(2.0, changes=4)
    assert [down(p) for p in (0.0, 0.24, 0.25, 0.5, 0.99, 1.0)] == [2.0, 2.0, 1.5, 1.0, 0.5, 0.5]
    up = BetaAnnealing(2.0, changes=4, direction="up")
    assert [up(p) for p in (0.0, 0.5, 1.0)] == [0.5, 1.5, 2.0]


def test_ring_and_hscl_schedules():
    lin = Linear(100, 10, until=0.5)
    assert lin(0) == 100 and lin(0.25) == pytest.approx(55) and lin(0.9) == 10
    assert [Step(0, 30, steps=3)(p) for p in (0.0, 0.3, 0.6, 0.9)] == [0, 10, 20, 30]
    th = HSCLThreshold(start=-0.5, end=0.1)  # the level l of eq. 4
    assert th(0) == pytest.approx(-0.5) and th(0.5) == pytest.approx(-0.2) and th(1) == pytest.approx(0.1)
    assert isinstance(make_schedule({"schedule": "beta_anneal", "beta": 1.0, "changes": 2}), BetaAnnealing)
    with pytest.raises(ValueError, match="unknown schedule"):
        make_schedule({"schedule": "cosine"})


def test_module_follows_progress():
    z = pair()
    loss = ContrastiveLoss("hard", beta={"schedule": "beta_anneal", "beta": 2.0, "changes": 2})
    early = loss(*z).item()
    loss.set_progress(0.9)
    late = loss(*z).item()
    assert early == pytest.approx(contrastive_loss(*z, "hard", beta=2.0).item(), abs=1e-12)
    assert late == pytest.approx(contrastive_loss(*z, "hard", beta=1.0).item(), abs=1e-12)


def test_strategy_object_composes():
    """A strategy object is accepted as is; composing ring and hard multiplies their weights."""
    from qt_hard.negatives import RingWeighting

    z = pair()
    s = NegativeStrategy([RingWeighting(0, 100), HardWeighting(1.0)], count="candidates")
    assert contrastive_loss(*z, s).item() == pytest.approx(
        contrastive_loss(*z, "hard", beta=1.0, tau_plus=None).item(), abs=1e-12
    )
