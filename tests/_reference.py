"""Naive float64 reference implementations written straight from the papers' formulas, one anchor at
a time with Python loops. The tests compare the vectorized core against them."""

from __future__ import annotations

import math

import torch


def two_view_table(z1, z2, t, normalize=True):
    """Per anchor (2B of them): (s_pos, [(j, s_j)] over the 2B-2 candidates), logits in float64."""
    z1, z2 = z1.double(), z2.double()
    if normalize:
        z1 = z1 / z1.norm(dim=1, keepdim=True)
        z2 = z2 / z2.norm(dim=1, keepdim=True)
    z = torch.cat([z1, z2])
    n = z.shape[0]
    b = n // 2
    rows = []
    for i in range(n):
        partner = (i + b) % n
        s_pos = float(z[i] @ z[partner]) / t
        negs = [(j, float(z[i] @ z[j]) / t) for j in range(n) if j not in (i, partner)]
        rows.append((s_pos, negs))
    return rows, z


def hcl_anchor_loss(s_pos, s_negs, t, beta=0.0, tau_plus=0.0, weights=None, floor=True, count=None):
    """HCL criterion for one anchor (official code / Fig. 13): imp = e^{beta s}, reweight_neg =
    sum(imp e^s) / mean(imp), Ng = (-tau N e^{s+} + reweight_neg) / (1 - tau), Ng >= N e^{-1/t}."""
    N = len(s_negs) if count is None else count
    imp = [math.exp(beta * s) for s in s_negs] if weights is None else list(weights)
    mean_imp = sum(imp) / len(imp)
    reweight = sum(w * math.exp(s) for w, s in zip(imp, s_negs)) / mean_imp * (N / len(s_negs))
    pos = math.exp(s_pos)
    ng = (-tau_plus * N * pos + reweight) / (1 - tau_plus)
    if floor:
        ng = max(ng, N * math.exp(-1 / t))
    return -math.log(pos / (pos + ng))


def sinkhorn_reference(cost, allowed, eps, iters):
    """Plain (not log-domain) Sinkhorn with uniform marginals on the allowed entries, float64."""
    A, C = len(cost), len(cost[0])
    K = [[math.exp(-cost[i][j] / eps) if allowed[i][j] else 0.0 for j in range(C)] for i in range(A)]
    a = 1.0 / sum(1 for i in range(A) if any(allowed[i]))
    bcol = 1.0 / sum(1 for j in range(C) if any(allowed[i][j] for i in range(A)))
    u = [1.0] * A
    v = [1.0] * C
    for _ in range(iters):
        u = [a / sum(K[i][j] * v[j] for j in range(C)) for i in range(A)]
        v = [
            bcol / sum(K[i][j] * u[i] for i in range(A)) if any(allowed[i][j] for i in range(A)) else 1.0
            for j in range(C)
        ]
    return [[u[i] * K[i][j] * v[j] for j in range(C)] for i in range(A)]
