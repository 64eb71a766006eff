"""Vocab: ids, the unknown-word threshold, the order of the tokens."""

import pytest

from qt_hard.data.vocab import Vocab


def test_from_counts_orders_by_count_and_thresholds():
    counts = {"a": 3, "b": 2, "c": 1, "d": 1}
    v = Vocab.from_counts(counts, min_count=2)
    assert v.itos == ["<pad>", "<unk>", "a", "b"] and v.counts == {"a": 3, "b": 2}
    assert v.pad_id == 0 and v.unk_id == 1 and len(v) == 4
    assert v.encode(["a", "c", "b", "zzz"]) == [2, 1, 3, 1]
    assert [v.itos[i] for i in (2, 3)] == ["a", "b"] and "c" not in v and v["c"] == v.unk_id
    assert Vocab.from_counts(counts, min_count=1, max_size=2).itos == ["<pad>", "<unk>", "a", "b"]
    # ties are broken by the token, so the order never depends on dict order
    assert Vocab.from_counts({"y": 1, "x": 1}).itos[2:] == ["x", "y"]
    # specials keep their ids whatever the counts say
    assert Vocab.from_counts({"<unk>": 9, "x": 1}).itos == ["<pad>", "<unk>", "x"]


def test_bad_input():
    with pytest.raises(ValueError, match="min_count"):
        Vocab.from_counts({"a": 1}, min_count=0)
    with pytest.raises(ValueError, match="max_size"):
        Vocab.from_counts({"a": 1}, max_size=-1)
    with pytest.raises(ValueError, match="specials"):
        Vocab(["a"], specials=("<pad>",))
