"""The text pipeline's config sections: ``data`` (where the sentences come from) and
``objective`` (the contrastive loss of ``qt_hard.losses``); ``model`` is
``qt_hard.encoders.config.ModelConfig``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from qt_hard.negatives.config import NegativesConfig

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
    classes: wiki only: train on the first N articles of the Wiki folder (default: all of them).
          The whole folder is tokenized once (cached) and Wiki-N is its prefix; split and
          vocabulary (``min_count`` over Wiki-N's training split) are Wiki-N's own.
    vocab_classes: wiki with ``classes`` only: count the vocabulary over the training split of the
          first ``vocab_classes`` articles (>= classes) instead of Wiki-N's own; 3029 gives every
          Wiki-N the vocabulary of Wiki-3029, the one dataset of Ash et al. (section 5).
    token_cache: folder of the wiki tokenization cache (default ``OUT/cache/wiki_tokens``); runs
          sharing one tokenize a folder once.
    shuffle_labels: pair data only: each batch's class labels are permuted among its pairs (a
          permutation drawn from (train.seed, step)), the control of ``objective.collision_free``
          (as many same-label candidates removed per batch, but random ones).
    path: books folder (default $QT_HARD_DATA/books), BookCorpus Parquet folder, or the Wiki-N folder (default
          OUT/cache/wiki_<articles>); built with build_wiki from ``wiki_source`` when missing.
    exclude_books: books only: 0-based indices of books (in the sorted file order that ``doc_id`` follows,
          counted before ``max_books`` cuts the list) left out of training, its vocabulary included;
          ``[8, 9, 10]`` keeps out the books ``qt_hard.evaluation.heldout.HeldOut`` scores by default. The other books
          keep their ``doc_id``, so a batch never pairs sentences across the gap.
    """

    kind: Literal[DATA_KINDS] = "synthetic"
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
    classes: Optional[int] = None
    vocab_classes: Optional[int] = None
    token_cache: Optional[str] = None
    shuffle_labels: bool = False
    exclude_books: Optional[list] = None

    def validate(self) -> None:
        if self.exclude_books is not None:
            self.exclude_books = check_exclude_books(self.exclude_books, self.kind, self.max_books)
        if self.shuffle_labels and self.kind not in ("wiki", "synthetic"):
            raise ValueError(f"data.shuffle_labels needs pair data with labels (wiki, synthetic), not {self.kind!r}")
        if self.classes is not None and (self.kind != "wiki" or self.classes < 2):
            raise ValueError(
                f"data.classes needs data.kind wiki and at least 2 articles, got {self.classes} with {self.kind!r}"
            )
        if self.vocab_classes is not None and (self.classes is None or self.vocab_classes < self.classes):
            raise ValueError(
                f"data.vocab_classes needs data.classes and must be >= it, got {self.vocab_classes} with "
                f"classes {self.classes}"
            )
        counts = {
            "max_books": 1,
            "max_sentences": 1,
            "max_vocab": 1,
            "min_count": 1,
            "articles": 1,
            "min_sentences": 1,
            "num_classes": 1,
            "sentences_per_class": 2,
            "vocab_size": 2,
            "min_length": 1,
        }
        for name, low in counts.items():
            value = getattr(self, name)
            if value is not None and value < low:
                raise ValueError(f"data.{name} must be >= {low} (or left out), got {value!r}")
        if self.max_length < self.min_length:
            raise ValueError(f"data.max_length ({self.max_length}) must be >= data.min_length ({self.min_length})")


def check_exclude_books(value, kind: str, max_books: Optional[int]) -> list[int]:
    """``data.exclude_books`` as a sorted list of distinct book indices; ``ValueError`` naming the key
    for another data kind, an entry that is not an integer >= 0, a repeated one, or one at or past
    ``max_books``. (Whether each index names an existing book is checked against the folder in
    ``qt_hard.text.build.check_data_paths``.)"""
    if kind != "books":
        raise ValueError(f"data.exclude_books applies to data.kind books, not {kind!r}")
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ValueError("data.exclude_books must name at least one book (or be left out)")
    out = []
    for item in items:
        if isinstance(item, str) and item.strip().isdigit():  # from a command line: "8,9,10"
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise ValueError(f"data.exclude_books must hold book indices (integers >= 0), got {item!r}")
        out.append(item)
    if len(set(out)) != len(out):
        raise ValueError(f"data.exclude_books names a book twice: {out}")
    if max_books is not None and max(out) >= max_books:
        raise ValueError(f"data.exclude_books: book {max(out)} is not among the first data.max_books={max_books} books")
    return sorted(out)


