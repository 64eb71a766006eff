"""Wiki-N: sentences labelled by the Wikipedia article they come from (Saunshi et al. 2019), in the
Princeton CURL layout (one file per article, one sentence per line): :func:`build_wiki` writes it from a
WikiExtractor dump, :func:`load_wiki` reads it into :class:`WikiData`; layout, split, tokens and
vocabulary: docs/guides/data.md, "Wiki-N".
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import lzma
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..errors import ArgumentError, DataCorruptError, DataMissingError
from .tokenize import SPLITTER_VERSION, split_sentences
from .wordlevel import TOKENIZER_VERSION, word_tokens
from .vocab import Vocab

log = logging.getLogger(__name__)

_DOC_OPEN = re.compile(r"^<doc\s+([^>]*)>\s*$")
_ATTR = re.compile(r'(\w+)="([^"]*)"')
# Files in a Wiki-N folder that are not articles.
_NOT_ARTICLES = re.compile(r"^(?:index\.tsv|readme.*|source.*|.*\.json)$", re.IGNORECASE)


# --------------------------------------------------------------------------------------------
# reading a WikiExtractor dump


@dataclass
class WikiArticle:
    page_id: str
    title: str
    url: str
    paragraphs: list[str] = field(default_factory=list)

    def sentences(self) -> list[str]:
        return article_sentences(self.paragraphs)


def iter_wiki_articles(source: str | os.PathLike) -> Iterator[WikiArticle]:
    """Stream the articles of a WikiExtractor dump, one at a time (the dump is never held in
    memory). The title line that WikiExtractor repeats after ``<doc>`` is left out."""
    path = Path(source).expanduser()
    if not path.is_file():
        raise DataMissingError(f"no such WikiExtractor dump: {path}")
    current: WikiArticle | None = None
    seen_title = False
    n_docs = 0
    try:
        with (
            lzma.open(path, "rt", encoding="utf-8") if path.name.endswith(".xz") else open(path, encoding="utf-8") as f
        ):
            for lineno, line in enumerate(f, 1):
                text = line.strip()
                if current is None:
                    m = _DOC_OPEN.match(text)
                    if m:
                        attrs = dict(_ATTR.findall(m.group(1)))
                        current = WikiArticle(
                            attrs.get("id", ""), html.unescape(attrs.get("title", "")), attrs.get("url", "")
                        )
                        seen_title = False
                    elif text:
                        raise DataCorruptError(
                            f"{path}:{lineno}: text outside a <doc> block (not a WikiExtractor dump?)"
                        )
                    continue
                if text == "</doc>":
                    n_docs += 1
                    yield current
                    current = None
                    continue
                if not text:
                    continue
                if not seen_title:
                    seen_title = True
                    if html.unescape(text).rstrip(".") == current.title:
                        continue
                current.paragraphs.append(text)
    except UnicodeDecodeError as err:
        raise DataCorruptError(f"{path}: not valid UTF-8 ({err})") from err
    except (lzma.LZMAError, EOFError) as err:
        raise DataCorruptError(f"{path}: not a valid .xz file ({err})") from err
    if current is not None:
        raise DataCorruptError(f"{path}: the last <doc> block (id {current.page_id}) has no </doc>")
    if n_docs == 0:
        raise DataCorruptError(f"{path}: no <doc> blocks (empty or not a WikiExtractor dump)")


def is_heading(paragraph: str) -> bool:
    """WikiExtractor keeps section headings as short lines ending in '.' ("Early life.")."""
    words = paragraph.split()
    return len(words) <= 8 and paragraph.endswith(".") and not any(c in ".?!" for c in paragraph[:-1])


def article_sentences(paragraphs: Sequence[str]) -> list[str]:
    """Sentences of an article's paragraphs, headings left out."""
    out: list[str] = []
    for para in paragraphs:
        if is_heading(para):
            continue
        out.extend(s for s in split_sentences(para) if any(c.isalnum() for c in s))
    return out


# --------------------------------------------------------------------------------------------
# writing the archive layout


@dataclass
class WikiBuildReport:
    out_dir: str
    articles_written: int
    articles_scanned: int
    articles_too_short: int
    sentences_written: int
    seconds: float

    def __str__(self) -> str:
        return (
            f"wrote {self.articles_written} articles ({self.sentences_written} sentences) to "
            f"{self.out_dir}; scanned {self.articles_scanned}, {self.articles_too_short} had "
            f"too few sentences; {self.seconds:.1f}s"
        )


