"""SimCLR's augmentations (Chen et al. 2020, App. A, at HCL's CIFAR settings), batched on the device: a
whole (N, 3, H, W) batch at once, in plain torch, every random draw from an explicit ``torch.Generator``
and apart from the pixels (:meth:`SimCLRAugment.sample`, then :meth:`SimCLRAugment.apply`). Why plain
torch rather than kornia, and how the ops follow torchvision's: docs/guides/images.md (Augmentation).

Shapes: ``images`` (N, 3, H, W), uint8 in [0, 255] or float in [0, 1]; the output is (N, 3, size,
size) with the input's dtype and value range (``float_output=True``: float32 in [0, 1]).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

_GRAY = (0.2989, 0.587, 0.114)
_ATTEMPTS = 10


def grayscale(x: torch.Tensor) -> torch.Tensor:
    """(N, 3, H, W) float -> (N, 1, H, W) luma (ITU-R 601-2 weights, as PIL and torchvision)."""
    r, g, b = x.unbind(1)
    return (_GRAY[0] * r + _GRAY[1] * g + _GRAY[2] * b).unsqueeze(1)


def _rgb_to_hsv(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r, g, b = x.unbind(1)
    maxc, _ = x.max(1)
    minc, _ = x.min(1)
    flat = maxc == minc
    chroma = maxc - minc
    one = torch.ones_like(maxc)
    s = chroma / torch.where(flat, one, maxc)
    c = torch.where(flat, one, chroma)  # gray pixels: any divisor, the hue terms below are 0
    rc, gc, bc = (maxc - r) / c, (maxc - g) / c, (maxc - b) / c
    is_r = maxc == r
    is_g = (maxc == g) & ~is_r
    is_b = ~is_r & ~is_g
    h = is_r * (bc - gc) + is_g * (2.0 + rc - bc) + is_b * (4.0 + gc - rc)
    h = torch.remainder(h / 6.0, 1.0)
    return h, s, maxc


def _hsv_to_rgb(h: torch.Tensor, s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    h6 = h * 6.0
    sector = torch.floor(h6)
    f = h6 - sector
    sector = sector.long() % 6
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    # (r, g, b) per hue sector 0..5: (v,t,p) (q,v,p) (p,v,t) (p,q,v) (t,p,v) (v,p,q)
    table = torch.stack([v, q, p, p, t, v, t, v, v, q, p, p, p, p, t, v, v, q], dim=1)  # (N, 18, H, W)
    table = table.view(h.shape[0], 3, 6, *h.shape[1:])
    idx = sector.unsqueeze(1).unsqueeze(2).expand(-1, 3, 1, -1, -1)
    return table.gather(2, idx).squeeze(2)


def adjust_brightness(x, f):
    """x (n, 3, H, W) float in [0, 1], f (n,): x * f."""
    return (x * f.view(-1, 1, 1, 1)).clamp(0.0, 1.0)


def adjust_contrast(x, f):
    """Blend with the image's mean gray level: f x + (1 - f) mean."""
    mean = grayscale(x).mean(dim=(1, 2, 3), keepdim=True)
    f = f.view(-1, 1, 1, 1)
    return (f * x + (1.0 - f) * mean).clamp(0.0, 1.0)


def adjust_saturation(x, f):
    """Blend with the pixel's gray level: f x + (1 - f) gray(x)."""
    f = f.view(-1, 1, 1, 1)
    return (f * x + (1.0 - f) * grayscale(x)).clamp(0.0, 1.0)


def adjust_hue(x, f):
    """Rotate the hue by f (n,) turns, f in [-0.5, 0.5]."""
    h, s, v = _rgb_to_hsv(x)
    h = torch.remainder(h + f.view(-1, 1, 1), 1.0)
    return _hsv_to_rgb(h, s, v)


_JITTER_OPS = (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue)


