"""Ordered-sentence corpora: a folder of local books, or BookCorpus from the Hugging Face hub, each a
``datasets.Dataset`` of one sentence per row in book order: ``text``, ``doc_id`` (int32, which book:
positives never cross two books) and ``sent_id`` (int32, the sentence's index in its book). How the
books are cleaned, split and cached: docs/guides/data.md, "Local books".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import lzma
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Iterator, Sequence

from qt_hard.errors import DataCorruptError, DataMissingError
from qt_hard.files import build_lock

from .tokenize import SPLITTER_VERSION, split_sentences

BOOK_SUFFIXES = (".txt", ".txt.xz")
_FORMAT_VERSION = "books-1"


class BookError(DataCorruptError):
    """A book file that cannot be read; the message names the file."""


# --------------------------------------------------------------------------------------------
# cache location


def default_cache_dir() -> Path:
    """``$QT_HARD_CACHE`` or ``~/.cache/qt_hard``."""
    env = os.environ.get("QT_HARD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "qt_hard"


# --------------------------------------------------------------------------------------------
# reading one book


def find_books(path: str | os.PathLike, max_books: int | None = None) -> list[Path]:
    """The book files at ``path`` (one file, or every ``.txt``/``.txt.xz`` below a folder,
    sorted by relative path)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise DataMissingError(f"no such book file or folder: {p}")
    if p.is_file():
        if not p.name.endswith(BOOK_SUFFIXES):
            raise BookError(f"{p}: not a book file (expected .txt or .txt.xz)")
        files = [p]
    else:
        files = sorted(
            (f for f in p.rglob("*") if f.is_file() and f.name.endswith(BOOK_SUFFIXES) and not f.name.startswith(".")),
            key=lambda f: f.relative_to(p).as_posix(),
        )
        if not files:
            raise DataMissingError(f"{p}: no .txt or .txt.xz books in this folder")
    if max_books is not None:
        if max_books < 1:
            raise ValueError(f"max_books must be >= 1, got {max_books}")
        files = files[:max_books]
    return files


def read_book_text(path: str | os.PathLike) -> str:
    """The decoded text of one ``.txt`` or ``.txt.xz`` book (UTF-8; newlines normalized)."""
    p = Path(path)
    try:
        if p.name.endswith(".xz"):
            with lzma.open(p, "rb") as f:
                raw = f.read()
        else:
            raw = p.read_bytes()
    except (lzma.LZMAError, EOFError) as err:
        # A truncated .xz ends the stream early: lzma raises EOFError, not LZMAError.
        raise BookError(f"{p}: not a valid .xz file ({err or 'the file ends before its end marker'})") from err
    except OSError as err:
        raise BookError(f"{p}: cannot be read ({err})") from err
    if not raw.strip():
        raise BookError(f"{p}: the book is empty")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise BookError(f"{p}: not valid UTF-8 (byte {err.start}: {raw[err.start : err.start + 4]!r})") from err
    return text.replace("\r\n", "\n").replace("\r", "\n")


_PG_START = re.compile(
    r"^\s*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG.*$"
    r"|^\s*\*END\*\s*THE SMALL PRINT.*$",
    re.IGNORECASE | re.MULTILINE,
)
_PG_END = re.compile(
    r"^\s*\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG.*$"
    r"|^\s*End of (?:the |this )?Project Gutenberg.*$",
    re.IGNORECASE | re.MULTILINE,
)


def strip_gutenberg(text: str) -> str:
    """Cut Project Gutenberg's header and footer when their markers are there."""
    m = _PG_START.search(text)
    if m:
        text = text[m.end() :]
    m = _PG_END.search(text)
    if m:
        text = text[: m.start()]
    return text


