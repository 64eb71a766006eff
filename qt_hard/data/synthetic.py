"""A synthetic latent-class corpus: N classes, each with its own word distribution.

Every class draws its words from a mixture of a shared background distribution (Zipf-like
over the whole vocabulary) and a class-specific distribution concentrated on a small set of
"topic" words, so a bag-of-words model can separate the classes but not trivially. Words are
``w0 .. w{V-1}``; sentences are space-joined, so they go through the word-level tokenizer and
:class:`~qt_hard.data.vocab.Vocab` like real text, and through
:meth:`qt_hard.data.wiki.WikiData.from_sentences` for the Wiki-style split and pairs.
"""

from __future__ import annotations

import numpy as np


def class_word_distributions(
    num_classes: int, vocab_size: int, seed: int = 0, topic_words: int | None = None, topic_weight: float = 0.5
) -> np.ndarray:
    """``(num_classes, vocab_size)`` rows of word probabilities (each row sums to 1)."""
    if num_classes < 1 or vocab_size < 2:
        raise ValueError(f"need num_classes >= 1 and vocab_size >= 2, got {num_classes}, {vocab_size}")
    if not 0.0 <= topic_weight <= 1.0:
        raise ValueError(f"topic_weight must be in [0, 1], got {topic_weight}")
    rng = np.random.default_rng([int(seed), 1])
    k = topic_words or max(2, vocab_size // max(num_classes, 1) // 2)
    k = min(k, vocab_size)
    background = 1.0 / np.arange(1, vocab_size + 1)
    background = rng.permutation(background)
    background /= background.sum()
    probs = np.empty((num_classes, vocab_size))
    for c in range(num_classes):
        topic = np.zeros(vocab_size)
        words = rng.choice(vocab_size, size=k, replace=False)
        topic[words] = rng.dirichlet(np.ones(k))
        probs[c] = (1.0 - topic_weight) * background + topic_weight * topic
    return probs / probs.sum(axis=1, keepdims=True)


def latent_class_corpus(
    num_classes: int,
    sentences_per_class: int,
    vocab_size: int,
    length: int | tuple[int, int],
    seed: int = 0,
    *,
    topic_words: int | None = None,
    topic_weight: float = 0.5,
    shuffle: bool = False,
) -> tuple[list[str], list[int]]:
    """``(sentences, labels)``: ``sentences_per_class`` sentences per class, labels 0..N-1.

    ``length`` is the number of words per sentence, or ``(min, max)`` for lengths drawn
    uniformly. Sentences come grouped by class (class 0 first) unless ``shuffle``. The same
    arguments always give the same corpus.
    """
    if sentences_per_class < 1:
        raise ValueError(f"sentences_per_class must be >= 1, got {sentences_per_class}")
    lo, hi = (length, length) if isinstance(length, int) else length
    if lo < 1 or hi < lo:
        raise ValueError(f"length must be >= 1 (or a (min, max) range), got {length}")
    probs = class_word_distributions(num_classes, vocab_size, seed, topic_words, topic_weight)
    rng = np.random.default_rng([int(seed), 2])
    sentences: list[str] = []
    labels: list[int] = []
    for c in range(num_classes):
        lens = rng.integers(lo, hi + 1, size=sentences_per_class)
        words = rng.choice(vocab_size, size=int(lens.sum()), p=probs[c])
        pos = 0
        for n in lens:
            sentences.append(" ".join(f"w{w}" for w in words[pos : pos + n]))
            pos += n
        labels.extend([c] * sentences_per_class)
    if shuffle:
        order = rng.permutation(len(sentences))
        sentences = [sentences[i] for i in order]
        labels = [labels[i] for i in order]
    return sentences, labels
