"""Image data sets in their original on-disk formats: CIFAR-10 / CIFAR-100 (python pickle
batches) and STL-10 (binary).

Every loader returns an :class:`ImageSet`: ``images`` (N, 3, H, W) uint8, ``labels`` (N,) int64
(-1 where a split has no labels, STL-10 ``unlabeled``), ``class_names``. The number of images is
taken from the files (a batch pickle's rows, a binary file's size), never assumed: the project's
``$QT_HARD_DATA/cifar10`` is a real 5,085 / 1,017-image subset in the official layout (its
SOURCE.md), so its results are "CIFAR-10 subset" numbers. No md5 check for the same reason.

Formats (Krizhevsky 2009, "Learning Multiple Layers of Features from Tiny Images"; Coates et al.
2011, STL-10):

* CIFAR-10: ``cifar-10-batches-py/{data_batch_1..5, test_batch, batches.meta}``; each batch a
  pickle of ``{data: uint8 (n, 3072), labels: [n ints]}``, a row being 1024 red, 1024 green,
  1024 blue values of a row-major 32x32 image; ``batches.meta`` has ``label_names``.
* CIFAR-100: ``cifar-100-python/{train, test, meta}``; ``fine_labels`` / ``coarse_labels``;
  ``meta`` has ``fine_label_names`` / ``coarse_label_names``.
* STL-10: ``stl10_binary/{train,test,unlabeled}_X.bin`` raw uint8, each image 3 x 96 x 96 stored
  column-major per channel; ``{train,test}_y.bin`` one uint8 label 1..10 per image;
  ``class_names.txt`` one name a line.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class ImageSet:
    """images: (N, 3, H, W) uint8; labels: (N,) int64, -1 for unlabeled images."""

    images: np.ndarray
    labels: np.ndarray
    class_names: list

    def __post_init__(self):
        if self.images.ndim != 4 or self.images.shape[1] != 3 or self.images.dtype != np.uint8:
            raise ValueError(f"images must be (N, 3, H, W) uint8, got {self.images.shape} {self.images.dtype}")
        if self.labels.shape != (self.images.shape[0],):
            raise ValueError(f"{self.images.shape[0]} images but labels of shape {self.labels.shape}")

    def __len__(self) -> int:
        return self.images.shape[0]

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def subset(self, n: int | None) -> "ImageSet":
        """The first ``n`` images (all when None)."""
        if n is None or n >= len(self):
            return self
        return ImageSet(self.images[:n], self.labels[:n], self.class_names)


def _text(v):
    return v.decode("latin1") if isinstance(v, bytes) else v


def _unpickle(path: Path) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    with path.open("rb") as fh:
        # The official batches were pickled by Python 2: latin1 keeps byte strings decodable.
        obj = pickle.load(fh, encoding="latin1")
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: expected a pickled dict, got {type(obj).__name__}")
    return {_text(k): v for k, v in obj.items()}


def _cifar_file(path: Path, label_key: str) -> tuple[np.ndarray, np.ndarray]:
    """Images (n, 3, 32, 32) uint8 and labels (n,) int64 (under ``label_key``) of one CIFAR pickle."""
    d = _unpickle(path)
    data = np.asarray(d.get("data"))
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise ValueError(f"{path}: 'data' must be (n, 3072), got {data.shape}")
    x = np.ascontiguousarray(data.astype(np.uint8, copy=False).reshape(-1, 3, 32, 32))
    y = np.asarray(d.get(label_key), dtype=np.int64)
    if y.shape != (x.shape[0],):
        raise ValueError(f"{path}: {x.shape[0]} images but {y.shape} {label_key}")
    return x, y


def _cifar_names(meta: Path, key: str, n: int) -> list:
    """The class names under ``key`` of a CIFAR meta pickle ("0".."n-1" when there is none)."""
    return [_text(v) for v in _unpickle(meta)[key]] if meta.is_file() else [str(i) for i in range(n)]


def _find(root: str | Path | None, name: str, folder: str) -> Path:
    """``root`` (default ``$QT_HARD_DATA/<name>``) itself or ``root/folder`` (both layouts are common)."""
    if root is None:
        from qt_hard.paths import data_path

        root = data_path(name)
    root = Path(root)
    if (root / folder).is_dir():
        return root / folder
    return root


def load_cifar10(root: str | Path | None = None, split: str = "train") -> ImageSet:
    """CIFAR-10 python batches under ``root`` (default ``$QT_HARD_DATA/cifar10``); split train | test."""
    base = _find(root, "cifar10", "cifar-10-batches-py")
    if split == "train":
        files = sorted(base.glob("data_batch_*"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
        if not files:
            raise FileNotFoundError(f"no data_batch_* files under {base}")
    elif split == "test":
        files = [base / "test_batch"]
    else:
        raise ValueError(f"CIFAR-10 split must be 'train' or 'test', got {split!r}")
    parts = [_cifar_file(f, "labels") for f in files]
    names = _cifar_names(base / "batches.meta", "label_names", 10)
    return ImageSet(np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts]), names)


def load_cifar100(root: str | Path | None = None, split: str = "train", label: str = "fine") -> ImageSet:
    """CIFAR-100 python files under ``root`` (default ``$QT_HARD_DATA/cifar100``); split train | test;
    label fine (100) | coarse (20)."""
    if split not in ("train", "test"):
        raise ValueError(f"CIFAR-100 split must be 'train' or 'test', got {split!r}")
    if label not in ("fine", "coarse"):
        raise ValueError(f"CIFAR-100 label must be 'fine' or 'coarse', got {label!r}")
    base = _find(root, "cifar100", "cifar-100-python")
    x, y = _cifar_file(base / split, f"{label}_labels")
    return ImageSet(x, y, _cifar_names(base / "meta", f"{label}_label_names", 100 if label == "fine" else 20))


STL_SIDE = 96


def load_stl10(root: str | Path | None = None, split: str = "train") -> ImageSet:
    """STL-10 binary files under ``root`` (default ``$QT_HARD_DATA/stl10``); split train | test | unlabeled
    | train+unlabeled."""
    if split == "train+unlabeled":
        a, b = load_stl10(root, "train"), load_stl10(root, "unlabeled")
        return ImageSet(np.concatenate([a.images, b.images]), np.concatenate([a.labels, b.labels]), a.class_names)
    if split not in ("train", "test", "unlabeled"):
        raise ValueError(f"STL-10 split must be train | test | unlabeled | train+unlabeled, got {split!r}")
    base = _find(root, "stl10", "stl10_binary")
    xf = base / f"{split}_X.bin"
    if not xf.is_file():
        raise FileNotFoundError(f"{xf} does not exist")
    per = 3 * STL_SIDE * STL_SIDE
    raw = np.fromfile(xf, dtype=np.uint8)
    if raw.size % per:
        raise ValueError(f"{xf}: {raw.size} bytes is not a whole number of {per}-byte images")
    # Stored column-major per channel: (n, 3, col, row) -> transpose the last two axes.
    images = np.ascontiguousarray(raw.reshape(-1, 3, STL_SIDE, STL_SIDE).transpose(0, 1, 3, 2))
    if split == "unlabeled":
        labels = np.full(images.shape[0], -1, dtype=np.int64)
    else:
        y = np.fromfile(base / f"{split}_y.bin", dtype=np.uint8).astype(np.int64)
        if y.shape != (images.shape[0],):
            raise ValueError(f"{base / f'{split}_y.bin'}: {y.size} labels for {images.shape[0]} images")
        if y.size and (y.min() < 1 or y.max() > 10):
            raise ValueError(f"{base}: STL-10 labels must be 1..10, got {y.min()}..{y.max()}")
        labels = y - 1
    names_file = base / "class_names.txt"
    names = (
        [ln.strip() for ln in names_file.read_text().splitlines() if ln.strip()]
        if names_file.is_file()
        else [str(i) for i in range(10)]
    )
    return ImageSet(images, labels, names)


def load_images(name: str, root: str | Path | None = None, split: str = "train") -> ImageSet:
    """``name``: cifar10 | cifar100 | stl10; ``root`` defaults to ``$QT_HARD_DATA/<name>``."""
    loaders = {"cifar10": load_cifar10, "cifar100": load_cifar100, "stl10": load_stl10}
    if name in loaders:
        return loaders[name](root, split)
    raise ValueError(f"unknown image data set {name!r}; choose cifar10 | cifar100 | stl10")