_NUMBER_WORDS = (
    r"(?:[IVXLCDM]+|\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty"
    r"|forty|fifty|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth"
    r"|last|the\s+\w+)"
)
_HEADING = re.compile(
    r"^(?:chapter|book|part|volume|vol\.|stave|section|canto|letter|appendix)\s+" + _NUMBER_WORDS + r"\b"
    r"|^(?:preface|introduction|contents|table of contents|epilogue|prologue|the end|finis"
    r"|conclusion|postscript|afterword|foreword|note|notes)\W*$",
    re.IGNORECASE,
)
_ROMAN_OR_NUMBER = re.compile(r"^[\[(]?(?:[IVXLCDM]+|\d+)[.)\]]?$")
_CREDITS = re.compile(
    r"^(?:produced by|prepared by|transcribed by|transcribed from|e-?text prepared|this e-?(?:text|book)"
    r"|scanned by|proofread by|html version|an anonymous volunteer|the project gutenberg"
    r"|copyright\b|all rights reserved|by the same author|published by|printed (?:by|in)\b)",
    re.IGNORECASE,
)
_ILLUSTRATION = re.compile(r"\[(?:illustration|picture|frontispiece)[^\]]*\]", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"(?:\s{2,}|\.{2,}\s*)(?:\d+|[ivxlc]+)$|\s\d+$")
_TERMINAL_END = re.compile(r"[.?!…][\"'”’)\]]*$")
_FUNCTION_WORDS = frozenset("a an the and or of in on to for by with at from as but nor into upon its his her".split())


class _CharFilter(dict):
    """A ``str.translate`` table that keeps the characters ``keep(c)`` accepts and deletes the rest,
    deciding each code point once (the filtering then runs in C instead of a per-character Python
    loop, which made the heading test the largest cost of splitting a book)."""

    def __init__(self, keep):
        super().__init__()
        self.keep = keep

    def __missing__(self, code: int):
        value = code if self.keep(chr(code)) else None
        self[code] = value
        return value


_LETTERS = _CharFilter(str.isalpha)
_LOWER = _CharFilter(str.islower)
_UPPER = _CharFilter(str.isupper)


def _is_heading_line(line: str) -> bool:
    """A title, heading, table-of-contents or credit line rather than prose."""
    s = line.strip()
    if not s:
        return True
    letters = s.translate(_LETTERS)
    if not letters:
        return True  # "* * * * *", "1.", page numbers
    if not letters.translate(_LOWER):
        return True  # "CHAPTER I", "EMMA", "THE TELEGRAM."
    n_letters = len(letters)
    if n_letters >= 8 and len(letters.translate(_UPPER)) >= 0.7 * n_letters:
        return True  # "“A MAN ENTERED” Facing p. 8" (lists of illustrations)
    words = s.split()
    if len(words) <= 14 and _PAGE_NUMBER.search(s):
        return True  # table of contents: "Lucy Westenra's Diary      135"
    if s[0] in "\"“‘'":
        return False  # dialogue
    if len(words) <= 12 and _HEADING.match(s):
        return True
    if _ROMAN_OR_NUMBER.match(words[0]) and len(words) <= 12 and not _TERMINAL_END.search(s):
        return True  # "1. Beautiful As the Day", "XII The Storm"
    # Short title-case lines: "By Jane Austen", "Translated by Ellen Marriage", "To Louis
    # Boulanger, Painter." (a final period only on lines of 2 to 6 words: "Silence." is prose).
    if len(words) <= 10:
        ends = _TERMINAL_END.search(s)
        if not ends or (2 <= len(words) <= 6 and s.rstrip("\"'”’)]").endswith(".")):
            content = [w for w in (w.strip("\"'“”‘’()[],.;:-") for w in words) if w]
            content = [w for w in content if w.lower() not in _FUNCTION_WORDS]
            if not content or all(w[0].isupper() or not w[0].isalpha() for w in content):
                return True
    return False


def _join_lines(lines: list[str]) -> str:
    """Join hard-wrapped lines; a word hyphenated across a wrap keeps its hyphen, no space."""
    parts = [lines[0]]
    tail = lines[0][-2:]  # the last two characters of the text joined so far
    for ln in lines[1:]:
        if tail.endswith("-") and tail != "--" and tail[-2:-1].isalpha() and ln[:1].islower():
            parts.append(ln)
            tail = (tail + ln)[-2:]
        else:
            parts.append(" ")
            parts.append(ln)
            tail = (" " + ln)[-2:]
    return "".join(parts)