def build_wiki(
    source_dump: str | os.PathLike,
    out_dir: str | os.PathLike,
    articles: int = 3029,
    sentences: int = 200,
    *,
    keep_all: bool = False,
    overwrite: bool = False,
    progress: bool = False,
) -> WikiBuildReport:
    """Write Wiki-N in the CURL archive layout from a WikiExtractor dump.

    Takes the first ``articles`` articles (dump order) that have at least ``sentences``
    sentences (by :func:`split_sentences`, headings left out) and writes each as
    ``out_dir/NNNN.txt``: its first ``sentences`` sentences, one per line (all of them with
    ``keep_all``), as the original Wiki-3029 has 200 per article. ``index.tsv`` lists label,
    page id, title, sentences in the article and sentences written. Reading stops once enough
    articles are found. The folder is written whole or not at all
    (:func:`qt_hard.files.atomic_folder`); an existing non-empty ``out_dir`` is an error unless
    ``overwrite``, which replaces only a Wiki-N folder this function wrote (its ``index.tsv``).
    ``out_dir`` may not be, hold or lie inside the dump (``qt_hard.paths.guard_output``).
    """
    from tqdm.auto import tqdm

    from qt_hard.errors import OutputExistsError
    from qt_hard.files import atomic_folder
    from qt_hard.paths import guard_output

    if articles < 1 or sentences < 1:
        raise ArgumentError(f"articles and sentences must be >= 1, got {articles}, {sentences}")
    source = Path(source_dump).expanduser()
    if not source.is_file():
        raise DataMissingError(f"no such WikiExtractor dump: {source}")
    out = Path(out_dir).expanduser()
    # Ownership (a model's or a run's own folders) is the command's check (qt_hard.data.cli): a run
    # builds its Wiki-N into its own cache.
    guard_output(out, "--out", inputs={"the source dump": source}, folder=True, owners=False)
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"--out {out} is a file, not a folder")
    replacing = out.exists() and any(out.iterdir())
    if replacing and not overwrite:
        raise OutputExistsError(f"--out {out} exists and is not empty (pass --overwrite to replace the Wiki-N there)")
    if replacing and not _is_wiki_folder(out):
        raise OutputExistsError(
            f"--out {out} holds files but no Wiki-N written by qt-hard data wiki (no index.tsv); "
            "--overwrite replaces only such a folder: pick another --out"
        )
    t0 = time.perf_counter()
    with (
        tqdm(total=articles, unit="article", desc="Wiki articles", disable=not progress) as bar,
        atomic_folder(out, "Wiki-N folder") as stage,
    ):
        counts = _write_articles(source, stage, articles, sentences, keep_all, bar)
    if replacing:
        log.info("--overwrite: replaced the Wiki-N in %s", out)
    return WikiBuildReport(str(out), articles, *counts, time.perf_counter() - t0)


INDEX_HEADER = "label\tpage_id\ttitle\tsentences_in_article\tsentences_written\tfile"


