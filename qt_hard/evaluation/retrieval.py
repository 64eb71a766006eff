"""Retrieval on a folder in BEIR's layout: exact cosine top-k over the whole corpus, and the ranking
metrics that BEIR, MTEB and sentence-transformers' ``InformationRetrievalEvaluator`` report.

A BEIR folder holds ``corpus.jsonl`` (one JSON object a line: ``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and ``qrels/SPLIT.tsv`` (a header, then ``query-id``,
``corpus-id``, ``score`` separated by tabs). A document is read as ``(title + " " + text).strip()``
(BEIR's and MTEB's convention); a judgement with score > 0 marks a relevant document, and its score
is the document's gain in nDCG (trec_eval's linear gain; every SciFact judgement is 1). The queries
evaluated are those with at least one relevant document in the split.

For each query the corpus is ranked by cosine similarity, score descending and, on equal scores,
corpus id ascending (the evaluator's total order), by blocked matrix products over the corpus with a
running top-k, so that memory is ``queries x block`` whatever the corpus size. With ``r`` the ranked
ids, ``rel(d)`` the judgement of ``d`` (its grade, 0 when unjudged) and ``R`` the relevant set of a
query (each averaged over the queries; reported x100):

* nDCG@k = DCG@k / IDCG@k, DCG@k = sum_{i<k} rel(r_i) / log2(i + 2), IDCG the DCG of the judgements
  sorted descending: the graded form, gain = the grade (Jarvelin and Kekalainen; trec_eval's
  ``ndcg_cut``, which BEIR and MTEB report). The headline;
* nDCG@k (binary), ``ndcg@10_binary``: the same with every relevant document's gain 1, the form
  sentence-transformers' ``InformationRetrievalEvaluator`` computes (it reads the qrels as sets). The
  two agree wherever every grade is 1 (SciFact); NFCorpus grades 1 and 2;
* MRR@k = 1 / (rank of the first relevant document) when it is within the top k, else 0;
* Recall@k = |R within the top k| / |R|;
* MAP@k = sum over relevant ranks i < k of precision@(i+1), divided by min(k, |R|) (the evaluator's
  form; trec_eval's ``map_cut`` divides by |R|; the two agree whenever |R| <= k);
* Accuracy@k = 1 when a relevant document is within the top k.

Each query's own nDCG@10, reciprocal rank at 10 and Recall@100 (:data:`PER_QUERY`) are also returned
(``per_query=True``), so that a comparison of two models can be judged over queries as well as over
training seeds.

The folder is read and checked by :func:`qt_hard.data.beir.load_beir` before any model is loaded.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

import numpy as np

from qt_hard.data.beir import RetrievalData, RetrievalDataError

__all__ = ["METRICS", "PER_QUERY", "evaluate_retrieval", "metrics_from_rankings", "query_metrics", "top_k"]

# (result key, k): the reported metrics, the headline first.
METRICS = (
    ("ndcg@10", 10),
    ("ndcg@10_binary", 10),
    ("mrr@10", 10),
    ("recall@100", 100),
    ("map@100", 100),
    ("accuracy@1", 1),
    ("recall@10", 10),
    ("accuracy@10", 10),
)
# (per-query key, result key): the metrics kept for every query; a single query's MRR is its
# reciprocal rank.
PER_QUERY = (("ndcg@10", "ndcg@10"), ("rr@10", "mrr@10"), ("recall@100", "recall@100"))


def _unit_float32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), np.float32(1e-12))


def top_k(queries: np.ndarray, docs: np.ndarray, k: int, block: int = 16384) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-``k`` of every query over the documents: (scores, indices), each
    ``(n_queries, min(k, n_docs))``, score descending and, on equal scores, index ascending.

    The documents are taken ``block`` at a time (float32 products, as the evaluator's ``cos_sim``);
    each block's candidates are merged into the running top k with a stable sort, so the result
    equals one stable sort of the full score matrix."""
    import torch

    q = torch.from_numpy(_unit_float32(queries))
    d = torch.from_numpy(_unit_float32(docs))
    k = min(k, d.shape[0])
    best_s = torch.empty((q.shape[0], 0), dtype=torch.float32)
    best_i = torch.empty((q.shape[0], 0), dtype=torch.int64)
    for start in range(0, d.shape[0], block):
        s = q @ d[start : start + block].T
        order = torch.sort(s, dim=1, descending=True, stable=True).indices[:, :k]
        # Earlier blocks hold lower indices, so on ties the stable sort keeps them first.
        cand_s = torch.cat([best_s, s.gather(1, order)], dim=1)
        cand_i = torch.cat([best_i, order + start], dim=1)
        keep = torch.sort(cand_s, dim=1, descending=True, stable=True).indices[:, :k]
        best_s, best_i = cand_s.gather(1, keep), cand_i.gather(1, keep)
    return best_s.numpy(), best_i.numpy()


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def query_metrics(ranked: Sequence[str], judged: Mapping[str, int]) -> dict[str, float]:
    """One query's metrics of :data:`METRICS` (fractions, not x100) from its ranked document ids and
    its judgements (``{doc: grade}``; grades <= 0 are not relevant)."""
    gains = {d: s for d, s in judged.items() if s > 0}
    hits = [gains.get(d, 0) for d in ranked]
    ideal = sorted(gains.values(), reverse=True)
    out = {}
    for name, k in METRICS:
        top = hits[:k]
        if name == "ndcg@10_binary":
            out[name] = _dcg([float(g > 0) for g in top]) / _dcg([1.0] * min(k, len(gains)))
        elif name.startswith("ndcg"):
            out[name] = _dcg(top) / _dcg(ideal[:k])
        elif name.startswith("mrr"):
            out[name] = next((1.0 / (i + 1) for i, g in enumerate(top) if g > 0), 0.0)
        elif name.startswith("recall"):
            out[name] = sum(g > 0 for g in top) / len(gains)
        elif name.startswith("map"):
            found, ap = 0, 0.0
            for i, g in enumerate(top):
                if g > 0:
                    found += 1
                    ap += found / (i + 1)
            out[name] = ap / min(k, len(gains))
        else:  # accuracy
            out[name] = float(any(g > 0 for g in top))
    return out


