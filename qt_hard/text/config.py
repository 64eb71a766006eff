"""The text pipeline's config sections: ``data`` (where the sentences come from) and
``objective`` (the contrastive loss of ``qt_hard.losses``); ``model`` is
``qt_hard.encoders.config.ModelConfig``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

DATA_KINDS = ("books", "bookcorpus", "wiki", "synthetic")


@dataclass
class DataConfig:
    """Where the sentences come from.

    kind: "books" (a folder of .txt/.txt.xz books, ordered sentences, for Quick-Thoughts),
          "bookcorpus" (BookCorpus: the Parquet shards of ``qt-hard data get bookcorpus`` under
          the data root or ``path`` when there, else the Hugging Face hub, which needs a network),
          "wiki" (Wiki-N positive pairs, Ash et al. D.1), "synthetic" (latent-class corpus
          of ``num_classes`` x ``sentences_per_class`` sentences, treated like Wiki-N).
    min_count: tokens seen fewer times (in the training split) become UNK (Ash et al.: 50).
    seed: seed of the train/test split and of the synthetic corpus.
    path: books folder (default $QT_HARD_DATA/books), BookCorpus Parquet folder, or the Wiki-N folder (default
          OUT/cache/wiki_<articles>); built with build_wiki from ``wiki_source`` when missing.
    """

    kind: str = "synthetic"
    path: Optional[str] = None
    max_books: Optional[int] = None
    max_sentences: Optional[int] = None
    wiki_source: Optional[str] = None
    articles: int = 3029
    min_sentences: int = 200
    min_count: int = 1
    max_vocab: Optional[int] = None
    num_classes: int = 10
    sentences_per_class: int = 100
    vocab_size: int = 300
    min_length: int = 5
    max_length: int = 15
    seed: int = 0

    def validate(self) -> None:
        if self.kind not in DATA_KINDS:
            raise ValueError(f"data.kind must be {' | '.join(DATA_KINDS)}, got {self.kind!r}")
        counts = {"max_books": 1, "max_sentences": 1, "max_vocab": 1, "min_count": 1, "articles": 1,
                  "min_sentences": 1, "num_classes": 1, "sentences_per_class": 2, "vocab_size": 2,
                  "min_length": 1}
        for name, low in counts.items():
            value = getattr(self, name)
            if value is not None and value < low:
                raise ValueError(f"data.{name} must be >= {low} (or left out), got {value!r}")
        if self.max_length < self.min_length:
            raise ValueError(f"data.max_length ({self.max_length}) must be >= data.min_length ({self.min_length})")


@dataclass
class ObjectiveConfig:
    """The contrastive objective, always assembled by ``qt_hard.losses``.

    Quick-Thoughts data uses ``context_loss`` (context = +-c neighbours); pair data (wiki,
    synthetic) uses ``contrastive_loss`` (include_positive=False is Ash et al.'s D.1 form).
    options: extra keyword options of the core (beta, tau_plus, clip, lower, upper, ...).
    """

    negatives: str = "uniform"
    temperature: float = 1.0
    k: Optional[int] = None
    normalize: bool = False
    include_positive: bool = False
    collision_free: bool = False
    context: int = 1
    options: dict = field(default_factory=dict)

    def validate(self) -> None:
        if self.context < 1:
            raise ValueError(f"objective.context must be >= 1, got {self.context}")
