"""The five readings of HCL's hard weights for unnormalized embeddings (``clip``), each against a
float64 transcription of its source, loss and gradient to 1e-10.

The transcriptions follow the official image code's ``criterion`` (joshr17/HCL, ``image/main.py``:
``neg = exp(<u, v> / t)`` over the 2B-2 other views, ``Ng = (-tau_plus N pos + sum(imp * neg) /
mean(imp)) / (1 - tau_plus)``, clamped at ``N e^{-1/t}``) with the weights ``imp`` each source gives:

* none:       ``imp = exp(beta log neg)`` (the image code itself);
* rescaled:   ``imp = exp(beta * 2 s / B)``, ``B = max |s|`` over the batch, detached;
* fig14:      Fig. 14's lines 9-11 as printed (per anchor row), ``reweight * neg`` summed;
* graph_code: ``imp = exp(beta * (-2 s / max(s.max(), |s.min()|)))``, the bound in the graph
  (joshr17/HCL ``graph/cortex_DIM/functions/gan_losses.py``, ``JSD_hard``);
* clamp:      ``imp = exp(beta * clip(<u, v>, -2, 2))``, App. D.2's words (its own transcription below).

Fig. 13/14's pseudocode floors the sum at ``e^{-1/t}``; the official code floors it at ``N e^{-1/t}``,
which is our estimator's ``floor="hard"`` (the floor per negative). Both are checked without a floor
(``floor="none"``) and with the code's.
"""

from __future__ import annotations

import math

import pytest
import torch

from qt_hard.losses import contrastive_loss
from qt_hard.negatives import make_strategy
from qt_hard.negatives.weightings import HardWeighting


def views(b: int, d: int = 5, scale: float = 0.6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    z1 = (torch.randn(b, d, generator=g, dtype=torch.float64) * scale).requires_grad_()
    z2 = (torch.randn(b, d, generator=g, dtype=torch.float64) * scale).requires_grad_()
    return z1, z2


def transcription(z1, z2, reading: str, beta: float, tau_plus: float, t: float, floor: bool, detach=False):
    """Float64 transcription of HCL's criterion with the weights of ``reading`` (module docstring)."""
    b = z1.shape[0]
    out = torch.cat([z1, z2], dim=0)
    s_all = out @ out.T / t
    mask = torch.ones(2 * b, 2 * b, dtype=torch.bool)
    idx = torch.arange(b)
    mask[torch.arange(2 * b), torch.arange(2 * b)] = False
    mask[idx, idx + b] = False
    mask[idx + b, idx] = False
    s = s_all.masked_select(mask).view(2 * b, -1)  # (2B, 2B-2) logits of the negatives
    neg = s.exp()
    pos = (z1 * z2).sum(dim=1) / t
    pos = torch.cat([pos, pos]).exp()
    n = 2 * b - 2
    if reading == "fig14":
        # Fig. 14, lines 9-11, as printed: the rescaling of neg (the exp of the inner products).
        reweight = (
            2
            * neg
            / torch.maximum(neg.max(dim=1, keepdim=True).values.abs(), neg.min(dim=1, keepdim=True).values.abs())
        )
        reweight = beta * reweight / reweight.mean(dim=1, keepdim=True)
        if detach:
            reweight = reweight.detach()
        total = (reweight * neg).sum(dim=1)
    else:
        if reading == "none":
            log_imp = beta * neg.log()
        elif reading == "rescaled":
            log_imp = beta * 2 * s / s.detach().abs().max()
        elif reading == "graph_code":
            log_imp = beta * (-2 * s / torch.maximum(s.max(), s.min().abs()))
        else:
            raise ValueError(reading)
        imp = log_imp.exp()
        if detach:
            imp = imp.detach()
        total = (imp * neg).sum(dim=1) / imp.mean(dim=1)
    ng = (-tau_plus * n * pos + total) / (1 - tau_plus)
    assert bool((ng > 0).all()), "inputs must keep the debiased estimate positive"
    if floor:
        ng = torch.clamp(ng, min=n * math.exp(-1 / t))
    return (-torch.log(pos / (pos + ng))).mean()


def ours(z1, z2, reading, beta, tau_plus, t, floor, detach=False):
    return contrastive_loss(
        z1,
        z2,
        "hard",
        temperature=t,
        normalize=False,
        beta=beta,
        tau_plus=tau_plus,
        clip=reading,
        floor="hard" if floor else "none",
        detach=detach,
    )


READINGS = ("none", "rescaled", "fig14", "graph_code")


@pytest.mark.parametrize("reading", READINGS)
@pytest.mark.parametrize(
    "beta,tau_plus,b,t",
    [(0.5, 0.0, 3, 1.0), (1.0, 0.1, 8, 1.0), (2.0, 0.0, 17, 0.5), (2.0, 0.15, 8, 1.0), (1.0, 0.05, 17, 2.0)],
)
@pytest.mark.parametrize("floor", [False, True])
def test_reading_equals_its_source(reading, beta, tau_plus, b, t, floor):
    z1, z2 = views(b, seed=b)
    got = ours(z1, z2, reading, beta, tau_plus, t, floor)
    ref = transcription(z1, z2, reading, beta, tau_plus, t, floor)
    torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-10)
    for a, r in zip(torch.autograd.grad(got, (z1, z2)), torch.autograd.grad(ref, (z1, z2))):
        torch.testing.assert_close(a, r, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("reading", READINGS)
def test_detached_reading_equals_its_source_with_weights_detached(reading):
    z1, z2 = views(8, seed=3)
    got = ours(z1, z2, reading, 1.5, 0.02, 1.0, False, detach=True)
    ref = transcription(z1, z2, reading, 1.5, 0.02, 1.0, False, detach=True)
    torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-10)
    for a, r in zip(torch.autograd.grad(got, (z1, z2)), torch.autograd.grad(ref, (z1, z2))):
        torch.testing.assert_close(a, r, rtol=1e-10, atol=1e-10)