def _is_wiki_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a Wiki-N that :func:`build_wiki` wrote (its ``index.tsv`` header)."""
    try:
        with open(folder / "index.tsv", encoding="utf-8") as fh:
            return fh.readline().rstrip("\n") == INDEX_HEADER
    except (OSError, UnicodeDecodeError):
        return False


def _write_articles(source: Path, stage: Path, articles: int, sentences: int, keep_all: bool, bar):
    """The articles of :func:`build_wiki` and their ``index.tsv`` written into ``stage``; returns
    (articles scanned, too short, sentences written)."""
    width = max(4, len(str(articles - 1)))
    scanned = short = written_sents = 0
    index_rows = []
    for art in iter_wiki_articles(source):
        scanned += 1
        sents = art.sentences()
        if len(sents) < sentences:
            short += 1
            bar.set_postfix(scanned=scanned, too_short=short, refresh=False)
            continue
        label = len(index_rows)
        keep = sents if keep_all else sents[:sentences]
        name = f"{label:0{width}d}.txt"
        (stage / name).write_text("\n".join(keep) + "\n", encoding="utf-8")
        written_sents += len(keep)
        index_rows.append((label, art.page_id, art.title.replace("\t", " "), len(sents), len(keep), name))
        bar.update(1)
        bar.set_postfix(scanned=scanned, too_short=short, refresh=False)
        if len(index_rows) == articles:
            break
    if len(index_rows) < articles:
        raise ArgumentError(
            f"{source}: only {len(index_rows)} of {scanned} articles have >= {sentences} "
            f"sentences; {articles} were asked for"
        )
    with open(stage / "index.tsv", "w", encoding="utf-8") as f:
        f.write(INDEX_HEADER + "\n")
        for row in index_rows:
            f.write("\t".join(map(str, row)) + "\n")
    return scanned, short, written_sents


# --------------------------------------------------------------------------------------------
# reading the archive layout


def wiki_article_files(directory: str | os.PathLike) -> list[Path]:
    """The article files of a Wiki-N folder in label order (natural sort of the names)."""
    d = Path(directory).expanduser()
    if not d.is_dir():
        raise DataMissingError(f"no such Wiki-N folder: {d}")
    files = [p for p in d.iterdir() if p.is_file() and not p.name.startswith(".") and not _NOT_ARTICLES.match(p.name)]
    if not files:
        raise DataMissingError(f"{d}: no article files (one file per article expected)")
    return sorted(files, key=lambda p: [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", p.name)])


def _titles(directory: Path, files: list[Path]) -> list[str]:
    idx = directory / "index.tsv"
    by_file = {}
    if idx.exists():
        for line in idx.read_text(encoding="utf-8").splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) >= 6:
                by_file[parts[5]] = parts[2]
    return [by_file.get(f.name, f.stem) for f in files]


def _tokens_cached(
    sentences: list[str], key_parts: list, lower: bool, cache_dir: Path | None, num_proc: int
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """All sentences as ids into a raw token list: (raw_itos, flat ids, offsets)."""
    if cache_dir is None:
        return _tokenize_all(sentences, lower, num_proc)
    h = hashlib.sha256(json.dumps([TOKENIZER_VERSION, lower, key_parts]).encode()).hexdigest()[:20]
    path = cache_dir / f"wiki-tokens-{h}.npz"
    if path.exists():
        return _read_tokens(path, len(sentences))
    from qt_hard.files import atomic_path, build_lock

    with build_lock(path, "token cache"):  # one process tokenizes, the others wait and read its file
        if path.exists():
            return _read_tokens(path, len(sentences))
        itos, flat_arr, offsets = _tokenize_all(sentences, lower, num_proc)
        with atomic_path(path, "token cache") as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, itos=np.asarray(json.dumps(itos)), flat=flat_arr, offsets=offsets)
    return itos, flat_arr, offsets


def _read_tokens(path: Path, n_sentences: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """A token cache written by :func:`_tokens_cached`, checked whole (its arrays and their sizes); a
    damaged one is refused in one line naming it."""
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as z:
            itos, flat, offsets = json.loads(str(z["itos"])), z["flat"], z["offsets"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        reason = " ".join(str(err).split())[:120] or type(err).__name__
        raise DataCorruptError(f"token cache {path} is damaged ({reason}); delete it and it is made again") from None
    if len(offsets) != n_sentences + 1 or (len(offsets) and int(offsets[-1]) != len(flat)):
        raise DataCorruptError(
            f"token cache {path} is damaged ({len(offsets) - 1} sentences, expected {n_sentences}); "
            "delete it and it is made again"
        )
    return itos, flat, offsets


def _tokenize_chunk(args) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Tokens of some sentences as (chunk-local token list, flat int32 ids, lengths): compact
    to send between processes and to keep (no list of lists of str)."""
    sentences, lower = args
    stoi: dict[str, int] = {}
    flat: list[int] = []
    lens = np.zeros(len(sentences), dtype=np.int64)
    for i, s in enumerate(sentences):
        toks = word_tokens(s, lower=lower)
        lens[i] = len(toks)
        for t in toks:
            j = stoi.get(t)
            if j is None:
                j = stoi[t] = len(stoi)
            flat.append(j)
    return list(stoi), np.asarray(flat, dtype=np.int32), lens


