"""Retrieval evaluation time: ``qt-hard eval retrieval``'s path against sentence-transformers'
``InformationRetrievalEvaluator`` on the same model and files, side by side in one run, threads pinned.

Each side starts from nothing (no embedding kept between runs): qt-hard reads and checks the BEIR folder,
encodes each distinct text once and ranks exactly (``qt_hard.evaluation.retrieval``); the evaluator gets
the same corpus, queries and judgements and computes its metrics. The two alternate for ``--reps`` rounds
and the median of each is taken; the ratio is qt-hard's over the evaluator's. A third row times qt-hard on
a bag-of-words model (``random:bow``, its vocabulary fitted on the texts) over the same folder, as a
fraction of qt-hard's time on MiniLM. Both sides' nDCG@10 are in the rows. Prints one JSON row per side
and a headline; ``--out`` appends the rows with the machine, date, commit and command.

    python scripts/bench_retrieval.py --data $QT_HARD_DATA/beir/scifact --docs 1000 --reps 3
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402

sys.path.insert(0, str(_bench.ROOT))


def _subset(data, docs: int | None):
    """The folder's data with the first ``docs`` documents plus every judged one (None: all)."""
    if docs is None or docs >= len(data.doc_ids):
        return data
    judged = {d for q in data.qrels["test"].values() for d in q}
    keep = [i for i, d in enumerate(data.doc_ids) if i < docs or d in judged]
    data.doc_ids = [data.doc_ids[i] for i in keep]
    data.doc_texts = [data.doc_texts[i] for i in keep]
    return data


def ours(folder: Path, spec: str, docs: int | None) -> tuple[float, float]:
    from qt_hard.evaluation.models import EmbeddingCache, load_model
    from qt_hard.data.beir import load_beir
    from qt_hard.evaluation.retrieval import evaluate_retrieval

    t = time.perf_counter()
    data = _subset(load_beir(folder), docs)
    model = load_model(spec, sentences=lambda: data.doc_texts + list(data.queries.values()))
    res = evaluate_retrieval(EmbeddingCache(model), data)
    return time.perf_counter() - t, res["test"]["ndcg@10"]


def theirs(folder: Path, docs: int | None) -> tuple[float, float]:
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    from qt_hard.evaluation.models import load_model
    from qt_hard.data.beir import load_beir

    t = time.perf_counter()
    data = _subset(load_beir(folder), docs)
    model = load_model("minilm").model
    qrels = data.qrels["test"]
    evaluator = InformationRetrievalEvaluator(
        queries={q: data.queries[q] for q in qrels},
        corpus=dict(zip(data.doc_ids, data.doc_texts)),
        relevant_docs={q: {d for d, s in docs_.items() if s > 0} for q, docs_ in qrels.items()},
        score_functions={"cosine": cos_sim},
        show_progress_bar=False,
    )
    ndcg = evaluator.compute_all_metrics(model)["cosine"]["ndcg@k"][10]
    return time.perf_counter() - t, 100 * ndcg


def main(argv: list[str] | None = None) -> int:
    p = _bench.parser(__doc__, reps=3)
    p.add_argument("--data", default=None, help="BEIR folder (default $QT_HARD_DATA/beir/scifact)")
    p.add_argument("--docs", type=int, default=None, help="the first N documents plus the judged ones (default all)")
    args = p.parse_args(argv)
    from qt_hard.paths import data_path

    _bench.pin_threads(args.threads, evaluation=True)  # both sides, the embedding cache's encoder too
    folder = Path(args.data) if args.data else data_path("beir", "scifact")
    times: dict[str, list[float]] = {"qt-hard minilm": [], "evaluator minilm": [], "qt-hard random:bow": []}
    ndcg: dict[str, float] = {}
    for _ in range(args.reps):
        for name, run in (
            ("evaluator minilm", lambda: theirs(folder, args.docs)),
            ("qt-hard minilm", lambda: ours(folder, "minilm", args.docs)),
            ("qt-hard random:bow", lambda: ours(folder, "random:bow", args.docs)),
        ):
            seconds, ndcg[name] = run()
            times[name].append(seconds)
    stamp = _bench.stamp(__file__, argv)
    base = statistics.median(times["evaluator minilm"])
    rows = []
    for name, ts in times.items():
        med = statistics.median(ts)
        ref = base if "minilm" in name else statistics.median(times["qt-hard minilm"])
        rows.append(
            {
                "case": name,
                "docs": args.docs or "all",
                "seconds_median": round(med, 3),
                "seconds": [round(t, 3) for t in ts],
                "ratio": round(med / ref, 3),
                "ratio_of": "evaluator minilm" if "minilm" in name else "qt-hard minilm",
                "ndcg@10": round(ndcg[name], 4),
                **stamp,
            }
        )
    _bench.emit(rows, args.out)
    by = {r["case"]: r for r in rows}
    mini, bow = by["qt-hard minilm"], by["qt-hard random:bow"]
    print(
        f"headline: qt-hard takes {mini['ratio']:.2f}x the evaluator's time on all-MiniLM-L6-v2 (nDCG@10 "
        f"{mini['ndcg@10']:.2f} vs {by['evaluator minilm']['ndcg@10']:.2f}); the bag of words takes "
        f"{bow['ratio']:.3f}x qt-hard's MiniLM time"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
