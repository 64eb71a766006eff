"""Options reach the strategy that reads them (or are an error), the H-SCL level follows the loss's
temperature, OT with k weighs its draws by the full coupling, and queued negatives keep their labels."""

import math

import pytest
import torch

from qt_hard.losses import contrastive_loss, ranking_loss
from qt_hard.negatives import EmbeddingQueue, ThresholdWeighting, make_strategy, two_view_scores
from qt_hard.schedules import HSCLThreshold


def pair(b=8, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, d, generator=g, dtype=torch.float64), torch.randn(b, d, generator=g, dtype=torch.float64)


# ---------------------------------------------------------------- options the strategy does not read
@pytest.mark.parametrize(
    "negatives, options, unread",
    [
        ("uniform", dict(beta=5.0), "beta"),
        ("ring", dict(lower=10, beta=1.0, clip="rescaled"), "beta, clip"),
        ("hard", dict(beta=1.0, lower=10), "lower"),
        ("label", dict(tau=2.0), "tau"),  # hardening None reads no tau
        ("label", dict(hardening="threshold", beta=1.0, level=0.1), "beta"),
        ("ot", dict(kappa=1.0), "kappa"),  # kappa belongs to cost="exp"
        ("uniform", dict(floor="smooth"), "floor"),  # no debiasing, no floor
    ],
)
def test_options_the_strategy_does_not_read_are_errors(negatives, options, unread):
    z = pair()
    with pytest.raises(ValueError, match=f"option\\(s\\) {unread} do not apply to negatives='{negatives}'"):
        contrastive_loss(*z, negatives, labels=torch.arange(8) % 3, **options)


def test_options_that_are_read_still_work():
    z = pair()
    labels = torch.arange(8) % 3
    # debiasing applies to every strategy, and brings its floor option with it
    assert torch.isfinite(contrastive_loss(*z, "ring", lower=10, tau_plus=0.1, floor="smooth"))
    assert torch.isfinite(contrastive_loss(*z, "label", labels=labels, hardening="exp", beta=2.0, clip="rescaled"))
    assert torch.isfinite(contrastive_loss(*z, "ot", cost="exp", kappa=1.0))
    # None means "not given", so passing a default through is harmless
    assert contrastive_loss(*z, "uniform", tau=None).item() == contrastive_loss(*z).item()


def test_config_options_not_read_by_the_strategy_are_errors(tmp_path):
    """A hard config switched to ring keeps its beta/clip options: that is an error naming them."""
    from qt_hard.text.config import ObjectiveConfig
    from qt_hard.text.objectives import Objective
    from qt_hard.training.config import config_from_dict

    options = {"beta": 1.0, "clip": "rescaled", "lower": 10}
    tree = {"objective": {"negatives": "ring", "options": options}}
    # Refused when the config is read (before any data, the pipeline's check or not), and by the
    # objective's own builder with the same line: it builds from the section validated the same way.
    for check_pipeline in (True, False):
        with pytest.raises(ValueError, match="objective.options.beta: not an option of negatives='ring'"):
            config_from_dict(tree, check_pipeline=check_pipeline)
    with pytest.raises(ValueError, match="objective.options.beta: not an option of negatives='ring'"):
        Objective(ObjectiveConfig(negatives="ring", options=options), pair_data=True)
    # the core's own refusal, for options given in code, still names every option it does not read
    with pytest.raises(ValueError, match="beta, clip do not apply to negatives='ring'"):
        make_strategy("ring", **options)