def _tokenize_all(sentences: list[str], lower: bool, num_proc: int):
    """All sentences as ids into one raw token list: (itos, flat int32 ids, offsets)."""
    if num_proc <= 1 or len(sentences) < 20_000:
        parts = [_tokenize_chunk((sentences, lower))]
    else:
        step = max(1, len(sentences) // (num_proc * 8))
        chunks = [(sentences[i : i + step], lower) for i in range(0, len(sentences), step)]
        from qt_hard.workers import worker_pool

        with worker_pool(num_proc) as pool:
            parts = pool.map(_tokenize_chunk, chunks)
    stoi: dict[str, int] = {}
    flats, lens = [], []
    for itos_c, flat_c, lens_c in parts:
        lut = np.empty(len(itos_c), dtype=np.int32)
        for k, t in enumerate(itos_c):
            j = stoi.get(t)
            if j is None:
                j = stoi[t] = len(stoi)
            lut[k] = j
        flats.append(lut[flat_c] if len(flat_c) else flat_c)
        lens.append(lens_c)
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    if lens:
        np.cumsum(np.concatenate(lens), out=offsets[1:])
    flat = np.concatenate(flats) if flats else np.zeros(0, dtype=np.int32)
    return list(stoi), flat.astype(np.int32, copy=False), offsets


def class_members(labels: np.ndarray, num_classes: int) -> list[np.ndarray]:
    """Indices of each class's rows, ascending: ``out[c]`` = ``flatnonzero(labels == c)``."""
    labels = np.asarray(labels, dtype=np.int64)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(num_classes + 1))
    return [order[bounds[c] : bounds[c + 1]] for c in range(num_classes)]


def positive_pair_indices(members: Sequence[np.ndarray], epoch: int, seed: int = 0) -> np.ndarray:
    """``(P, 3)`` int64 rows ``(i, j, label)`` of one epoch's positive pairs (Ash et al. 2022,
    App. D.1): every class's sentence indices ``members[c]`` are shuffled and paired off (an odd
    one out sits the epoch out), then all pairs are shuffled across classes. A pure function
    of ``(epoch, seed)``."""
    rng = np.random.default_rng([int(seed), int(epoch), 0x5117])
    parts = []
    for c, idx in enumerate(members):
        if len(idx) < 2:
            continue
        perm = rng.permutation(idx)
        m = len(perm) // 2 * 2
        pairs = perm[:m].reshape(-1, 2)
        parts.append(np.column_stack([pairs, np.full(len(pairs), c, dtype=np.int64)]))
    if not parts:
        raise ValueError("no article has two training sentences: no positive pair can be made")
    allp = np.concatenate(parts).astype(np.int64)
    return allp[rng.permutation(len(allp))]


