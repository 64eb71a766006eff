"""Local books (Gutenberg-style .txt / .txt.xz) and the HF BookCorpus loader on a local stand-in."""

import lzma
import os

import numpy as np
import pytest

from qt_hard.data import books as B
from qt_hard.data.books import BookError, books_metadata, dataset_column, load_books, load_hf_bookcorpus

BOOK_A = """\
The Project Gutenberg EBook of A Tiny Tale, by Nobody

This eBook is for the use of anyone anywhere at no cost.

*** START OF THIS PROJECT GUTENBERG EBOOK A TINY TALE ***




Produced by A Volunteer and the Online Distributed
Proofreading Team





A TINY TALE

By Jane Nobody



CONTENTS

I.    The Beginning      1
II.   The End            9



CHAPTER I.

THE BEGINNING.


It was a dark and stormy night; the rain fell in
torrents, except at occasional intervals. Mr. Smith
looked out of the _window_ and sighed.

"Where are you going?" asked his wife. "It is
late!"

[Illustration: The house at night]

"Out," said he.

*       *       *       *       *

CHAPTER II

The End came soon. Nobody was surprised.

*** END OF THIS PROJECT GUTENBERG EBOOK A TINY TALE ***

This footer is license text that must not be read.
"""

SENTS_A = [
    "It was a dark and stormy night; the rain fell in torrents, except at occasional intervals.",
    "Mr. Smith looked out of the window and sighed.",
    '"Where are you going?" asked his wife.',
    '"It is late!"',
    '"Out," said he.',
    "The End came soon.",
    "Nobody was surprised.",
]

BOOK_B = "A second book begins here. It has\nthree sentences in all.\n\nThe third is alone.\n"
SENTS_B = ["A second book begins here.", "It has three sentences in all.", "The third is alone."]


def write_xz(path, text):
    with lzma.open(path, "wb") as f:
        f.write(text.encode("utf-8"))
    return path


@pytest.fixture
def library(tmp_path):
    d = tmp_path / "books"
    d.mkdir()
    write_xz(d / "a_tiny_tale.txt.xz", BOOK_A)
    (d / "b_second.txt").write_text(BOOK_B, encoding="utf-8")
    (d / "INDEX.tsv").write_text("not a book\n")
    (d / "SOURCE.md").write_text("not a book either\n")
    return d


def rows(ds):
    return list(zip(dataset_column(ds, "text"), dataset_column(ds, "doc_id"), dataset_column(ds, "sent_id")))


def test_book_text_cleaning_and_order(library, tmp_path):
    ds = load_books(library, cache_dir=tmp_path / "cache")
    assert ds.column_names == ["text", "doc_id", "sent_id"]
    got = rows(ds)
    expect = [(s, 0, i) for i, s in enumerate(SENTS_A)] + [(s, 1, i) for i, s in enumerate(SENTS_B)]
    assert got == expect
    meta = books_metadata(ds)
    assert [os.path.basename(f) for f in meta["files"]] == ["a_tiny_tale.txt.xz", "b_second.txt"]
    assert meta["sentences_per_book"] == [len(SENTS_A), len(SENTS_B)] and meta["skipped"] == []


def test_no_neighbour_pair_crosses_books(library, tmp_path):
    ds = load_books(library, cache_dir=tmp_path / "cache")
    doc = np.asarray(dataset_column(ds, "doc_id", numpy=True))
    sid = np.asarray(dataset_column(ds, "sent_id", numpy=True))
    same = doc[1:] == doc[:-1]
    # rows are in book order: inside a book sent_id counts up by one, a new book restarts at 0
    assert np.all(sid[1:][same] == sid[:-1][same] + 1)
    assert np.all(sid[1:][~same] == 0) and sid[0] == 0
    # a +-1 window never pairs sentences of two books
    texts = dataset_column(ds, "text")
    by_book = {0: set(SENTS_A), 1: set(SENTS_B)}
    for i in np.flatnonzero(same):
        assert texts[i] in by_book[doc[i]] and texts[i + 1] in by_book[doc[i]]


def test_single_file_and_max_books(library, tmp_path):
    one = load_books(library / "b_second.txt", cache_dir=tmp_path / "c1")
    assert dataset_column(one, "text") == SENTS_B
    first = load_books(library, max_books=1, cache_dir=tmp_path / "c2")
    assert set(dataset_column(first, "doc_id")) == {0} and len(first) == len(SENTS_A)


