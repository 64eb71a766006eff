"""Small synthetic problems shared by the tests: classification data for the evaluation tests and the
synthetic text corpus of the training tests' configs."""

from __future__ import annotations

import numpy as np


def linear_multiclass(seed: int, dim: int, classes: int, n_train: int, n_test: int):
    """``(X, y, Xt, yt)``: Gaussian features labelled by the argmax of a random linear map plus noise."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(dim, classes))
    X, Xt = rng.normal(size=(n_train, dim)), rng.normal(size=(n_test, dim))
    y = (X @ W + rng.normal(size=(n_train, classes))).argmax(1)
    yt = (Xt @ W + rng.normal(size=(n_test, classes))).argmax(1)
    return X, y, Xt, yt


# The ``data`` section of the training tests' configs: a tiny latent-class text corpus.
SYNTHETIC_DATA = {
    "kind": "synthetic",
    "num_classes": 4,
    "sentences_per_class": 20,
    "vocab_size": 40,
    "min_length": 3,
    "max_length": 8,
}
