"""The one evaluator protocol, in the manner of sentence-transformers' ``SentenceEvaluator``: an
evaluator is built once with its data and protocol and called on a model, ``evaluator(model) -> dict``,
the dict holding every metric it measures and ``primary_metric`` naming the one a choice reads (its value
also under ``"primary"``). ``qt-hard eval`` (:mod:`.cli`), the grids (the retrieval comparisons) and a
training run's callback (:class:`qt_hard.integrations.sentence_transformers.EvaluatorCallback`) call the
same evaluators.

A model is anything with ``encode(sentences, batch_size)`` returning an ``(n, d)`` array (the encoders
of :func:`.models.load_model`) or a ``SentenceTransformer`` (encoded without progress bars, as
:class:`.models.STEncoder`). ``cache``, an :class:`.models.EmbeddingCache` of that model, may be given so
that each distinct text is encoded once across evaluators and calls.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["Evaluator", "RetrievalEvaluator", "SentEvalEvaluator", "WikiEvaluator", "as_encoder"]


def as_encoder(model):
    """``model`` behind the ``encode(sentences, batch_size)`` interface: a ``SentenceTransformer`` (a
    ``torch.nn.Module`` with ``encode``) wrapped in :class:`.models.STEncoder`, anything else as it is."""
    import torch

    from .models import STEncoder

    return STEncoder(model) if isinstance(model, torch.nn.Module) and hasattr(model, "encode") else model


class Evaluator:
    """The protocol (see the module docstring): ``name``, ``primary_metric`` and ``__call__``."""

    name: str = ""
    primary_metric: str = ""

    def __call__(self, model, cache=None) -> dict:
        raise NotImplementedError

    def _with_primary(self, results: dict) -> dict:
        return {**results, "primary": results[self.primary_metric]}

    def _cache(self, model, cache, batch_size: int = 64):
        from .models import EmbeddingCache

        return cache if cache is not None else EmbeddingCache(as_encoder(model), batch_size=batch_size)


class RetrievalEvaluator(Evaluator):
    """The whole corpus of a BEIR folder ranked for each split's judged queries (:mod:`.retrieval`):
    ``{f"{split}_{metric}": value x100}`` for every split of ``qrels`` (default: the folder's), with each
    query's nDCG@10, RR@10 and Recall@100 under ``per_query[split]`` when ``per_query``, and the
    encoding and ranking seconds under ``"seconds"``. Primary: the first split's graded nDCG@10."""

    name = "retrieval"

    def __init__(self, data, qrels: Mapping | None = None, per_query: bool = False, batch_size: int = 64):
        self.data, self.qrels, self.per_query, self.batch_size = data, qrels, per_query, batch_size
        self.splits = list(data.qrels if qrels is None else qrels)
        self.primary_metric = f"{self.splits[0]}_ndcg@10"

    def __call__(self, model, cache=None) -> dict:
        from .retrieval import evaluate_retrieval

        res = evaluate_retrieval(self._cache(model, cache, self.batch_size), self.data, self.qrels, self.per_query)
        skip = ("queries", "per_query")
        out: dict = {f"{s}_{k}": v for s in self.splits for k, v in res[s].items() if k not in skip}
        out.update({f"{s}_queries": res[s]["queries"] for s in self.splits})
        if self.per_query:
            out["per_query"] = {s: res[s]["per_query"] for s in self.splits}
        out["seconds"] = res["_timing"]
        return self._with_primary(out)


class SentEvalEvaluator(Evaluator):
    """SentEval's tasks on frozen embeddings (:func:`.senteval.run_senteval` with the ``protocol``
    keywords: kfold, seed, fast, protocol, max_iter, log): ``f"{task}_acc"`` of each classification task,
    ``"mean_acc"`` their mean (the primary), and the tasks' own results under ``"result"``."""

    name = "senteval"
    primary_metric = "mean_acc"

    def __init__(self, tasks, data_dir, **protocol):
        self.tasks, self.data_dir, self.protocol = list(tasks), data_dir, protocol

    def __call__(self, model, cache=None) -> dict:
        from .senteval import run_senteval

        res = run_senteval(as_encoder(model), self.tasks, self.data_dir, cache=cache, **self.protocol)
        accs = {f"{task}_acc": r["acc"] for task, r in res.items() if "acc" in r}
        mean = sum(accs.values()) / len(accs) if accs else float("nan")
        return self._with_primary({**accs, "mean_acc": mean, "result": res})


class WikiEvaluator(Evaluator):
    """Wiki-N's mean and linear classifiers on frozen embeddings (:func:`.wiki.run_wiki` with the
    classifier's keywords: epochs, lr, batch_size, seed): ``"mean_classifier_acc"`` and ``"linear_acc"``
    (the primary), and the whole result under ``"result"``."""

    name = "wiki"
    primary_metric = "linear_acc"

    def __init__(self, data, classes: int, encode_batch_size: int = 64, **classifier):
        self.data, self.classes, self.batch_size, self.classifier = data, classes, encode_batch_size, classifier

    def __call__(self, model, cache=None) -> dict:
        from .wiki import run_wiki

        res = run_wiki(
            as_encoder(model),
            self.data,
            self.classes,
            cache=self._cache(model, cache, self.batch_size),
            **self.classifier,
        )
        accs = {"mean_classifier_acc": res["mean_classifier"]["acc"], "linear_acc": res["linear"]["acc"]}
        return self._with_primary({**accs, "result": res})