@dataclass(eq=False)
class WikiData:
    """Sentences labelled by article, split per article into train/test, with a vocabulary.

    Attributes: ``train_sentences``/``test_sentences`` (str), ``train_labels``/``test_labels``
    (int, the article's index), ``train_ids``/``test_ids`` (int64 arrays of token ids, rare
    tokens as ``vocab.unk_id``), ``vocab``, ``num_classes``, ``titles``.
    """

    train_sentences: list[str]
    train_labels: list[int]
    test_sentences: list[str]
    test_labels: list[int]
    vocab: Vocab
    num_classes: int
    train_ids: list[np.ndarray]
    test_ids: list[np.ndarray]
    titles: list[str] | None = None
    lower: bool = True

    def __post_init__(self):
        self.titles = self.titles or [str(i) for i in range(self.num_classes)]
        self._train_by_class = class_members(self.train_labels, self.num_classes)

    def __repr__(self) -> str:
        return (
            f"WikiData(classes={self.num_classes}, train={len(self.train_sentences)}, "
            f"test={len(self.test_sentences)}, vocab={len(self.vocab)})"
        )

    def encode(self, sentence: str) -> list[int]:
        """Token ids of a new sentence with this dataset's tokenizer and vocabulary."""
        return self.vocab.encode(word_tokens(sentence, lower=self.lower))

    def positive_pair_indices(self, epoch: int, seed: int = 0) -> np.ndarray:
        """``(P, 3)`` int64 rows ``(i, j, label)`` over the training sentences: see
        :func:`positive_pair_indices` (the same ``(epoch, seed)`` always gives the same pairs)."""
        return positive_pair_indices(self._train_by_class, epoch, seed)

    @classmethod
    def from_sentences(
        cls, sentences: Sequence[str], labels: Sequence[int], *, lower: bool = True, num_proc: int = 1, **split
    ) -> "WikiData":
        """Split, tokenize and build the vocabulary for any labelled sentences (labels 0..C-1)
        the way :func:`load_wiki` does (used for the synthetic corpus too); ``split``: the
        keywords of :meth:`from_tokens` (``train_fraction``, ``min_count``, ``seed``, ``titles``)."""
        if len(sentences) != len(labels):
            raise ValueError(f"{len(sentences)} sentences but {len(labels)} labels")
        labels_arr = np.asarray(labels, dtype=np.int64)
        if len(labels_arr) == 0:
            raise ValueError("no sentences")
        if labels_arr.min() < 0:
            raise ValueError("labels must be >= 0")
        return cls.from_tokens(
            sentences, labels_arr, *_tokenize_all(list(sentences), lower, num_proc), lower=lower, **split
        )

    @classmethod
    def from_tokens(
        cls,
        sentences: Sequence[str],
        labels,
        itos: list[str],
        flat: np.ndarray,
        offsets: np.ndarray,
        *,
        train_fraction: float = 0.8,
        min_count: int = 50,
        seed: int = 0,
        lower: bool = True,
        titles=None,
        vocab: Vocab | None = None,
    ) -> "WikiData":
        """Split and build the vocabulary from already tokenized sentences: sentence ``i`` is
        ``[itos[t] for t in flat[offsets[i]:offsets[i+1]]]``. The split of class ``c`` depends
        only on ``seed`` and the classes before it, so the first N classes of a larger corpus
        split exactly as a corpus of N classes would (Wiki-N from Wiki-3029's tokens).
        ``vocab``: use this vocabulary (tokens outside it become ``<unk>``) instead of counting
        one over this training split (:func:`wiki_prefix`'s ``vocab_classes``)."""
        labels_arr = np.asarray(labels, dtype=np.int64)
        if len(offsets) != len(labels_arr) + 1:
            raise ValueError(f"{len(labels_arr)} labels but {len(offsets) - 1} tokenized sentences")
        num_classes = int(labels_arr.max()) + 1
        train_idx, test_idx = _split(labels_arr, num_classes, train_fraction, seed)
        flat = flat[: offsets[-1]]  # the tokens of a prefix of a larger corpus
        if vocab is None:
            vocab = _train_vocab(itos, flat, offsets, train_idx, min_count)
        lut = np.asarray([vocab.stoi.get(t, vocab.unk_id) for t in itos], dtype=np.int64)
        mapped = lut[flat] if len(flat) else np.zeros(0, dtype=np.int64)

        def ids(idx):
            return [mapped[offsets[i] : offsets[i + 1]] for i in idx]

        sents = list(sentences)
        return cls(
            train_sentences=[sents[i] for i in train_idx],
            train_labels=labels_arr[train_idx].tolist(),
            test_sentences=[sents[i] for i in test_idx],
            test_labels=labels_arr[test_idx].tolist(),
            vocab=vocab,
            num_classes=num_classes,
            train_ids=ids(train_idx),
            test_ids=ids(test_idx),
            titles=titles,
            lower=lower,
        )


def _split(labels: np.ndarray, num_classes: int, train_fraction: float, seed: int):
    """The 80/20 split per class (``train_fraction``): sorted (train, test) sentence indices. Class
    ``c``'s split depends only on ``seed`` and the classes before it."""
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    rng = np.random.default_rng(seed)
    train_idx, test_idx = [], []
    for idx in class_members(labels, num_classes):
        n = len(idx)
        if n == 0:
            continue
        n_train = int(round(train_fraction * n))
        n_train = min(max(n_train, 1), n - 1) if n >= 2 else n
        perm = rng.permutation(n)
        train_idx.append(np.sort(idx[perm[:n_train]]))
        test_idx.append(np.sort(idx[perm[n_train:]]))
    train_idx = np.concatenate(train_idx)
    test_idx = np.concatenate(test_idx) if test_idx else np.zeros(0, dtype=np.int64)
    return train_idx, test_idx


