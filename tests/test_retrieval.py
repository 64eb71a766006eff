"""Retrieval on BEIR-layout folders (qt_hard.evaluation.retrieval): metrics against hand-computed values,
exact blocked top-k against one stable sort, refusals of damaged folders, and agreement with
sentence-transformers' InformationRetrievalEvaluator on a slice of SciFact."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from qt_hard.data.beir import RetrievalDataError, load_beir
from qt_hard.evaluation.retrieval import evaluate_retrieval, metrics_from_rankings, top_k
from qt_hard.errors import MissingFileError
from test_refusals import write_beir


def test_metrics_by_hand():
    # q1: relevant d2 (gain 1) and d5 (gain 2), ranked d1 d2 d3 d4 d5; q2: relevant d9, never ranked.
    qrels = {"q1": {"d2": 1, "d5": 2, "d7": 0}, "q2": {"d9": 1}}
    ranks = {"q1": ["d1", "d2", "d3", "d4", "d5"], "q2": ["d1", "d2"]}
    m = metrics_from_rankings(ranks, qrels)
    dcg = 1 / math.log2(3) + 2 / math.log2(6)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert m["ndcg@10"] == pytest.approx(100 * (dcg / idcg) / 2)
    assert m["mrr@10"] == pytest.approx(100 * 0.5 / 2)
    assert m["recall@100"] == pytest.approx(100 * 1.0 / 2)
    assert m["map@100"] == pytest.approx(100 * ((1 / 2 + 2 / 5) / 2) / 2)
    assert m["accuracy@1"] == 0.0
    assert m["accuracy@10"] == pytest.approx(50.0)


def test_graded_and_binary_ndcg_and_per_query_scores_by_hand():
    # q1 graded 2 and 1: the binary form gives both gain 1, the graded form the grades.
    qrels = {"q1": {"d2": 1, "d5": 2}, "q2": {"d1": 1}}
    ranks = {"q1": ["d1", "d2", "d3", "d4", "d5"], "q2": ["d1", "d2"]}
    m = metrics_from_rankings(ranks, qrels, per_query=True)
    graded = (1 / math.log2(3) + 2 / math.log2(6)) / (2 + 1 / math.log2(3))
    binary = (1 / math.log2(3) + 1 / math.log2(6)) / (1 + 1 / math.log2(3))
    assert m["per_query"]["ndcg@10"] == pytest.approx({"q1": 100 * graded, "q2": 100.0})
    assert m["ndcg@10"] == pytest.approx(100 * (graded + 1) / 2)
    assert m["ndcg@10_binary"] == pytest.approx(100 * (binary + 1) / 2)
    assert m["per_query"]["rr@10"] == pytest.approx({"q1": 50.0, "q2": 100.0})
    assert m["per_query"]["recall@100"] == pytest.approx({"q1": 100.0, "q2": 100.0})
    assert "per_query" not in metrics_from_rankings(ranks, qrels)


def test_graded_metrics_equal_trec_eval():
    """Random graded judgements (grades 0-2) and rankings with distinct scores: each query's nDCG@10,
    reciprocal rank (when the first relevant document is in the top 10, else 0) and Recall@100 equal
    trec_eval's ``ndcg_cut_10``, ``recip_rank`` and ``recall_100`` (pytrec_eval)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(0)
    docs = [f"d{i:03d}" for i in range(300)]
    qrels, run, ranks = {}, {}, {}
    for q in range(40):
        judged = rng.choice(len(docs), size=int(rng.integers(1, 60)), replace=False)
        qrels[f"q{q}"] = {docs[j]: int(rng.integers(0, 3)) for j in judged}
        if not any(qrels[f"q{q}"].values()):
            qrels[f"q{q}"][docs[judged[0]]] = 2
        order = rng.permutation(len(docs))[:150]
        ranks[f"q{q}"] = [docs[j] for j in order]
        run[f"q{q}"] = {docs[j]: float(150 - r) for r, j in enumerate(order)}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recip_rank", "recall_100"}).evaluate(run)
    ours = metrics_from_rankings(ranks, qrels, per_query=True)["per_query"]
    for q in qrels:
        assert ours["ndcg@10"][q] == pytest.approx(100 * ref[q]["ndcg_cut_10"], abs=1e-9)
        assert ours["recall@100"][q] == pytest.approx(100 * ref[q]["recall_100"], abs=1e-9)
        rr = ref[q]["recip_rank"] if ref[q]["recip_rank"] >= 0.1 else 0.0
        assert ours["rr@10"][q] == pytest.approx(100 * rr, abs=1e-9)
    assert len({round(v, 6) for v in ours["ndcg@10"].values()}) > 10  # the queries differ


