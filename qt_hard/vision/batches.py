"""Image batches as a pure function of (seed, step), split into per-process shards.

A global batch is B images of the training set, visited in an order drawn from (seed, epoch)
(the last incomplete batch of an epoch is dropped, as HCL's ``drop_last=True`` loader). The two
views' augmentation parameters are drawn for the whole global batch from a generator seeded with
(seed, step) and sliced like the images, so W processes apply exactly the augmentations one
process would (``SimCLRAugment.sample`` / ``apply``), and a resumed run sees the same views.

``local_batch(step, rank, world)`` -> ``{"images": (B/W, 3, H, W) uint8, "labels": (B/W,) long,
"view1": params, "view2": params}`` on the CPU; the pixels are augmented on the device by the
step (``qt_hard.vision.methods``). Labels travel only for label-aware strategies and checks; the
unsupervised objectives ignore them.
"""

from __future__ import annotations

import numpy as np
import torch

from qt_hard.errors import ConfigError
from qt_hard.vision.augment import SimCLRAugment


def _step_seed(seed: int, step: int) -> int:
    # A 63-bit seed from (seed, step) through numpy's SeedSequence (no collisions between nearby pairs).
    return int(np.random.SeedSequence([seed, step, 7]).generate_state(1, dtype=np.uint64)[0] >> 1)


class ImageTask:
    """Deterministic SimCLR batches over ``images`` (N, 3, H, W) uint8 with ``labels`` (N,)."""

    sentences_per_row = 1  # items per batch row, for the loop's throughput column (images/s)

    def __init__(self, images, labels, augment: SimCLRAugment, batch_size: int, seed: int):
        self.images = torch.as_tensor(images)
        if self.images.dim() != 4 or self.images.dtype != torch.uint8:
            raise ValueError(f"images must be (N, 3, H, W) uint8, got {tuple(self.images.shape)} {self.images.dtype}")
        self.labels = torch.as_tensor(np.asarray(labels), dtype=torch.long)
        if len(self.images) < batch_size:
            raise ConfigError(f"{len(self.images)} training images, fewer than train.batch_size={batch_size}")
        self.augment, self.batch_size, self.seed = augment, batch_size, seed
        self._epoch, self._order = None, None

    def batches_per_epoch(self) -> int:
        return len(self.images) // self.batch_size

    def global_rows(self, step: int) -> np.ndarray:
        epoch, pos = divmod(step, self.batches_per_epoch())
        if self._epoch != epoch:
            self._epoch, self._order = epoch, np.random.default_rng([self.seed, epoch]).permutation(len(self.images))
        return self._order[pos * self.batch_size : (pos + 1) * self.batch_size]

    def view_params(self, step: int) -> tuple[dict, dict]:
        """The two views' parameters of the global batch of ``step`` (B rows each)."""
        g = torch.Generator().manual_seed(_step_seed(self.seed, step))
        _, _, h, w = self.images.shape
        return (self.augment.sample(self.batch_size, h, w, g), self.augment.sample(self.batch_size, h, w, g))

    def local_batch(self, step: int, rank: int, world: int) -> dict:
        if self.batch_size % world:
            raise ValueError(f"batch size {self.batch_size} is not divisible by {world} processes")
        per = self.batch_size // world
        local = slice(rank * per, (rank + 1) * per)
        rows = torch.as_tensor(self.global_rows(step)[local])
        p1, p2 = self.view_params(step)
        return {
            "images": self.images[rows],
            "labels": self.labels[rows],
            "view1": {k: v[local] for k, v in p1.items()},
            "view2": {k: v[local] for k, v in p2.items()},
        }
