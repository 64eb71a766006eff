"""Image loaders on small files written here in the original formats, and on the real CIFAR-10 subset."""

import pickle

import numpy as np
import pytest

from qt_hard.vision.data import ImageSet, load_cifar10, load_cifar100, load_images, load_stl10


def _write_pickle(path, obj, py2_bytes_keys=False):
    if py2_bytes_keys:  # the official files were pickled by Python 2: byte-string keys
        obj = {k.encode(): v for k, v in obj.items()}
    with open(path, "wb") as fh:
        pickle.dump(obj, fh, protocol=2)


def _cifar_rows(rng, n):
    return rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)


def test_cifar10_layout_and_counts(tmp_path):
    rng = np.random.default_rng(0)
    base = tmp_path / "cifar-10-batches-py"
    base.mkdir()
    sizes = [7, 3, 5, 2, 4]  # not 10,000: the count must come from the files
    rows = {}
    for i, n in enumerate(sizes, start=1):
        data = _cifar_rows(rng, n)
        labels = rng.integers(0, 10, size=n).tolist()
        rows[i] = (data, labels)
        _write_pickle(
            base / f"data_batch_{i}",
            {"batch_label": f"b{i}", "data": data, "labels": labels},
            py2_bytes_keys=(i % 2 == 0),
        )
    test = _cifar_rows(rng, 6)
    _write_pickle(base / "test_batch", {"data": test, "labels": [1, 2, 3, 4, 5, 6]})
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    _write_pickle(base / "batches.meta", {"label_names": [n.encode() for n in names]}, py2_bytes_keys=True)

    tr = load_cifar10(tmp_path, "train")
    assert len(tr) == sum(sizes) and tr.images.shape == (sum(sizes), 3, 32, 32) and tr.images.dtype == np.uint8
    assert tr.class_names == names
    # Batch order 1..5, row-major planes R, G, B.
    d3, l3 = rows[3]
    start = sizes[0] + sizes[1]
    np.testing.assert_array_equal(tr.images[start], d3[0].reshape(3, 32, 32))
    assert tr.images[start, 1, 0, 5] == d3[0][1024 + 5] and tr.images[start, 2, 1, 0] == d3[0][2048 + 32]
    assert tr.labels[start : start + sizes[2]].tolist() == l3
    te = load_cifar10(base, "test")  # the batches folder itself works too
    assert len(te) == 6 and te.labels.tolist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="split"):
        load_cifar10(tmp_path, "val")


def test_cifar10_rejects_bad_rows(tmp_path):
    _write_pickle(tmp_path / "test_batch", {"data": np.zeros((2, 100), np.uint8), "labels": [0, 1]})
    with pytest.raises(ValueError, match="3072"):
        load_cifar10(tmp_path, "test")
    _write_pickle(tmp_path / "test_batch", {"data": np.zeros((2, 3072), np.uint8), "labels": [0]})
    with pytest.raises(ValueError, match="labels"):
        load_cifar10(tmp_path, "test")


def test_cifar100_fine_and_coarse(tmp_path):
    rng = np.random.default_rng(1)
    base = tmp_path / "cifar-100-python"
    base.mkdir()
    data = _cifar_rows(rng, 9)
    fine = rng.integers(0, 100, size=9).tolist()
    coarse = rng.integers(0, 20, size=9).tolist()
    _write_pickle(base / "train", {"data": data, "fine_labels": fine, "coarse_labels": coarse}, py2_bytes_keys=True)
    _write_pickle(base / "test", {"data": data[:4], "fine_labels": fine[:4], "coarse_labels": coarse[:4]})
    _write_pickle(
        base / "meta",
        {"fine_label_names": [f"f{i}" for i in range(100)], "coarse_label_names": [f"c{i}" for i in range(20)]},
    )
    tr = load_cifar100(tmp_path, "train")
    assert len(tr) == 9 and tr.labels.tolist() == fine and tr.num_classes == 100
    np.testing.assert_array_equal(tr.images.reshape(9, -1), data)
    co = load_cifar100(tmp_path, "test", label="coarse")
    assert co.labels.tolist() == coarse[:4] and co.num_classes == 20
    assert load_images("cifar100", tmp_path, "test").labels.tolist() == fine[:4]


def test_stl10_binary_column_major(tmp_path):
    rng = np.random.default_rng(2)
    base = tmp_path / "stl10_binary"
    base.mkdir()
    imgs = rng.integers(0, 256, size=(3, 3, 96, 96), dtype=np.uint8)  # (n, c, row, col)
    # On disk each channel is column-major: write (n, c, col, row) in C order.
    imgs.transpose(0, 1, 3, 2).tofile(base / "train_X.bin")
    np.array([1, 10, 4], np.uint8).tofile(base / "train_y.bin")
    imgs[:2].transpose(0, 1, 3, 2).tofile(base / "unlabeled_X.bin")
    (base / "class_names.txt").write_text("\n".join(f"class{i}" for i in range(10)) + "\n")
    tr = load_stl10(tmp_path, "train")
    np.testing.assert_array_equal(tr.images, imgs)
    assert tr.labels.tolist() == [0, 9, 3] and tr.class_names[9] == "class9"
    un = load_stl10(tmp_path, "unlabeled")
    assert len(un) == 2 and (un.labels == -1).all()
    both = load_stl10(tmp_path, "train+unlabeled")
    assert len(both) == 5 and both.labels.tolist() == [0, 9, 3, -1, -1]
    (base / "test_X.bin").write_bytes(b"\0" * 100)
    with pytest.raises(ValueError, match="whole number"):
        load_stl10(tmp_path, "test")


def test_image_set_checks_shapes():
    with pytest.raises(ValueError, match="uint8"):
        ImageSet(np.zeros((2, 3, 4, 4), np.float32), np.zeros(2, np.int64), [])
    with pytest.raises(ValueError, match="labels"):
        ImageSet(np.zeros((2, 3, 4, 4), np.uint8), np.zeros(3, np.int64), [])
    with pytest.raises(ValueError, match="unknown image data set"):
        load_images("mnist", "/nonexistent")


def test_real_cifar10_subset():
    import _data

    root = _data.dataset("cifar10")
    tr, te = load_cifar10(root, "train"), load_cifar10(root, "test")
    # SOURCE.md: each batch keeps its first 1,017 images; the first test labels are 3, 8, 8, 0, 6.
    assert len(tr) == 5 * 1017 and len(te) == 1017
    assert te.labels[:5].tolist() == [3, 8, 8, 0, 6] and tr.labels[:5].tolist() == [6, 9, 9, 4, 1]
    assert set(np.unique(tr.labels).tolist()) == set(range(10)) and tr.class_names[0] == "airplane"
