"""The fine-tuning pool (qt_hard.data.similarity_pool): MRPC train paraphrases, SICK train ENTAILMENT and
STS Benchmark train (score >= 4), with every pair removed that shares a sentence with an evaluation set
(STS12-16, STS Benchmark dev/test, SICK test, MRPC test), sentences compared in normal form."""

from __future__ import annotations

import pytest

from qt_hard.data.similarity_pool import (
    evaluation_sets,
    evaluation_sentences,
    mrpc_pairs,
    normalize_sentence,
    stsb_pairs,
    training_pool,
)


def test_normal_form_joins_raw_and_tokenized_text():
    raw = "Yucaipa owned Dominick's before selling the chain to Safeway in 1998 for $2.5 billion."
    tokenized = "yucaipa owned dominick 's before selling the chain to safeway in 1998 for $ 2.5 billion ."
    assert normalize_sentence(raw) == normalize_sentence(tokenized)
    assert normalize_sentence("He does n't know .") == normalize_sentence("He doesn't know")
    assert normalize_sentence("a man plays a guitar") != normalize_sentence("a man plays the guitar")
    assert normalize_sentence(" ... ") == ""


def test_parse_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "sts-train.csv"
    bad.write_text("g\tf\t2012\t1\t4.5\tone\ttwo\ng\tf\t2012\t2\tfour\tone\ttwo\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"sts-train.csv:2: score 'four'"):
        stsb_pairs(bad)
    mrpc = tmp_path / "msr.txt"
    mrpc.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tonly three\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"msr.txt:2: expected at least 5"):
        mrpc_pairs(mrpc)


@pytest.fixture(scope="module")
def root():
    import _data

    return _data.dataset("senteval", "STS", "STSBenchmark", "sts-train.csv").parents[2]


def test_pool_is_disjoint_from_every_evaluation_sentence(root):
    pool = training_pool(root)
    held_out = evaluation_sentences(root)
    assert len(pool.pairs) == len(pool.sources) == sum(pool.after.values()) > 1000
    for a, b in pool.pairs:
        assert normalize_sentence(a) not in held_out and normalize_sentence(b) not in held_out
    # the removal had work to do in every source (STS Benchmark train is drawn from STS12-16's sets)
    for name in ("MRPC/train", "SICK/train", "STSBenchmark/train"):
        assert pool.before[name] > pool.after[name], name
    # each evaluation set is read whole: STS12-16's 24 sets, STS Benchmark dev/test, SICK test, MRPC test
    sets = evaluation_sets(root)
    assert len(sets) == 28 and len(sets["SICK/test"]) == 4927 and len(sets["MRPC/test"]) == 1725
    assert len(sets["STSBenchmark/test"]) == 1379 and len(sets["STS15/answers-forums"]) == 2000
