"""configs/qt_s2v.yaml holds S2V's default model (lajanugen/S2V, BS400-W620-S1200-case-bidir with
src/train.py's flag defaults), and the built-in 2,400-d bag of words is its control's width."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from qt_hard.training.config import load_config

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "qt_s2v.yaml"


@pytest.fixture(scope="module")
def cfg():
    return load_config(CONFIG, check_pipeline=False)


def test_values_are_s2vs(cfg):
    m, d, o, t = cfg.model, cfg.data, cfg.objective, cfg.train
    assert (m.kind, m.encoder, m.embed_dim, m.hidden_dim, m.max_len, m.lower) == ("qt", "bigru", 620, 600, 30, False)
    assert d.kind == "books" and d.exclude_books == [8, 9, 10] and d.min_count == 1
    assert d.max_vocab + 2 == 50001  # <pad> and <unk> besides the words: S2V's 50,001 rows
    assert (o.negatives, o.context, o.include_positive, o.normalize, o.temperature) == ("uniform", 1, True, False, 1.0)
    assert (t.batch_size, t.lr, t.grad_clip, t.optimizer, t.lr_schedule) == (400, 5e-4, 5.0, "adam", "constant")
    assert (t.mixed_precision, t.tf32) == ("no", False)


def test_the_module_has_s2vs_shapes(cfg):
    from qt_hard.encoders.text import build_module

    torch.manual_seed(0)
    module = build_module(cfg.model, cfg.data.max_vocab + 2)
    assert module.dim == 2400 and module.f.out_dim == module.g.out_dim == 1200
    emb = module.f.embedding.weight
    assert tuple(emb.shape) == (50001, 620)
    # S2V's uniform_init_scale 0.1 (the padding row is zero)
    assert float(emb.abs().max()) <= 0.1 + 1e-6 and float(emb[1:].abs().max()) > 0.099
    gru = module.f.rnn
    assert gru.bidirectional and gru.hidden_size == 600 and gru.input_size == 620
    ids = torch.randint(2, 50001, (3, 30))
    with torch.inference_mode():
        out = module.embed(ids, torch.tensor([30, 5, 1]))
    assert out.shape == (3, 2400)


def test_the_heldout_books_are_those_heldout_scores_by_default():
    import inspect

    from qt_hard.evaluation.heldout import HeldOut
    from qt_hard.experiments.specs.qt_table import held_out_range

    defaults = inspect.signature(HeldOut).parameters
    books = load_config(CONFIG, check_pipeline=False).data.exclude_books
    assert list(range(defaults["first"].default, defaults["last"].default)) == books
    assert held_out_range(books) == (8, 11)  # what qt-table's namesake protocol scores
