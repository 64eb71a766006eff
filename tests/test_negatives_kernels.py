"""The fast kernels of the negatives core against their plain definitions: the fused weighted
log-mean-exp, the exact order statistics of Ring, the two-domain Sinkhorn, the samplers, and the
(A, k) compaction after the k-sampler."""

import math

import pytest
import torch

from qt_hard.diagnostics import LargestTensor
from qt_hard.losses import contrastive_loss
from qt_hard.negatives import make_strategy, sample_k_indices, tilted_log_mean_exp, two_view_scores
from qt_hard.negatives.ot import sinkhorn_log_coupling, sinkhorn_log_domain
from qt_hard.negatives.select import row_order_statistics


def _naive_log_mean_exp(s, keep, gamma, dense):
    lw = gamma * s + (dense if dense is not None else 0.0)
    lw = lw.masked_fill(~keep, float("-inf"))
    return torch.logsumexp(s + lw, 1) - torch.logsumexp(lw, 1)


@pytest.mark.parametrize(
    "gamma,with_dense,gamma_grad",
    [
        (0.0, False, None),
        (1.5, False, None),
        (1.5, False, 0.0),
        (-0.7, False, None),
        (0.0, True, None),
        (0.8, True, None),
    ],
)
def test_tilted_log_mean_exp_value_and_gradcheck(gamma, with_dense, gamma_grad):
    g = torch.Generator().manual_seed(0)
    s = (3 * torch.randn(5, 7, generator=g, dtype=torch.float64)).requires_grad_()
    keep = torch.rand(5, 7, generator=g) > 0.3
    keep[:, 0] = True
    dense = torch.randn(5, 7, generator=g, dtype=torch.float64).requires_grad_() if with_dense else None
    got = tilted_log_mean_exp(s, keep, gamma, gamma_grad, dense)
    if gamma_grad == 0.0:  # detached tilt: the weights are constants for the gradient
        ref = _naive_log_mean_exp(s, keep, 0.0, gamma * s.detach())
    else:
        ref = _naive_log_mean_exp(s, keep, gamma, dense)
    assert torch.allclose(got, ref, atol=1e-12)
    w = torch.randn(5, generator=g, dtype=torch.float64)
    assert torch.allclose(
        torch.autograd.grad((got * w).sum(), s)[0], torch.autograd.grad((ref * w).sum(), s)[0], atol=1e-12
    )
    inputs = (s,) if dense is None else (s, dense)
    fn = lambda *x: tilted_log_mean_exp(x[0], keep, gamma, gamma_grad, x[1] if len(x) > 1 else None)
    if gamma_grad is None:
        assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7)