def test_readings_differ_where_their_sources_do():
    z1, z2 = views(8, seed=4)
    losses = {r: float(ours(z1, z2, r, 2.0, 0.0, 1.0, False)) for r in READINGS}
    assert len({round(v, 8) for v in losses.values()}) == 4
    # rescaled and graph_code differ in sign (and the bound's gradient); at beta = 0 both are uniform.
    uniform = float(contrastive_loss(z1, z2, "uniform", temperature=1.0, normalize=False))
    for r in ("none", "rescaled", "graph_code"):
        assert float(ours(z1, z2, r, 0.0, 0.0, 1.0, False)) == pytest.approx(uniform, abs=1e-12)
    # fig14: beta multiplies the negative term, so beta = 1 is the tilt-1 weights, not uniform.
    assert float(ours(z1, z2, "fig14", 1.0, 0.0, 1.0, False)) == pytest.approx(
        float(ours(z1, z2, "none", 1.0, 0.0, 1.0, False)), abs=1e-12
    )


def test_graph_code_bound_carries_a_gradient_and_rescaled_does_not():
    from qt_hard.negatives.scores import two_view_scores

    z1, z2 = views(6, seed=5)
    sc = two_view_scores(z1, z2, temperature=1.0, normalize=False)
    code = HardWeighting(2.0, clip="graph_code").weigh(sc, sc.neg_valid, 0.0)
    paper_sign = HardWeighting(2.0, clip="rescaled").weigh(sc, sc.neg_valid, 0.0)
    # The same magnitude, opposite signs; only the code's tilt is a tensor in the graph.
    assert float(code.gamma) == pytest.approx(-paper_sign.gamma, rel=1e-12)
    assert torch.is_tensor(code.gamma) and code.gamma.requires_grad
    assert not torch.is_tensor(paper_sign.gamma)
    # The bound's gradient changes the loss's gradient: compare with the code's form, bound detached.
    got = ours(z1, z2, "graph_code", 2.0, 0.0, 1.0, False)
    b = z1.shape[0]
    out = torch.cat([z1, z2])
    s_all = out @ out.T
    keep = ~torch.eye(2 * b, dtype=torch.bool)
    keep[torch.arange(b), torch.arange(b) + b] = False
    keep[torch.arange(b) + b, torch.arange(b)] = False
    s = s_all.masked_select(keep).view(2 * b, -1)
    imp = (2.0 * (-2 * s / s.detach().abs().max())).exp()
    pos = torch.cat([(z1 * z2).sum(1)] * 2).exp()
    ng = (imp * s.exp()).sum(1) / imp.mean(1)
    detached_bound = (-torch.log(pos / (pos + ng))).mean()
    torch.testing.assert_close(got, detached_bound, rtol=1e-10, atol=1e-12)
    g_got = torch.autograd.grad(got, (z1,))[0]
    g_det = torch.autograd.grad(detached_bound, (z1,))[0]
    assert not torch.allclose(g_got, g_det, atol=1e-8)


