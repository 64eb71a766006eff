"""The image pipeline through the training loop: a tiny end-to-end SimCLR run with held-out kNN,
MoCo with MoCoRing's annealed ring, exact resume, config errors."""

from __future__ import annotations

import csv
import json
import pickle

import numpy as np
import pytest
import torch

from qt_hard.training.config import ConfigError, config_from_dict
from qt_hard.training.loop import train


def write_toy_cifar(root, n_train=96, n_test=40, seed=0):
    """CIFAR-10-format pickles whose classes differ in colour (learnable, label-aligned)."""
    rng = np.random.default_rng(seed)
    base = root / "cifar-10-batches-py"
    base.mkdir(parents=True)
    palette = rng.integers(40, 216, size=(10, 3))

    def batch(n):
        y = np.arange(n) % 10
        img = palette[y][:, :, None] + rng.normal(0, 25, size=(n, 3, 1024))
        return {"data": np.clip(img, 0, 255).astype(np.uint8).reshape(n, 3072), "labels": y.tolist()}

    for i, part in enumerate(np.array_split(np.arange(n_train), 2), start=1):
        with open(base / f"data_batch_{i}", "wb") as fh:
            pickle.dump(batch(len(part)), fh)
    with open(base / "test_batch", "wb") as fh:
        pickle.dump(batch(n_test), fh)
    return root


def vision_tree(tmp_path, **train):
    data = tmp_path / "data"
    if not data.exists():
        write_toy_cifar(data)
    return {
        "pipeline": "vision",
        "out_dir": str(tmp_path / "run"),
        "model": {"method": "simclr", "arch": "resnet_tiny", "width": 4, "proj_dim": 16},
        "data": {"name": "cifar10", "path": str(data), "size": 16},
        "objective": {"negatives": "hard", "temperature": 0.5, "options": {"beta": 1.0, "tau_plus": 0.1}},
        "eval": {"knn_k": 20, "every_epochs": 1, "linear_epochs": 5},
        "train": {
            "batch_size": 32,
            "steps": 6,
            "lr": 1e-3,
            "weight_decay": 1e-6,
            "grad_clip": None,
            "trackers": ["csv"],
            "progress": False,
            "num_threads": 1,
            "seed": 0,
            **train,
        },
    }


def test_simclr_end_to_end_knn_on_held_out_images(tmp_path):
    from qt_hard.vision.data import load_cifar10
    from qt_hard.vision.evaluate import embed_chunks, knn_accuracy
    from qt_hard.vision.pipeline import build_encoder, load_image_encoder

    cfg = config_from_dict(vision_tree(tmp_path))
    out = train(cfg)
    with open(out / "eval.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["step"]) for r in rows] == [3, 6]  # every epoch (96 // 32 = 3 steps) and the end
    result = json.loads((out / "eval.json").read_text())
    assert "linear_acc" in result and 0 <= result["linear_acc"] <= 100
    # The monitor's number is the kNN of the *test* split against the training images.
    enc = load_image_encoder(out / "final")
    tr, te = load_cifar10(tmp_path / "data", "train"), load_cifar10(tmp_path / "data", "test")
    ftr, fte = (embed_chunks(enc, enc.features, torch.as_tensor(s.images)) for s in (tr, te))
    assert len(te) == 40 and result["knn_acc"] == round(knn_accuracy(ftr, tr.labels, fte, te.labels, 10, k=20), 2)
    # Training moved the weights away from the seed's initialisation.
    torch.manual_seed(0)
    init = build_encoder(cfg.model)
    assert not torch.allclose(init.head[0].weight, enc.head[0].weight)
    with open(out / "metrics.csv") as fh:
        assert float(next(csv.DictReader(fh))["sentences_per_s"]) > 0


def test_moco_ring_run_and_exact_resume(tmp_path):
    tree = vision_tree(tmp_path, steps=6, checkpoint_every=2)
    tree["model"].update(method="moco", queue_size=64, momentum=0.9)
    tree["objective"] = {
        "negatives": "ring",
        "temperature": 0.2,
        "options": {"lower": {"schedule": "linear", "start": 0.0, "end": 50.0}, "upper": 95.0},
    }
    tree["eval"]["linear"] = False
    straight = dict(tree, out_dir=str(tmp_path / "straight"))
    train(config_from_dict(straight))

    class Stop(Exception):
        pass

    def interrupt(step, loss):
        if step == 3:
            raise Stop

    cut = dict(tree, out_dir=str(tmp_path / "cut"))
    with pytest.raises(Stop):
        train(config_from_dict(cut), on_step=interrupt)
    train(config_from_dict(cut), resume=True)
    a = torch.load(tmp_path / "straight" / "final" / "encoder.pt", weights_only=True)
    b = torch.load(tmp_path / "cut" / "final" / "encoder.pt", weights_only=True)
    assert any(k.startswith("queue.") for k in a) and any(k.startswith("key_encoder.") for k in a)
    for k in a:
        assert torch.equal(a[k], b[k]), k
    # The queue now holds keys (6 steps x 32 keys through 64 slots), none of MoCo's random initial fill.
    from qt_hard.vision.methods import MoCo
    from qt_hard.vision.resnet import SimCLREncoder

    fill = MoCo(SimCLREncoder("resnet_tiny", proj_dim=16, width=4), 16, queue_size=64).queue.buffer
    q = a["queue.buffer"]
    assert torch.allclose(q.norm(dim=1), torch.ones(64), atol=1e-4)
    assert (q @ fill.T).max() < 0.999


def test_vision_config_errors(tmp_path):
    tree = vision_tree(tmp_path)
    with pytest.raises(ConfigError, match="model.method"):
        config_from_dict(tree, ["model.method=byol"])
    with pytest.raises(ConfigError, match="unknown config key 'model.depth'"):
        config_from_dict(tree, ["model.depth=3"])
    with pytest.raises(ConfigError, match="queue_size"):
        config_from_dict(tree, ["model.method=moco", "model.queue_size=8"])
    with pytest.raises(ConfigError, match="weight_decay"):
        config_from_dict(tree, ["train.weight_decay=-1"])
    from qt_hard.vision.pipeline import build_step

    moco = config_from_dict(tree, ["model.method=moco", "model.queue_size=64", "objective.include_positive=false"])
    step = build_step(moco)
    assert type(step).__name__ == "MoCoStep" and step.loss.strategy.include_positive is False
    assert build_step(config_from_dict(tree)).loss.strategy.include_positive is True
    with pytest.raises(ConfigError, match="objective.options.temperature: set it as objective.temperature"):
        config_from_dict(tree, ["objective.options.temperature=0.1"])