def test_cache_reuse_does_not_resplit(library, tmp_path, monkeypatch):
    calls = []
    real = B.split_sentences
    monkeypatch.setattr(B, "split_sentences", lambda p: calls.append(1) or real(p))
    cache = tmp_path / "cache"
    ds1 = load_books(library, cache_dir=cache)
    n_first = len(calls)
    assert n_first > 0
    ds2 = load_books(library, cache_dir=cache)
    assert len(calls) == n_first, "second call split the books again"
    assert rows(ds1) == rows(ds2)
    built = [p.name for p in cache.iterdir() if p.name.startswith("books-")]
    assert len(built) == 1 and not [p for p in cache.iterdir() if p.name.startswith(".build")]
    assert ds2.cache_files and str(cache) in ds2.cache_files[0]["filename"]  # memory-mapped Arrow
    # a changed input file is a new key: rebuilt
    (library / "b_second.txt").write_text(BOOK_B + "\nOne more sentence here.\n", encoding="utf-8")
    ds3 = load_books(library, cache_dir=cache)
    assert len(calls) > n_first and len(ds3) == len(ds1) + 1


def test_num_proc_keeps_book_order(library, tmp_path):
    ds = load_books(library, cache_dir=tmp_path / "c", num_proc=2)
    expect = [(s, 0, i) for i, s in enumerate(SENTS_A)] + [(s, 1, i) for i, s in enumerate(SENTS_B)]
    assert rows(ds) == expect


def test_worker_pool_gives_the_rows_of_one_process(tmp_path):
    # Enough books for split_books to use its process pool, of different sizes so that the workers
    # finish out of order; one book too short to keep.
    lib = tmp_path / "many"
    lib.mkdir()
    for i in range(B._POOL_MIN_BOOKS + 2):
        body = " ".join(f"Book {i} says thing {j} here." for j in range(3 + 7 * ((i * 5) % 9)))
        (lib / f"book_{i:02d}.txt").write_text(body + "\n\nThe end is near. It came.\n", encoding="utf-8")
    (lib / "book_99.txt").write_text("Only one sentence.\n", encoding="utf-8")
    files = B.find_books(lib)
    one = B.split_books(files, num_proc=1)
    two = B.split_books(files, num_proc=2)
    assert one == two
    texts, doc, sent, counts = two
    assert counts[-1] == 0 and all(c > 0 for c in counts[:-1])
    assert texts == [s for f in files[:-1] for s in B.book_sentences(f)]
    assert doc == [i for i, c in enumerate(counts) for _ in range(c)]
    with pytest.warns(UserWarning, match=r"book_99\.txt: fewer than 2 sentences"):
        ds = load_books(lib, cache_dir=tmp_path / "c", num_proc=2)
    assert rows(ds) == list(zip(texts, doc, sent))


def test_a_bad_book_stops_the_pool_and_is_named(tmp_path):
    lib = tmp_path / "bad_many"
    lib.mkdir()
    for i in range(B._POOL_MIN_BOOKS + 1):
        (lib / f"book_{i:02d}.txt").write_text("One sentence. Two sentences.\n", encoding="utf-8")
    (lib / "book_03.txt").write_text("  \n\n")
    with pytest.raises(BookError, match=r"book_03\.txt: the book is empty"):
        load_books(lib, cache_dir=tmp_path / "c", num_proc=2)


