"""The mean classifier and the trained linear classifier on frozen embeddings (Ash et al. 2022,
Sec. 3 and D.1)."""

import numpy as np
import pytest

from qt_hard.evaluation.probes import linear_classifier, mean_classifier


def _clusters(n_per, N, d, seed, spread=0.6):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(N, d))
    y = np.repeat(np.arange(N), n_per)
    X = centers[y] + spread * rng.normal(size=(len(y), d))
    return X, y


def test_mean_classifier_uses_dot_product_with_class_means():
    # mu_0 = (1, 0), mu_1 = (10, 0): x = (1, 0) is *nearest* to mu_0 but has the larger dot
    # product with mu_1, so argmax f(x).mu_c must say class 1.
    Xtr = np.array([[1.0, 0.0], [1.0, 0.0], [10.0, 0.0], [10.0, 0.0]])
    ytr = np.array([0, 0, 1, 1])
    res = mean_classifier(Xtr, ytr, np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1, 0]))
    assert res["acc"] == 100.0


def test_mean_classifier_matches_brute_force():
    X, y = _clusters(30, 5, 8, seed=0, spread=1.5)
    Xt, yt = _clusters(10, 5, 8, seed=0, spread=1.5)
    res = mean_classifier(X, y, Xt, yt)
    mus = [X[y == c].mean(axis=0) for c in range(5)]
    pred = [max(range(5), key=lambda c: float(x @ mus[c])) for x in Xt]
    assert res["acc"] == round(100 * np.mean(np.array(pred) == yt), 2)
    assert 20 < res["acc"] < 100  # neither trivial nor broken on overlapping clusters


def test_mean_classifier_missing_class_named():
    with pytest.raises(ValueError, match=r"classes \[1\] have no training sentence"):
        mean_classifier(np.ones((2, 2)), [0, 2], np.ones((1, 2)), [0])


def test_linear_classifier_learns_and_keeps_lowest_loss_epoch():
    X, y = _clusters(40, 6, 10, seed=1)
    Xt, yt = _clusters(10, 6, 10, seed=1)
    res = linear_classifier(X, y, Xt, yt, epochs=8, lr=0.05, batch_size=64, seed=0)
    hist = res["train_loss_per_epoch"]
    assert len(hist) == 8
    assert res["best_train_loss"] == pytest.approx(min(hist))
    assert hist[res["best_epoch"] - 1] == min(hist)
    assert res["acc"] > 80  # well-separated clusters
    again = linear_classifier(X, y, Xt, yt, epochs=8, lr=0.05, batch_size=64, seed=0)
    assert again["acc"] == res["acc"] and again["train_loss_per_epoch"] == hist  # fixed seed


def test_linear_classifier_rejects_bad_input():
    with pytest.raises(ValueError, match="epochs must be at least 1"):
        linear_classifier(np.ones((4, 2)), [0, 1, 0, 1], np.ones((2, 2)), [0, 1], epochs=0)
    with pytest.raises(ValueError, match="do not match train"):
        linear_classifier(np.ones((4, 2)), [0, 1, 0, 1], np.ones((2, 3)), [0, 1])
