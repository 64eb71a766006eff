"""Mixed precision in training: the loss core runs in float32 under bf16 autocast, a bf16 run on
the CPU trains, and fp16 on a CPU (which accelerate would silently run as float32) is an error."""

from __future__ import annotations

from tests._synthetic import SYNTHETIC_DATA

import numpy as np
import pytest
import torch

from qt_hard.text.config import ObjectiveConfig
from qt_hard.training.config import config_from_dict
from qt_hard.text.objectives import Objective


class RecordingStrategy:
    """Wraps a NegativeStrategy and remembers the dtype of the scores it is given."""

    def __init__(self, inner):
        self.inner, self.dtypes = inner, []

    def __call__(self, scores, generator=None):
        self.dtypes.append((scores.neg.dtype, scores.pos.dtype))
        return self.inner(scores, generator)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _tiny_bert():
    from transformers import BertConfig, BertModel

    from qt_hard.encoders import TransformerEncoder

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    return TransformerEncoder("tiny", model=BertModel(cfg)).eval()


def _pair_batch(B=6, L=7):
    g = torch.Generator().manual_seed(1)

    def side():
        return {
            "input_ids": torch.randint(1, 50, (B, L), generator=g),
            "attention_mask": torch.ones(B, L, dtype=torch.long),
        }

    return {"a": side(), "b": side(), "labels": torch.arange(B)}


@pytest.mark.parametrize("negatives", ["uniform", "hard"])
def test_loss_core_is_float32_under_bf16_autocast(negatives):
    module = _tiny_bert()
    opts = {"beta": 1.0} if negatives == "hard" else {}
    obj = Objective(ObjectiveConfig(negatives=negatives, temperature=0.5, normalize=True, options=opts), pair_data=True)
    obj.loss.strategy = RecordingStrategy(obj.loss.strategy)
    batch = _pair_batch()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = obj(module, batch)
    # The transformer's linear layers ran in bf16 (its final LayerNorm returns float32); the
    # scores that the negatives core weighs and logsumexps are float32.
    assert obj.loss.strategy.dtypes == [(torch.float32, torch.float32)]
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in module.parameters())

    # Guard: the same loss module called directly under autocast computes its scores in bf16
    # (CPU autocast runs matmul and logsumexp in bf16), so the check above is not automatic.
    raw = RecordingStrategy(obj.loss.strategy.inner)
    obj.loss.strategy = raw
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z1 = module(batch["a"]["input_ids"], batch["a"]["attention_mask"])
        z2 = module(batch["b"]["input_ids"], batch["b"]["attention_mask"])
        obj.loss(z1, z2)
    assert raw.dtypes[0][0] == torch.bfloat16


class LinearBag(torch.nn.Module):
    """Mean of word vectors, then a linear map: under CPU autocast its output is bf16."""

    def __init__(self, vocab=30, dim=16):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, ids, lengths):
        return self.proj(self.emb(ids).mean(1))


def test_context_loss_under_autocast_is_the_float32_loss_of_the_bf16_embeddings():
    torch.manual_seed(0)
    module = LinearBag()
    ids = torch.randint(1, 30, (24, 5))
    batch = {"x": {"ids": ids, "lengths": torch.full((24,), 5)}, "doc_ids": torch.zeros(24, dtype=torch.long)}
    obj = Objective(
        ObjectiveConfig(
            negatives="hard",
            temperature=1.0,
            normalize=False,
            include_positive=True,
            options={"beta": 1.0, "clip": "rescaled"},
        ),
        pair_data=False,
    )
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = module(ids, batch["x"]["lengths"])
        mixed = obj(module, batch)
        unprotected = obj.loss(z, z, doc_ids=batch["doc_ids"])
    assert z.dtype == torch.bfloat16
    # The shared encoder is f and g (non-QT model); the loss of its bf16 output, in float32:
    ref = obj.loss(z.float(), z.float(), doc_ids=batch["doc_ids"])
    assert mixed.dtype == torch.float32
    torch.testing.assert_close(mixed, ref, rtol=1e-6, atol=1e-6)
    # Guard: with autocast left on, the core's bf16 matmul / logsumexp move the loss visibly.
    assert abs(unprotected.item() - ref.item()) > 1e-4


@pytest.fixture
def fresh_accelerator_state():
    """accelerate keeps one process-wide mixed-precision setting; a test that changes it resets it."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state()
    yield
    AcceleratorState._reset_state()


def _hf_tree(tmp_path, name, **train):
    return {
        "out_dir": str(tmp_path / name),
        "model": {"kind": "hf", "hf_path": "minilm", "max_len": 12},
        "data": dict(SYNTHETIC_DATA),
        "objective": {"negatives": "uniform", "temperature": 0.05, "normalize": True, "include_positive": False},
        "train": {
            "batch_size": 4,
            "steps": 2,
            "lr": 1e-4,
            "log_every": 1,
            "progress": False,
            "trackers": ["csv"],
            "num_threads": 1,
            **train,
        },
    }


def test_bf16_run_on_cpu_trains(tmp_path, fresh_accelerator_state):
    from safetensors.torch import load_file

    from qt_hard.encoders.transformer import resolve_model_path
    from qt_hard.training.loop import train
    from test_training import read_losses

    if torch.cuda.is_available():
        pytest.skip("checks CPU autocast; this machine would train on its GPU")
    out = train(config_from_dict(_hf_tree(tmp_path, "bf16", mixed_precision="bf16")))
    losses = read_losses(out)
    assert len(losses) == 2 and np.isfinite(losses).all()
    before = load_file(f"{resolve_model_path('minilm')}/model.safetensors")
    after = load_file(out / "final" / "model.safetensors")
    key = "encoder.layer.0.attention.self.query.weight"
    pre = before.get(key, before.get("bert." + key))
    assert after[key].dtype == torch.float32  # autocast keeps float32 master weights
    assert not torch.equal(after[key], pre)


def test_fp16_on_cpu_is_a_clear_error(tmp_path, fresh_accelerator_state):
    from qt_hard.training.loop import train
    from test_training import qt_config

    if torch.cuda.is_available():
        pytest.skip("fp16 is valid on a GPU")
    tree = qt_config(tmp_path, steps=2)
    tree["train"]["mixed_precision"] = "fp16"
    with pytest.raises(ValueError, match="fp16 needs a GPU.*bf16"):
        train(config_from_dict(tree))
    # The refusal happens before accelerate's process-wide state is set, so a float32 run in the
    # same process still works.
    tree["train"]["mixed_precision"] = "no"
    tree["out_dir"] = str(tmp_path / "after")
    assert (train(config_from_dict(tree)) / "final" / "model.safetensors").is_file()
