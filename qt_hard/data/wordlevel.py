"""The word-level tokenizer of every word model (Quick-Thoughts, bag of words; books and Wiki-N alike).

A Hugging Face ``tokenizers`` ``WordLevel`` model whose vocabulary is fitted by that library's own
``WordLevelTrainer`` (``min_count``, ``max_size``), saved beside a model as ``tokenizer.json`` so that
other tools (``tokenizers``, ``transformers``' ``PreTrainedTokenizerFast``, sentence-transformers)
load it as is. Ids: ``<pad>`` = 0, ``<unk>`` = 1, then the words, most frequent first, as
:class:`qt_hard.data.vocab.Vocab` (:meth:`WordTokenizer.vocab` gives that view).

The pre-tokenizer is built to give NLTK's Treebank word tokens (``NLTKWordTokenizer``, the tokenizer
behind ``nltk.word_tokenize``) as closely as ``tokenizers``' components allow, in Rust and in
parallel over a batch (NLTK's Python regex chain runs at a few thousand sentences a second):

* normalizer: a ``"`` at the start, or a ``"`` or ``''`` after a space or an opening bracket, becomes
  ````` (NLTK's opening quote), every other ``"`` becomes ``''``; then lower case (optional);
* one ``Split`` (isolated) on a pattern that is the union of NLTK's rules, written as zero-width
  look-arounds where NLTK rewrites context (Oniguruma regex): quotes (````, ``''``, curly quotes,
  a single quote opening a word), ``...``, ``--``, ``; @ # $ % & ? ! *``, brackets, dashes
  U+2012-2015, ``,``/``:`` not before a digit, the final period of the sentence (with closing quotes
  or brackets after it), a ``'`` closing a word, the clitics ``'s 'm 'd 'll 're 've n't`` and NLTK's
  split words (``can|not``, ``gon|na``, ``got|ta``, ``wan|na``, ``gim|me``, ``lem|me``, ``more|'n``,
  ``d|'ye``);
* then whitespace splitting.

Where NLTK's sequential rewrites interact (a rule that fires only because an earlier one inserted a
space) the single pattern can differ; ``tests/test_data_wordlevel.py`` measures the share of
sentences tokenized identically on the books and on Wiki-N against NLTK itself.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from .vocab import PAD, UNK, Vocab

# Bumped whenever the normalizer or pre-tokenizer changes: caches of token ids are keyed on it.
TOKENIZER_VERSION = "treebank-hf-1"

_CLOSERS = r"\]\)}>\"'»”’"
# What NLTK has already set apart by the time its clitic rule runs (which wants a space after
# "'s", "n't", ...): "don't." and "don't," split, "dame's-school" does not.
_SEPARATED = r"\s|\z|[,;:?!*\[\](){}<>»”’\"']|--|\.(?=[" + _CLOSERS + r"\s]*\z)"
# Every alternative opens with a literal character (look-behinds come after it), so that the regex
# engine can skip ahead to the next candidate character instead of trying each rule at every position.
_TREEBANK_ALTERNATION = "|".join(
    [
        r"``|''|`+",  # quotes made by the normalizer / backticks
        r"[«“‘„»”’]",  # curly quotes are tokens of their own
        r"\.{2,}",  # ellipsis
        r"--",
        r"[;@#$%&?!*\[\](){}<>\x{2012}-\x{2015}]",
        r"[:,](?!\d)",  # 3:30 and 1,000 stay whole
        r"\.(?<!\.\.)(?=[" + _CLOSERS + r"\s]*\z)",  # the sentence's final period
        r"'(?<!\w')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)",  # a single quote opening a word
        r"'(?<=[^'\s]')(?:s|m|d|ll|re|ve)?(?=" + _SEPARATED + ")",  # clitics; a quote closing a word
        r"n(?<=[^'\s]n)'t(?=" + _SEPARATED + ")",
        r"n(?<=\bcann)ot\b|n(?<=\bgonn)a\b|t(?<=\bgott)a\b|n(?<=\bwann)a(?=\s|\z)|m(?<=\bgimm)e\b",
        r"m(?<=\blemm)e\b|'(?<=\bmore')n\b|'(?<=\bd')ye\b",
    ]
)
# Two look-aheads in front that every match passes anyway: a class of the first characters of all
# alternatives (Oniguruma then jumps from one such character to the next instead of trying the
# whole alternation at every position) and, for the letters among them, the two characters that
# the letter rules need. Same tokens, 1.4-1.8x the sentences per second of the bare alternation
# (scripts/bench_data.py prepare).
_FIRST = r"`'«“‘„»”’.\-;@#$%&?!*\[\](){}<>\x{2012}-\x{2015}:,"
_TREEBANK_PATTERN = "(?=[" + _FIRST + "nmt])(?=[" + _FIRST + "]|n['oa]|ta|me)(?:" + _TREEBANK_ALTERNATION + ")"


def _backend(lower: bool, pattern: str | None = None):
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel

    tok = Tokenizer(WordLevel({PAD: 0, UNK: 1}, unk_token=UNK))
    steps = [
        normalizers.Replace(Regex(r'^"|(?<=[\s(\[{<])(?:"|\'\')'), "``"),
        normalizers.Replace('"', "''"),
    ]
    if lower:
        steps.append(normalizers.Lowercase())
    tok.normalizer = normalizers.Sequence(steps)
    # Case-insensitive clitics and split words when the text is not lower-cased.
    pattern = pattern or _TREEBANK_PATTERN
    pattern = pattern if lower else "(?i)" + pattern
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.WhitespaceSplit(),
        ]
    )
    return tok


@lru_cache(maxsize=2)
def _plain(lower: bool):
    return _backend(lower)


def word_tokens(sentence: str, lower: bool = True) -> list[str]:
    """The Treebank-style word tokens of one sentence (no vocabulary): what every word model splits
    a sentence into (NLTK's ``word_tokenize`` serves only as the reference in the tests)."""
    tok = _plain(lower)
    return [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(sentence))]