def test_bad_books(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    with pytest.raises(FileNotFoundError, match="no .txt or .txt.xz books"):
        load_books(d, cache_dir=tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="no such book"):
        load_books(tmp_path / "missing", cache_dir=tmp_path / "c")

    (d / "empty.txt").write_text("  \n\n")
    with pytest.raises(BookError, match=r"empty\.txt: the book is empty"):
        load_books(d, cache_dir=tmp_path / "c")
    (d / "empty.txt").unlink()

    with lzma.open(d / "latin1.txt.xz", "wb") as f:
        f.write("Caf\xe9 au lait. Tr\xe8s bien.".encode("latin-1"))
    with pytest.raises(BookError, match=r"latin1\.txt\.xz: not valid UTF-8"):
        load_books(d, cache_dir=tmp_path / "c")
    (d / "latin1.txt.xz").unlink()

    (d / "notxz.txt.xz").write_bytes(b"plain bytes, not xz")
    with pytest.raises(BookError, match=r"notxz\.txt\.xz: not a valid \.xz"):
        load_books(d, cache_dir=tmp_path / "c")
    (d / "notxz.txt.xz").unlink()

    # a one-sentence book cannot give a positive pair: left out, named in a warning
    (d / "one.txt").write_text("Only one sentence here.\n")
    with pytest.raises(BookError, match=r"one\.txt"):
        load_books(d, cache_dir=tmp_path / "c")
    (d / "two.txt").write_text("First sentence. Second sentence.\n")
    with pytest.warns(UserWarning, match=r"one\.txt: fewer than 2 sentences"):
        ds = load_books(d, cache_dir=tmp_path / "c")
    assert dataset_column(ds, "doc_id") == [1, 1]  # ids stay tied to the file order
    assert books_metadata(ds)["skipped"][0].endswith("one.txt")


def test_strip_gutenberg_old_style():
    text = "header junk\n*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\nBody.\nEnd of the Project Gutenberg Etext\nfooter"
    assert B.strip_gutenberg(text).strip() == "Body."


def test_hyphen_across_wrap_keeps_word():
    paras = list(B.book_paragraphs("This is by no means fortun-\nately the case. A well-\nknown fact."))
    assert paras == ["This is by no means fortun-ately the case. A well-known fact."]


# ---------------------------------------------------------------------------------------------
# HF BookCorpus: a tiny local stand-in (one lower-cased sentence per row, no book marks)

CORPUS = [
    "the cat sat on the mat .",
    "it was happy .",
    "then it slept .",
    "copyright 2012 jane doe",
    "all rights reserved .",
    "chapter one",
    "a new story starts .",
    "it ends .",
    "isbn : 978-1-2345",
    "third book , first line .",
    "last line .",
]


def test_hf_bookcorpus_local_standin(tmp_path):
    f = tmp_path / "bookcorpus.txt"
    f.write_text("\n".join(CORPUS) + "\n")
    ds = load_hf_bookcorpus("text", data_files=str(f), cache_dir=str(tmp_path / "hf"), min_doc_rows=3)
    assert ds.column_names == ["text", "doc_id", "sent_id"]
    assert dataset_column(ds, "text") == CORPUS
    # "copyright" starts book 1; "all rights reserved" is part of the same copyright page
    assert dataset_column(ds, "doc_id") == [0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2]
    assert dataset_column(ds, "sent_id") == [0, 1, 2, 0, 1, 2, 3, 4, 0, 1, 2]
    one = load_hf_bookcorpus(dataset=ds.remove_columns(["doc_id", "sent_id"]), boundary_pattern=None, max_rows=5)
    assert dataset_column(one, "doc_id") == [0] * 5 and dataset_column(one, "sent_id") == list(range(5))


def test_hf_bookcorpus_bad_input(tmp_path):
    from datasets import Dataset

    with pytest.raises(ValueError, match="'text' column"):
        load_hf_bookcorpus(dataset=Dataset.from_dict({"sentence": ["a"]}))
    with pytest.raises(ValueError, match="empty"):
        load_hf_bookcorpus(dataset=Dataset.from_dict({"text": []}))


def test_without_datasets_the_plain_loader_gives_the_same_rows(library, tmp_path, monkeypatch):
    import sys

    import numpy as np

    from qt_hard.data.books import SentenceTable, dataset_column

    ref = load_books(library, cache_dir=tmp_path / "a")
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` now raises ImportError
    plain = load_books(library, cache_dir=tmp_path / "b")
    assert isinstance(plain, SentenceTable) and len(plain) == len(ref)
    for col in ("text", "doc_id", "sent_id"):
        assert list(dataset_column(plain, col)) == list(dataset_column(ref, col))
    again = load_books(library, cache_dir=tmp_path / "b")  # from its plain-file cache
    assert dataset_column(again, "text") == dataset_column(plain, "text")
    sub = plain.select(range(3))
    assert len(sub) == 3 and np.array_equal(dataset_column(sub, "doc_id", numpy=True), plain["doc_id"][:3])


def test_truncated_xz_book_is_a_book_error_naming_the_file(tmp_path):
    """lzma raises EOFError (not LZMAError) for a stream cut short; the error must still name the book."""
    from qt_hard.data.books import read_book_text
    from qt_hard.errors import UserError

    path = tmp_path / "cut_short.txt.xz"
    data = lzma.compress(("A sentence of the book. " * 400).encode())
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(BookError, match="cut_short.txt.xz: not a valid .xz file") as info:
        read_book_text(path)
    assert isinstance(info.value, UserError)  # the CLI prints it as one line