def _train_vocab(
    itos: list[str], flat: np.ndarray, offsets: np.ndarray, train_idx: np.ndarray, min_count: int
) -> Vocab:
    """The vocabulary of the tokens seen at least ``min_count`` times in the training sentences
    ``train_idx`` (Ash et al.: "in the training set"); ``flat``/``offsets`` as :meth:`WikiData.from_tokens`."""
    lens = offsets[1:] - offsets[:-1]
    tr_mask = np.zeros(len(lens), dtype=bool)
    tr_mask[train_idx] = True
    counts = np.bincount(flat[: offsets[-1]][np.repeat(tr_mask, lens)], minlength=len(itos))
    return Vocab.from_counts({itos[k]: int(counts[k]) for k in np.flatnonzero(counts)}, min_count=min_count)


def load_wiki(
    directory: str | os.PathLike,
    classes: int | None = None,
    train_fraction: float = 0.8,
    min_count: int = 50,
    seed: int = 0,
    *,
    lower: bool = True,
    cache_dir: str | os.PathLike | None = None,
    num_proc: int | None = None,
) -> WikiData:
    """Read a Wiki-N folder (one article per file, one sentence per line) into ``WikiData``.

    ``classes``: keep the first N articles (all when None). The split is 80/20 per article
    (``train_fraction``), drawn with ``seed``. Tokens (Treebank word tokens, lower-cased unless
    ``lower=False``) seen fewer than ``min_count`` times in the training split become
    ``<unk>``. Tokenization is cached under ``cache_dir`` (default
    ``default_cache_dir()/wiki``), keyed by the files' paths, sizes and mtimes; pass
    ``cache_dir=False`` to disable. An article file with fewer than 2 sentences is an error
    that names it.
    """
    tokenized = tokenize_wiki(directory, classes, lower=lower, cache_dir=cache_dir, num_proc=num_proc)
    return _wiki_data(tokenized, None, None, directory, train_fraction, min_count, seed, lower)


def tokenize_wiki(
    directory: str | os.PathLike,
    classes: int | None = None,
    *,
    lower: bool = True,
    cache_dir: str | os.PathLike | None | bool = None,
    num_proc: int | None = None,
):
    """The first ``classes`` articles of a Wiki-N folder, read and word-tokenized (no split, no
    vocabulary): ``(sentences, labels, titles, (itos, flat, offsets))`` with sentence ``i``'s
    tokens ``itos[flat[offsets[i]:offsets[i+1]]]``; labels ascend, so the sentences of the first
    N < ``classes`` articles are a prefix. Cached as :func:`load_wiki` says."""
    from .books import default_cache_dir

    d = Path(directory).expanduser()
    files = wiki_article_files(d)
    if classes is not None:
        if classes < 1:
            raise ArgumentError(f"classes must be >= 1, got {classes}")
        if classes > len(files):
            raise ArgumentError(f"{d} has {len(files)} articles; {classes} classes were asked for")
        files = files[:classes]
    sentences: list[str] = []
    labels: list[int] = []
    key_parts = [SPLITTER_VERSION]
    for label, f in enumerate(files):
        try:  # one sentence a line, blank lines skipped
            lines = [ln.strip() for ln in f.read_bytes().decode("utf-8-sig").splitlines() if ln.strip()]
        except UnicodeDecodeError as err:
            raise DataCorruptError(f"{f}: not valid UTF-8 (byte {err.start})") from err
        if len(lines) < 2:
            raise DataCorruptError(f"{f}: an article needs at least 2 sentences, found {len(lines)}")
        sentences.extend(lines)
        labels.extend([label] * len(lines))
        st = f.stat()
        key_parts.append([str(f.resolve()), st.st_size, st.st_mtime_ns])
    if cache_dir is False:
        cache = None
    else:
        cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir() / "wiki"
    nproc = num_proc if num_proc is not None else min(os.cpu_count() or 1, 4)
    tokens = _tokens_cached(sentences, key_parts, lower, cache, nproc)
    return sentences, labels, _titles(d, files), tokens