def metrics_from_rankings(
    rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], per_query: bool = False
) -> dict:
    """The metrics of :data:`METRICS` (x100, averaged over the queries of ``rankings``) from each
    query's ranked document ids and its judgements; with ``per_query``, also ``"per_query"``:
    ``{key: {query: value x100}}`` for the keys of :data:`PER_QUERY`."""
    each = {qid: query_metrics(ranked, qrels[qid]) for qid, ranked in rankings.items()}
    n = len(each)
    out: dict = {name: 100.0 * math.fsum(m[name] for m in each.values()) / n for name, _ in METRICS}
    if per_query:
        out["per_query"] = {key: {q: 100.0 * m[name] for q, m in each.items()} for key, name in PER_QUERY}
    return out


def evaluate_retrieval(
    cache,
    data: RetrievalData,
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
    per_query: bool = False,
):
    """Rank the whole corpus for the judged queries of every split and score the rankings.

    Args:
        cache: a :class:`qt_hard.evaluation.models.EmbeddingCache` (each distinct text, document or
            query, is encoded once, and the corpus once for all splits).
        data: the folder, from :func:`load_beir`.
        qrels: ``{name: {query: {doc: score}}}`` to evaluate (default: ``data.qrels``), e.g. a dev
            split carved from the train judgements.
        per_query: also each split's per-query scores (:func:`metrics_from_rankings`).

    Returns ``{name: {metric: value x100, ..., "queries": n}}`` and, under ``"_timing"``, the
    seconds spent encoding and ranking."""
    qrels = data.qrels if qrels is None else qrels
    t0 = time.perf_counter()
    enc0 = cache.seconds
    # Ranked over the corpus sorted by id, so that equal scores fall in id order (the evaluator's).
    by_id = sorted(range(len(data.doc_ids)), key=data.doc_ids.__getitem__)
    doc_emb = cache.embed([data.doc_texts[i] for i in by_id])
    k = max(k for _, k in METRICS)
    out: dict = {}
    for name, judged in qrels.items():
        qids = [q for q, docs in judged.items() if any(s > 0 for s in docs.values())]
        if not qids:
            raise RetrievalDataError(f"split {name!r}: no query with a relevant document")
        q_emb = cache.embed([data.queries[q] for q in qids])
        _, idx = top_k(q_emb, doc_emb, k)
        rankings = {q: [data.doc_ids[by_id[j]] for j in row] for q, row in zip(qids, idx)}
        out[name] = {**metrics_from_rankings(rankings, judged, per_query), "queries": len(qids)}
    total = time.perf_counter() - t0
    out["_timing"] = {"encode_seconds": round(cache.seconds - enc0, 3), "total_seconds": round(total, 3)}
    return out
