"""SimCLR and MoCo-v2 steps on the device: augment, encode, and the loss from ``qt_hard.losses``
(SimCLR's :class:`qt_hard.losses.ContrastiveLoss`, MoCo's :class:`qt_hard.losses.RankingLoss` against
the queue); how each runs as HCL and the papers run it: docs/guides/images.md (SimCLR, MoCo-v2).

Batches (see :class:`qt_hard.vision.batches.ImageTask`): ``{"images": (b, 3, H, W) uint8, "view1":
params, "view2": params}``, the augmentation parameters applied here on the batch's device.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
import torch.nn.functional as F

from qt_hard.training.pipeline import LossObjective
from qt_hard.vision.augment import SimCLRAugment


def unwrap(module: nn.Module) -> nn.Module:
    """The module inside a DistributedDataParallel wrapper (itself otherwise)."""
    return getattr(module, "module", module)


def _views(augment: SimCLRAugment, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    x = batch["images"]
    return (augment.apply(x, batch["view1"], float_output=True), augment.apply(x, batch["view2"], float_output=True))


class MoCo(nn.Module):
    """Query encoder, momentum key encoder and the queue of past keys (MoCo-v2, He et al. 2020).

    Args:
        encoder: the query encoder (e.g. :class:`qt_hard.vision.resnet.SimCLREncoder`), with
            ``forward(images) -> (N, d)`` and ``features(images)``.
        dim: output dimension d of the encoder.
        queue_size: number of past keys kept (65,536 in MoCo; HCL App. C.1).
        momentum: m of the key encoder's update ``theta_k <- m theta_k + (1 - m) theta_q``.

    ``forward`` is the query encoder, so readouts and the saved model use it.
    """

    def __init__(self, encoder: nn.Module, dim: int, queue_size: int = 4096, momentum: float = 0.99):
        super().__init__()
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        from qt_hard.negatives.queue import EmbeddingQueue

        self.encoder = encoder
        self.key_encoder = copy.deepcopy(encoder)
        for p in self.key_encoder.parameters():
            p.requires_grad_(False)
        self.queue = EmbeddingQueue(queue_size, dim)
        # MoCo starts from a full queue of random unit vectors (official code); a fixed generator
        # makes it the same on every process whatever the global RNG.
        with torch.no_grad():
            noise = torch.randn(queue_size, dim, generator=torch.Generator().manual_seed(0))
            self.queue.buffer.copy_(F.normalize(noise, dim=1))
            self.queue.filled.fill_(queue_size)
        self.momentum = momentum

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.encoder(images)

    def features(self, images: torch.Tensor) -> torch.Tensor:
        return self.encoder.features(images)

    @torch.no_grad()
    def keys(self, images: torch.Tensor) -> torch.Tensor:
        """Momentum update, then the key encoder's L2-normalised (N, d) embeddings (no gradient)."""
        for pk, pq in zip(self.key_encoder.parameters(), self.encoder.parameters()):
            pk.mul_(self.momentum).add_(pq.detach(), alpha=1.0 - self.momentum)
        return F.normalize(self.key_encoder(images).float(), dim=1)


class SimCLRStep(LossObjective):
    """loss = step(module, batch, generator): two views, one encoder, ``ContrastiveLoss``."""

    def __init__(self, loss, augment: SimCLRAugment):
        self.loss, self.augment = loss, augment

    def __call__(self, module: nn.Module, batch: dict, generator: torch.Generator | None = None) -> torch.Tensor:
        v1, v2 = _views(self.augment, batch)
        z1, z2 = module(v1), module(v2)
        self.loss.generator = generator
        with torch.autocast(device_type=z1.device.type, enabled=False):  # the loss in float32
            return self.loss(z1.float(), z2.float(), labels=batch.get("labels"))


class MoCoStep(SimCLRStep):
    """loss = step(module, batch, generator) for a :class:`MoCo` module: queries of view 1 against
    their keys (view 2, momentum encoder) and the queue; then the keys are enqueued. Built as
    :class:`SimCLRStep` is, from the loss and the augmentation."""

    def __call__(self, module: nn.Module, batch: dict, generator: torch.Generator | None = None) -> torch.Tensor:
        moco = unwrap(module)
        if not isinstance(moco, MoCo):
            raise TypeError(f"MoCoStep needs a MoCo module, got {type(moco).__name__}")
        v1, v2 = _views(self.augment, batch)
        q = module(v1)
        k = moco.keys(v2)
        # A copy: the enqueue below writes the buffer in place, which the backward must not see.
        negatives = moco.queue.embeddings().clone()
        self.loss.generator = generator
        with torch.autocast(device_type=q.device.type, enabled=False):  # the loss in float32
            loss = self.loss(q.float(), k, extra_candidates=negatives, in_batch=False)
        moco.queue.enqueue(k)
        return loss
