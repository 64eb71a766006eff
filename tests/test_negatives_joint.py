"""The joint multi-positive form (Quick-Thoughts as released: positives share one denominator)
against float64 loops and a float64 transcription of S2V's ``build_loss``, in loss and gradient."""

import math

import pytest
import torch

from qt_hard.losses import ContextLoss, context_loss
from qt_hard.negatives import make_strategy


def _batch(b=9, d=5, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    f = (scale * torch.randn(b, d, generator=g, dtype=torch.float64)).requires_grad_()
    gg = (scale * torch.randn(b, d, generator=g, dtype=torch.float64)).requires_grad_()
    return f, gg


def s2v_build_loss(f, g, context):
    """S2V's ``build_loss`` (lajanugen/S2V, s2v_model.py) transcribed to float64 torch, one change: the
    anchor's own column is removed (-inf) where S2V sets its logit to 0 (``tf.matrix_set_diag``).

    scores = f g^T; targets = sum of the off-diagonals at offsets +-1..c, rows normalized to sum 1;
    loss = mean over rows of softmax_cross_entropy_with_logits(labels=targets, logits=scores)."""
    b = f.shape[0]
    scores = f @ g.T
    scores = scores.masked_fill(torch.eye(b, dtype=torch.bool), float("-inf"))
    targets = torch.zeros(b, b, dtype=f.dtype)
    for off in list(range(-context, 0)) + list(range(1, context + 1)):
        targets += torch.diag(torch.ones(b - abs(off), dtype=f.dtype), off)
    targets = targets / targets.sum(dim=1, keepdim=True)
    logp = torch.log_softmax(scores, dim=1)
    # 0 * log p of the removed column is 0 (its target is 0): drop it before the product.
    return -(targets * logp.masked_fill(torch.eye(b, dtype=torch.bool), 0.0)).sum(dim=1).mean()


def joint_loop(f, g, context, docs=None, beta=0.0, clip="none", tau_plus=None, include_positive=True):
    """One anchor at a time, straight from the formula:
    l_i = -mean_p s_p + log(sum_p e^{s_p} + Q * D_i), D_i = max((E_hat - tau+ mean_p e^{s_p}) / (1 - tau+),
    e^{-1}) (temperature 1) when debiased, E_hat = sum_j w_j e^{s_j} / sum_j w_j, w_j = e^{beta s_j}
    (s_j rescaled by 2 / max|s| over the batch's negatives with the clip)."""
    b = f.shape[0]
    docs = docs or [0] * b
    s = f @ g.T
    sets = []
    for i in range(b):
        pos = [j for j in range(b) if 1 <= abs(i - j) <= context and docs[j] == docs[i]]
        negs = [j for j in range(b) if j != i and j not in pos]
        sets.append((pos, negs))
    bound = max(abs(float(s[i, j].detach())) for i, (_, negs) in enumerate(sets) for j in negs)
    losses = []
    for i, (pos, negs) in enumerate(sets):
        if not pos:
            continue
        tilt = beta * (2.0 / bound if clip == "rescaled" else 1.0)
        w = [torch.exp(tilt * s[i, j]) for j in negs]
        e_hat = sum(wj * torch.exp(s[i, j]) for wj, j in zip(w, negs)) / sum(w)
        pos_terms = [torch.exp(s[i, p]) for p in pos]
        d = e_hat
        if tau_plus is not None:
            d = (e_hat - tau_plus * sum(pos_terms) / len(pos)) / (1 - tau_plus)
            d = torch.clamp(d, min=math.exp(-1.0))
        den = len(negs) * d + (sum(pos_terms) if include_positive else 0.0)
        losses.append(-sum(s[i, p] for p in pos) / len(pos) + torch.log(den))
    return sum(losses) / len(losses)


def _assert_same(got, ref, inputs, tol=1e-6):
    assert got.item() == pytest.approx(ref.item(), abs=tol, rel=tol)
    g_got = torch.autograd.grad(got, inputs, retain_graph=True)
    g_ref = torch.autograd.grad(ref, inputs, retain_graph=True)
    for a, b in zip(g_got, g_ref):
        torch.testing.assert_close(a, b, atol=tol, rtol=tol)


@pytest.mark.parametrize("context", [1, 2, 3])
def test_joint_uniform_is_s2v_build_loss(context):
    f, g = _batch(seed=context)
    got = context_loss(f, g, "uniform", context=context)
    _assert_same(got, s2v_build_loss(f, g, context), (f, g))


def test_joint_is_the_default_of_context_loss_and_context_loss_module():
    f, g = _batch(seed=4)
    ref = s2v_build_loss(f, g, 2)
    _assert_same(context_loss(f, g, context=2), ref, (f, g))
    _assert_same(ContextLoss(context=2)(f, g), ref, (f, g))


def test_per_positive_form_is_a_different_objective():
    """The per-positive form puts only the negatives (and the positive itself) in each denominator."""
    f, g = _batch(seed=5)
    joint = context_loss(f, g, "uniform", context=2).item()
    per = context_loss(f, g, "uniform", context=2, positives="per_positive").item()
    assert abs(joint - per) > 1e-3


def test_s2v_quirk_own_logit_zero_adds_one_to_every_denominator():
    """S2V as released keeps the anchor's own column at logit 0: e^0 = 1 in each denominator. Ours
    removes it; the two differ by exactly mean_i [log(Z_i + 1) - log Z_i]."""
    f, g = _batch(seed=6)
    b = f.shape[0]
    s = (f @ g.T).detach()
    z = torch.logsumexp(s.masked_fill(torch.eye(b, dtype=torch.bool), float("-inf")), dim=1).exp()
    quirk = s.clone()
    quirk.fill_diagonal_(0.0)
    targets = torch.diag(torch.ones(b - 1, dtype=s.dtype), 1) + torch.diag(torch.ones(b - 1, dtype=s.dtype), -1)
    targets = targets / targets.sum(1, keepdim=True)
    released = -(targets * torch.log_softmax(quirk, 1)).sum(1).mean()
    ours = context_loss(f.detach(), g.detach(), context=1)
    assert (released - ours).item() == pytest.approx(torch.log1p(1 / z).mean().item(), abs=1e-10)


@pytest.mark.parametrize("include_positive", [True, False])
@pytest.mark.parametrize("beta,clip", [(0.0, "none"), (1.0, "rescaled"), (2.0, "rescaled"), (0.5, "none")])
def test_joint_hard_with_documents_matches_loop(beta, clip, include_positive):
    f, g = _batch(b=10, seed=7)
    docs = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    got = context_loss(
        f, g, "hard", context=2, doc_ids=torch.tensor(docs), beta=beta, clip=clip, include_positive=include_positive
    )
    ref = joint_loop(f, g, 2, docs, beta=beta, clip=clip, tau_plus=0.0, include_positive=include_positive)
    _assert_same(got, ref, (f, g))


@pytest.mark.parametrize("tau_plus", [0.01, 0.1])
def test_joint_debiased_subtracts_the_mean_positive_term(tau_plus):
    # Small embeddings keep E_hat off the e^{-1} floor, so the subtraction itself is tested.
    f, g = _batch(b=10, seed=8, scale=0.6)
    got = context_loss(f, g, "debiased", context=2, tau_plus=tau_plus)
    ref = joint_loop(f, g, 2, tau_plus=tau_plus)
    _assert_same(got, ref, (f, g))
    plain = joint_loop(f, g, 2)
    assert abs(ref.item() - plain.item()) > 1e-4  # the debiasing term matters at this size


def test_joint_debiased_hits_the_floor_like_the_loop():
    f, g = _batch(b=8, seed=9, scale=2.0)
    got = context_loss(f, g, "hard", context=1, beta=1.0, clip="rescaled", tau_plus=0.3)
    ref = joint_loop(f, g, 1, beta=1.0, clip="rescaled", tau_plus=0.3)
    _assert_same(got, ref, (f, g))


def test_joint_with_one_positive_equals_per_positive():
    f, g = _batch(b=8, seed=10)
    docs = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])  # context 1 inside pairs: one positive each
    for neg, opts in [
        ("uniform", {}),
        ("hard", {"beta": 1.0, "clip": "rescaled"}),
        ("debiased", {"tau_plus": 0.1}),
        ("ring", {"lower": 10, "upper": 90}),
    ]:
        a = context_loss(f, g, neg, context=1, doc_ids=docs, **opts)
        b = context_loss(f, g, neg, context=1, doc_ids=docs, positives="per_positive", **opts)
        _assert_same(a, b, (f, g), tol=1e-10)


def test_joint_with_k_sampling_uses_the_drawn_negatives():
    """k-sampled joint loss = the loop over each anchor's drawn set (Q = k)."""
    f, g = _batch(b=10, seed=11)
    strat = make_strategy("uniform", k=4, positives="joint")
    from qt_hard.negatives import context_scores

    scores = context_scores(f, g, context=1)
    mask = strat.candidate_mask(scores, torch.Generator().manual_seed(3))
    got = strat(scores, torch.Generator().manual_seed(3))
    s = f @ g.T
    losses = []
    for i in range(10):
        pos = [j for j in (i - 1, i + 1) if 0 <= j < 10]
        negs = mask[i].nonzero().flatten().tolist()
        assert len(negs) == 4 and not set(negs) & set(pos + [i])
        den = sum(torch.exp(s[i, p]) for p in pos) + sum(torch.exp(s[i, j]) for j in negs)
        losses.append(-sum(s[i, p] for p in pos) / len(pos) + torch.log(den))
    _assert_same(got, sum(losses) / len(losses), (f, g))


def test_positives_option_is_checked():
    with pytest.raises(ValueError, match="positives must be one of"):
        make_strategy("uniform", positives="shared")
