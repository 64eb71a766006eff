"""The image pipeline behind ``pipeline: vision`` (``qt_hard.training.pipeline``'s interface): SimCLR, or
MoCo-v2 with ``model.method: moco`` (its momentum encoder and queue part of the module, so checkpointed),
through the text pipeline's loop, trackers, checkpoints and ``--resume``; its pieces, the kNN monitor
(``OUT/eval.csv``, ``OUT/eval.json`` with the linear readout) and the saved encoder (``OUT/final/encoder.pt``
and ``vision.json``, read back by :func:`load_image_encoder`): docs/guides/images.md.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import torch

from qt_hard.training.pipeline import Pipeline, PipelineRun
from qt_hard.vision.config import VisionDataConfig, VisionEvalConfig, VisionModelConfig, VisionObjectiveConfig


def build_encoder(model_cfg: VisionModelConfig) -> torch.nn.Module:
    """The trained module of a config: a SimCLREncoder, wrapped in MoCo for ``method: moco``."""
    from qt_hard.vision.methods import MoCo
    from qt_hard.vision.resnet import SimCLREncoder

    enc = SimCLREncoder(model_cfg.arch, proj_dim=model_cfg.proj_dim, sync_bn=model_cfg.sync_bn, width=model_cfg.width)
    if model_cfg.method == "moco":
        return MoCo(enc, model_cfg.proj_dim, queue_size=model_cfg.queue_size, momentum=model_cfg.momentum)
    return enc


def build_step(cfg):
    """The objective of a config (the loss always from ``qt_hard.losses``)."""
    from qt_hard.losses import ContrastiveLoss, RankingLoss
    from qt_hard.vision.augment import SimCLRAugment
    from qt_hard.vision.methods import MoCoStep, SimCLRStep

    d, o = cfg.data, cfg.objective
    jitter = dict(zip(("brightness", "contrast", "saturation", "hue"), d.jitter))
    augment = SimCLRAugment(size=d.size, scale=tuple(d.scale), jitter_p=d.jitter_p, gray_p=d.gray_p, **jitter)
    common = dict(temperature=o.temperature, k=o.k, include_positive=o.include_positive)
    if cfg.model.method == "moco":
        return MoCoStep(RankingLoss(o.chosen(), **common), augment)
    return SimCLRStep(ContrastiveLoss(o.chosen(), **common), augment)


def load_split(data_cfg: VisionDataConfig, split: str, limit):
    from qt_hard.vision.data import load_images

    return load_images(data_cfg.name, data_cfg.path, split).subset(limit)


class KNNMonitor:
    """``evaluate(module, step)``: kNN accuracy (%) of the test split against the training images
    (un-augmented), and at the final step the linear readout too."""

    def __init__(self, train_set, test_set, eval_cfg: VisionEvalConfig, total_steps: int, seed: int):
        self.train_set, self.test_set, self.cfg = train_set, test_set, eval_cfg
        self.total, self.seed = total_steps, seed

    def __call__(self, module, step: int) -> dict:
        from qt_hard.vision.evaluate import embed_chunks, knn_accuracy, linear_readout
        from qt_hard.vision.methods import unwrap

        t0 = time.perf_counter()
        inner = unwrap(module)
        dev = next(inner.parameters()).device

        def features(x):
            return inner.features(x.to(dev, non_blocking=True))

        tr = embed_chunks(inner, features, torch.as_tensor(self.train_set.images), self.cfg.batch_size)
        te = embed_chunks(inner, features, torch.as_tensor(self.test_set.images), self.cfg.batch_size)
        # Both readouts take (train features, train labels, test features, test labels, classes).
        splits = (tr, self.train_set.labels, te, self.test_set.labels, self.train_set.num_classes)
        out = {"knn_acc": round(knn_accuracy(*splits, k=self.cfg.knn_k, temperature=self.cfg.knn_temperature), 2)}
        if step >= self.total and self.cfg.linear:
            # The readout seeds torch's global RNG for its layer: fork it, so the loop's RNG is untouched.
            with torch.random.fork_rng(devices=[]):
                lin = linear_readout(*splits, epochs=self.cfg.linear_epochs, lr=self.cfg.linear_lr, seed=self.seed)
            out["linear_acc"] = lin["acc"]
            out["linear_best_epoch"] = lin["best_epoch"]
        out["eval_s"] = round(time.perf_counter() - t0, 2)
        return out


def save_encoder(module, folder: Path, model_cfg: VisionModelConfig) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(module.state_dict(), folder / "encoder.pt")
    (folder / "vision.json").write_text(json.dumps({"model": vars(model_cfg)}, indent=1))


def load_image_encoder(folder: str | Path) -> torch.nn.Module:
    """The module saved in ``OUT/final`` (eval mode); ``.features(images)`` gives the representation."""
    folder = Path(folder)
    spec = json.loads((folder / "vision.json").read_text())
    module = build_encoder(VisionModelConfig(**spec["model"]))
    module.load_state_dict(torch.load(folder / "encoder.pt", map_location="cpu", weights_only=True))
    return module.eval()


class VisionPipeline(Pipeline):
    sections = dict(
        model=VisionModelConfig, data=VisionDataConfig, objective=VisionObjectiveConfig, eval=VisionEvalConfig
    )

    def validate(self, cfg) -> None:
        if cfg.model.method == "moco" and cfg.model.queue_size < cfg.train.batch_size:
            raise ValueError(
                f"model.queue_size={cfg.model.queue_size} is smaller than one batch "
                f"(train.batch_size={cfg.train.batch_size})"
            )

    def build(self, cfg, out: Path) -> PipelineRun:
        from qt_hard.vision.batches import ImageTask

        train_set = load_split(cfg.data, cfg.data.train_split, cfg.data.max_train)
        step = build_step(cfg)
        task = ImageTask(train_set.images, train_set.labels, step.augment, cfg.train.batch_size, cfg.train.seed)
        module = build_encoder(cfg.model)
        per_epoch = task.batches_per_epoch()
        total = cfg.train.steps or max(1, math.ceil(cfg.train.epochs * per_epoch))  # as the loop counts
        # The kNN bank is the labelled training images (STL-10's unlabeled part has no labels).
        bank_split = "train" if "unlabeled" in cfg.data.train_split else cfg.data.train_split
        bank = train_set if bank_split == cfg.data.train_split else load_split(cfg.data, bank_split, cfg.data.max_train)
        monitor = KNNMonitor(
            bank, load_split(cfg.data, cfg.data.test_split, cfg.data.max_test), cfg.eval, total, cfg.train.seed
        )
        every = max(1, round(cfg.eval.every_epochs * per_epoch)) if cfg.eval.every_epochs else 0
        return PipelineRun(module, task, step, lambda m, folder: save_encoder(m, folder, cfg.model), monitor, every)


PIPELINE = VisionPipeline()
