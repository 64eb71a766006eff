"""Compact ResNets with the CIFAR stem, and SimCLR's encoder (backbone + projection head).

ResNet (He et al. 2016) with basic blocks. The CIFAR stem (a 3x3 stride-1 convolution, no max-pool)
is the one HCL and SimCLR use on 32x32 images (Chen et al. 2020, App. B.9; Robinson et al. 2021, App.
D.1 and code). ``resnet18`` is [2, 2, 2, 2] blocks of widths 64..512 (512-d features); ``resnet_tiny``
is [1, 1, 1, 1] blocks of widths 16..128 (128-d features, about 1/40 of ResNet-18's FLOPs), for CPU
runs.

Inputs are images (N, 3, H, W), uint8 in [0, 255] or float in [0, 1]; the per-channel mean/std
normalisation is a buffer of the model, so a saved backbone takes raw pixels.

With ``sync_bn`` every ``BatchNorm2d`` is :class:`AllReduceBatchNorm2d` (the global batch's statistics,
on any backend): docs/guides/images.md (Several processes).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
import torch.nn.functional as F

from qt_hard.negatives.distributed import world

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


class _AllReduceMoments(torch.autograd.Function):
    """Sum a (k,) tensor over processes; the backward sums the gradients the same way."""

    @staticmethod
    def forward(ctx, x):  # type: ignore[override]
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        return grad


class AllReduceBatchNorm2d(nn.BatchNorm2d):
    """BatchNorm2d whose training-mode mean and variance are those of the global batch (all
    processes), computed from all-reduced sums of x and x^2 with gradients through the reduction.
    Running statistics use the unbiased global variance, as ``BatchNorm2d`` does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and world()[1] > 1):
            return super().forward(x)
        c = x.shape[1]
        count = torch.tensor([x.numel() / c], device=x.device, dtype=x.dtype)
        local = torch.cat([x.sum(dim=(0, 2, 3)), (x * x).sum(dim=(0, 2, 3)), count])
        total = _AllReduceMoments.apply(local)
        n = total[-1]
        mean = total[:c] / n
        var = (total[c : 2 * c] / n - mean * mean).clamp_min(0.0)
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked += 1
                m = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
                self.running_mean.mul_(1 - m).add_(m * mean.detach())
                self.running_var.mul_(1 - m).add_(m * var.detach() * n / (n - 1).clamp_min(1))
        y = (x - mean.view(1, c, 1, 1)) * torch.rsqrt(var.view(1, c, 1, 1) + self.eps)
        if self.affine:
            y = y * self.weight.view(1, c, 1, 1) + self.bias.view(1, c, 1, 1)
        return y


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (1x1 projection when the shape changes)."""

    def __init__(self, cin: int, cout: int, stride: int, norm):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = norm(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), norm(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet backbone with the CIFAR stem: (N, 3, H, W) images -> (N, widths[-1]) pooled features.

    Args:
        blocks: basic blocks per stage, e.g. (2, 2, 2, 2) for ResNet-18.
        widths: channels per stage, e.g. (64, 128, 256, 512).
        sync_bn: batch-norm statistics all-reduced across processes (:class:`AllReduceBatchNorm2d`).
        mean, std: per-channel normalisation of [0, 1] pixels.
    """

    def __init__(
        self, blocks=(2, 2, 2, 2), widths=(64, 128, 256, 512), sync_bn: bool = False, mean=CIFAR_MEAN, std=CIFAR_STD
    ):
        super().__init__()
        if len(blocks) != len(widths) or not blocks or min(blocks) < 1 or min(widths) < 1:
            raise ValueError(f"blocks and widths must be equal-length positive sequences, got {blocks}, {widths}")
        norm = AllReduceBatchNorm2d if sync_bn else nn.BatchNorm2d
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1))
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), norm(widths[0]), nn.ReLU(inplace=True))
        layers, cin = [], widths[0]
        for i, (nb, cout) in enumerate(zip(blocks, widths)):
            for j in range(nb):
                layers.append(BasicBlock(cin, cout, 2 if (i > 0 and j == 0) else 1, norm))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.dim = widths[-1]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.float() / 255.0 if not images.is_floating_point() else images
        x = (x - self.mean) / self.std
        x = self.layers(self.stem(x))
        return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)


ARCHS = {
    "resnet18": ((2, 2, 2, 2), (64, 128, 256, 512)),
    "resnet_small": ((1, 1, 1, 1), (32, 64, 128, 256)),
    "resnet_tiny": ((1, 1, 1, 1), (16, 32, 64, 128)),
}


def make_backbone(arch: str = "resnet18", sync_bn: bool = False, width: int | None = None) -> ResNet:
    """A named backbone (``ARCHS``); ``width`` overrides the first stage's channels (doubling per stage)."""
    if arch not in ARCHS:
        raise ValueError(f"unknown backbone {arch!r}; choose one of {', '.join(ARCHS)}")
    blocks, widths = ARCHS[arch]
    if width is not None:
        widths = tuple(width * 2**i for i in range(len(blocks)))
    return ResNet(blocks, widths, sync_bn=sync_bn)


class SimCLREncoder(nn.Module):
    """Backbone f and projection head g (SimCLR, Chen et al. 2020 sec. 2.1; HCL App. D.1).

    ``forward(images)`` returns the (N, proj_dim) projection z = g(f(x)) used by the loss;
    ``features(images)`` the (N, backbone.dim) representation h = f(x) used by the readouts.
    The head is Linear(dim, dim, no bias) - BN - ReLU - Linear(dim, proj_dim), as HCL's code.
    """

    def __init__(self, arch: str = "resnet18", proj_dim: int = 128, sync_bn: bool = False, width: int | None = None):
        super().__init__()
        self.backbone = make_backbone(arch, sync_bn=sync_bn, width=width)
        d = self.backbone.dim
        norm = AllReduceBatchNorm2d if sync_bn else nn.BatchNorm2d
        self.head = nn.Sequential(
            nn.Linear(d, d, bias=False), _BN1d(norm, d), nn.ReLU(inplace=True), nn.Linear(d, proj_dim, bias=True)
        )

    def features(self, images: torch.Tensor) -> torch.Tensor:
        return self.backbone(images)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(images))


class _BN1d(nn.Module):
    """A 2-d batch norm applied to (N, d) vectors as (N, d, 1, 1), so the all-reduced variant serves both."""

    def __init__(self, norm, d: int):
        super().__init__()
        self.bn = norm(d)

    def forward(self, x):
        return self.bn(x[:, :, None, None]).flatten(1)