def test_floor_is_an_explicit_option_and_none_is_the_plain_estimator():
    from qt_hard.negatives.estimators import DebiasedEstimator

    z1, z2 = views(8, seed=6)
    plain = contrastive_loss(z1, z2, "uniform", temperature=1.0, normalize=False)
    no_floor = contrastive_loss(z1, z2, "uniform", temperature=1.0, normalize=False, tau_plus=0.0, floor="none")
    torch.testing.assert_close(plain, no_floor, rtol=0, atol=1e-14)
    # Where E_hat < e^{-1/t} the floor binds (the per-negative term is raised to e^{-1/t}); "none" keeps it.
    log_e, pos = torch.tensor([-5.0, 0.5], dtype=torch.float64), torch.zeros(2, 1, dtype=torch.float64)
    hard = DebiasedEstimator(0.0, floor="hard").log_negative(log_e, pos, 1.0, 0.0)
    none = DebiasedEstimator(0.0, floor="none").log_negative(log_e, pos, 1.0, 0.0)
    assert hard[:, 0].tolist() == [-1.0, 0.5]
    assert none[:, 0].tolist() == [-5.0, 0.5]
    with pytest.raises(ValueError, match="floor"):
        DebiasedEstimator(0.0, floor="soft")


@pytest.mark.parametrize("bad", [True, False, "clip", "Rescaled"])
def test_clip_must_name_a_reading(bad):
    with pytest.raises(ValueError, match="reading"):
        HardWeighting(1.0, clip=bad)


def test_negative_beta_is_refused_with_the_reading_that_has_easy_negatives():
    with pytest.raises(ValueError, match="graph_code"):
        HardWeighting(-1.0)
    with pytest.raises(ValueError, match="beta"):
        make_strategy("hard", beta=float("nan"))


@pytest.mark.parametrize("normalize", [True, False])
def test_auto_reading_is_none_on_the_sphere_and_the_chosen_one_on_raw_inner_products(normalize):
    from qt_hard.negatives.scores import two_view_scores
    from qt_hard.negatives.weightings import UNNORMALIZED_CLIP

    z1, z2 = views(8, scale=1.3, seed=4)
    chosen = "none" if normalize else UNNORMALIZED_CLIP
    assert HardWeighting(2.0).reading(two_view_scores(z1, z2, temperature=0.5, normalize=normalize)) == chosen
    kw = dict(temperature=0.5, normalize=normalize, beta=2.0, tau_plus=0.0, floor="none")
    auto = contrastive_loss(z1, z2, "hard", **kw)
    torch.testing.assert_close(auto, contrastive_loss(z1, z2, "hard", clip=chosen, **kw), rtol=0, atol=0)
    other = "rescaled" if chosen == "none" else "none"
    assert not torch.allclose(auto, contrastive_loss(z1, z2, "hard", clip=other, **kw))


def test_auto_reading_survives_the_k_sampler_and_defaults_to_none_when_scores_do_not_say():
    import dataclasses

    from qt_hard.negatives.scores import two_view_scores
    from qt_hard.negatives.weightings import UNNORMALIZED_CLIP

    z1, z2 = views(6, seed=5)
    raw = two_view_scores(z1, z2, temperature=1.0, normalize=False)
    picked = raw.select(torch.zeros(raw.neg.shape[0], 3, dtype=torch.long))
    assert picked.normalized is False and HardWeighting(1.0).reading(picked) == UNNORMALIZED_CLIP
    assert HardWeighting(1.0).reading(dataclasses.replace(raw, normalized=None)) == "none"


def test_graph_code_detached_takes_the_bound_without_a_warning():
    import warnings

    z1, z2 = views(6, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float() of a tensor that requires grad warns
        loss = ours(z1, z2, "graph_code", 2.0, 0.0, 1.0, False, detach=True)
        loss.backward()


def clamp_transcription(z1, z2, beta: float, tau_plus: float, t: float, floor: bool, detach: bool):
    """Float64 transcription of HCL's image ``criterion`` with App. D.2's words for the weights: "clip
    all the inner products to live in the interval [-2, 2] while computing the reweighting", as
    TensorFlow's ``clip_by_value`` would: ``imp = exp(beta * clip(<u, v>, -2, 2))`` on the raw inner
    products, ``neg = exp(<u, v> / t)``."""
    b = z1.shape[0]
    views_ = torch.cat([z1, z2], dim=0)
    others = ~torch.eye(2 * b, dtype=torch.bool)
    for i in range(b):  # the partner view is the positive, not a negative
        others[i, i + b] = others[i + b, i] = False
    inner = (views_ @ views_.T).masked_select(others).view(2 * b, 2 * b - 2)
    neg = torch.exp(inner / t)
    pos = torch.exp(torch.cat([(z1 * z2).sum(dim=1)] * 2) / t)
    imp = torch.exp(beta * torch.clamp(inner, min=-2.0, max=2.0))
    if detach:
        imp = imp.detach()
    n = 2 * b - 2
    reweight_neg = (imp * neg).sum(dim=-1) / imp.mean(dim=-1)
    ng = (-tau_plus * n * pos + reweight_neg) / (1 - tau_plus)
    assert bool((ng > 0).all()), "inputs must keep the debiased estimate positive"
    if floor:
        ng = torch.clamp(ng, min=n * math.exp(-1 / t))
    return (-torch.log(pos / (pos + ng))).mean()


@pytest.mark.parametrize(
    "beta,tau_plus,b,t,scale",
    [(1.0, 0.0, 8, 1.0, 1.0), (2.0, 0.1, 8, 1.0, 0.6), (0.5, 0.05, 17, 0.5, 0.9), (2.0, 0.0, 5, 2.0, 1.3)],
)
@pytest.mark.parametrize("floor", [False, True])
@pytest.mark.parametrize("detach", [False, True])
def test_clamp_reading_equals_its_transcription(beta, tau_plus, b, t, scale, floor, detach):
    z1, z2 = views(b, scale=scale, seed=b + 20)
    u = torch.cat([z1, z2]).detach() @ torch.cat([z1, z2]).detach().T
    assert bool((u.abs() > 2).any()) and bool((u.abs() < 2).any()), "the clamp must bind somewhere, not everywhere"
    got = ours(z1, z2, "clamp", beta, tau_plus, t, floor, detach=detach)
    ref = clamp_transcription(z1, z2, beta, tau_plus, t, floor, detach)
    torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-10)
    for a, r in zip(torch.autograd.grad(got, (z1, z2)), torch.autograd.grad(ref, (z1, z2))):
        torch.testing.assert_close(a, r, rtol=1e-10, atol=1e-10)


