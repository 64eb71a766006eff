"""SimCLR batch augmentation: shapes, dtype, value range, determinism, and each op's definition."""

import math

import pytest
import torch

from qt_hard.vision.augment import (
    SimCLRAugment,
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
    grayscale,
    _JITTER_OPS,
)


def _images(n=6, h=32, w=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, 3, h, w), generator=g, dtype=torch.uint8)


def _identity_params(n, h, w):
    return {
        "box": torch.tensor([[0.0, 0.0, h, w]]).repeat(n, 1),
        "flip": torch.zeros(n, dtype=torch.bool),
        "jitter": torch.zeros(n, dtype=torch.bool),
        "factors": torch.tensor([[1.0, 1.0, 1.0, 0.0]]).repeat(n, 1),
        "order": torch.arange(4).repeat(n, 1),
        "gray": torch.zeros(n, dtype=torch.bool),
    }


@pytest.mark.parametrize("size", [32, 24])
def test_shape_dtype_range(size):
    aug = SimCLRAugment(size=size)
    x = _images(8, 40, 36)
    out = aug(x, torch.Generator().manual_seed(1))
    assert out.shape == (8, 3, size, size) and out.dtype == torch.uint8
    xf = x.float() / 255
    outf = aug(xf, torch.Generator().manual_seed(1))
    assert outf.dtype == torch.float32 and outf.min() >= 0 and outf.max() <= 1
    # The float path is the uint8 path before rounding.
    assert (outf * 255 - out.float()).abs().max() <= 0.5 + 1e-3
    assert aug(x, torch.Generator().manual_seed(1), float_output=True).dtype == torch.float32


def test_deterministic_under_seed_and_seed_matters():
    aug = SimCLRAugment()
    x = _images(16)
    a = aug(x, torch.Generator().manual_seed(5))
    b = aug(x, torch.Generator().manual_seed(5))
    c = aug(x, torch.Generator().manual_seed(6))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_rows_are_independent_of_the_split():
    """Parameters drawn for a global batch, applied per shard, equal applying them to the batch."""
    aug = SimCLRAugment()
    x = _images(12)
    p = aug.sample(12, 32, 32, torch.Generator().manual_seed(3))
    whole = aug.apply(x, p)
    halves = [aug.apply(x[s], {k: v[s] for k, v in p.items()}) for s in (slice(0, 6), slice(6, 12))]
    assert torch.equal(whole, torch.cat(halves))


def test_identity_crop_flip_and_exact_crop():
    aug = SimCLRAugment(size=32)
    x = _images(4, 32, 32)
    p = _identity_params(4, 32, 32)
    assert torch.equal(aug.apply(x, p), x)
    p["flip"][:] = True
    assert torch.equal(aug.apply(x, p), x.flip(-1))
    big = _images(3, 40, 44)
    p = _identity_params(3, 40, 44)
    p["box"] = torch.tensor([[2.0, 3.0, 32.0, 32.0]]).repeat(3, 1)
    assert torch.equal(aug.apply(big, p), big[:, :, 2:34, 3:35])


def test_crop_boxes_follow_scale_and_ratio():
    aug = SimCLRAugment(scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3))
    p = aug.sample(4000, 32, 32, torch.Generator().manual_seed(0))
    top, left, h, w = p["box"].unbind(1)
    assert (top >= 0).all() and (left >= 0).all() and (top + h <= 32).all() and (left + w <= 32).all()
    area = h * w / 1024
    # Rounding of w, h moves the area slightly outside [0.08, 1] for small crops.
    assert area.min() >= 0.05 and area.max() <= 1.0
    for name, prob in (("flip", 0.5), ("jitter", 0.8), ("gray", 0.2)):
        freq = p[name].float().mean().item()
        assert abs(freq - prob) < 5 * math.sqrt(prob * (1 - prob) / 4000), (name, freq)
    assert (p["order"].sort(1).values == torch.arange(4)).all()  # permutations
    f = p["factors"]
    assert f[:, :3].min() >= 0.6 and f[:, :3].max() <= 1.4 and f[:, 3].abs().max() <= 0.1


def test_jitter_ops_definitions():
    x = torch.rand(5, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    one, zero = torch.ones(5), torch.zeros(5)
    assert torch.allclose(adjust_brightness(x, one), x) and adjust_brightness(x, zero).abs().max() == 0
    c0 = adjust_contrast(x, zero)
    assert torch.allclose(c0, grayscale(x).mean(dim=(1, 2, 3), keepdim=True).expand_as(x))
    s0 = adjust_saturation(x, zero)
    assert torch.allclose(s0, grayscale(x).expand_as(x))
    assert torch.allclose(adjust_hue(x, zero), x, atol=1e-5)
    red = torch.zeros(1, 3, 2, 2)
    red[:, 0] = 0.8
    green = adjust_hue(red, torch.tensor([1 / 3]))
    assert torch.allclose(green[:, 1], torch.full((1, 2, 2), 0.8), atol=1e-5)
    assert green[:, 0].abs().max() < 1e-5 and green[:, 2].abs().max() < 1e-5
    # A full turn is the identity; opposite shifts cancel.
    assert torch.allclose(adjust_hue(adjust_hue(x, torch.full((5,), 0.1)), torch.full((5,), -0.1)), x, atol=1e-5)


def test_jitter_respects_each_images_order_and_gray():
    aug = SimCLRAugment(size=16)
    x = torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    p = _identity_params(4, 16, 16)
    p["jitter"][:] = True
    p["factors"] = torch.tensor(
        [[1.3, 0.7, 1.2, 0.08], [0.6, 1.4, 0.8, -0.05], [1.1, 1.1, 0.6, 0.1], [0.9, 0.8, 1.3, -0.1]]
    )
    p["order"] = torch.tensor([[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]])
    out = aug.apply(x, p)
    for i in range(4):
        y = x[i : i + 1]
        for op_index in p["order"][i].tolist():
            y = _JITTER_OPS[op_index](y, p["factors"][i : i + 1, op_index])
        assert torch.allclose(out[i : i + 1], y, atol=1e-5), i
    # Orders differ in effect (else the test above could not tell them apart).
    p2 = dict(p, order=torch.arange(4).repeat(4, 1))
    assert not torch.allclose(aug.apply(x, p2)[1], out[1], atol=1e-3)
    p["gray"][2] = True
    g = aug.apply(x, p)
    assert torch.equal(g[2, 0], g[2, 1]) and torch.equal(g[2, 1], g[2, 2])
    assert torch.allclose(g[[0, 1, 3]], out[[0, 1, 3]])


def test_bad_input_is_an_error():
    with pytest.raises(ValueError, match="probability"):
        SimCLRAugment(gray_p=1.5)
    with pytest.raises(ValueError, match="scale"):
        SimCLRAugment(scale=(0.0, 1.0))
    aug = SimCLRAugment()
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\)"):
        aug(torch.zeros(2, 1, 8, 8, dtype=torch.uint8))
    with pytest.raises(ValueError, match="uint8"):
        aug(torch.zeros(2, 3, 8, 8, dtype=torch.int32))
    p = aug.sample(3, 8, 8)
    with pytest.raises(ValueError, match="parameters for 3"):
        aug.apply(torch.zeros(2, 3, 8, 8, dtype=torch.uint8), p)
