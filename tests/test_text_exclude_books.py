"""``data.exclude_books``: held-out books left out of training (rows and vocabulary), ids kept, bad
values refused while the config is read."""

from __future__ import annotations

import numpy as np
import pytest

from qt_hard.training.config import ConfigError, config_from_dict


def write_books(folder, words_per_book):
    """One small book per entry: 40 sentences of that book's own words."""
    folder.mkdir(parents=True, exist_ok=True)
    for b, words in enumerate(words_per_book):
        sents = [" ".join(words[(i + j) % len(words)] for j in range(5)).capitalize() + "." for i in range(40)]
        paras = [" ".join(sents[i : i + 4]) for i in range(0, 40, 4)]
        (folder / f"book{b}.txt").write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    return folder


def tree(tmp_path, **data):
    books = write_books(
        tmp_path / "books", [["alpha", "beta", "gamma"], ["delta", "epsilon", "zeta"], ["eta", "theta", "iota"]]
    )
    return {
        "out_dir": str(tmp_path / "run"),
        "model": {"kind": "qt", "encoder": "bow", "embed_dim": 8, "max_len": 12},
        "data": {"kind": "books", "path": str(books), "min_count": 1, **data},
        "train": {"batch_size": 8, "steps": 1, "num_threads": 1},
    }


def test_excluded_book_gives_no_row_and_no_word(tmp_path):
    from qt_hard.text.build import build_run

    full = build_run(config_from_dict(tree(tmp_path)), tmp_path / "full")
    held = build_run(config_from_dict(tree(tmp_path, exclude_books=[1])), tmp_path / "held")
    assert sorted(set(full.task.doc_ids.tolist())) == [0, 1, 2]
    # The other books keep their ids (file order), so book 2 is still 2.
    assert sorted(set(held.task.doc_ids.tolist())) == [0, 2]
    assert held.task.n == full.task.n - int(np.sum(full.task.doc_ids == 1))
    vocab_full = set(full.make_encoder(full.module).vocab.itos)
    vocab_held = set(held.make_encoder(held.module).vocab.itos)
    assert {"delta", "epsilon", "zeta"} <= vocab_full
    assert not {"delta", "epsilon", "zeta"} & vocab_held
    assert {"alpha", "eta"} <= vocab_held


def test_exclude_books_from_a_command_line(tmp_path):
    # "--set data.exclude_books=2,0" reads as a string of digits, "[2, 0]" as a YAML list.
    for text in ("2,0", "[2, 0]"):
        assert config_from_dict(tree(tmp_path), [f"data.exclude_books={text}"]).data.exclude_books == [0, 2]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([-1], "data.exclude_books must hold book indices (integers >= 0), got -1"),
        (["x"], "data.exclude_books must hold book indices (integers >= 0), got 'x'"),
        ([True], "data.exclude_books must hold book indices (integers >= 0), got True"),
        ([1, 1], "data.exclude_books names a book twice: [1, 1]"),
        ([], "data.exclude_books must name at least one book"),
        ([3], "data.exclude_books: book 3 does not exist"),
        ([0, 1, 2], "data.exclude_books leaves no book of"),
    ],
)
def test_bad_exclude_books_are_refused(tmp_path, value, message):
    with pytest.raises(ConfigError) as err:
        config_from_dict(tree(tmp_path, exclude_books=value))
    assert message in str(err.value)


def test_exclude_books_needs_books_and_respects_max_books(tmp_path):
    t = tree(tmp_path, exclude_books=[2], max_books=2)
    with pytest.raises(ConfigError, match=r"book 2 is not among the first data.max_books=2 books"):
        config_from_dict(t)
    t = tree(tmp_path)
    t["data"] = {"kind": "synthetic", "exclude_books": [0]}
    with pytest.raises(ConfigError, match=r"data.exclude_books applies to data.kind books, not 'synthetic'"):
        config_from_dict(t)