def test_clamp_is_the_plain_tilt_inside_the_interval_and_differs_beyond():
    z1, z2 = views(8, scale=0.3, seed=8)  # every |u| < 2
    assert float((torch.cat([z1, z2]) @ torch.cat([z1, z2]).T).abs().max()) < 2
    for t in (1.0, 0.5):
        got = ours(z1, z2, "clamp", 1.5, 0.0, t, False)
        # beta on the raw inner product is beta * t on the logit
        plain = ours(z1, z2, "none", 1.5 * t, 0.0, t, False)
        torch.testing.assert_close(got, plain, rtol=1e-12, atol=1e-12)
    big1, big2 = views(8, scale=1.5, seed=8)
    assert not torch.allclose(
        ours(big1, big2, "clamp", 1.5, 0.0, 1.0, False), ours(big1, big2, "none", 1.5, 0.0, 1.0, False)
    )


def test_clamp_composes_with_labels_k_jsd_and_schedules():
    from qt_hard.losses import context_loss, local_global_loss

    z1, z2 = views(8, scale=1.2, seed=9)
    labels = torch.tensor([0, 1, 0, 1, 2, 2, 0, 1])
    kw = dict(temperature=1.0, normalize=False, tau_plus=0.0, floor="none")
    h_scl = contrastive_loss(z1, z2, "label", hardening="exp", beta=1.0, clip="clamp", labels=labels, **kw)
    assert torch.isfinite(h_scl)
    gen = torch.Generator().manual_seed(0)
    drawn = contrastive_loss(z1, z2, "hard", beta=1.0, clip="clamp", k=4, generator=gen, **kw)
    assert torch.isfinite(drawn)
    # k = all candidates draws every column: the same loss as without k
    full = contrastive_loss(z1, z2, "hard", beta=1.0, clip="clamp", **kw)
    every = contrastive_loss(z1, z2, "hard", beta=1.0, clip="clamp", k=14, generator=gen, **kw)
    torch.testing.assert_close(every, full, rtol=1e-12, atol=1e-12)
    sched = context_loss(z1, z2, "hard", beta={"schedule": "linear", "start": 0.0, "end": 2.0}, clip="clamp")
    assert torch.isfinite(sched)
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2])
    jsd = local_global_loss(z1, z2[:3], batch, "hard", beta=2.0, clip="clamp", estimator="jsd")
    assert torch.isfinite(jsd)
    (jsd + drawn + h_scl).backward()


@pytest.mark.parametrize("detach", [False, True])
@pytest.mark.parametrize("tau_plus,floor,t", [(0.0, False, 1.0), (0.1, True, 1.0), (0.05, False, 0.5)])
def test_fig14_at_beta_one_is_the_plain_tilt_at_beta_one(detach, tau_plus, floor, t):
    # Fig. 14 read literally: beta e^{s} / mean(e^s); at beta = 1 that is the tilt-1 weights, exactly.
    z1, z2 = views(8, scale=1.0, seed=10)
    fig14 = ours(z1, z2, "fig14", 1.0, tau_plus, t, floor, detach=detach)
    plain = ours(z1, z2, "none", 1.0, tau_plus, t, floor, detach=detach)
    torch.testing.assert_close(fig14, plain, rtol=1e-12, atol=1e-12)
    for a, r in zip(torch.autograd.grad(fig14, (z1, z2)), torch.autograd.grad(plain, (z1, z2))):
        torch.testing.assert_close(a, r, rtol=1e-12, atol=1e-12)
