"""A minimal pipeline for tests of the loop's pipeline interface (``qt_hard.training.pipeline``):
two noisy views of fixed Gaussian points, a linear map, the core's two-view contrastive loss, and
an evaluation that counts how often a point's two views are nearest neighbours."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from qt_hard.training.pipeline import PipelineRun


@dataclass
class ToyModel:
    dim: int = 8


@dataclass
class ToyData:
    points: int = 64
    noise: float = 0.3

    def validate(self) -> None:
        if self.points < 4:
            raise ValueError(f"data.points must be >= 4, got {self.points}")


@dataclass
class ToyObjective:
    negatives: str = "uniform"


class ToyTask:
    sentences_per_row = 2

    def __init__(self, x: np.ndarray, noise: float, batch_size: int, seed: int):
        self.x, self.noise, self.batch_size, self.seed = x, noise, batch_size, seed

    def batches_per_epoch(self) -> int:
        return len(self.x) // self.batch_size

    def local_batch(self, step: int, rank: int, world: int) -> dict:
        rng = np.random.default_rng([self.seed, step])  # a pure function of (seed, step)
        rows = rng.choice(len(self.x), self.batch_size, replace=False)
        per = self.batch_size // world
        rows = rows[rank * per : (rank + 1) * per]
        a = self.x[rows] + self.noise * rng.standard_normal((self.batch_size, self.x.shape[1]))[rank * per :][:per]
        b = self.x[rows] + self.noise * rng.standard_normal((self.batch_size, self.x.shape[1]))[rank * per :][:per]
        return {"a": torch.as_tensor(a, dtype=torch.float32), "b": torch.as_tensor(b, dtype=torch.float32)}


class ToyLoss:
    def __init__(self, negatives: str):
        from qt_hard.losses import ContrastiveLoss

        self.loss = ContrastiveLoss(negatives, temperature=0.5)

    def set_progress(self, progress: float) -> None:
        self.loss.set_progress(progress)

    def __call__(self, module, batch, generator=None):
        self.loss.generator = generator
        return self.loss(module(batch["a"]), module(batch["b"]))


class ToyPipeline:
    sections = {"model": ToyModel, "data": ToyData, "objective": ToyObjective}

    def validate(self, cfg) -> None:
        if cfg.model.dim < 2:
            raise ValueError("model.dim must be >= 2")

    def ddp_kwargs(self, cfg) -> dict:
        return {}

    def build(self, cfg, out: Path) -> PipelineRun:
        x = np.random.default_rng(0).standard_normal((cfg.data.points, cfg.model.dim))
        module = torch.nn.Linear(cfg.model.dim, cfg.model.dim)
        task = ToyTask(x, cfg.data.noise, cfg.train.batch_size, cfg.train.seed)

        def save(module, folder: Path) -> None:
            folder.mkdir(parents=True, exist_ok=True)
            torch.save(module.state_dict(), folder / "toy.pt")

        def evaluate(module, step: int) -> dict:
            with torch.no_grad():
                z = torch.nn.functional.normalize(module(torch.as_tensor(x, dtype=torch.float32)), dim=1)
            return {"self_sim": float((z * z).sum(1).mean()), "steps_seen": step, "note": json.dumps("ok")}

        return PipelineRun(module, task, ToyLoss(cfg.objective.negatives), save, evaluate, eval_every=5)


PIPELINE = ToyPipeline()
