"""InfoGraph's Jensen-Shannon estimator in the core (node-to-graph layout): against a per-node loop in
float64 (loss and gradient), against InfoGraph's ``local_global_loss_`` form, hard at beta = 0 against
uniform, and the "code" variant against a float64 transcription of the official HCL graph code
(joshr17/HCL graph/losses.py + cortex_DIM/functions/gan_losses.py, measure 'JSD_hard'), which also
checks the four departures from the paper that the estimator's docstring lists."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from qt_hard.losses import LocalGlobalLoss, local_global_loss
from qt_hard.negatives import node_graph_scores

LOG2 = math.log(2.0)


def batch_of(sizes):
    return torch.cat([torch.full((s,), g, dtype=torch.long) for g, s in enumerate(sizes)])


def inputs(seed=0, sizes=(3, 5, 2, 4, 6), d=6, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    batch = batch_of(sizes)
    h = (torch.randn(len(batch), d, generator=g, dtype=torch.float64) * scale).requires_grad_()
    H = (torch.randn(len(sizes), d, generator=g, dtype=torch.float64) * scale).requires_grad_()
    labels = torch.randint(0, 2, (len(sizes),), generator=g)
    return h, H, batch, labels


def loop_reference(h, H, batch, labels=None, beta=0.0, clip="none", tau_plus=0.0, same_label=False):
    """The paper form one node at a time: sp(-T+) + (E_q sp(T) - tau+ sp(T+)) / (1 - tau+), q_j
    proportional to exp(beta * s_j) (s_j rescaled by 2 / max|s| over all nodes' negatives with clip)."""
    n, G = h.shape[0], H.shape[0]
    bound = None
    if clip == "rescaled":
        bound = max(abs(float((h[i] @ H[j]).detach())) for i in range(n) for j in range(G) if j != int(batch[i]))
    losses = []
    for i in range(n):
        gi = int(batch[i])
        t_pos = h[i] @ H[gi]
        ws, sps = [], []
        for j in range(G):
            if j == gi or (same_label and int(labels[j]) == int(labels[gi])):
                continue
            t = h[i] @ H[j]
            s_w = t * 2.0 / bound if clip == "rescaled" else t
            ws.append(torch.exp(beta * s_w))
            sps.append(F.softplus(t))
        w = torch.stack(ws)
        e_neg = (w * torch.stack(sps)).sum() / w.sum()
        losses.append(F.softplus(-t_pos) + (e_neg - tau_plus * F.softplus(t_pos)) / (1 - tau_plus))
    return torch.stack(losses).mean()


def infograph_jsd(l_enc, g_enc, batch):
    """InfoGraph's local_global_loss_ with measure 'JSD' (masks multiply the score table)."""
    n, G = l_enc.shape[0], g_enc.shape[0]
    pos_mask = torch.zeros(n, G, dtype=l_enc.dtype)
    pos_mask[torch.arange(n), batch] = 1.0
    neg_mask = 1.0 - pos_mask
    res = l_enc @ g_enc.T
    e_pos = (LOG2 - F.softplus(-(res * pos_mask))).sum() / n
    e_neg = (F.softplus(-(res * neg_mask)) + res * neg_mask - LOG2).sum() / (n * (G - 1))
    return e_neg - e_pos


def hcl_code_jsd_hard(l_enc, g_enc, batch, beta, tau_plus=0.5, detach_bound=False):
    """Float64 transcription of HCL's graph loss with measure 'JSD_hard' (our own writing of it)."""
    n, G = l_enc.shape[0], g_enc.shape[0]
    pos_mask = torch.zeros(n, G, dtype=l_enc.dtype)
    pos_mask[torch.arange(n), batch] = 1.0
    neg_mask = 1.0 - pos_mask
    res = l_enc @ g_enc.T
    p = res * pos_mask
    ep = LOG2 - F.softplus(-p) - (tau_plus / (1 - tau_plus)) * (F.softplus(-p) + p)
    q = res * neg_mask
    if beta == 0:
        eq = (F.softplus(-q) + q - LOG2) / (1 - tau_plus)
    else:
        eq = F.softplus(-q) + q
        bound = torch.maximum(q.max(), q.min().abs())
        if detach_bound:
            bound = bound.detach()
        r = (beta * (-2 * q / bound)).exp()
        r = r / r.mean(dim=1, keepdim=True)
        eq = r * eq / (1 - tau_plus) - LOG2
    return eq.sum() / (n * (G - 1)) - ep.sum() / n


def grads(loss, *xs):
    return torch.autograd.grad(loss, xs)


@pytest.mark.parametrize(
    "case",
    [
        dict(),
        dict(beta=1.0, clip="rescaled"),
        dict(beta=10.0, clip="rescaled"),
        dict(beta=2.0, clip="none", tau_plus=0.3),
        dict(beta=2.0, clip="rescaled", same_label=True),
    ],
)
def test_jsd_equals_per_node_loop(case):
    h, H, batch, labels = inputs(1)
    kw = {k: v for k, v in case.items() if k != "same_label"}
    if case.get("same_label"):
        ours = local_global_loss(h, H, batch, "label", hardening="exp", labels=labels, **kw)
    else:
        ours = local_global_loss(h, H, batch, "hard" if "beta" in case else "uniform", **kw)
    ref = loop_reference(h, H, batch, labels, **case)
    torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)
    for a, b in zip(grads(ours, h, H), grads(ref, h, H)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_uniform_jsd_is_infograph_local_global_loss():
    h, H, batch, _ = inputs(2)
    ours = local_global_loss(h, H, batch)
    ref = infograph_jsd(h, H, batch) + 2 * LOG2  # InfoGraph keeps log 2 in both expectations
    torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)
    for a, b in zip(grads(ours, h, H), grads(ref, h, H)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_hard_at_beta_zero_is_uniform():
    h, H, batch, _ = inputs(3)
    hard = local_global_loss(h, H, batch, "hard", beta=0.0, clip="rescaled")
    torch.testing.assert_close(hard, local_global_loss(h, H, batch), rtol=1e-14, atol=0)


@pytest.mark.parametrize("beta", [0.0, 1.0, 2.0, 10.0])
def test_code_variant_equals_hcl_code(beta):
    h, H, batch, _ = inputs(4, scale=0.7)
    opts = dict(negatives="hard", beta=beta, clip="graph_code") if beta else dict(negatives="uniform")
    ours = local_global_loss(h, H, batch, estimator="jsd_code", tau_plus=0.5, **opts)
    ref = hcl_code_jsd_hard(h, H, batch, beta)
    torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)
    # The graph_code reading's bound carries a gradient, as the code's does.
    for a, b in zip(grads(ours, h, H), grads(ref, h, H)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_hcl_code_departs_from_the_paper_as_documented():
    h, H, batch, _ = inputs(5, scale=0.7)
    # (1) The code's tilt favours the *lowest* scores: its distribution equals the paper's hard
    # weights with beta of the opposite sign, not the paper's own beta.
    code = hcl_code_jsd_hard(h, H, batch, 2.0, tau_plus=0.5)
    flipped = local_global_loss(h, H, batch, "hard", beta=2.0, clip="graph_code", estimator="jsd_code", tau_plus=0.5)
    paper_sign = local_global_loss(h, H, batch, "hard", beta=2.0, clip="rescaled", estimator="jsd_code", tau_plus=0.5)
    torch.testing.assert_close(code, flipped, rtol=1e-12, atol=1e-12)
    assert abs(float(code - paper_sign)) > 1e-3
    # (2) With a tilt, the masked positive column (score 0) joins the weighted mean: dropping it
    # (the paper's support) changes the gradient, not only a constant.
    paper = local_global_loss(h, H, batch, "hard", beta=2.0, clip="graph_code", tau_plus=0.5)
    g_code, g_paper = grads(flipped, h)[0], grads(paper, h)[0]
    assert not torch.allclose(g_code, g_paper, atol=1e-6)
    # (3) At beta = 0 the code still debiases with tau_plus = 0.5: not InfoGraph's JSD.
    code0 = hcl_code_jsd_hard(h, H, batch, 0.0)
    assert not torch.allclose(grads(code0, h)[0], grads(infograph_jsd(h, H, batch), h)[0], atol=1e-6)
    # (4) The positive correction has the opposite sign of the derivation: at tau_plus = 0.5 the
    # code's positive terms are sp(-T+) + sp(T+), stationary at T+ = 0, where the derivation's
    # sp(-T+) - sp(T+) = -T+ has slope -1 everywhere.
    t = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    code_pos = -(LOG2 - F.softplus(-t) - (0.5 / 0.5) * (F.softplus(-t) + t))
    derived_pos = F.softplus(-t) - 1.0 * F.softplus(t)
    assert float(grads(code_pos.sum(), t)[0]) == pytest.approx(0.0, abs=1e-15)
    assert float(grads(derived_pos.sum(), t)[0]) == pytest.approx(-1.0, abs=1e-15)


def test_every_weighting_composes_with_jsd():
    h, H, batch, labels = inputs(6)
    gen = torch.Generator().manual_seed(0)
    for negatives, opts in [
        ("ot", dict(epsilon=0.1, tau_plus=0.5)),
        ("ring", dict(lower=20, upper=80)),
        ("uniform", dict(k=2, generator=gen)),
        ("debiased", dict(tau_plus=0.2)),
    ]:
        loss = local_global_loss(h, H, batch, negatives, labels=labels, **opts)
        assert torch.isfinite(loss)
        assert all(torch.isfinite(g).all() for g in grads(loss, h, H))


def test_module_form_and_errors():
    h, H, batch, labels = inputs(7)
    mod = LocalGlobalLoss("hard", beta=1.0, clip="rescaled")
    torch.testing.assert_close(mod(h, H, batch), local_global_loss(h, H, batch, "hard", beta=1.0, clip="rescaled"))
    with pytest.raises(ValueError, match="estimator"):
        local_global_loss(h, H, batch, estimator="dv")
    with pytest.raises(ValueError, match="outside"):
        node_graph_scores(h, H, batch + 10)
    with pytest.raises(ValueError, match="batch must be"):
        node_graph_scores(h, H, batch[:-1])
    with pytest.raises(ValueError, match="JSD variant"):
        from qt_hard.negatives import JSDEstimator

        JSDEstimator(variant="x")
