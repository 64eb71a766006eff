"""SentEval's six classification tasks, read exactly as SentEval reads them.

Conneau & Kiela (2018), SentEval; the readers follow ``senteval/binary.py``, ``senteval/trec.py``
and ``senteval/mrpc.py`` of facebookresearch/SentEval, because the *order* of the examples decides
the cross-validation folds (``StratifiedKFold(shuffle=True, random_state=1111)`` permutes indices):

* MR, CR, SUBJ, MPQA: latin-1, ``f.read().splitlines()``, each line ``.split()`` into words;
  samples = first file + second file with labels 1 then 0 (for SUBJ the *objective* file comes
  first and gets label 1, as in SentEval); then a stable sort by (number of words, label).
* TREC: latin-1, each line ``COARSE:fine words...``: the label is the coarse class (ABBR, DESC,
  ENTY, HUM, LOC, NUM -> 0..5), the words are what follows the first space after the colon;
  train ``train_5500.label`` and test ``TREC_10.label`` each sorted by (words, label).
* MRPC: UTF-8, tab separated, header line dropped; columns 0 (label), 3 and 4 (the two
  sentences, ``.split()`` into words, case kept); sorted by (words of A, words of B, label).

No lower-casing anywhere (the files are already lower-cased where SentEval expects it).
Sentences reach an encoder as ``' '.join(words)``, an empty one as ``'.'`` (SentEval's examples).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qt_hard.errors import ArgumentError, DataCorruptError, DataMissingError

from .similarity import SIMILARITY_TASKS, load_similarity, similarity_sentences, words_to_text

__all__ = [
    "task_sentences",
    "TASKS",
    "BinaryTask",
    "TrecTask",
    "MrpcTask",
    "load_task",
    "parse_tasks",
    "known_tasks",
    "is_similarity",
    "check_task_files",
    "words_to_text",
]

TASKS = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")

# (folder, file with label 1, file with label 0), as SentEval's binary.py orders them.
_BINARY_FILES = {
    "MR": ("MR", "rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("CR", "custrev.pos", "custrev.neg"),
    "SUBJ": ("SUBJ", "subj.objective", "subj.subjective"),
    "MPQA": ("MPQA", "mpqa.pos", "mpqa.neg"),
}
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


def _need(path: Path) -> Path:
    if not path.is_file():
        from qt_hard.paths import get_command

        raise DataMissingError(f"SentEval file missing: {path}; {get_command('senteval')}")
    return path


def _verify(path: Path) -> None:
    """Refuse a damaged task file (``DataCorruptError`` naming it): the checks of ``qt-hard data
    list`` (``qt_hard.data.sources.senteval.senteval_file_problems``: SentEval's line count, no line of
    non-text bytes), so a truncated file or appended garbage never reaches a score."""
    from qt_hard.data.sources.senteval import senteval_file_problems

    problems = senteval_file_problems(path.parent.parent, f"{path.parent.name}/{path.name}")
    if problems:
        raise DataCorruptError(
            f"SentEval file {path} is damaged: {'; '.join(problems)}; "
            "`qt-hard data get senteval --force` fetches it again"
        )


def _read_lines_latin1(path: Path) -> list[list[str]]:
    with io.open(_need(path), "r", encoding="latin-1") as f:
        lines = [line.split() for line in f.read().splitlines()]
    if not lines:
        raise DataCorruptError(f"{path} is empty")
    _verify(path)
    return lines


@dataclass
class BinaryTask:
    """MR / CR / SUBJ / MPQA: sentences (sorted as SentEval sorts them) and 0/1 labels."""

    name: str
    samples: list[list[str]]
    labels: np.ndarray

    def texts(self) -> list[str]:
        return [words_to_text(w) for w in self.samples]


@dataclass
class TrecTask:
    """TREC: train and test questions (each sorted), coarse labels 0..5."""

    name: str
    train: list[list[str]]
    train_labels: np.ndarray
    test: list[list[str]]
    test_labels: np.ndarray

    def texts(self) -> list[str]:
        return [words_to_text(w) for w in self.train + self.test]


@dataclass
class MrpcTask:
    """MRPC: sentence pairs (A, B) of train and test (each sorted), 0/1 labels."""

    name: str
    train_a: list[list[str]]
    train_b: list[list[str]]
    train_labels: np.ndarray
    test_a: list[list[str]]
    test_b: list[list[str]]
    test_labels: np.ndarray

    def texts(self) -> list[str]:
        return [words_to_text(w) for w in self.train_a + self.train_b + self.test_a + self.test_b]


def load_binary(name: str, folder: Path, sort: bool = True) -> BinaryTask:
    """SentEval's reading (``sort=True``); ``sort=False`` keeps file order (label-1 file first)
    and drops empty lines, as the skip-thoughts loaders (``dataset_handler.py``) read them."""
    sub, first, second = _BINARY_FILES[name]
    pos = _read_lines_latin1(folder / sub / first)
    neg = _read_lines_latin1(folder / sub / second)
    if not sort:
        pos, neg = [w for w in pos if w], [w for w in neg if w]
    return BinaryTask(name, *_by_length(pos + neg, [1] * len(pos) + [0] * len(neg), sort))


def _by_length(samples: list[list[str]], labels: list[int], sort: bool) -> tuple[list[list[str]], np.ndarray]:
    """(samples, int64 labels) in SentEval's order, by (number of words, label), or in file order
    without ``sort``. Python's sort is stable, as SentEval relies on: ties keep file order."""
    if sort:
        order = sorted(zip(samples, labels), key=lambda z: (len(z[0]), z[1]))
        samples, labels = [s for s, _ in order], [l for _, l in order]
    return samples, np.array(labels, dtype=np.int64)


