"""Optimizer, learning-rate schedule, sparse clipping and precision settings of the loop
(``qt_hard.training.optim``): config errors, the schedule's formula in metrics.csv, exact resume
under a decaying schedule, SparseAdam on the bag of words, TF32 on CUDA, the GRU's float32
recurrence under bf16 autocast."""

from __future__ import annotations

import csv
import itertools
import math

import numpy as np
import pytest
import torch

from qt_hard.training.config import ConfigError, config_from_dict
from qt_hard.training.optim import (
    clip_gradients,
    lr_factor,
    make_gradients_sparse,
    set_tf32,
)
from tests.test_training import qt_config
from tests._signals import signal_at


def _bow_tree(out, **train):
    return {
        "out_dir": str(out),
        "model": {"kind": "bow", "dim": 16},
        "data": {"kind": "synthetic", "num_classes": 6, "sentences_per_class": 60, "vocab_size": 120},
        "objective": {"negatives": "uniform", "include_positive": False, "k": 20},
        "train": {
            "batch_size": 32,
            "steps": 30,
            "lr": 0.05,
            "log_every": 1,
            "progress": False,
            "trackers": ["csv"],
            "num_threads": 1,
            **train,
        },
    }


def _rows(out):
    with open(out / "metrics.csv") as fh:
        return list(csv.DictReader(fh))


def test_defaults_are_adam_constant_tf32():
    t = config_from_dict({}).train
    assert (t.optimizer, t.lr_schedule, t.warmup_steps, t.tf32) == ("adam", "constant", 0, True)


@pytest.mark.parametrize(
    "key, value, accepted",
    [
        ("train.optimizer", "sgd", "adam, adamw, sparse_adam"),
        ("train.lr_schedule", "step", "constant, linear, cosine"),
    ],
)
def test_unknown_choice_is_a_one_line_error_naming_key_and_values(key, value, accepted):
    with pytest.raises(ConfigError) as err:
        config_from_dict({}, [f"{key}={value}"])
    text = str(err.value)
    assert "\n" not in text and key in text and repr(value) in text and accepted in text


def test_sparse_adam_with_weight_decay_is_a_config_error():
    with pytest.raises(ConfigError, match="sparse_adam"):
        config_from_dict({}, ["train.optimizer=sparse_adam", "train.weight_decay=0.01"])


def test_lr_factor_warms_up_then_decays():
    T, w = 100, 10
    assert [lr_factor(t, T, "linear", w) for t in range(w)] == pytest.approx([(t + 1) / w for t in range(w)])
    for schedule in ("constant", "linear", "cosine"):
        assert lr_factor(w, T, schedule, w) == 1.0
    assert lr_factor(T, T, "linear", w) == pytest.approx(0.0, abs=1e-12)
    assert lr_factor(T, T, "cosine", w) == pytest.approx(0.0, abs=1e-12)
    mid = w + (T - w) // 2
    assert lr_factor(mid, T, "cosine", w) == pytest.approx(0.5 * (1 + math.cos(math.pi * (mid - w) / (T - w))))
    decay = [lr_factor(t, T, "cosine", w) for t in range(w, T)]
    assert all(a >= b for a, b in itertools.pairwise(decay)) and decay[-1] < decay[0]
    assert {lr_factor(t, T, "constant", 0) for t in range(T)} == {1.0}


def test_metrics_log_the_scheduled_rate(tmp_path):
    from qt_hard.training.loop import train

    cfg = config_from_dict(_bow_tree(tmp_path / "run", lr_schedule="cosine", warmup_steps=5))
    rows = _rows(train(cfg))
    logged = [float(r["lr"]) for r in rows]
    expected = [0.05 * lr_factor(int(r["step"]) - 1, 30, "cosine", 5) for r in rows]
    assert logged == pytest.approx(expected, rel=1e-6)
    assert max(logged) == pytest.approx(0.05) and logged[0] < logged[5] and logged[-1] < 0.01


