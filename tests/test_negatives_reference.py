"""The vectorized core against naive float64 loops written from the papers' formulas."""

import math

import pytest
import torch

from qt_hard.losses import context_loss, contrastive_loss, ranking_loss
from qt_hard.negatives import make_strategy, two_view_scores

from _reference import hcl_anchor_loss, sinkhorn_reference, two_view_table

T = 0.5


@pytest.fixture
def views():
    g = torch.Generator().manual_seed(0)
    return torch.randn(6, 5, generator=g, dtype=torch.float64), torch.randn(6, 5, generator=g, dtype=torch.float64)


def mean(xs):
    return sum(xs) / len(xs)


def test_uniform_is_infonce(views):
    rows, _ = two_view_table(*views, T)
    ref = mean([-s + math.log(math.exp(s) + sum(math.exp(x) for _, x in negs)) for s, negs in rows])
    assert contrastive_loss(*views, "uniform", temperature=T).item() == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("tau_plus", [0.05, 0.2])
def test_debiased_is_chuang(views, tau_plus):
    rows, _ = two_view_table(*views, T)
    ref = mean([hcl_anchor_loss(s, [x for _, x in negs], T, 0.0, tau_plus) for s, negs in rows])
    got = contrastive_loss(*views, "debiased", temperature=T, tau_plus=tau_plus).item()
    assert got == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("beta,tau_plus", [(0.5, 0.0), (1.0, 0.1), (3.0, 0.3)])
def test_hard_is_hcl_criterion(views, beta, tau_plus):
    rows, _ = two_view_table(*views, T)
    ref = mean([hcl_anchor_loss(s, [x for _, x in negs], T, beta, tau_plus) for s, negs in rows])
    got = contrastive_loss(*views, "hard", temperature=T, beta=beta, tau_plus=tau_plus).item()
    assert got == pytest.approx(ref, abs=1e-10)


def test_hard_clip_rescales_into_pm2(views):
    """HCL Fig. 14: weights from 2 s / max|s| over the batch, for unnormalized embeddings."""
    t, beta = 1.0, 1.0
    rows, _ = two_view_table(*views, t, normalize=False)
    bound = max(abs(x) for _, negs in rows for _, x in negs)
    ref = mean(
        [
            hcl_anchor_loss(s, [x for _, x in negs], t, weights=[math.exp(beta * 2 * x / bound) for _, x in negs])
            for s, negs in rows
        ]
    )
    got = contrastive_loss(*views, "hard", temperature=t, beta=beta, clip="rescaled", normalize=False).item()
    assert got == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("lower,upper", [(0, 100), (20, 80), (50, 100), (0, 30)])
def test_ring_keeps_percentile_band(views, lower, upper):
    """Wu et al. Alg. 1: sort farthest to closest, keep [floor(l n), floor(u n)), sum over the ring."""
    rows, _ = two_view_table(*views, T)
    losses = []
    for s, negs in rows:
        xs = sorted(x for _, x in negs)
        lo, hi = math.floor(lower / 100 * len(xs)), math.floor(upper / 100 * len(xs))
        ring = xs[lo : max(hi, lo + 1)]
        losses.append(-s + math.log(math.exp(s) + sum(math.exp(x) for x in ring)))
    got = contrastive_loss(*views, "ring", temperature=T, lower=lower, upper=upper).item()
    assert got == pytest.approx(mean(losses), abs=1e-10)


@pytest.mark.parametrize("hardening", [None, "exp", "threshold"])
def test_label_is_hscl(views, hardening):
    """H-SCL (Jiang et al. 2022) eq. 3: log(1 + M e^{-s+} E_q[e^s]), q over other-label candidates
    tilted by eta, M the number of candidates (batch minus 2)."""
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    lab2 = torch.cat([labels, labels]).tolist()
    beta, tau = 1.5, math.exp(-0.2 / T)
    rows, _ = two_view_table(*views, T)
    losses = []
    for i, (s, negs) in enumerate(rows):
        keep = [(j, x) for j, x in negs if lab2[j] != lab2[i]]
        if hardening == "exp":
            w = [math.exp(beta * x) for _, x in keep]
        elif hardening == "threshold":
            w = [1.0 if math.exp(x) >= tau else 0.0 for _, x in keep]
        else:
            w = [1.0] * len(keep)
        if sum(w) == 0:
            losses.append(0.0)  # no hard negative left: the anchor contributes nothing
            continue
        e_q = sum(wi * math.exp(x) for wi, (_, x) in zip(w, keep)) / sum(w)
        losses.append(math.log(1 + len(negs) * math.exp(-s) * e_q))
    opts = {"exp": {"beta": beta}, "threshold": {"tau": tau}}.get(hardening, {})  # others: an error
    got = contrastive_loss(*views, "label", temperature=T, labels=labels, hardening=hardening, **opts).item()
    assert got == pytest.approx(mean(losses), abs=1e-10)