def wiki_prefix(
    directory: str | os.PathLike,
    classes: int | None,
    train_fraction: float = 0.8,
    min_count: int = 50,
    seed: int = 0,
    *,
    lower: bool = True,
    cache_dir: str | os.PathLike | None = None,
    num_proc: int | None = None,
    vocab_classes: int | None = None,
) -> WikiData:
    """Wiki-N as the first ``classes`` articles (all when None) of a larger Wiki folder: the whole folder is
    tokenized once (cached as :func:`load_wiki` says, so every N shares one tokenization) and
    Wiki-N is a prefix of its sentences; the split is Wiki-N's own (:meth:`WikiData.from_tokens`,
    the first N articles of any larger prefix split alike), equal to :func:`load_wiki` of an
    N-article folder.

    The vocabulary is Wiki-N's own (tokens seen ``min_count`` times in Wiki-N's training split)
    unless ``vocab_classes`` (>= ``classes``) names a larger prefix whose training split it is
    counted over: ``vocab_classes=3029`` gives every Wiki-N the vocabulary of Wiki-3029, the one
    dataset of Ash et al. (section 5: Wiki-N removes the sentences of all but the first N
    articles from Wiki-3029's training and test sets, V = 15,807)."""
    tokenized = tokenize_wiki(directory, None, lower=lower, cache_dir=cache_dir, num_proc=num_proc)
    return _wiki_data(tokenized, classes, vocab_classes, directory, train_fraction, min_count, seed, lower)


def _wiki_data(
    tokenized, classes, vocab_classes, directory, train_fraction: float, min_count: int, seed: int, lower: bool
) -> WikiData:
    """The ``WikiData`` of the first ``classes`` articles (all when None) of a :func:`tokenize_wiki`
    result, its vocabulary counted over the first ``vocab_classes`` articles' training split when
    given (:func:`wiki_prefix`)."""
    sentences, labels, titles, (itos, flat, offsets) = tokenized
    labels = np.asarray(labels)
    n = len(labels) if classes is None else _prefix_end(labels, classes, directory)
    vocab = None
    if vocab_classes is not None:
        if vocab_classes < classes:
            raise ValueError(f"vocab_classes ({vocab_classes}) must be >= classes ({classes})")
        m = _prefix_end(labels, vocab_classes, directory)
        train_m, _ = _split(labels[:m].astype(np.int64), vocab_classes, train_fraction, seed)
        vocab = _train_vocab(itos, flat, offsets[: m + 1], train_m, min_count)
    return WikiData.from_tokens(
        sentences[:n],
        labels[:n],
        itos,
        flat,
        offsets[: n + 1],
        train_fraction=train_fraction,
        min_count=min_count,
        seed=seed,
        lower=lower,
        titles=titles[:classes],
        vocab=vocab,
    )


def _prefix_end(labels: np.ndarray, classes: int, directory) -> int:
    """The number of sentences of the first ``classes`` articles (labels ascend)."""
    n = int(np.searchsorted(labels, classes))
    if n == 0 or labels[n - 1] != classes - 1:
        raise ValueError(f"{directory} has {int(labels.max()) + 1} articles; {classes} classes were asked for")
    return n


def prepare_wiki(
    folder: Path,
    token_dir: Path,
    articles: int,
    min_sentences: int,
    classes: int,
    source: str | os.PathLike | None = None,
) -> int:
    """Build the Wiki folder ``folder`` (``articles`` articles of at least ``min_sentences``
    sentences, :func:`build_wiki`, from ``source``, by default
    ``$QT_HARD_DATA/wikipedia/enwiki_wikiextractor_ge200sent.txt.xz``) unless it is there, and
    tokenize all of it once into ``token_dir`` (:func:`tokenize_wiki`), so that every Wiki-N with N up
    to ``classes`` is a prefix of those tokens (:func:`wiki_prefix`). Returns the number of articles;
    ArgumentError (a ValueError) when the folder has fewer than ``classes``."""
    from qt_hard.paths import data_path

    t0 = time.perf_counter()
    folder = Path(folder)
    if not folder.exists():
        source = source or str(data_path("wikipedia", "enwiki_wikiextractor_ge200sent.txt.xz"))
        log.info("building Wiki-%d from %s into %s", articles, source, folder)
        log.info("%s", build_wiki(source, folder, articles=articles, sentences=min_sentences))
    sentences, labels, _, _ = tokenize_wiki(folder, None, cache_dir=token_dir, num_proc=os.cpu_count())
    found = labels[-1] + 1
    if classes > found:
        raise ArgumentError(f"{folder} has {found} articles; the grid asks for N={classes}")
    log.info("tokenized %d sentences of %d articles in %.1fs", len(sentences), found, time.perf_counter() - t0)
    return found
