"""The synthetic latent-class corpus."""

import numpy as np
import pytest

from qt_hard.data.synthetic import class_word_distributions, latent_class_corpus
from qt_hard.data.wiki import WikiData


def test_shapes_and_determinism():
    s, y = latent_class_corpus(4, 10, vocab_size=50, length=(3, 7), seed=1)
    assert len(s) == len(y) == 40 and y == sorted(y) and set(y) == {0, 1, 2, 3}
    assert all(3 <= len(x.split()) <= 7 for x in s)
    assert all(w.startswith("w") and 0 <= int(w[1:]) < 50 for x in s for w in x.split())
    assert (s, y) == latent_class_corpus(4, 10, vocab_size=50, length=(3, 7), seed=1)
    assert s != latent_class_corpus(4, 10, vocab_size=50, length=(3, 7), seed=2)[0]
    s2, y2 = latent_class_corpus(4, 10, vocab_size=50, length=5, seed=1, shuffle=True)
    assert sorted(y2) == y and y2 != y
    p = class_word_distributions(4, 50)
    assert p.shape == (4, 50) and np.allclose(p.sum(1), 1)


def test_classes_are_separable_by_bag_of_words():
    s, y = latent_class_corpus(5, 200, vocab_size=100, length=12, seed=0)
    w = WikiData.from_sentences(s, y, min_count=1, seed=0)
    V = len(w.vocab)

    def bow(ids_list):
        X = np.zeros((len(ids_list), V))
        for i, ids in enumerate(ids_list):
            np.add.at(X[i], ids, 1.0)
        return X / X.sum(1, keepdims=True)

    Xtr, Xte = bow(w.train_ids), bow(w.test_ids)
    mu = np.stack([Xtr[np.asarray(w.train_labels) == c].mean(0) for c in range(5)])
    acc = np.mean((Xte @ mu.T).argmax(1) == np.asarray(w.test_labels))
    assert acc > 0.8  # chance is 0.2
    pairs = w.positive_pair_indices(0)
    assert np.all(np.asarray(w.train_labels)[pairs[:, :2]] == pairs[:, 2:3])


def test_bad_arguments():
    with pytest.raises(ValueError):
        latent_class_corpus(0, 10, 50, 5)
    with pytest.raises(ValueError, match="length"):
        latent_class_corpus(2, 10, 50, (5, 3))
    with pytest.raises(ValueError, match="sentences_per_class"):
        latent_class_corpus(2, 0, 50, 5)