def test_resume_under_a_decaying_schedule_is_exact(tmp_path):
    from qt_hard.training.loop import train
    from tests.test_training import _weights

    tree = qt_config(tmp_path, steps=10, lr_schedule="linear", warmup_steps=3, optimizer="adamw", weight_decay=0.01)
    train(config_from_dict({**tree, "out_dir": str(tmp_path / "straight")}))
    cfg = config_from_dict({**tree, "out_dir": str(tmp_path / "cut")})

    train(cfg, on_step=signal_at(4))
    train(cfg, resume=True)
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "cut")
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)
    assert [float(r["lr"]) for r in _rows(tmp_path / "cut")] == [float(r["lr"]) for r in _rows(tmp_path / "straight")]


def test_adamw_decouples_the_decay(tmp_path):
    from qt_hard.training.loop import train
    from tests.test_training import _weights

    runs = {}
    for opt in ("adam", "adamw"):
        out = tmp_path / opt
        train(config_from_dict(_bow_tree(out, steps=5, optimizer=opt, weight_decay=0.1)))
        runs[opt] = _weights(out)
    assert not torch.allclose(runs["adam"]["bag.weight"], runs["adamw"]["bag.weight"])


def test_sparse_clipping_equals_dense_clipping():
    from types import SimpleNamespace

    torch.manual_seed(0)
    dense = torch.nn.EmbeddingBag(50, 8, mode="mean")
    sparse = torch.nn.EmbeddingBag(50, 8, mode="mean", sparse=True)
    sparse.load_state_dict(dense.state_dict())
    ids = torch.randint(0, 50, (16, 6))  # repeated rows: the sparse gradient has duplicates
    for m in (dense, sparse):
        (m(ids) ** 2).sum().backward()
    ref = float(torch.nn.utils.clip_grad_norm_(dense.parameters(), 0.5))
    got = clip_gradients(SimpleNamespace(), sparse, 0.5)
    assert got == pytest.approx(ref, rel=1e-5)
    torch.testing.assert_close(sparse.weight.grad.to_dense(), dense.weight.grad, rtol=1e-5, atol=1e-7)


def test_sparse_adam_trains_the_bag_of_words(tmp_path):
    from qt_hard.training.loop import train

    out = train(config_from_dict(_bow_tree(tmp_path / "run", optimizer="sparse_adam")))
    losses = [float(r["loss"]) for r in _rows(out)]
    assert np.mean(losses[-8:]) < np.mean(losses[:8]) - 0.1, losses
    assert all(float(r["grad_norm"]) > 0 for r in _rows(out))


def test_sparse_adam_names_a_parameter_outside_an_embedding_table():
    from qt_hard.encoders.quick_thoughts import QuickThoughtsEncoder

    with pytest.raises(ValueError, match=r"sparse_adam.*'f\.rnn\.weight_ih_l0'"):
        make_gradients_sparse(QuickThoughtsEncoder(30, "gru", 8, 8))


def test_tf32_is_a_no_op_off_cuda():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    assert set_tf32(True, "cpu") is False and set_tf32(False, "cpu") is False
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_tf32_setting_on_cuda():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        assert set_tf32(True, "cuda")
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        assert not set_tf32(False, "cuda")
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _gru_under_autocast(device: str, encoder: str):
    from qt_hard.encoders.quick_thoughts import SentenceRNN

    torch.manual_seed(0)
    rnn = SentenceRNN(40, encoder, 8, 12).to(device)
    ids = torch.randint(1, 40, (6, 9), device=device)
    lengths = torch.tensor([9, 3, 1, 5, 9, 2], device=device)
    ref = rnn(ids, lengths)
    seen = []  # what the GRU itself runs under: autocast off, float32 input
    rnn.rnn.register_forward_pre_hook(lambda m, args: seen.append(torch.is_autocast_enabled(device)))
    with torch.autocast(device, dtype=torch.bfloat16):
        got = rnn(ids, lengths)
    assert seen == [False]
    return ref, got


@pytest.mark.parametrize("encoder", ["gru", "bigru"])
def test_gru_runs_in_float32_under_bf16_autocast(encoder):
    ref, got = _gru_under_autocast("cpu", encoder)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, ref, rtol=0, atol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("encoder", ["gru", "bigru"])
def test_gru_runs_in_float32_under_bf16_autocast_on_cuda(encoder):
    ref, got = _gru_under_autocast("cuda", encoder)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, ref)
