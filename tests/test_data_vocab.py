"""Vocab: ids, UNK threshold, save/load."""

import json

import pytest

from qt_hard.data.vocab import Vocab


def test_build_orders_by_count_and_thresholds():
    lists = [["a", "b", "a"], ["a", "c", "b"], ["d"]]
    v = Vocab.build(lists, min_count=2)
    assert v.itos == ["<pad>", "<unk>", "a", "b"]
    assert v.pad_id == 0 and v.unk_id == 1 and len(v) == 4
    assert v.encode(["a", "c", "b", "zzz"]) == [2, 1, 3, 1]
    assert v.decode([2, 3]) == ["a", "b"]
    assert v.unk_rate([["a", "c"]]) == 0.5
    assert Vocab.build(lists, min_count=1, max_size=2).itos == ["<pad>", "<unk>", "a", "b"]
    # ties are broken by the token, so the order never depends on dict order
    assert Vocab.build([["y", "x"]]).itos[2:] == ["x", "y"]


def test_save_load_roundtrip(tmp_path):
    v = Vocab.build([["x", "y", "x"]], specials=("<pad>", "<unk>", "<s>"))
    p = tmp_path / "sub" / "vocab.json"
    v.save(p)
    w = Vocab.load(p)
    assert w == v and w.specials == ("<pad>", "<unk>", "<s>") and w.counts == {"x": 2, "y": 1}
    json.loads(p.read_text())  # plain JSON


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="min_count"):
        Vocab.build([["a"]], min_count=0)
    with pytest.raises(TypeError, match="string"):
        Vocab.build(["abc"])
    with pytest.raises(FileNotFoundError, match="no vocabulary file"):
        Vocab.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a vocabulary"):
        Vocab.load(bad)
