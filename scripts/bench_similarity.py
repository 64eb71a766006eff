"""Seconds of the similarity suite beside the six transfer tasks, for one model, on this machine.

Two runs of ``qt_hard.evaluation.senteval.run_senteval``, each with a fresh embedding cache (so each
pays its own encoding): the six transfer tasks (SentEval's protocol, the fast solver) and the
similarity suite (STS12-16, STSBenchmark-cos, SICKRelatedness-cos, and SentEval's supervised
STSBenchmark and SICKRelatedness). Per run: wall seconds, the encoding and the classifier /
scoring seconds summed over tasks, sentences encoded (each distinct one once, so this is also the
number of distinct sentences), the pairs scored and each task's headline score (Spearman x100 or
accuracy), and the system's 1-minute load average before and after: other processes lengthen
the timings, which are upper bounds.

One JSON row per model is appended to ``--output``; the last printed line is a one-line headline.

    python scripts/bench_similarity.py --model random:bow --output results/bench_similarity.jsonl
    python scripts/bench_similarity.py --model minilm --output results/bench_similarity.jsonl
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from qt_hard.evaluation.similarity import SIMILARITY_TASKS as SIMILARITY

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402

TRANSFER = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")


def suite(encoder, tasks, data) -> dict:
    """Run ``tasks`` with a fresh cache; the seconds and counts of the run."""
    from qt_hard.evaluation.models import EmbeddingCache
    from qt_hard.evaluation.senteval import run_senteval

    cache = EmbeddingCache(encoder)
    start = time.perf_counter()
    res = run_senteval(encoder, tasks, data, cache=cache)
    wall = time.perf_counter() - start
    work = sum(r.get("classify_seconds", r.get("score_seconds", 0.0)) for r in res.values())
    pairs = sum(r.get("npairs", r.get("ntest", 0)) for r in res.values())
    return {
        "tasks": list(tasks),
        # the headline score of each task: Spearman x100 (similarity) or accuracy (transfer)
        "scores": {t: round(r.get("spearman", r.get("acc", float("nan"))), 2) for t, r in res.items()},
        "task_seconds": {t: r["seconds"] for t, r in res.items()},
        "seconds": round(wall, 1),
        "encode_seconds": round(cache.seconds, 1),
        "classify_or_score_seconds": round(work, 1),
        "sentences_encoded": cache.n_encoded,
        "test_pairs_scored": pairs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a --model spec of qt-hard eval senteval (random:bow, minilm, ...)")
    ap.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument("--similarity-only", action="store_true", help="time the similarity suite alone")
    ap.add_argument("--output", default=None, help="append the JSON row here")
    args = ap.parse_args()

    from qt_hard.evaluation.models import load_model
    from qt_hard.evaluation.datasets import task_sentences
    from qt_hard.paths import data_path

    data = Path(args.data) if args.data else data_path("senteval")
    load_before = os.getloadavg()
    start = time.perf_counter()
    every = [*TRANSFER, *SIMILARITY]
    # a random: model's vocabulary covers both suites, so that the two runs embed with one model
    encoder = load_model(args.model, sentences=lambda: task_sentences(every, data))
    row = {"model": args.model, "load_seconds": round(time.perf_counter() - start, 1)}
    row["similarity"] = suite(encoder, SIMILARITY, data)
    if not args.similarity_only:
        row["transfer"] = suite(encoder, TRANSFER, data)
    row.update(
        {
            "threads": int(os.environ.get("QT_HARD_EVAL_THREADS", "1")),
            "load_average_before": [round(x, 1) for x in load_before],
            **_bench.host_stamp(),
        }
    )
    _bench.emit([row], args.output)
    s = row["similarity"]
    head = (
        f"{args.model}: similarity suite {s['seconds']:.0f} s ({s['sentences_encoded']} sentences encoded in "
        f"{s['encode_seconds']:.0f} s, {s['test_pairs_scored']} test pairs)"
    )
    if "transfer" in row:
        t = row["transfer"]
        head += f"; six transfer tasks {t['seconds']:.0f} s ({t['sentences_encoded']} sentences in {t['encode_seconds']:.0f} s)"
    print(head + f"; load average {row['load_average_before'][0]} -> {row['load_average_after'][0]}")


if __name__ == "__main__":
    main()