@dataclass
class ObjectiveConfig(NegativesConfig):
    """The contrastive objective, always assembled by ``qt_hard.losses``: the shared negatives section
    (``negatives``, ``estimator``, ``k``, ``options``: :class:`~qt_hard.negatives.config.NegativesConfig`)
    and the text pipeline's own fields.

    Quick-Thoughts data uses ``context_loss`` (context = +-c neighbours); pair data (wiki,
    synthetic) uses ``contrastive_loss`` (include_positive=False is Ash et al.'s D.1 form).
    """

    temperature: float = 1.0
    normalize: bool = False
    include_positive: bool = False
    collision_free: bool = False
    context: int = 1

    def validate(self) -> None:
        super().validate()
        if self.context < 1:
            raise ValueError(f"objective.context must be >= 1, got {self.context}")


@dataclass
class EvalConfig:
    """Readouts of a pair-data run (wiki, synthetic) on its own held-out split (Ash et al. 2022,
    App. D.1), computed on the final model (``OUT/eval.json``) and every ``every`` steps:
    the mean classifier on the whole training split, a linear classifier trained ``linear_epochs``
    epochs (Adam, ``linear_lr``, batches of ``linear_batch``), and the diagnostics of
    ``qt_hard.text.readouts`` (``diagnostics``).
    """

    readouts: bool = False
    every: int = 0
    linear_epochs: int = 50
    linear_lr: float = 0.01
    linear_batch: int = 1000
    diagnostics: bool = True

    def validate(self) -> None:
        if self.every < 0 or self.linear_epochs < 1 or self.linear_batch < 1:
            raise ValueError("eval.every must be >= 0, eval.linear_epochs and eval.linear_batch >= 1")


# Bytes per entry of the loss's (anchors, candidates) tables: float32 scores plus the masks, weights,
# log-sum-exp terms and gradients computed over them (about eight such tables at the peak).
SCORE_TABLE_BYTES = 4 * 8
# Bytes per weight of an embedding table while training: the weight, its gradient and Adam's two moments.
TRAINED_WEIGHT_BYTES = 4 * 4
# Bytes of one word of a sentence held as Python text (a str object and its list slot).
WORD_BYTES = 64


def memory_needs(cfg) -> dict[str, tuple[str, int]]:
    """The largest allocations of a text run that its config alone decides, as
    ``{what: (setting, bytes)}`` for :func:`qt_hard.sizes.refuse_unallocatable`: the loss's score
    tables of one batch, the synthetic corpus, the word embedding tables (their vocabulary at least
    its two special tokens where the data decides it)."""
    d, m, B = cfg.data, cfg.model, cfg.train.batch_size
    pair = d.kind in ("wiki", "synthetic")
    anchors = 2 * B if pair else B
    needs = {"the score tables of one batch": ("train.batch_size", anchors * anchors * SCORE_TABLE_BYTES)}
    vocab = d.max_vocab or 2
    if d.kind == "synthetic":
        words = d.num_classes * d.sentences_per_class * d.max_length
        needs["the synthetic corpus"] = ("data.num_classes x data.sentences_per_class", words * WORD_BYTES)
        needs["the synthetic word distributions"] = (
            "data.num_classes x data.vocab_size",
            d.num_classes * d.vocab_size * 8,
        )
        vocab = d.vocab_size
    width = {"bow": getattr(m, "dim", 0), "qt": 2 * getattr(m, "embed_dim", 0)}.get(m.kind, 0)
    if width:
        setting = "model.dim" if m.kind == "bow" else "model.embed_dim"
        needs["the word embedding table"] = (setting, vocab * width * TRAINED_WEIGHT_BYTES)
    return needs