@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_blocked_top_k_is_one_stable_sort(block):
    import torch

    rng = np.random.default_rng(block)
    q = rng.standard_normal((9, 4))
    d = rng.standard_normal((40, 4))
    d[10] = d[3]  # exact ties: the lower index must come first
    d[30] = d[3]
    s, i = top_k(q, d, 12, block=block)
    qn = torch.nn.functional.normalize(torch.tensor(q, dtype=torch.float32), dim=1)
    dn = torch.nn.functional.normalize(torch.tensor(d, dtype=torch.float32), dim=1)
    full = (qn @ dn.T).numpy()
    ref = np.argsort(-full, axis=1, kind="stable")[:, :12]
    assert np.array_equal(i, ref)
    assert np.allclose(s, np.take_along_axis(full, ref, axis=1), atol=1e-6)
    tied = [list(row).index(3) for row in i if 3 in row]
    assert all(row[k + 1] == 10 for row, k in zip(i, tied) if k + 1 < 12 and 10 in row)


def test_load_checks_the_folder(tmp_path):
    beir = write_beir(tmp_path / "b")
    data = load_beir(beir)
    assert data.doc_ids == ["d1", "d2", "d3"] and data.doc_texts[0] == "Cats Cats purr."
    assert data.judged_queries("test") == ["q1", "q2"]
    with pytest.raises(MissingFileError, match="splits with qrels: test"):
        load_beir(beir, ("dev",))
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n')
    with pytest.raises(RetrievalDataError, match=r"queries.jsonl:2: duplicate _id 'q1' \(first on line 1\)"):
        load_beir(beir)
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n[1, 2]\n')
    with pytest.raises(RetrievalDataError, match="queries.jsonl:2: not a JSON object"):
        load_beir(beir)


def test_bom_is_read_as_utf8(tmp_path):
    beir = write_beir(tmp_path / "b")
    corpus = beir / "corpus.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + corpus.read_bytes())
    assert load_beir(beir).doc_ids[0] == "d1"


class _Lookup:
    """An encoder whose embedding of a text is given (the ranking is then known exactly)."""

    def __init__(self, table):
        self.table, self.calls = table, []

    def encode(self, texts, batch_size=64):
        self.calls += list(texts)
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_evaluate_encodes_each_text_once_and_breaks_ties_by_id(tmp_path):
    from qt_hard.evaluation.models import EmbeddingCache

    beir = write_beir(tmp_path / "b")
    data = load_beir(beir)
    # q1 ties d1 and d2 exactly: d1 (the lower id) ranks first; q2's own document is last.
    table = {
        "Cats Cats purr.": [1, 0],
        "Dogs Dogs bark.": [1, 0],
        "Birds Birds sing.": [0, 1],
        "purring": [1, 0],
        "barking": [0, 1],
    }
    enc = _Lookup(table)
    res = evaluate_retrieval(EmbeddingCache(enc), data, {"a": data.qrels["test"], "b": data.qrels["test"]})
    assert sorted(enc.calls) == sorted(table)  # the corpus once for both splits
    assert res["a"]["accuracy@1"] == pytest.approx(50.0)  # q1 finds d1 first; q2 ranks d3 above d2
    assert res["a"]["mrr@10"] == pytest.approx(100 * (1 + 1 / 3) / 2)