def test_tilted_log_mean_exp_empty_row_is_finite_with_zero_gradient():
    s = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    keep = torch.ones(3, 4, dtype=torch.bool)
    keep[1] = False
    for gamma in (0.0, 2.0):
        out = tilted_log_mean_exp(s, keep, gamma)
        assert torch.isfinite(out).all()
        grad = torch.autograd.grad(out.sum(), s)[0]
        assert torch.isfinite(grad).all() and bool((grad[1] == 0).all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_order_statistics_equal_a_full_sort(dtype):
    """Wide rows take the bucketed path; it must give exactly the sorted values, ties and masks included."""
    g = torch.Generator().manual_seed(1)
    for trial in range(6):
        a, c = 37, 130 + 400 * trial
        s = torch.randn(a, c, generator=g, dtype=dtype)
        if trial % 3 == 0:
            s = (4 * s).round()  # many exact ties
        if trial == 5:
            s[:3] = 0.25  # constant rows
        mask = torch.rand(a, c, generator=g) > (0.6 if trial % 2 else 0.01)
        n = mask.sum(1)
        ranks = torch.stack([torch.zeros_like(n), (n * 0.1).long(), (n * 0.9).long() - 1, n - 1], 1)
        got = row_order_statistics(s, mask, ranks)
        ref = s.masked_fill(~mask, float("inf")).sort(1).values.gather(1, ranks)
        assert torch.equal(got, ref), trial


def test_ring_on_wide_rows_keeps_the_sorted_slice():
    """Ring's value thresholds keep exactly the Alg. 1 slice [floor(l n), floor(u n)) of each row."""
    g = torch.Generator().manual_seed(2)
    z1, z2 = torch.randn(600, 16, generator=g), torch.randn(600, 16, generator=g)  # 1198 candidates
    scores = two_view_scores(z1, z2, temperature=0.5)
    strat = make_strategy("ring", lower=10, upper=70)
    keep = strat.weigh(scores, scores.neg_valid).keep & scores.neg_valid
    n = 1198
    lo, hi = math.floor(0.1 * n), math.floor(0.7 * n)
    order = scores.neg.detach().masked_fill(~scores.neg_valid, float("inf")).argsort(1)
    ref = torch.zeros_like(keep)
    ref.scatter_(1, order[:, lo:hi], True)
    assert torch.equal(keep, ref)


def test_sinkhorn_exp_domain_iterates_equal_log_domain():
    g = torch.Generator().manual_seed(3)
    cost = torch.rand(40, 60, generator=g, dtype=torch.float64) * 4
    log_k = (-cost / 0.3).masked_fill(torch.rand(40, 60, generator=g) < 0.2, float("-inf"))
    for iters in (2, 5, 20):
        assert torch.allclose(sinkhorn_log_coupling(log_k, iters), sinkhorn_log_domain(log_k, iters), atol=1e-10)
    got = sinkhorn_log_coupling(log_k, 20)
    assert bool(torch.isinf(got[torch.isinf(log_k)]).all())


@pytest.mark.parametrize("eps", [1e-2, 1e-3])
def test_sinkhorn_with_tiny_epsilon_in_float32_matches_the_log_domain(eps):
    """Costs spanning hundreds of epsilons: the exp-domain scalings must be absorbed (or the solve
    redone in the log domain) so that the coupling still matches the log-domain iterates."""
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(50, 3, generator=g), torch.randn(70, 3, generator=g)
    log_k = -0.5 * torch.cdist(x, y).pow(2) / eps
    log_k[torch.arange(50), torch.arange(50)] = float("-inf")
    out = sinkhorn_log_coupling(log_k, 20)
    ref = sinkhorn_log_domain(log_k.double(), 20)
    assert torch.isfinite(out[torch.isfinite(log_k)]).all()
    p, p_ref = out.double().exp(), ref.exp()
    # Entries are up to 1/70; float32 itself (the log-domain solver in float32) is off by ~6e-7 here.
    assert torch.allclose(p, p_ref, atol=1e-5)
    assert torch.allclose(p.sum(0), torch.full((70,), 1 / 70, dtype=torch.float64), atol=1e-5)


@pytest.mark.parametrize("k", [5, 300])
def test_both_samplers_draw_distinct_allowed_columns(k):
    g = torch.Generator().manual_seed(5)
    mask = torch.rand(64, 700, generator=g) > 0.4
    idx = sample_k_indices(mask, k, g)
    assert idx.shape == (64, k)
    assert bool(mask.gather(1, idx).all())
    assert all(len(set(row.tolist())) == k for row in idx)


@pytest.mark.parametrize(
    "name,opts",
    [
        ("uniform", {}),
        ("hard", {"beta": 1.0, "tau_plus": 0.1}),
        ("ring", {"lower": 20, "upper": 80}),
        ("label", {"hardening": "exp", "beta": 0.5}),
        ("ot", {"epsilon": 0.5, "coupling": "drawn"}),
        ("uniform", {"collision_free": True}),
        ("hard", {"beta": 2.0, "clip": "rescaled"}),
    ],
)
def test_k_sampled_strategy_equals_the_full_table_restricted_to_the_draw(name, opts):
    """After the sampler only the k drawn columns are kept (A, k); the loss must equal the full-table
    computation whose allowed set is the drawn mask. (OT's default weighs the draws by the coupling of
    the whole table instead, tested in test_negatives_options; its "drawn" form is this identity.)"""
    g = torch.Generator().manual_seed(6)
    z1 = torch.randn(12, 5, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(12, 5, generator=g, dtype=torch.float64, requires_grad=True)
    labels = torch.arange(12) % 3
    k = 7
    strat = make_strategy(name, k=k, **opts)
    scores = two_view_scores(z1, z2, temperature=0.5, labels=labels)
    drawn = strat.candidate_mask(scores, torch.Generator().manual_seed(9))
    compact = strat(scores, torch.Generator().manual_seed(9))
    full = make_strategy(name, **opts)
    full.count = strat.count
    restricted = two_view_scores(z1, z2, temperature=0.5, labels=labels)
    restricted.neg_valid = drawn
    if opts.get("collision_free"):
        full.collision_free = False  # already applied inside the draw
    ref = full(restricted)
    assert compact.item() == pytest.approx(ref.item(), abs=1e-10)
    g1 = torch.autograd.grad(compact, (z1, z2), retain_graph=True)
    g2 = torch.autograd.grad(ref, (z1, z2))
    assert all(torch.allclose(a, b, atol=1e-10) for a, b in zip(g1, g2))


def test_half_precision_scores_are_reduced_in_float32():
    g = torch.Generator().manual_seed(7)
    z1, z2 = torch.randn(16, 8, generator=g), torch.randn(16, 8, generator=g)
    ref = contrastive_loss(z1, z2, "hard", beta=1.0)
    got = contrastive_loss(z1.bfloat16(), z2.bfloat16(), "hard", beta=1.0)
    assert got.dtype == torch.float32
    assert got.item() == pytest.approx(ref.item(), rel=2e-2)


@pytest.mark.parametrize(
    "name,opts",
    [
        ("uniform", {}),
        ("hard", {"beta": 1.0, "tau_plus": 0.1}),
        ("ring", {"lower": 10, "upper": 90}),
        ("label", {"hardening": "exp"}),
        ("ot", {}),
        ("uniform", {"k": 16}),
        ("ot", {"k": 16}),
    ],
)
def test_memory_is_of_the_score_table_never_times_the_dimension(name, opts):
    """No op of forward or backward makes a tensor larger than the (2B, 2B) score table (times a small
    constant); a (B, candidates, d) tensor would be d = 256 times larger."""
    b, d = 64, 256
    g = torch.Generator().manual_seed(8)
    z1 = torch.randn(b, d, generator=g, requires_grad=True)
    z2 = torch.randn(b, d, generator=g, requires_grad=True)
    with LargestTensor() as probe:
        contrastive_loss(z1, z2, name, labels=torch.arange(b) % 4, **opts).backward()
    assert probe.largest <= 2 * (2 * b) ** 2


def test_a_tilt_that_underflows_in_float32_is_uniform_not_nan():
    z1, z2 = torch.randn(4, 3), torch.randn(4, 3)
    got = contrastive_loss(z1, z2, "hard", beta=1e-135, tau_plus=None)
    assert got.item() == pytest.approx(contrastive_loss(z1, z2, "uniform").item(), abs=1e-6)
