"""The image pipeline's config sections (``pipeline: vision``): ``model``, ``data``, ``objective``, ``eval``.
Defaults are HCL's SimCLR on CIFAR (Robinson et al. 2021, App. D.1), as docs/guides/images.md lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from qt_hard.negatives.config import NegativesConfig

METHODS = ("simclr", "moco")
DATASETS = ("cifar10", "cifar100", "stl10")


@dataclass
class VisionModelConfig:
    """Encoder: backbone f (``arch``: resnet18 | resnet_small | resnet_tiny; ``width`` overrides the
    first stage's channels) and projection head g to ``proj_dim``.

    method: "simclr" (one encoder, two views) or "moco" (MoCo-v2: momentum key encoder with
        ``momentum``, ``queue_size`` past keys as negatives).
    sync_bn: batch-norm statistics of the global batch under several processes (all-reduced; works
        on CPUs too). Off by default: SimCLR with one process needs nothing.
    """

    method: Literal[METHODS] = "simclr"
    arch: str = "resnet18"
    width: Optional[int] = None
    proj_dim: int = 128
    sync_bn: bool = False
    momentum: float = 0.99
    queue_size: int = 4096

    def validate(self) -> None:
        from qt_hard.vision.resnet import ARCHS

        if self.arch not in ARCHS:
            raise ValueError(f"model.arch must be one of {', '.join(ARCHS)}, got {self.arch!r}")
        if self.width is not None and self.width < 1:
            raise ValueError(f"model.width must be >= 1, got {self.width}")
        if self.proj_dim < 1 or self.queue_size < 1:
            raise ValueError("model.proj_dim and model.queue_size must be >= 1")
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"model.momentum must be in [0, 1), got {self.momentum}")


@dataclass
class VisionDataConfig:
    """Images and their augmentation.

    name: cifar10 | cifar100 | stl10, read from ``path`` (default ``$QT_HARD_DATA/<name>``).
    train_split / test_split: the loader's splits (STL-10 trains on "train+unlabeled" in HCL; its
        kNN bank is always the labelled "train" split).
    max_train / max_test: keep the first n images (None: all).
    size: output side of the random resized crop (32 for CIFAR, 64 for STL-10 in HCL).
    scale: the crop's area range; jitter: (brightness, contrast, saturation, hue); jitter_p, gray_p.
    """

    name: Literal[DATASETS] = "cifar10"
    path: Optional[str] = None
    train_split: str = "train"
    test_split: str = "test"
    max_train: Optional[int] = None
    max_test: Optional[int] = None
    size: int = 32
    scale: list = field(default_factory=lambda: [0.08, 1.0])
    jitter: list = field(default_factory=lambda: [0.4, 0.4, 0.4, 0.1])
    jitter_p: float = 0.8
    gray_p: float = 0.2

    def validate(self) -> None:
        if len(self.scale) != 2 or len(self.jitter) != 4:
            raise ValueError(f"data.scale needs 2 numbers and data.jitter 4, got {self.scale}, {self.jitter}")


@dataclass
class VisionObjectiveConfig(NegativesConfig):
    """The loss from ``qt_hard.losses``: SimCLR uses ``ContrastiveLoss`` (two views), MoCo
    ``RankingLoss`` against the queue; the shared negatives section
    (:class:`~qt_hard.negatives.config.NegativesConfig`) and the fields below.
    include_positive: False drops e^{s+} from the denominator, as MoCoRing's Alg. 1 pseudocode
    writes it (``loss = -dps + logsumexp(ring_dps)``; Wu et al. 2021)."""

    temperature: float = 0.5
    include_positive: bool = True


@dataclass
class VisionEvalConfig:
    """Weighted kNN monitor (k, temperature; HCL's k = 200, t = 0.5) every ``every_epochs`` epochs
    (0: only at the end) on the test split against the training images, and after training a linear
    readout (``linear``, ``linear_epochs`` of Adam at ``linear_lr``) on frozen backbone features."""

    knn_k: int = 200
    knn_temperature: float = 0.5
    every_epochs: float = 1.0
    linear: bool = True
    linear_epochs: int = 100
    linear_lr: float = 1e-3
    batch_size: int = 512

    def validate(self) -> None:
        if self.knn_k < 1 or self.knn_temperature <= 0 or self.every_epochs < 0 or self.linear_epochs < 1:
            raise ValueError("eval: knn_k >= 1, knn_temperature > 0, every_epochs >= 0, linear_epochs >= 1")
