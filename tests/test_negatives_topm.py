"""The top-m mask (``top_m``) against a float64 transcription, with every strategy it composes with."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from qt_hard.losses import contrastive_loss
from qt_hard.negatives import NegativeStrategy, Weighting, make_strategy, registry, two_view_scores
from qt_hard.negatives.weightings import LogWeights

T = 0.5


@pytest.fixture
def views():
    g = torch.Generator().manual_seed(3)
    return torch.randn(7, 5, generator=g, dtype=torch.float64), torch.randn(7, 5, generator=g, dtype=torch.float64)


def table(z1, z2, t=T):
    """Per anchor of the two-view layout: the positive cosine, and (column, cosine) of each candidate."""
    u = [list(map(float, v / v.norm())) for v in torch.cat([z1, z2])]
    b = z1.shape[0]
    dot = lambda i, j: sum(x * y for x, y in zip(u[i], u[j]))
    rows = []
    for i in range(2 * b):
        partner = (i + b) % (2 * b)
        rows.append((dot(i, partner), [(j, dot(i, j)) for j in range(2 * b) if j not in (i, partner)]))
    return rows


def anchor_loss(pos, negs, m, t=T, beta=0.0, tau_plus=None):
    """-s+ + log(e^{s+} + Q D): the m highest negatives kept (Q their number), weighted e^{beta s},
    debiased by tau_plus with the floor e^{-1/t} (Chuang et al. eq. 6; Robinson et al. eq. 5)."""
    kept = sorted(negs, reverse=True)[:m]
    if not kept:  # an anchor left without a negative contributes 0 (qt_hard.negatives.strategy)
        return 0.0
    s = [c / t for c in kept]
    sp = pos / t
    w = [math.exp(beta * x) for x in s]
    e_hat = sum(wi * math.exp(x) for wi, x in zip(w, s)) / sum(w)
    if tau_plus is not None:
        e_hat = max((e_hat - tau_plus * math.exp(sp)) / (1 - tau_plus), math.exp(-1 / t))
    return -sp + math.log(math.exp(sp) + len(kept) * e_hat)


def mean_loss(rows, m, keep=lambda i, j: True, **kw):
    return sum(anchor_loss(p, [c for j, c in negs if keep(i, j)], m, **kw) for i, (p, negs) in enumerate(rows)) / len(
        rows
    )


@pytest.mark.parametrize("m", [1, 3, 8, 20])
def test_uniform_top_m_is_the_mined_infonce(views, m):
    ref = mean_loss(table(*views), m)
    assert contrastive_loss(*views, temperature=T, top_m=m).item() == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("beta,tau_plus", [(0.0, 0.1), (1.0, 0.0), (2.0, 0.2)])
def test_hard_and_debiased_weigh_the_kept_negatives(views, beta, tau_plus):
    ref = mean_loss(table(*views), 4, beta=beta, tau_plus=tau_plus)
    name = "hard" if beta else "debiased"
    extra = dict(beta=beta) if beta else {}
    got = contrastive_loss(*views, name, temperature=T, top_m=4, tau_plus=tau_plus, **extra).item()
    assert got == pytest.approx(ref, abs=1e-10)


def test_label_keeps_the_top_other_label_negatives(views):
    b = views[0].shape[0]
    labels = torch.tensor([0, 1, 0, 2, 1, 0, 2])
    lab = lambda i: int(labels[i % b])
    ref = mean_loss(table(*views), 3, keep=lambda i, j: lab(i) != lab(j))
    got = contrastive_loss(*views, "label", temperature=T, labels=labels, top_m=3).item()
    assert got == pytest.approx(ref, abs=1e-10)


def test_ring_keeps_the_top_of_its_band(views):
    rows = table(*views)
    band = []
    for _, negs in rows:  # Wu et al. Alg. 1: the slice [lo, hi) of the candidates sorted farthest first
        order = sorted(c for _, c in negs)
        n = len(order)
        band.append(set(order[math.floor(n * 0.2) : math.floor(n * 0.9)]))
    ref = mean_loss(rows, 2, keep=lambda i, j: dict(rows[i][1])[j] in band[i])
    got = contrastive_loss(*views, "ring", temperature=T, lower=20, upper=90, top_m=2).item()
    assert got == pytest.approx(ref, abs=1e-10)


def test_guard_removes_before_the_top_m_is_taken(views):
    rows = table(*views)
    margin = 0.1
    keep = lambda i, j: dict(rows[i][1])[j] <= rows[i][0] - margin  # the absolute rule, on cosines
    ref = mean_loss(rows, 3, keep=keep)
    got = contrastive_loss(*views, temperature=T, guard="absolute", guard_margin=margin, top_m=3).item()
    assert got == pytest.approx(ref, abs=1e-10)


def test_with_k_the_top_m_is_taken_among_the_drawn(views):
    scores = two_view_scores(*views, temperature=T)
    strategy = make_strategy("uniform", k=6, top_m=2)
    drawn = strategy.candidate_mask(scores, torch.Generator().manual_seed(5))
    ref = mean_loss(table(*views), 2, keep=lambda i, j: bool(drawn[i, j]))
    assert strategy(scores, torch.Generator().manual_seed(5)).item() == pytest.approx(ref, abs=1e-10)


class _Keep(Weighting):
    """A fixed support (the transcription's top-m), to compare a strategy's own weights on it."""

    restricts_support = True

    def __init__(self, keep):
        self.keep = keep

    def weigh(self, scores, mask, progress):
        return LogWeights(keep=self.keep)


@pytest.mark.parametrize("negatives, options", [("ot", dict(epsilon=0.5)), ("hard", dict(beta=1.5, clip="none"))])
def test_other_weights_apply_unchanged_to_the_kept_negatives(views, negatives, options):
    rows = table(*views)
    scores = two_view_scores(*views, temperature=T)
    keep = torch.zeros_like(scores.neg_valid)
    for i, (_, negs) in enumerate(rows):
        for j, _ in sorted(negs, key=lambda jc: -jc[1])[:3]:
            keep[i, j] = True
    plain = make_strategy(negatives, **options)
    by_hand = NegativeStrategy([*plain.weightings, _Keep(keep)], plain.estimator)
    got = make_strategy(negatives, top_m=3, **options)(scores)
    assert got.item() == pytest.approx(by_hand(scores).item(), abs=1e-10)


def test_the_choice_carries_no_gradient_and_the_rest_get_none(views):
    z1, z2 = (v.clone().requires_grad_() for v in views)
    scores = two_view_scores(z1, z2, temperature=T)
    leaf = scores.neg.detach().clone().requires_grad_()
    make_strategy("uniform", top_m=2)(dataclasses.replace(scores, neg=leaf)).backward()
    assert int((leaf.grad != 0).sum(dim=1).max()) == 2


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_top_m_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="top_m must be a positive integer"):
        make_strategy("uniform", top_m=bad)


def test_found_by_the_registry_for_configs_the_plugin_the_docs_the_citations_and_the_property_tests():
    """Nothing outside this file and topm.py names top_m: every reader finds it in the registry."""
    from torch import nn

    from qt_hard.integrations.sentence_transformers import HardNegativesLoss
    from qt_hard.negatives.topm import MUSGRAVE_2020
    from qt_hard.text.card import model_card
    from qt_hard.training.config import config_from_dict

    row = next(line for line in registry.option_table().splitlines() if line.startswith("| `top_m` |"))
    assert "`top_m` (None)" in row and "`top_m=3`" in row and "Musgrave et al. 2020" in row
    assert "top_m" in registry.option_names()
    # registry.examples() is what the property and equivalence tests parametrize over (gradcheck, finite
    # losses and gradients, the guard's equivalence), and the registry's own tests (configs, model card,
    # plugin and citation for every example).
    assert ("top_m", "uniform", {"top_m": 3}) in registry.examples()
    assert make_strategy("hard", top_m=3).papers == (*make_strategy("hard").papers, MUSGRAVE_2020)
    assert MUSGRAVE_2020 not in make_strategy("hard").papers  # cited only where it acts
    cfg = config_from_dict({"objective": {"negatives": "hard", "options": {"top_m": 4}}})
    assert MUSGRAVE_2020.reference() in model_card(cfg, ["StaticEmbedding"])
    with pytest.raises(ValueError, match="top_m"):
        config_from_dict({"objective": {"negatives": "hard", "options": {"top_m": 0}}})
    g = torch.Generator().manual_seed(1)
    a, p = torch.randn(6, 4, generator=g, dtype=torch.float64), torch.randn(6, 4, generator=g, dtype=torch.float64)
    loss = HardNegativesLoss(nn.Identity(), scale=2.0, top_m=2)
    assert MUSGRAVE_2020.bibtex() in loss.citation
    got = loss.compute_loss_from_embeddings([a, p])
    u, v = (x / x.norm(dim=1, keepdim=True) for x in (a, p))
    cos = (u @ v.T).tolist()
    ref = sum(anchor_loss(cos[i][i], [c for j, c in enumerate(cos[i]) if j != i], 2) for i in range(6)) / 6
    assert got.item() == pytest.approx(ref, abs=1e-10)
