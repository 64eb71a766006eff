"""Wiki-N evaluation: the mean classifier and the trained linear classifier of
:mod:`qt_hard.evaluation.probes` on a Wiki-N split's frozen sentence embeddings.

Ash, Goel, Krishnamurthy, Misra (AISTATS 2022), section 5 and Appendix D.1: the classes are N
Wikipedia articles, 80% of each article's sentences train the classifiers and the other 20% test
them (the split ``qt_hard.data.wiki.load_wiki`` draws); both report top-1 accuracy (in %).
"""

from __future__ import annotations

import time

from .probes import linear_classifier, mean_classifier

__all__ = ["linear_classifier", "mean_classifier", "run_wiki"]


def run_wiki(
    encoder, data, classes: int, epochs: int = 50, lr: float = 0.01, batch_size: int = 1000, seed: int = 0, cache=None
) -> dict:
    """Embed a Wiki-N split (``data``: a ``qt_hard.data.WikiData``, or anything with its
    ``train_sentences``, ``train_labels``, ``test_sentences`` and ``test_labels``) and report both
    classifiers; ``cache`` an :class:`EmbeddingCache`."""
    from .models import EmbeddingCache

    cache = cache if cache is not None else EmbeddingCache(encoder)
    t0 = time.perf_counter()
    tr = cache.embed(data.train_sentences)
    te = cache.embed(data.test_sentences)
    enc = time.perf_counter() - t0
    t1 = time.perf_counter()
    mc = mean_classifier(tr, data.train_labels, te, data.test_labels, classes)
    t2 = time.perf_counter()
    lin = linear_classifier(
        tr, data.train_labels, te, data.test_labels, classes, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed
    )
    t3 = time.perf_counter()
    mc["seconds"] = round(t2 - t1, 3)
    lin["seconds"] = round(t3 - t2, 3)
    return {"classes": classes, "encode_seconds": round(enc, 3), "mean_classifier": mc, "linear": lin}