# ---------------------------------------------------------------- H-SCL threshold at the loss's temperature
@pytest.mark.parametrize("temperature", [0.05, 0.5, 1.0])
def test_hscl_threshold_cuts_at_cos_level_whatever_the_temperature(temperature):
    """Eq. 4: tau = e^{l / gamma} with gamma the loss's temperature, i.e. keep cos >= l."""
    z1, z2 = pair(b=16, d=3)
    scores = two_view_scores(z1, z2, temperature=temperature)
    schedule = HSCLThreshold(start=-0.3, end=0.4)
    for progress in (0.0, 0.5, 1.0):
        level = -0.3 + progress * 0.7
        keep = ThresholdWeighting(level=schedule).weigh(scores, scores.neg_valid, progress).keep
        cos = scores.neg / scores.scale
        assert torch.equal(keep & scores.neg_valid, (cos >= level) & scores.neg_valid)
    with pytest.raises(ValueError, match="pass it as level"):
        ThresholdWeighting(tau=schedule)


def test_hscl_threshold_through_make_strategy_matches_the_cos_cut():
    z1, z2 = pair(b=8, d=3, seed=1)
    labels = torch.arange(8) % 2
    got = contrastive_loss(
        z1,
        z2,
        "label",
        labels=labels,
        hardening="threshold",
        temperature=1.0,
        level={"schedule": "hscl_threshold", "start": 0.2, "end": 0.2},
        include_positive=True,
    )
    # the same cut written as tau on e^logit at t = 1: e^s >= e^{0.2}
    want = contrastive_loss(
        z1, z2, "label", labels=labels, hardening="threshold", temperature=1.0, tau=math.exp(0.2), include_positive=True
    )
    assert got.item() == pytest.approx(want.item(), abs=1e-12)


# ---------------------------------------------------------------- OT with k
def _log_e(strategy, scores, generator=None):
    per, _ = strategy.per_anchor(scores, generator)  # include_positive=False: log Q + log E_hat - s+
    q = strategy.k if strategy.k is not None else scores.neg.shape[1] - 2
    return per + scores.pos[:, 0] - math.log(q)


def test_ot_with_k_weighs_draws_by_the_full_coupling():
    """B = 32, k = 4: averaged over draws, log E_hat of the default (full coupling, then draw) lies
    closer to the full-batch OT value than the drawn-support form or uniform weights."""
    torch.manual_seed(0)
    z1 = torch.randn(32, 16)
    z2 = z1 + 0.8 * torch.randn(32, 16)
    scores = two_view_scores(z1, z2, temperature=0.5)
    ref = _log_e(make_strategy("ot", include_positive=False), scores)
    errors = {}
    for name, kw in {
        "full": dict(negatives="ot"),
        "drawn": dict(negatives="ot", coupling="drawn"),
        "uniform": dict(negatives="uniform"),
    }.items():
        s = make_strategy(include_positive=False, k=4, **kw)
        g = torch.Generator().manual_seed(1)
        mean = sum(_log_e(s, scores, g) for _ in range(300)) / 300
        errors[name] = float((mean - ref).abs().mean())
    assert errors["full"] < 0.75 * errors["drawn"] and errors["full"] < 0.75 * errors["uniform"], errors


def test_ot_full_coupling_reads_the_full_coupling_entries():
    """The weights of the drawn columns are the full problem's coupling at those entries."""
    from qt_hard.negatives import OTWeighting, sample_k_indices

    z1, z2 = pair(b=6, d=4, seed=2)
    scores = two_view_scores(z1, z2, temperature=0.5)
    w = OTWeighting(epsilon=0.5)
    full = w.log_weights(scores, scores.neg_valid, 0.0)
    idx = sample_k_indices(scores.neg_valid, 3, torch.Generator().manual_seed(0))
    drawn = scores.select(idx, scores.neg_valid)
    got = w.weigh(drawn, drawn.neg_valid, 0.0).dense
    torch.testing.assert_close(got, full.gather(1, idx))