class SimCLRAugment:
    """SimCLR's random view, for a whole batch (see the module doc).

    Args:
        size: output side (32 for CIFAR, 64 or 96 for STL-10).
        scale, ratio: random resized crop's area fraction and aspect-ratio ranges.
        flip_p: horizontal flip probability.
        brightness, contrast, saturation, hue: color jitter strengths (factors drawn uniformly in
            [max(0, 1 - s), 1 + s], the hue shift in [-hue, hue]).
        jitter_p, gray_p: probabilities of color jitter and of grayscale.

    ``aug(images, generator)`` is ``aug.apply(images, aug.sample(len(images), H, W, generator))``.
    """

    def __init__(
        self,
        size: int = 32,
        scale=(0.08, 1.0),
        ratio=(3 / 4, 4 / 3),
        flip_p: float = 0.5,
        brightness: float = 0.4,
        contrast: float = 0.4,
        saturation: float = 0.4,
        hue: float = 0.1,
        jitter_p: float = 0.8,
        gray_p: float = 0.2,
    ):
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if not 0 < scale[0] <= scale[1] <= 1:
            raise ValueError(f"scale must satisfy 0 < lo <= hi <= 1, got {scale}")
        if not 0 < ratio[0] <= ratio[1]:
            raise ValueError(f"ratio must satisfy 0 < lo <= hi, got {ratio}")
        for name, p in (("flip_p", flip_p), ("jitter_p", jitter_p), ("gray_p", gray_p)):
            if not 0 <= p <= 1:
                raise ValueError(f"{name} must be a probability, got {p}")
        for name, s in (("brightness", brightness), ("contrast", contrast), ("saturation", saturation)):
            if s < 0:
                raise ValueError(f"{name} must be >= 0, got {s}")
        if not 0 <= hue <= 0.5:
            raise ValueError(f"hue must be in [0, 0.5], got {hue}")
        self.size, self.scale, self.ratio = int(size), tuple(scale), tuple(ratio)
        self.flip_p, self.jitter_p, self.gray_p = flip_p, jitter_p, gray_p
        self.strengths = (brightness, contrast, saturation)
        self.hue = hue

    # ---- parameters -------------------------------------------------------------------------
    def sample(self, n: int, height: int, width: int, generator: torch.Generator | None = None) -> dict:
        """Random parameters of n views of (height x width) images, as CPU tensors with n rows:
        ``box`` (n, 4) float (top, left, h, w) in pixels, ``flip`` (n,) bool, ``jitter`` (n,) bool,
        ``factors`` (n, 4) (brightness, contrast, saturation, hue shift), ``order`` (n, 4) long (a
        permutation of the four jitter ops per image), ``gray`` (n,) bool."""
        g = generator

        def u(*shape):
            return torch.rand(*shape, generator=g)

        area = float(height * width)
        target = area * (self.scale[0] + (self.scale[1] - self.scale[0]) * u(n, _ATTEMPTS))
        lo, hi = math.log(self.ratio[0]), math.log(self.ratio[1])
        aspect = torch.exp(lo + (hi - lo) * u(n, _ATTEMPTS))
        w = torch.round(torch.sqrt(target * aspect))
        h = torch.round(torch.sqrt(target / aspect))
        ok = (w >= 1) & (w <= width) & (h >= 1) & (h <= height)
        first = ok.float().argmax(1)  # the first attempt that fits, as torchvision's loop takes
        found = ok.any(1)
        rows = torch.arange(n)
        h, w = h[rows, first], w[rows, first]
        # Fallback when no attempt fits: the largest centred crop with the aspect ratio in range.
        in_ratio = width / height
        if in_ratio < self.ratio[0]:
            fw, fh = float(width), float(round(width / self.ratio[0]))
        elif in_ratio > self.ratio[1]:
            fh, fw = float(height), float(round(height * self.ratio[1]))
        else:
            fw, fh = float(width), float(height)
        h = torch.where(found, h, torch.full_like(h, fh))
        w = torch.where(found, w, torch.full_like(w, fw))
        oi, oj = u(n), u(n)
        top = torch.where(found, torch.floor(oi * (height - h + 1)), torch.full_like(h, (height - fh) // 2))
        left = torch.where(found, torch.floor(oj * (width - w + 1)), torch.full_like(w, (width - fw) // 2))
        box = torch.stack([top, left, h, w], dim=1)

        flip = u(n) < self.flip_p
        jitter = u(n) < self.jitter_p
        lows = torch.tensor([max(0.0, 1.0 - s) for s in self.strengths] + [-self.hue])
        highs = torch.tensor([1.0 + s for s in self.strengths] + [self.hue])
        factors = lows + (highs - lows) * u(n, 4)
        order = u(n, 4).argsort(dim=1)  # a uniform random permutation per row
        gray = u(n) < self.gray_p
        return {"box": box, "flip": flip, "jitter": jitter, "factors": factors, "order": order, "gray": gray}

    # ---- pixels -----------------------------------------------------------------------------
    def apply(self, images: torch.Tensor, params: dict, float_output: bool = False) -> torch.Tensor:
        """Apply sampled ``params`` (n rows) to ``images`` (n, 3, H, W) on the images' device."""
        if images.dim() != 4 or images.shape[1] != 3:
            raise ValueError(f"images must be (N, 3, H, W), got {tuple(images.shape)}")
        n, _, height, width = images.shape
        if params["box"].shape[0] != n:
            raise ValueError(f"{n} images but parameters for {params['box'].shape[0]}")
        dev = images.device
        p = {k: v.to(dev) for k, v in params.items()}
        is_int = not images.is_floating_point()
        if is_int and images.dtype != torch.uint8:
            raise ValueError(f"integer images must be uint8, got {images.dtype}")
        x = images.float() / 255.0 if is_int else images.float()

        # Crop + resize + flip as one affine resampling (align_corners=False pixel centres).
        top, left, h, w = p["box"].float().unbind(1)
        sx = (w / width) * torch.where(p["flip"], -1.0, 1.0)
        sy = h / height
        tx = (2 * left + w) / width - 1
        ty = (2 * top + h) / height - 1
        zero = torch.zeros_like(sx)
        theta = torch.stack([torch.stack([sx, zero, tx], 1), torch.stack([zero, sy, ty], 1)], 1)
        grid = F.affine_grid(theta, [n, 3, self.size, self.size], align_corners=False)
        x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)

        # Color jitter in a per-image random order: at each position, each op on the rows whose
        # permutation puts it there (every jittered image goes through each op exactly once).
        jit = p["jitter"]
        if bool(jit.any()):
            for pos in range(4):
                for op_index, op in enumerate(_JITTER_OPS):
                    rows = torch.nonzero(jit & (p["order"][:, pos] == op_index)).squeeze(1)
                    if rows.numel():
                        x[rows] = op(x[rows], p["factors"][rows, op_index])
        x = torch.where(p["gray"].view(-1, 1, 1, 1), grayscale(x).expand(-1, 3, -1, -1), x)

        if float_output:
            return x
        if is_int:
            return torch.round(x * 255.0).clamp_(0, 255).to(torch.uint8)
        return x.to(images.dtype)

    def __call__(
        self, images: torch.Tensor, generator: torch.Generator | None = None, float_output: bool = False
    ) -> torch.Tensor:
        n, _, height, width = images.shape
        return self.apply(images, self.sample(n, height, width, generator), float_output)

    def __repr__(self) -> str:
        b, c, s = self.strengths
        return (
            f"SimCLRAugment(size={self.size}, scale={self.scale}, ratio={self.ratio}, flip_p={self.flip_p}, "
            f"jitter=({b}, {c}, {s}, {self.hue}) p={self.jitter_p}, gray_p={self.gray_p})"
        )