@pytest.fixture(scope="module")
def scifact_slice(tmp_path_factory):
    """A slice of the real SciFact: 40 test claims, their cited abstracts and 40 others."""
    import _data

    src = _data.dataset("beir", "scifact")  # skipped without it, failed under CI
    dst = tmp_path_factory.mktemp("scifact") / "slice"
    (dst / "qrels").mkdir(parents=True)
    lines = (src / "qrels" / "test.tsv").read_text().splitlines()
    claims = sorted({ln.split("\t")[0] for ln in lines[1:]})[:40]
    qrels = [ln for ln in lines[1:] if ln.split("\t")[0] in claims]
    cited = {ln.split("\t")[1] for ln in qrels}
    docs = [json.loads(x) for x in (src / "corpus.jsonl").read_text().splitlines()]
    qs = [json.loads(x) for x in (src / "queries.jsonl").read_text().splitlines()]
    # Distractors that share the claims' longer words, so that the slice is not ranked perfectly.
    words = {w for q in qs if q["_id"] in claims for w in q["text"].lower().split() if len(w) > 5}
    others = sorted(
        (d for d in docs if d["_id"] not in cited),
        key=lambda d: (-len(words & set(d["text"].lower().split())), d["_id"]),
    )
    keep = [d for d in docs if d["_id"] in cited] + others[:40]
    (dst / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in keep))
    (dst / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs if q["_id"] in claims))
    (dst / "qrels" / "test.tsv").write_text(lines[0] + "\n" + "\n".join(qrels) + "\n")
    return dst


def test_agrees_with_information_retrieval_evaluator(scifact_slice):
    import torch
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    from qt_hard.evaluation.models import EmbeddingCache, load_model

    torch.manual_seed(0)
    data = load_beir(scifact_slice)
    model = load_model("minilm")
    # The first 24 tokens of each text: fast, and imperfect enough that ranking order matters.
    model.model.max_seq_length = 24
    ours = evaluate_retrieval(EmbeddingCache(model), data)["test"]
    qrels = data.qrels["test"]
    evaluator = InformationRetrievalEvaluator(
        queries={q: data.queries[q] for q in qrels},
        corpus=dict(zip(data.doc_ids, data.doc_texts)),
        relevant_docs={q: set(d) for q, d in qrels.items()},
        mrr_at_k=[10],
        ndcg_at_k=[10],
        accuracy_at_k=[1, 10],
        precision_recall_at_k=[10, 100],
        map_at_k=[100],
        show_progress_bar=False,
        score_functions={"cosine": cos_sim},
    )
    theirs = evaluator.compute_all_metrics(model.model)["cosine"]
    pairs = {
        "ndcg@10": theirs["ndcg@k"][10],
        "mrr@10": theirs["mrr@k"][10],
        "recall@100": theirs["recall@k"][100],
        "map@100": theirs["map@k"][100],
        "accuracy@1": theirs["accuracy@k"][1],
        "recall@10": theirs["recall@k"][10],
    }
    for key, value in pairs.items():
        assert abs(ours[key] - 100 * value) < 0.01, (key, ours[key], 100 * value)
    assert 0 < ours["ndcg@10"] < 100