# ---------------------------------------------------------------- queue labels
def test_queue_keeps_labels_and_label_negatives_drop_same_class_rows():
    g = torch.Generator().manual_seed(0)
    a, p = torch.randn(2, 4, generator=g, dtype=torch.float64), torch.randn(2, 4, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 1])
    q = EmbeddingQueue(size=6, dim=4).double()
    bank = torch.randn(6, 4, generator=g, dtype=torch.float64)
    q.enqueue(bank[:4], labels=torch.tensor([0, 1, 0, 1]))
    q.enqueue(bank[4:])  # unknown class
    assert q.labels().tolist() == [0, 1, 0, 1, -1, -1]
    got = ranking_loss(
        a,
        p,
        None,
        "label",
        labels=labels,
        temperature=0.5,
        extra_candidates=q.embeddings(),
        extra_labels=q.labels(),
        in_batch=False,
    )
    # by hand: anchor i's negatives are the queued rows of the other class and of unknown class, their
    # mean scaled by the Q = 6 candidates (H-SCL's M)
    norm = lambda x: x / x.norm(dim=-1, keepdim=True)
    want = []
    for i in range(2):
        s_pos = float(norm(a[i]) @ norm(p[i])) / 0.5
        negs = [float(norm(a[i]) @ norm(bank[j])) / 0.5 for j in range(6) if j >= 4 or j % 2 != i]
        want.append(-s_pos + math.log(math.exp(s_pos) + 6 * sum(math.exp(x) for x in negs) / len(negs)))
    assert got.item() == pytest.approx(sum(want) / 2, abs=1e-10)
    state = q.state_dict()
    q2 = EmbeddingQueue(size=6, dim=4).double()
    q2.load_state_dict(state)
    assert torch.equal(q2.labels(), q.labels())


def test_labels_with_a_queue_but_no_queue_labels_is_an_error():
    a, p = pair(b=2, d=4)
    with pytest.raises(ValueError, match="need extra_labels"):
        ranking_loss(
            a,
            p,
            None,
            "label",
            labels=torch.tensor([0, 1]),
            extra_candidates=torch.randn(5, 4, dtype=torch.float64),
            in_batch=False,
        )
    with pytest.raises(ValueError, match="labels must be >= 0"):
        EmbeddingQueue(4, 4).enqueue(torch.zeros(2, 4), labels=torch.tensor([0, -1]))


# ---------------------------------------------------------------- MNRL's hardness tilt in the core
def _tilted_cross_entropy(a, p, n, scale, alpha, mode):
    """MNRL's hardness-weighted loss written out from its definition (sentence-transformers 6.2):
    logits scale * cos over [positives | negatives block by block], alpha * stop_grad(cos) added to
    the chosen negative logits, cross-entropy against the own positive."""
    a, p, n = (torch.nn.functional.normalize(x, dim=-1) for x in (a, p, n))
    b = a.shape[0]
    cands = torch.cat([p] + [n[:, j] for j in range(n.shape[1])])
    cos = a @ cands.T
    own = torch.zeros_like(cos, dtype=torch.bool)
    for i in range(b):
        own[i, i::b] = True  # own positive and own explicit negatives
    explicit = torch.zeros_like(own)
    explicit[:, b:] = True
    chosen = {"in_batch_negatives": ~own, "hard_negatives": own & explicit, "all_negatives": ~(own & ~explicit)}[mode]
    logits = scale * cos + alpha * cos.detach() * chosen
    return torch.nn.functional.cross_entropy(logits, torch.arange(b))