def _read_trec(path: Path) -> tuple[list[list[str]], list[int]]:
    X, y = [], []
    with io.open(_need(path), "r", encoding="latin-1") as f:
        for lineno, line in enumerate(f, 1):
            if ":" not in line:
                raise DataCorruptError(f"{path}:{lineno}: expected 'COARSE:fine words', got {line.strip()[:60]!r}")
            target, sample = line.strip().split(":", 1)
            if target not in TREC_CLASSES:
                raise DataCorruptError(
                    f"{path}:{lineno}: unknown TREC class {target!r} (expected one of {TREC_CLASSES})"
                )
            parts = sample.split(" ", 1)
            if len(parts) != 2:
                raise DataCorruptError(f"{path}:{lineno}: no question after the fine label in {line.strip()[:60]!r}")
            X.append(parts[1].split())
            y.append(TREC_CLASSES.index(target))
    if not X:
        raise DataCorruptError(f"{path} is empty")
    _verify(path)
    return X, y


def load_trec(folder: Path, sort: bool = True) -> TrecTask:
    """SentEval's reading; ``sort=False`` keeps file order (the skip-thoughts ``eval_trec.py``)."""
    tr, ytr = _by_length(*_read_trec(folder / "TREC" / "train_5500.label"), sort)
    te, yte = _by_length(*_read_trec(folder / "TREC" / "TREC_10.label"), sort)
    return TrecTask("TREC", tr, ytr, te, yte)


def _read_mrpc(path: Path, sort: bool = True):
    A, B, y = [], [], []
    with io.open(_need(path), "r", encoding="utf-8") as f:
        rows = [line.strip().split("\t") for line in f]
    if len(rows) < 2:
        raise DataCorruptError(f"{path} has no examples after the header line")
    for lineno, cols in enumerate(rows[1:], 2):
        if len(cols) < 5:
            raise DataCorruptError(f"{path}:{lineno}: expected 5 tab-separated columns, got {len(cols)}")
        if cols[0] not in ("0", "1"):
            raise DataCorruptError(f"{path}:{lineno}: label must be 0 or 1, got {cols[0]!r}")
        A.append(cols[3].split())
        B.append(cols[4].split())
        y.append(int(cols[0]))
    _verify(path)
    order = list(zip(A, B, y))
    if sort:
        order.sort(key=lambda z: (len(z[0]), len(z[1]), z[2]))
    return ([a for a, _, _ in order], [b for _, b, _ in order], np.array([l for _, _, l in order], dtype=np.int64))


def load_mrpc(folder: Path, sort: bool = True) -> MrpcTask:
    """SentEval's reading; ``sort=False`` keeps file order (the skip-thoughts ``eval_msrp.py``)."""
    tra, trb, ytr = _read_mrpc(folder / "MRPC" / "msr_paraphrase_train.txt", sort)
    tea, teb, yte = _read_mrpc(folder / "MRPC" / "msr_paraphrase_test.txt", sort)
    return MrpcTask("MRPC", tra, trb, ytr, tea, teb, yte)


def known_tasks() -> tuple[str, ...]:
    """Every task name ``--tasks`` takes: the six transfer tasks, then the similarity tasks
    (:mod:`.similarity`)."""
    return TASKS + SIMILARITY_TASKS


def parse_tasks(spec: str | Sequence[str]) -> list[str]:
    """``"MR,CR,STS12"`` or a list -> canonical task names, case-insensitive (MSRP is accepted for
    MRPC; ``sts12``, ``stsbenchmark-cos`` for the similarity tasks)."""
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    canonical = {t.upper(): t for t in known_tasks()}
    canonical["MSRP"] = "MRPC"
    out = []
    for name in names:
        if not name:
            continue
        key = canonical.get(name.upper())
        if key is None:
            raise ArgumentError(f"--tasks: unknown SentEval task {name!r}; known tasks: {', '.join(known_tasks())}")
        if key not in out:
            out.append(key)
    if not out:
        raise ArgumentError(f"--tasks: no tasks given; choose from {', '.join(known_tasks())}")
    return out


def is_similarity(name: str) -> bool:
    """Whether the canonical task name is a similarity task (:mod:`.similarity`)."""
    return name in SIMILARITY_TASKS


def check_task_files(tasks: Sequence[str], folder) -> None:
    """Read and check every file of the (canonical) tasks, so that a missing or damaged one is
    refused before a model is loaded."""
    for name in tasks:
        if is_similarity(name):
            load_similarity(name, folder)
        else:
            load_task(name, folder)


def load_task(name: str, folder, sort: bool = True) -> BinaryTask | TrecTask | MrpcTask:
    """Load one task (``MR``, ``CR``, ``SUBJ``, ``MPQA``, ``TREC``, ``MRPC``/``MSRP``) from a
    folder laid out like SentEval's ``data/downstream``; ``sort=False``: in file order, as the
    skip-thoughts evaluators read them (see the loaders)."""
    folder = Path(folder)
    key = {"MSRP": "MRPC"}.get(name.upper(), name.upper())
    if key in _BINARY_FILES:
        return load_binary(key, folder, sort)
    if key == "TREC":
        return load_trec(folder, sort)
    if key == "MRPC":
        return load_mrpc(folder, sort)
    raise ArgumentError(f"unknown SentEval task {name!r}; known tasks: {', '.join(TASKS)}")


def task_sentences(tasks: Sequence[str], data_dir) -> list[str]:
    """Union of the (encoder-ready) sentences of the given tasks, e.g. for a random model's vocab
    (similarity tasks: the sentences their protocol embeds)."""
    texts = [
        t
        for name in tasks
        for t in (similarity_sentences([name], data_dir) if is_similarity(name) else load_task(name, data_dir).texts())
    ]
    return list(dict.fromkeys(texts))