def _without_added_tokens(backend):
    """``backend`` without "added tokens": ``<pad>`` and ``<unk>`` stay in the word vocabulary (ids 0
    and 1) but are no longer matched in raw text, so a sentence never encodes to the pad id (the
    pre-tokenizer splits ``<`` and ``>`` off, and an unknown word is ``<unk>`` by the model). The
    trainer registers its special tokens as added tokens; a vocabulary built by :meth:`from_vocab`
    has none. Without this a literal "<pad>" in a sentence would be id 0, which a bag of words leaves
    out of its mean and sentence-transformers' ``StaticEmbedding`` counts (as a zero vector)."""
    from tokenizers import Tokenizer

    tree = json.loads(backend.to_str())
    if not tree.get("added_tokens"):
        return backend
    tree["added_tokens"] = []
    return Tokenizer.from_str(json.dumps(tree))


class WordTokenizer:
    """Treebank-style word tokens and their ids, one ``tokenizers.Tokenizer`` underneath.

    Build with :meth:`train` (or :meth:`load` a ``tokenizer.json``); ``encode_batch`` gives id lists,
    ``vocab()`` the :class:`Vocab` view (same ids). No sentence
    encodes to the pad id 0 (see :func:`_without_added_tokens`).
    """

    def __init__(self, backend, lower: bool = True):
        self.backend = _without_added_tokens(backend)
        self.lower = lower
        vocab = self.backend.get_vocab()
        if vocab.get(PAD) != 0 or vocab.get(UNK) != 1:
            raise ValueError(f"a word tokenizer needs {PAD} = 0 and {UNK} = 1 in its vocabulary")

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        *,
        min_count: int = 1,
        max_size: int | None = None,
        lower: bool = True,
        length: int | None = None,
    ) -> "WordTokenizer":
        """Fit the vocabulary on ``texts`` with ``tokenizers``' ``WordLevelTrainer``: words seen at least
        ``min_count`` times, the ``max_size`` most frequent (None: all), after ``<pad>`` and ``<unk>``."""
        from tokenizers.trainers import WordLevelTrainer

        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        if max_size is not None and max_size < 0:
            raise ValueError(f"max_size must be >= 0 or None, got {max_size}")
        backend = _backend(lower)
        trainer = WordLevelTrainer(
            vocab_size=(2 + max_size) if max_size is not None else 2**31 - 1,
            min_frequency=min_count,
            special_tokens=[PAD, UNK],
            show_progress=False,
        )
        if isinstance(texts, str):
            raise TypeError("WordTokenizer.train expects an iterable of sentences, not a string")
        backend.train_from_iterator(texts, trainer=trainer, length=length)
        return cls(backend, lower)

    @classmethod
    def from_vocab(cls, vocab: Vocab, lower: bool = True) -> "WordTokenizer":
        """The tokenizer of an existing :class:`Vocab` (same ids; e.g. a Wiki-N vocabulary fitted on
        the training split, or a model saved before tokenizer.json existed)."""
        from tokenizers.models import WordLevel

        if vocab.itos[:2] != [PAD, UNK]:
            raise ValueError(f"the vocabulary must start with {PAD}, {UNK}; got {vocab.itos[:2]}")
        backend = _backend(lower)
        backend.model = WordLevel(dict(vocab.stoi), unk_token=UNK)
        return cls(backend, lower)

    # ------------------------------------------------------------------ use
    def __len__(self) -> int:
        return self.backend.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.backend.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Id lists of many sentences (Rust threads; ``TOKENIZERS_PARALLELISM=false`` keeps it on one)."""
        if isinstance(texts, str):
            raise TypeError("encode_batch expects a list of sentences, not a string")
        if not texts:
            return []
        # encode_batch_fast: the same ids without the character offsets, which nothing here reads.
        return [e.ids for e in self.backend.encode_batch_fast(list(texts), add_special_tokens=False)]

    def vocab(self) -> Vocab:
        """The same ids as a :class:`Vocab` (id order)."""
        by_id = sorted(self.backend.get_vocab().items(), key=lambda kv: kv[1])
        itos = [w for w, _ in by_id]
        if itos[:2] != [PAD, UNK] or [i for _, i in by_id] != list(range(len(by_id))):
            raise ValueError("the tokenizer's ids are not 0..V-1 with <pad>, <unk> first")
        return Vocab(itos[2:])

    def unk_rate(self, texts: Sequence[str]) -> float:
        """Share of the word tokens of ``texts`` that are not in the vocabulary."""
        n = unk = 0
        for ids in self.encode_batch(list(texts)):
            n += len(ids)
            unk += sum(1 for i in ids if i == 1)
        return unk / n if n else 0.0

    # ------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike) -> Path:
        """Write ``tokenizer.json`` (``path`` a folder, or the file itself)."""
        p = Path(path)
        if p.suffix != ".json":
            p = p / "tokenizer.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        self.backend.save(str(p))
        return p

    @classmethod
    def load(cls, path: str | os.PathLike) -> "WordTokenizer":
        from tokenizers import Tokenizer

        p = Path(path)
        if p.is_dir():
            p = p / "tokenizer.json"
        if not p.is_file():
            from qt_hard.errors import ModelNotFoundError

            raise ModelNotFoundError(f"no tokenizer.json at {p}")
        try:
            backend = Tokenizer.from_file(str(p))
        except Exception as err:  # the Rust error names the problem; keep the file's name in front
            from qt_hard.errors import ModelCorruptError

            raise ModelCorruptError(f"{p}: not a tokenizers JSON file ({err})") from err
        # A model folder's tokenizer.json cuts at the model's max_len (for sentence-transformers);
        # qt-hard's featurizers cut themselves, and the tokenizer's other uses (unknown-word rates)
        # read whole sentences.
        backend.no_truncation()
        # Whether the text is lower-cased lives in the normalizer.
        lower = "Lowercase" in json.dumps(json.loads(p.read_text(encoding="utf-8")).get("normalizer"))
        return cls(backend, lower)

    def __repr__(self) -> str:
        return f"WordTokenizer(size={len(self)}, lower={self.lower}, version={TOKENIZER_VERSION!r})"
