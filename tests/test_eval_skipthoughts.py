"""The skip-thoughts evaluators' protocol: fast path vs one scikit-learn liblinear fit per fold."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

from qt_hard.evaluation.models import EmbeddingCache
from qt_hard.evaluation.protocol import skipthoughts_kfold, skipthoughts_nested_kfold
from qt_hard.evaluation.senteval import run_senteval, skipthoughts_order
from qt_hard.evaluation.datasets import load_task

from test_eval_senteval import tiny_senteval_sizes, HashBoW, _binary_data, senteval_dir  # noqa: F401 (fixture)
from _synthetic import linear_multiclass


def test_nested_kfold_fast_equals_liblinear_loop():
    X, y = _binary_data(160, 5, seed=3)
    fast = skipthoughts_nested_kfold(X, y, kfold=3, fast=True)
    ref = skipthoughts_nested_kfold(X, y, kfold=3, fast=False)
    assert abs(fast["acc"] - ref["acc"]) <= 0.7  # at most one test row of 160 flips
    assert fast["chosen_C"] == ref["chosen_C"]
    assert fast["acc"] > 65


def test_trec_like_one_vs_rest_and_msrp_f1_match_liblinear_loop():
    X, y, Xt, yt = linear_multiclass(2, 5, 4, 240, 90)
    fast = skipthoughts_kfold(X, y, Xt, yt, 4, kfold=4, fast=True)
    ref = skipthoughts_kfold(X, y, Xt, yt, 4, kfold=4, fast=False)
    assert fast["chosen_C"] == ref["chosen_C"] and abs(fast["acc"] - ref["acc"]) <= 1.2
    assert fast["acc"] > 40  # chance is ~25
    Xb, yb = _binary_data(200, 5, seed=5)
    Xbt, ybt = _binary_data(80, 5, seed=6)
    fast = skipthoughts_kfold(Xb, yb, Xbt, ybt, 2, kfold=4, fast=True, f1=True, shuffle_seed=1234)
    ref = skipthoughts_kfold(Xb, yb, Xbt, ybt, 2, kfold=4, fast=False, f1=True, shuffle_seed=1234)
    assert "devf1" in fast and "devacc" not in fast
    assert abs(fast["f1"] - ref["f1"]) <= 1.5 and abs(fast["devf1"] - ref["devf1"]) <= 0.5


def test_order_and_unshuffled_folds_as_the_scripts():
    # dataset_handler.shuffle_data: RandomState(1234).shuffle(arange(n)).
    expect = np.arange(10)
    np.random.RandomState(1234).shuffle(expect)
    np.testing.assert_array_equal(skipthoughts_order(10), expect)
    # outer KFold without shuffle: contiguous folds, larger ones first.
    assert [len(te) for _, te in KFold(3).split(np.zeros(10))] == [4, 3, 3]


def test_file_order_loaders_drop_empty_lines(tmp_path, monkeypatch):
    from qt_hard.data.sources import senteval as senteval_source

    monkeypatch.setitem(senteval_source.SENTEVAL_LINES, "CR/custrev.pos", 3)  # these files' own sizes
    monkeypatch.setitem(senteval_source.SENTEVAL_LINES, "CR/custrev.neg", 2)
    (tmp_path / "CR").mkdir()
    (tmp_path / "CR" / "custrev.pos").write_bytes(b"good one\n\nnice\n")
    (tmp_path / "CR" / "custrev.neg").write_bytes(b"a b c\nbad\n")
    unsorted = load_task("CR", tmp_path, sort=False)
    assert unsorted.samples == [["good", "one"], ["nice"], ["a", "b", "c"], ["bad"]]
    assert unsorted.labels.tolist() == [1, 1, 0, 0]
    assert len(load_task("CR", tmp_path).samples) == 5  # SentEval keeps the empty line


def test_run_skipthoughts_protocol_end_to_end(senteval_dir):  # noqa: F811
    enc = HashBoW(dim=12)
    cache = EmbeddingCache(enc, batch_size=50)
    res = run_senteval(enc, "MR,TREC,MRPC", senteval_dir, kfold=3, cache=cache, protocol="skipthoughts")
    assert res["MR"]["acc"] > 75 and res["TREC"]["acc"] > 60
    assert set(res["MR"]["chosen_C"]) <= {2.0**t for t in range(9)}
    assert "devf1" in res["MRPC"] and 0 <= res["MRPC"]["f1"] <= 100
    with pytest.raises(ValueError, match="unknown protocol"):
        run_senteval(enc, "MR", senteval_dir, kfold=3, cache=cache, protocol="infersent")