def book_paragraphs(text: str) -> Iterator[str]:
    """Prose paragraphs of a book: hard wraps joined, headings and front matter dropped."""
    text = strip_gutenberg(text)
    text = _ILLUSTRATION.sub(" ", text)
    for block in re.split(r"\n[ \t]*\n", text):
        lines = [ln.strip() for ln in block.split("\n") if ln.strip()]
        if not lines:
            continue
        if _CREDITS.match(lines[0]):
            continue
        if all(_is_heading_line(ln) for ln in lines):
            continue
        para = _join_lines(lines)
        # "_word_" marks italics in Gutenberg texts: drop the markers.
        para = para.replace("_", "")
        if para.startswith("[") and para.endswith("]"):
            continue  # [Footnote ...], [Transcriber's note ...]
        yield para


# re's \w is str.isalnum() plus "_", so [^\W_] is exactly the characters with isalnum().
_ALNUM = re.compile(r"[^\W_]")


def book_sentences(path: str | os.PathLike) -> Iterator[str]:
    """The sentences of one book file, in order."""
    for para in book_paragraphs(read_book_text(path)):
        for sent in split_sentences(para):
            if _ALNUM.search(sent):  # a word, not punctuation alone
                yield sent


# --------------------------------------------------------------------------------------------
# the dataset


def _features():
    from datasets import Features, Value

    return Features({"text": Value("string"), "doc_id": Value("int32"), "sent_id": Value("int32")})


def _book_rows(job: tuple[int, str, int]) -> tuple[int, list[str]]:
    """(doc_id, sentences) of one book; no sentences when it has fewer than ``min_sentences``."""
    doc_id, path, min_sentences = job
    sents = list(book_sentences(path))
    return doc_id, sents if len(sents) >= min_sentences else []


def default_num_proc() -> int:
    """The CPUs this process may run on (the splitting workers' default)."""
    from qt_hard.workers import usable_cpus

    return usable_cpus()


# Fewer books than this are split in the calling process: a pool's start-up costs more than it saves.
_POOL_MIN_BOOKS = 8


def book_rows(
    files: Sequence[Path], min_sentences: int = 2, num_proc: int | None = None, progress: bool = False
) -> Iterator[tuple[int, list[str]]]:
    """(doc_id, sentences) of each book, in file order, as the books are split: no more than the
    books being split and those finished ahead of the oldest are held, so a corpus of any size is
    split in bounded memory. ``num_proc`` worker processes (default: the usable CPUs) each split
    whole books. A book with fewer than ``min_sentences`` sentences gives no sentences.
    """
    jobs = [(i, str(f), min_sentences) for i, f in enumerate(files)]
    nproc = min(num_proc or default_num_proc(), len(jobs))
    from tqdm.auto import tqdm

    with (
        tqdm(total=len(jobs), desc="splitting books", unit="book", dynamic_ncols=True, disable=not progress) as bar,
        contextlib.ExitStack() as stack,
    ):
        if nproc <= 1 or len(jobs) < _POOL_MIN_BOOKS:
            results = map(_book_rows, jobs)
        else:
            from qt_hard.workers import worker_pool

            # Terminated on leaving, also on an error; its workers leave signals to this process.
            pool = stack.enter_context(worker_pool(nproc, start="fork"))
            # In file order, one book a task: the rows can be written as they come.
            results = pool.imap(_book_rows, jobs, chunksize=1)
        for doc_id, sents in results:
            bar.update(1)
            yield doc_id, sents