@pytest.mark.parametrize("mode", ["in_batch_negatives", "hard_negatives", "all_negatives"])
@pytest.mark.parametrize("k", [None, 11])
def test_hardness_tilt_is_mnrl_written_out(mode, k):
    g = torch.Generator().manual_seed(3)
    a, p = (torch.randn(6, 5, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(2))
    n = torch.randn(6, 2, 5, generator=g, dtype=torch.float64, requires_grad=True)
    ours = ranking_loss(
        a,
        p,
        n,
        "uniform",
        temperature=0.25,
        k=k,
        hardness_mode=mode,
        hardness_strength=9.0,
        generator=torch.Generator().manual_seed(0),
    )
    if k is None:  # every candidate: exactly the written-out loss, value and gradients
        ref = _tilted_cross_entropy(a, p, n, 4.0, 9.0, mode)
        torch.testing.assert_close(ours, ref, atol=1e-12, rtol=1e-12)
        for x, y in zip(torch.autograd.grad(ours, (a, p, n)), torch.autograd.grad(ref, (a, p, n))):
            torch.testing.assert_close(x, y, atol=1e-12, rtol=1e-12)
    else:  # 11 of the 17 candidates: finite, and differs from the untilted draw of the same columns
        plain = ranking_loss(a, p, n, "uniform", temperature=0.25, k=k, generator=torch.Generator().manual_seed(0))
        assert torch.isfinite(ours) and abs((ours - plain).detach().item()) > 1e-6


def test_hardness_options_are_checked():
    z = pair()
    with pytest.raises(ValueError, match="needs hardness_strength"):
        contrastive_loss(*z, "uniform", hardness_mode="all_negatives")
    with pytest.raises(ValueError, match="hardness_strength do not apply"):
        contrastive_loss(*z, "uniform", hardness_strength=5.0)
    with pytest.raises(ValueError, match="hardness_mode, hardness_strength do not apply"):
        contrastive_loss(*z, "uniform", estimator="jsd", hardness_mode="all_negatives", hardness_strength=5.0)
    with pytest.raises(ValueError, match=">= 0"):
        contrastive_loss(*z, "uniform", hardness_mode="all_negatives", hardness_strength=-1.0)
    # Two-view batches have no explicit negatives: hard_negatives tilts nothing, the others everything.
    plain = contrastive_loss(*z, "uniform")
    # (the plain loss is one cross-entropy, the tilted path a log-mean-exp: equal to rounding)
    untilted = contrastive_loss(*z, "uniform", hardness_mode="hard_negatives", hardness_strength=5.0)
    assert untilted.item() == pytest.approx(plain.item(), abs=1e-12)
    tilted = contrastive_loss(*z, "hard", beta=1.0, hardness_mode="in_batch_negatives", hardness_strength=5.0)
    assert tilted > contrastive_loss(*z, "hard", beta=1.0)


# ---------------------------------------------------------------- label relation
def test_a_label_relation_masks_exactly_the_related_candidates():
    """``label_relation`` generalizes "same label": equality given as a relation is the plain label
    strategy; a relation that is no equivalence (a document relevant to several queries) drops, for
    each anchor, just the candidates it relates to it, and composes with the hardening."""
    from qt_hard.negatives import one_directional_scores

    g = torch.Generator().manual_seed(1)
    a, p = torch.randn(4, 5, generator=g, dtype=torch.float64), torch.randn(4, 5, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1])
    rows = torch.arange(4)
    equal = lambda i, j: y[i.clamp(min=0)] == y[j.clamp(min=0)]  # noqa: E731
    for hard in ({}, {"hardening": "exp", "beta": 1.0}):
        want = ranking_loss(a, p, None, "label", labels=y, temperature=0.5, **hard)
        got = ranking_loss(a, p, None, "label", labels=rows, temperature=0.5, label_relation=equal, **hard)
        assert got.item() == pytest.approx(want.item(), abs=1e-12)
    related = {(0, 1), (2, 1), (3, 0)}  # anchor 0 owns candidate 1, not the other way round
    rel = lambda i, j: torch.tensor(
        [[(int(x), int(z)) in related for x, z in zip(r, c)] for r, c in zip(*torch.broadcast_tensors(i, j))]
    )  # noqa: E731
    scores = one_directional_scores(a, p, labels=rows, temperature=0.5)
    mask = make_strategy("label", label_relation=rel).negatives(scores)
    want = scores.neg_valid.clone()
    for i, j in related:
        want[i, j] = False
    assert torch.equal(mask, want)
    with pytest.raises(ValueError, match="label_relation must be callable"):
        make_strategy("label", label_relation="query")
    bad = lambda i, j: torch.ones(2, 2, dtype=torch.bool)  # noqa: E731
    with pytest.raises(ValueError, match="label_relation returned shape"):
        make_strategy("label", label_relation=bad).negatives(scores)