@pytest.mark.parametrize("cost", ["sqeuclidean", "exp"])
def test_ot_is_sinkhorn_coupling(views, cost):
    """Jiang, Ishwar & Aeron eq. 5/8: q(. | x_i) = row i of the entropic OT coupling, forbidden
    self/positive coupling, uniform marginals, loss log(1 + N e^{-s+} E_q[e^s])."""
    eps, kappa, iters = 0.3, 1.0, 30
    rows, z = two_view_table(*views, T)
    n = z.shape[0]
    allowed = [[False] * n for _ in range(n)]
    for i, (_, negs) in enumerate(rows):
        for j, _ in negs:
            allowed[i][j] = True
    sq = [[float((z[i] - z[j]).pow(2).sum()) for j in range(n)] for i in range(n)]
    c = [[0.5 * v if cost == "sqeuclidean" else math.exp(v - kappa) for v in r] for r in sq]
    pi = sinkhorn_reference(c, allowed, eps, iters)
    losses = []
    for i, (s, negs) in enumerate(rows):
        w = [pi[i][j] for j, _ in negs]
        e_q = sum(wi * math.exp(x) for wi, (_, x) in zip(w, negs)) / sum(w)
        losses.append(math.log(1 + len(negs) * math.exp(-s) * e_q))
    opts = {"kappa": kappa} if cost == "exp" else {}  # kappa is the exp cost's
    got = contrastive_loss(*views, "ot", temperature=T, epsilon=eps, cost=cost, sinkhorn_iters=iters, **opts).item()
    assert got == pytest.approx(mean(losses), abs=1e-9)


def test_without_positive_is_ash_d1(views):
    """Ash et al. D.1: -1/2B sum_i ln w(x_i,x_i^+)/sum_{j!=i}{w(x_i,x_j^+)+w(x_i,x_j)} - (same for x_i^+)."""
    z1, z2 = views
    b = z1.shape[0]
    w = lambda u, v: math.exp(float(u @ v))  # temperature 1, unnormalized
    total = 0.0
    for i in range(b):
        den1 = sum(w(z1[i], z2[j]) + w(z1[i], z1[j]) for j in range(b) if j != i)
        den2 = sum(w(z2[i], z2[j]) + w(z2[i], z1[j]) for j in range(b) if j != i)
        total += -math.log(w(z1[i], z2[i]) / den1) - math.log(w(z1[i], z2[i]) / den2)
    got = contrastive_loss(z1, z2, "uniform", temperature=1.0, normalize=False, include_positive=False)
    assert got.item() == pytest.approx(total / (2 * b), abs=1e-9)


def test_k_sampled_loss_matches_reference_on_same_draw(views):
    k = 4
    strategy = make_strategy("hard", beta=1.0, k=k)
    scores = two_view_scores(*views, temperature=T)
    mask = strategy.candidate_mask(scores, torch.Generator().manual_seed(3))
    got = strategy(scores, torch.Generator().manual_seed(3)).item()
    rows, _ = two_view_table(*views, T)
    losses = []
    for i, (s, negs) in enumerate(rows):
        kept = [x for j, x in negs if bool(mask[i, j])]
        assert len(kept) == k
        losses.append(hcl_anchor_loss(s, kept, T, 1.0, 0.0))  # N = k negatives
    assert got == pytest.approx(mean(losses), abs=1e-10)


def test_context_loss_multi_positive():
    """Quick-Thoughts: positives at +-c in the same document share the negative set of all other
    sentences; the anchor's loss is the mean over its positives."""
    g = torch.Generator().manual_seed(1)
    f, gg = torch.randn(7, 4, generator=g, dtype=torch.float64), torch.randn(7, 4, generator=g, dtype=torch.float64)
    docs = [0, 0, 0, 1, 1, 1, 1]
    c = 2
    losses = []
    for i in range(7):
        pos = [j for j in range(7) if 1 <= abs(i - j) <= c and docs[j] == docs[i]]
        negs = [j for j in range(7) if j != i and j not in pos]
        s = lambda j, i=i: float(f[i] @ gg[j])
        den = sum(math.exp(s(j)) for j in negs)
        losses.append(mean([-s(p) + math.log(math.exp(s(p)) + den) for p in pos]))
    got = context_loss(f, gg, "uniform", context=c, doc_ids=torch.tensor(docs), positives="per_positive").item()
    assert got == pytest.approx(mean(losses), abs=1e-10)


def test_ranking_loss_with_explicit_negatives():
    g = torch.Generator().manual_seed(2)
    a, p = torch.randn(4, 3, generator=g, dtype=torch.float64), torch.randn(4, 3, generator=g, dtype=torch.float64)
    n = torch.randn(4, 2, 3, generator=g, dtype=torch.float64)
    cands = [p[j] for j in range(4)] + [n[j, m] for m in range(2) for j in range(4)]
    losses = []
    for i in range(4):
        s = [float(a[i] @ c) / 0.1 for c in cands]
        losses.append(-s[i] + math.log(sum(math.exp(x) for x in s)))
    got = ranking_loss(a, p, n, temperature=0.1, normalize=False).item()
    assert got == pytest.approx(mean(losses), abs=1e-10)
