"""The one evaluator protocol (qt_hard.evaluation.evaluator): each evaluator is built with its data and
called on a model, returning its metrics with ``primary`` equal to ``primary_metric``'s value; the
retrieval evaluator equals the retrieval module's numbers, and the same evaluator runs inside a training
run through the plugin's EvaluatorCallback without changing the run."""

from __future__ import annotations

import pytest


def test_senteval_and_wiki_evaluators_return_their_primary_and_their_result(tmp_path, monkeypatch):
    from test_eval_senteval import HashBoW, fixture_lines, write_senteval

    from qt_hard.data.sources import senteval as senteval_source
    from qt_hard.evaluation.evaluator import SentEvalEvaluator, WikiEvaluator
    from qt_hard.evaluation.senteval import run_senteval

    monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines())
    data = write_senteval(tmp_path / "se")
    protocol = {"kfold": 2, "seed": 0}
    got = SentEvalEvaluator(["MR", "CR"], data, **protocol)(HashBoW())
    want = run_senteval(HashBoW(), ["MR", "CR"], data, **protocol)
    timeless = lambda res: {t: {k: v for k, v in r.items() if not k.endswith("seconds")} for t, r in res.items()}  # noqa: E731
    assert timeless(got["result"]) == timeless(want)
    assert got["primary"] == got["mean_acc"] == pytest.approx((want["MR"]["acc"] + want["CR"]["acc"]) / 2)

    class Split:
        train_sentences = [f"word{i % 3} filler" for i in range(30)]
        train_labels = [i % 3 for i in range(30)]
        test_sentences = [f"word{i % 3} other" for i in range(12)]
        test_labels = [i % 3 for i in range(12)]

    wiki = WikiEvaluator(Split(), 3, epochs=5, batch_size=10, seed=0)(HashBoW())
    assert wiki["primary"] == wiki["linear_acc"] == wiki["result"]["linear"]["acc"]
    assert wiki["mean_classifier_acc"] == wiki["result"]["mean_classifier"]["acc"]


def test_the_retrieval_evaluator_is_the_retrieval_modules_numbers(tmp_path):
    import _data
    from test_eval_senteval import HashBoW

    from qt_hard.data.beir import load_beir
    from qt_hard.evaluation.evaluator import RetrievalEvaluator
    from qt_hard.evaluation.models import EmbeddingCache
    from qt_hard.evaluation.retrieval import evaluate_retrieval
    from qt_hard.experiments.specs.nfcorpus import write_slice

    folder = write_slice(_data.dataset("beir", "nfcorpus"), tmp_path / "slice", queries=32, docs=150)
    data = load_beir(folder, ("dev", "test"))
    got = RetrievalEvaluator(data, per_query=True)(HashBoW())
    want = evaluate_retrieval(EmbeddingCache(HashBoW()), data, per_query=True)
    for split in ("dev", "test"):
        assert got[f"{split}_ndcg@10"] == want[split]["ndcg@10"] and got[f"{split}_queries"] == want[split]["queries"]
        assert got["per_query"][split] == want[split]["per_query"]
    assert got["primary"] == got["dev_ndcg@10"]