def split_books(
    files: Sequence[Path], min_sentences: int = 2, num_proc: int | None = None, progress: bool = False
) -> tuple[list[str], list[int], list[int], list[int]]:
    """Split books into sentences: (texts, doc_ids, sent_ids, sentences per book), rows in book order
    (:func:`book_rows`, collected in memory)."""
    texts: list[str] = []
    doc: list[int] = []
    sent: list[int] = []
    counts: list[int] = []
    for i, sents in book_rows(files, min_sentences, num_proc, progress):
        counts.append(len(sents))
        texts.extend(sents)
        doc.extend([i] * len(sents))
        sent.extend(range(len(sents)))
    return texts, doc, sent, counts


def _cache_key(files: Sequence[Path], params: dict) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"format": _FORMAT_VERSION, "splitter": SPLITTER_VERSION, **params}, sort_keys=True).encode())
    for f in files:
        st = f.stat()
        h.update(f"\0{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()[:20]


def load_books(
    path_or_dir: str | os.PathLike,
    max_books: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    *,
    min_sentences: int = 2,
    num_proc: int | None = None,
    progress: bool = False,
):
    """Load local books as an ordered-sentence ``datasets.Dataset`` (columns above).

    ``path_or_dir``: one book file or a folder searched recursively for ``.txt``/``.txt.xz``
    books (sorted by relative path; ``doc_id`` is the book's index in that order).
    ``max_books``: only the first N books. ``cache_dir``: where the Arrow copy lives (default
    ``default_cache_dir()/books``). ``min_sentences``: books with fewer sentences cannot give a
    positive pair; they are left out with a warning that names them (their ``doc_id`` is
    skipped, so ids stay tied to the file order). ``num_proc``: worker processes for the first
    (splitting) pass. Raises ``FileNotFoundError`` for a missing path or a folder without books
    and ``BookError`` (a ``ValueError``) naming the file for an empty or undecodable book.

    The file list of a built dataset and per-book counts are in ``<cache>/books.json``;
    ``dataset.info.description`` holds the cache folder. ``progress`` shows ``datasets``'
    progress bars while building.
    """
    args = (path_or_dir, max_books, cache_dir, min_sentences, num_proc, progress)
    try:
        from datasets import load_from_disk
    except ImportError:  # a machine without `datasets` (e.g. a bare GPU box): plain files instead
        return _read_plain_cache(_book_cache("books-plain", ("books.json",), _build_plain_cache, *args))
    # An Arrow cache is finished when it has both files (they are renamed in together).
    return load_from_disk(str(_book_cache("books", ("dataset_info.json", "books.json"), _build_arrow_cache, *args)))


def _book_cache(name: str, needs, build, path_or_dir, max_books, cache_dir, min_sentences, num_proc, progress) -> Path:
    """The cache folder ``<cache_dir>/<name>-<key>`` of the books at ``path_or_dir`` (key: their paths,
    sizes and times, ``min_sentences`` and the splitter version), built by ``build`` unless it holds
    the files ``needs``. One process builds, the others (ranks of one launch, runs sharing the cache)
    wait and read it."""
    files = find_books(path_or_dir, max_books)
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir() / "books"
    target = root / f"{name}-{_cache_key(files, {'min_sentences': min_sentences})}"

    def done() -> bool:
        return all((target / f).is_file() for f in needs)

    if not done():
        with build_lock(target, "book cache"):
            if not done():
                build(files, root, target, path_or_dir, min_sentences, num_proc, progress)
    return target


def _build_arrow_cache(files, root: Path, target: Path, path_or_dir, min_sentences: int, num_proc, progress) -> None:
    """Split ``files`` into sentences and save them as the Arrow cache ``target`` (under
    :func:`qt_hard.files.build_lock`)."""
    # A bad book (empty, not UTF-8, broken .xz) raises a BookError that names it from the worker
    # that reads it, and the pool stops. The rows go to an Arrow file book by book (memory bounded
    # by a few books, whatever the corpus), which is then saved as the cache.
    work = _staging(root)
    try:
        with _progress_bars(progress):
            counts = _write_book_rows(files, min_sentences, num_proc, progress, work / "rows.arrow")
            skipped = _skipped_books(files, counts, path_or_dir, min_sentences)
            _save_books_cache(work, target, files, counts, skipped, min_sentences)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write_book_rows(files: Sequence[Path], min_sentences: int, num_proc, progress: bool, path: Path) -> list[int]:
    """Write the books' rows to the Arrow file ``path`` book by book; the sentences of each book."""
    from datasets.arrow_writer import ArrowWriter

    counts: list[int] = []
    writer = ArrowWriter(features=_features(), path=str(path))
    try:
        for doc_id, sents in book_rows(files, min_sentences, num_proc, progress):
            counts.append(len(sents))
            if sents:
                n = len(sents)
                writer.write_batch({"text": sents, "doc_id": [doc_id] * n, "sent_id": list(range(n))})
        writer.finalize()
    finally:
        writer.close()
    return counts


def _skipped_books(files: Sequence[Path], counts: list[int], path_or_dir, min_sentences: int) -> list[str]:
    """The books left out (no sentences kept), each with a warning to :func:`load_books`' caller (in
    either cache format); BookError when that is every book."""
    skipped = [str(files[i]) for i, c in enumerate(counts) if c == 0]
    if len(skipped) == len(files):
        raise BookError(f"no book in {path_or_dir} has {min_sentences} or more sentences: " + ", ".join(skipped[:5]))
    for s in skipped:
        warnings.warn(f"{s}: fewer than {min_sentences} sentences, left out", stacklevel=5)
    return skipped


def _save_books_cache(work: Path, target: Path, files, counts, skipped, min_sentences: int) -> None:
    """Save ``work/rows.arrow`` as the dataset with its ``books.json``, then move it to ``target``."""
    from datasets import Dataset, DatasetInfo

    ds = Dataset.from_file(
        str(work / "rows.arrow"),
        info=DatasetInfo(features=_features(), description=f"qt_hard.data.books cache {target}"),
    )
    ds.save_to_disk(str(work / "final"))
    rows = len(ds)
    del ds
    _publish(work / "final", target, files, counts, min_sentences, rows, skipped=skipped)


def _publish(staged: Path, target: Path, files, counts, min_sentences: int, rows: int, **skipped) -> None:
    """Write ``books.json`` (the files, sentences per book, ``skipped`` where given, the parameters)
    into the built cache ``staged``, then move it to ``target``."""
    meta = {
        "files": [str(f) for f in files],
        "sentences_per_book": counts,
        **skipped,
        "min_sentences": min_sentences,
        "splitter": SPLITTER_VERSION,
        "rows": rows,
    }
    (staged / "books.json").write_text(json.dumps(meta, indent=1))
    if target.exists():  # a half-written copy from an interrupted run
        shutil.rmtree(target)
    os.replace(staged, target)


def _staging(root: Path) -> Path:
    """A new staging folder below ``root`` (made when missing)."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".build-", dir=root))


class SentenceTable:
    """The columns of :func:`load_books` without ``datasets``: ``text`` (list), ``doc_id`` and
    ``sent_id`` (int32 arrays); ``len``, ``select(indices)``, ``ds[name]`` and :func:`dataset_column`
    work on it as on the ``datasets.Dataset``."""

    def __init__(self, text, doc_id, sent_id, cache_files=()):
        import numpy as np

        self.columns = {
            "text": list(text),
            "doc_id": np.asarray(doc_id, dtype=np.int32),
            "sent_id": np.asarray(sent_id, dtype=np.int32),
        }
        self.cache_files = list(cache_files)
        self.column_names = list(self.columns)

    def __len__(self) -> int:
        return len(self.columns["text"])

    def __getitem__(self, name: str):
        return self.columns[name]

    def select(self, indices) -> "SentenceTable":
        import numpy as np

        idx = np.asarray(list(indices), dtype=np.int64)
        return SentenceTable(
            [self.columns["text"][i] for i in idx],
            self.columns["doc_id"][idx],
            self.columns["sent_id"][idx],
            self.cache_files,
        )


def _read_plain_cache(target: Path) -> SentenceTable:
    """:func:`load_books` for machines without ``datasets``: the same rows, cached as plain files
    (``sentences.txt``, one sentence a line, and ``ids.npz``) under the same content key."""
    import numpy as np

    z = np.load(target / "ids.npz")
    text = (target / "sentences.txt").read_text(encoding="utf-8").split("\n")[: len(z["doc_id"])]
    return SentenceTable(text, z["doc_id"], z["sent_id"], [{"filename": str(target / "ids.npz")}])


def _build_plain_cache(files, root: Path, target: Path, path_or_dir, min_sentences: int, num_proc, progress) -> None:
    """The plain-file book cache ``target`` of :func:`_read_plain_cache` (under
    :func:`qt_hard.files.build_lock`)."""
    import numpy as np

    text, doc, sent, counts = split_books(files, min_sentences, num_proc, progress)
    _skipped_books(files, counts, path_or_dir, min_sentences)
    staged = _staging(root)
    (staged / "sentences.txt").write_text("\n".join(text), encoding="utf-8")
    np.savez(staged / "ids.npz", doc_id=np.asarray(doc, dtype=np.int32), sent_id=np.asarray(sent, dtype=np.int32))
    _publish(staged, target, files, counts, min_sentences, len(text))


@contextlib.contextmanager
def _progress_bars(show: bool):
    """Show or hide ``datasets``' progress bars for the duration, then restore the setting."""
    import datasets

    was_disabled = datasets.are_progress_bars_disabled()
    if show:
        datasets.enable_progress_bars()
    else:
        datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_disabled:
            datasets.disable_progress_bars()
        else:
            datasets.enable_progress_bars()


def dataset_column(ds, name: str, numpy: bool = False):
    """One whole column of a ``datasets.Dataset`` in one Arrow read: a list, or a numpy array.

    Use this rather than ``np.asarray(ds[name])`` / ``list(ds[name])``: in ``datasets`` 4+
    ``ds[name]`` is a lazy ``Column`` that converts row by row (about 10 minutes for the 1.3 M
    ``doc_id`` values of the local books; this takes well under a second).
    """
    if isinstance(ds, SentenceTable):
        return ds[name] if numpy or name == "text" else ds[name].tolist()
    if numpy:
        return ds.with_format("numpy", columns=[name])[:][name]
    return ds.with_format(None, columns=[name])[:][name]


def text_chunks(ds, size: int = 50_000) -> Iterator[list[str]]:
    """The ``text`` column of a :func:`load_books` dataset (or a ``SentenceTable``) in lists of
    ``size`` sentences, read a slice at a time: the corpus's sentences are never all Python strings
    at once."""
    view = None if isinstance(ds, SentenceTable) else ds.with_format(None, columns=["text"])
    for start in range(0, len(ds), size):
        yield ds["text"][start : start + size] if view is None else view[start : start + size]["text"]


def books_metadata(ds) -> dict:
    """The ``books.json`` written beside a dataset from :func:`load_books`."""
    for cache in ds.cache_files:
        meta = Path(cache["filename"]).parent / "books.json"
        if meta.exists():
            return json.loads(meta.read_text())
    raise FileNotFoundError("this dataset was not made by load_books (no books.json beside it)")


# --------------------------------------------------------------------------------------------
# BookCorpus from the hub

# HF ``bookcorpus`` is one lower-cased, pre-tokenized sentence per row with no book marks.
# Smashwords books open with a copyright page, so a row like "copyright 2012 jane doe" or
# "isbn : 978..." is taken as the start of a new book (the first such row in a cluster).
BOOKCORPUS_BOUNDARY = (
    r"^\s*(?:copyright\b|all rights reserved|isbn\b|smashwords edition|published by\b"
    r"|this book is a work of fiction|license notes)"
)


def load_hf_bookcorpus(
    name: str = "bookcorpus",
    split: str = "train",
    *,
    data_files=None,
    dataset=None,
    cache_dir: str | os.PathLike | None = None,
    max_rows: int | None = None,
    boundary_pattern: str | None = BOOKCORPUS_BOUNDARY,
    min_doc_rows: int = 50,
    num_proc: int | None = None,
    **load_kwargs,
):
    """BookCorpus (or any one-sentence-per-row ``text`` dataset) with ``doc_id``/``sent_id``.

    Loads ``datasets.load_dataset(name, split=split, data_files=..., cache_dir=...)`` unless a
    ``dataset`` with a ``text`` column is given (a local stand-in for tests:
    ``name="text", data_files=...`` works too). The hub copy needs a network.

    Book boundaries are not marked in BookCorpus. A row matching ``boundary_pattern``
    (case-insensitive; default: the copyright-page lines Smashwords books open with) starts a
    new ``doc_id`` unless the current one is shorter than ``min_doc_rows`` rows (one copyright
    page has several such lines). ``boundary_pattern=None`` makes the whole corpus one document.
    A book whose copyright page is missing stays joined to its neighbour, so at most one
    positive pair per missed boundary crosses books. Rows are kept in corpus order.
    """
    import numpy as np
    from datasets import load_dataset

    if dataset is None:
        dataset = load_dataset(name, split=split, data_files=data_files, cache_dir=cache_dir, **load_kwargs)
    dataset = _text_column_only(dataset, name, max_rows)
    doc_id, sent_id = _doc_ids_from_starts(_boundary_flags(dataset, boundary_pattern, num_proc), min_doc_rows)

    fp = hashlib.sha256(f"{dataset._fingerprint}|{boundary_pattern}|{min_doc_rows}".encode()).hexdigest()[:16]

    def add_ids(batch, idx):
        idx = np.asarray(idx)
        return {"doc_id": doc_id[idx], "sent_id": sent_id[idx]}

    return dataset.map(
        add_ids,
        batched=True,
        batch_size=10_000,
        with_indices=True,
        features=_features(),
        new_fingerprint=fp,
        desc="numbering sentences",
    )


def _text_column_only(dataset, name: str, max_rows: int | None):
    """The first ``max_rows`` rows of ``dataset`` with its ``text`` column alone (ValueError without
    one, or when no row is left)."""
    if "text" not in dataset.column_names:
        raise ValueError(f"{name}: expected a 'text' column, found {dataset.column_names}")
    if max_rows is not None:
        dataset = dataset.select(range(min(max_rows, len(dataset))))
    extra = [c for c in dataset.column_names if c != "text"]
    if extra:
        dataset = dataset.remove_columns(extra)
    if len(dataset) == 0:
        raise ValueError(f"{name}: the dataset is empty")
    return dataset


def _boundary_flags(dataset, boundary_pattern: str | None, num_proc: int | None):
    """(n,) bool, the rows that match ``boundary_pattern`` (case-insensitive; none when it is None)."""
    import numpy as np

    if boundary_pattern is None:
        return np.zeros(len(dataset), dtype=bool)
    pat = re.compile(boundary_pattern, re.IGNORECASE)

    def flag(batch):
        return {"_start": [bool(pat.search(t or "")) for t in batch["text"]]}

    flagged = dataset.map(flag, batched=True, batch_size=10_000, num_proc=num_proc, desc="finding book boundaries")
    starts = np.asarray(dataset_column(flagged, "_start", numpy=True), dtype=bool)
    del flagged
    return starts


def _doc_ids_from_starts(starts, min_doc_rows: int):
    """doc_id/sent_id arrays from boundary flags: a flag starts a new doc unless the current doc
    has fewer than ``min_doc_rows`` rows."""
    import numpy as np

    n = len(starts)
    begins = [0]
    for c in np.flatnonzero(starts):
        if c - begins[-1] >= min_doc_rows:
            begins.append(int(c))
    begins_arr = np.asarray(begins, dtype=np.int64)
    marks = np.zeros(n, dtype=np.int32)
    marks[begins_arr[1:]] = 1
    doc_id = np.cumsum(marks, dtype=np.int32)
    return doc_id, (np.arange(n) - begins_arr[doc_id]).astype(np.int32)
