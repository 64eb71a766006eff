"""The scale benchmarks' own arithmetic: scripts/bench_train.py cells' aggregate rate and
scripts/bench_data.py corpus's synthetic multiples of the books."""

from __future__ import annotations

from collections import Counter

import pytest
from _scripts import load_script

S = load_script("bench_train")
C = load_script("bench_data")


def test_the_aggregate_rate_counts_every_timed_step_over_the_whole_span():
    cells = [
        {"timed": [10.0, 11.0, 12.0, 13.0]},  # 3 timed steps of 1 s
        {"timed": [10.5, 12.5, 14.5]},  # 2 timed steps of 2 s, ending last
    ]
    agg = S.aggregate(cells, 100)
    assert agg["aggregate_sentences_per_s"] == pytest.approx(5 * 100 / (14.5 - 10.0), abs=0.05)
    assert agg["per_cell_sentences_per_s"] == [100.0, 50.0] and agg["start_spread_s"] == 0.5


def test_a_multiple_holds_each_book_once_and_shuffled_copies_of_its_sentences(tmp_path):
    from qt_hard.data.books import book_sentences, find_books

    books = tmp_path / "books"
    books.mkdir()
    for b in range(2):
        paras = [" ".join(f"Book {b} line {p}-{k} goes on here." for k in range(4)) for p in range(5)]
        (books / f"b{b}.txt").write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    files = C.write_copies(books, tmp_path / "work", 2)
    folder = C.corpus_folder(tmp_path / "work", files, 3)
    found = find_books(folder)
    assert len(found) == 6
    for f in files:
        original = list(book_sentences(f))
        copies = [list(book_sentences(p)) for p in found if p.name.endswith(f.name.removesuffix(".txt") + ".txt")]
        assert len(copies) == 3 and all(Counter(c) == Counter(original) for c in copies)
        assert sum(c != original for c in copies) == 2  # the copies' orders are their own