def test_cli_writes_a_result_the_compare_command_reads(tmp_path, capsys):
    from qt_hard.cli import main

    beir = write_beir(tmp_path / "b")
    out = tmp_path / "r.json"
    assert main(["eval", "retrieval", "--model", "random:bow", "--data", str(beir), "--output", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| random:bow |" in table and "nDCG@10" in table
    payload = json.loads(out.read_text())
    assert payload["kind"] == "retrieval" and payload["results"]["queries"] == 2
    assert main(["eval", "compare", str(out), str(out)]) == 0
    assert "| ndcg@10 |" in capsys.readouterr().out


def test_cli_refuses_a_damaged_folder_before_the_model_loads(tmp_path, monkeypatch, capsys):
    import qt_hard.evaluation.models as models
    from qt_hard.cli import main

    beir = write_beir(tmp_path / "b")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tnope\t1\n")
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(["eval", "retrieval", "--model", "minilm", "--data", str(beir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"qt-hard: error: {beir}/qrels/test.tsv:2: corpus-id 'nope' is not in corpus.jsonl"]


def test_scifact_dev_split_is_disjoint_and_fixed():
    from qt_hard.experiments.specs.scifact import DEV_FRACTION, dev_split

    claims = {str(i): {} for i in range(100)}
    train, dev = dev_split(claims)
    assert not set(train) & set(dev) and len(dev) == round(DEV_FRACTION * 100)
    assert dev_split(dict(reversed(list(claims.items())))) == (train, dev)  # file order does not matter


class _Table(torch.nn.Module):
    """An encoder whose input ids index a fixed table of embeddings."""

    def __init__(self, table):
        super().__init__()
        self.table = table

    def forward(self, features):
        return {"sentence_embedding": self.table[features["input_ids"][:, 0]]}


def test_guard_audit_counts_removed_candidates_and_true_positives():
    import torch

    from qt_hard.experiments.specs.st_finetuning import GuardAudit
    from qt_hard.integrations.sentence_transformers import HardNegativesLoss

    names = ["c1", "c2", "c3", "dA", "dB", "dC", "dX", "dY", "dZ"]
    g = torch.Generator().manual_seed(3)
    table = torch.randn(len(names), 8, generator=g)
    table[names.index("dB")] = table[names.index("c1")] + 0.05 * torch.randn(8, generator=g)  # c1's other cited doc
    rows = [("c1", "dA", "dX"), ("c2", "dB", "dY"), ("c3", "dC", "dZ")]
    relevant = {"c1": {"dA", "dB"}, "c2": {"dB"}, "c3": {"dC"}}
    loss = HardNegativesLoss(_Table(table), negatives="hard", beta=1.0, guard="absolute", guard_margin=0.05)
    audit = GuardAudit(loss, rows, relevant)
    cols = [[names.index(r[j]) for r in rows] for j in range(3)]
    feats = [{"input_ids": torch.tensor(c).unsqueeze(1)} for c in cols]
    loss(feats, torch.tensor([0, 1, 2]))
    # The rule by hand: candidate c of anchor i (every positive but its own, every negative) is removed
    # when cos(a_i, c) > cos(a_i, p_i) - 0.05.
    unit = torch.nn.functional.normalize(table, dim=1)
    cos = lambda a, b: float(unit[names.index(a)] @ unit[names.index(b)])
    cands = [r[1] for r in rows] + [r[2] for r in rows]
    total = removed = removed_tp = tp = 0
    for i, (claim, pos, _) in enumerate(rows):
        for j, c in enumerate(cands):
            if j == i:
                continue
            total += 1
            gone = cos(claim, c) > cos(claim, pos) - 0.05
            removed += gone
            removed_tp += gone and c in relevant[claim]
            tp += c in relevant[claim]
    assert removed_tp == 1  # dB, c1's other cited abstract, scored above c1's own positive
    c = audit.counts
    assert (c["candidates"], c["removed"], c["removed_tp"], c["candidates_tp"]) == (total, removed, removed_tp, tp)
    rec = audit.record()
    assert rec["guard_removed_frac"] == pytest.approx(removed / total)
    assert rec["guard_removed_tp_frac"] == pytest.approx(removed_tp / removed)


def test_floor_audit_records_the_anchors_on_the_hard_floor_by_hand():
    import math

    from qt_hard.experiments.specs.st_finetuning import FloorAudit
    from qt_hard.integrations.sentence_transformers import HardNegativesLoss

    g = torch.Generator().manual_seed(11)
    n = 6
    anchors = torch.randn(n, 8, generator=g)
    # anchors 0-2 have a near copy of themselves as positive (cosine near 1), 3-5 a random one
    positives = torch.cat([anchors[:3] + 0.05 * torch.randn(3, 8, generator=g), torch.randn(3, 8, generator=g)])
    table = torch.cat([anchors, positives])
    tau, scale = 0.05, 20.0
    losses = {}
    for floor in ("hard", "smooth"):
        loss = HardNegativesLoss(_Table(table), negatives="debiased", tau_plus=tau, floor=floor, scale=scale)
        audit = FloorAudit(loss)
        feats = [{"input_ids": torch.arange(n).unsqueeze(1)}, {"input_ids": torch.arange(n, 2 * n).unsqueeze(1)}]
        for _ in range(2):
            losses[floor] = loss(feats, torch.arange(n))
        rec = audit.record()
        assert len(rec["floor_by_batch"]) == 2
        if floor == "smooth":
            assert rec["floor_binds_frac"] == 0.0
            continue
        # By hand (Chuang et al. eq. 6): anchor i is on the floor when (E_i - tau e^{s+_i}) / (1 - tau)
        # < e^{-scale}, E_i the mean of e^{s} over the other rows' positives.
        cos = torch.nn.functional.normalize(anchors, dim=1) @ torch.nn.functional.normalize(positives, dim=1).T
        s = scale * cos.double()
        on = 0
        for i in range(n):
            e = sum(math.exp(float(s[i, j])) for j in range(n) if j != i) / (n - 1)
            on += (e - tau * math.exp(float(s[i, i]))) / (1 - tau) < math.exp(-scale)
        assert 0 < on < n  # the batch has both kinds of anchor
        assert rec["floor_binds_frac"] == pytest.approx(on / n)
    # the record leaves the loss as it was
    plain = HardNegativesLoss(_Table(table), negatives="debiased", tau_plus=tau, floor="hard", scale=scale)
    assert torch.equal(plain(feats, torch.arange(n)), losses["hard"])


def test_output_onto_the_folder_it_reads_is_refused(tmp_path, capsys):
    from qt_hard.cli import main

    beir = write_beir(tmp_path / "b")
    before = (beir / "corpus.jsonl").read_bytes()
    args = ["eval", "retrieval", "--model", "random:bow", "--data", str(beir), "--output"]
    assert main([*args, str(beir / "corpus.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("qt-hard: error: --output") and "BEIR folder" in err[0]
    assert (beir / "corpus.jsonl").read_bytes() == before
    assert main([*args, str(tmp_path / "r.json")]) == 0
    assert main([*args, str(tmp_path / "r.json")]) == 0  # its own earlier result is replaced


@pytest.fixture(scope="module")
def nfcorpus_slice(tmp_path_factory):
    """The first 24 queries of each NFCorpus split (test graded 1 and 2) and the first 80 abstracts they judge."""
    import _data

    src = _data.dataset("beir", "nfcorpus")  # skipped without it, failed under CI
    from qt_hard.experiments.specs.nfcorpus import write_slice

    return write_slice(src, tmp_path_factory.mktemp("nfcorpus") / "slice", queries=24, docs=80)


def test_graded_ndcg_equals_trec_eval_and_binary_equals_the_evaluator_on_nfcorpus(nfcorpus_slice):
    """On graded judgements the two nDCG@10 differ; the graded one equals trec_eval's ``ndcg_cut_10`` on
    the model's cosine scores (pytrec_eval) and the binary one the evaluator's, each within 0.01."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    from qt_hard.evaluation.models import EmbeddingCache, load_model

    data = load_beir(nfcorpus_slice)
    qrels = data.qrels["test"]
    assert {s for docs in qrels.values() for s in docs.values()} == {1, 2}
    model = load_model("minilm")
    model.model.max_seq_length = 24
    ours = evaluate_retrieval(EmbeddingCache(model), data, per_query=True)["test"]
    qids = list(qrels)
    q = model.model.encode([data.queries[x] for x in qids], convert_to_tensor=True)
    d = model.model.encode(data.doc_texts, convert_to_tensor=True)
    scores = cos_sim(q, d).tolist()
    run = {x: {doc: float(s) for doc, s in zip(data.doc_ids, row)} for x, row in zip(qids, scores)}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    for x in qids:
        assert abs(ours["per_query"]["ndcg@10"][x] - 100 * ref[x]["ndcg_cut_10"]) < 0.01, x
    evaluator = InformationRetrievalEvaluator(
        queries={x: data.queries[x] for x in qids},
        corpus=dict(zip(data.doc_ids, data.doc_texts)),
        relevant_docs={x: {doc for doc, s in docs.items() if s > 0} for x, docs in qrels.items()},
        ndcg_at_k=[10],
        show_progress_bar=False,
        score_functions={"cosine": cos_sim},
    )
    theirs = evaluator.compute_all_metrics(model.model)["cosine"]
    assert abs(ours["ndcg@10_binary"] - 100 * theirs["ndcg@k"][10]) < 0.01
    assert abs(ours["ndcg@10"] - ours["ndcg@10_binary"]) > 0.1  # the grades matter here


def test_floor_table_reads_the_audit_and_says_what_was_not_recorded():
    from qt_hard.experiments.specs.scifact import floor_table

    batches = [1.0] * 10 + [0.5] * 80 + [0.0] * 10  # 100 batches: first tenth all on the floor, last none
    by = {
        "before": {None: {}},
        "mnrl": {0: {"floor_by_batch": []}},
        "debiased_smooth_t0.01": {0: {"floor_by_batch": batches}, 1: {"floor_by_batch": [0.2] * 100}},
        "debiased_t0.05": {0: {}},
    }
    lines = floor_table(by, list(by))
    rows = [line for line in lines if line.startswith("| `")]
    assert rows == [
        "| `debiased_smooth_t0.01` | smooth | 2 of 2 | 35.0% | 60.0% | 10.0% |",
        "| `debiased_t0.05` | hard | 0 of 1 | not recorded | not recorded | not recorded |",
    ]
    assert floor_table({"mnrl": {0: {}}}, ["mnrl"]) == []
