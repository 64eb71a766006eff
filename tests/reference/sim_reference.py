"""The unsupervised STS Benchmark and SICK-R of a sentence-transformers model, two ways, and what
SICK's text form does to it.

* ``qt-hard``'s ``STSBenchmark-cos`` and ``SICKRelatedness-cos`` (``qt_hard.evaluation.similarity``,
  test split) against sentence-transformers' ``EmbeddingSimilarityEvaluator`` on the same pairs
  (the same sentences: SentEval's files, words joined by spaces): Spearman and Pearson x100 and their
  differences.
* SICK-R (cosine, test) on SICK's text as the data folder holds it (SentEval's download script runs
  the Moses tokenizer over SICK and, unlike for STS, does not lower-case it) against the same text
  lower-cased (the form SentEval gives the STS files). SICK's original, untokenized release is not
  in the data folder, so raw against tokenized is not measured exactly; the row counts the test
  sentences that hold a token Moses splits off (a comma, an apostrophe), the only ones whose text
  tokenization can change, and scores a rule-based undoing of those splits (``detokenize``: `` ,``
  -> ``,``, `` ' `` -> ``'``, `` 's`` -> ``'s``, `` n't`` -> ``n't``), an approximation of the raw
  text, not the release itself.

One JSON row (machine, date, commit, wall time) is appended to ``--output``; a one-line headline is
printed last. ``--step N`` keeps every N-th test pair (SentEval's order) for a quick run.

    python tests/reference/sim_reference.py --model minilm --output results/similarity_reference.jsonl
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # _bench: the benchmarks' row stamp
import _bench  # noqa: E402


def detokenize(words: list[str]) -> list[str]:
    """Undo the Moses splits SICK's SentEval copy shows (commas, apostrophes) by rule: an
    approximation of SICK's untokenized text (module docstring)."""
    text = " ".join(words)
    for old, new in ((" ,", ","), (" ' ", "'"), (" 's", "'s"), (" n't", "n't"), (" .", ".")):
        text = text.replace(old, new)
    return text.split()


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm", help="'minilm' or a sentence-transformers folder")
    ap.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument("--step", type=int, default=1, help="keep every N-th test pair (default 1: all)")
    ap.add_argument("--output", default=None, help="append the JSON row here")
    return ap


def _load(spec: str, data: Path):
    """The model and the two tasks, or the script's one-line error."""
    from qt_hard.evaluation import similarity as sim
    from qt_hard.evaluation.models import SentenceTransformerModel, load_model

    try:
        model = load_model(spec)
        tasks = {name: sim.load_relatedness(name, data) for name in ("STSBenchmark-cos", "SICKRelatedness-cos")}
    except Exception as err:  # noqa: BLE001 - one line for the user, as the CLI does
        raise SystemExit(f"error: {err}") from None
    if not isinstance(model, SentenceTransformerModel):
        raise SystemExit(f"error: --model {spec}: needs a sentence-transformers model for the evaluator")
    return model, tasks


def _every(pairs, step: int):
    from qt_hard.evaluation import similarity as sim

    return sim.Pairs(pairs.a[::step], pairs.b[::step], pairs.scores[::step])


def both_ways(name: str, task, cache, model, step: int) -> dict:
    """One task's test pairs scored by qt-hard and by sentence-transformers' evaluator."""
    from qt_hard.evaluation import similarity as sim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers.evaluation import EmbeddingSimilarityEvaluator

    sub = _every(task.test, step)
    ours = sim.evaluate_cosine(sim.RelatednessTask(name, sub, sub, sub), cache)
    a, b = sub.texts()
    ref = EmbeddingSimilarityEvaluator(a, b, list(sub.scores), main_similarity="cosine", name="x", write_csv=False)(
        model.model
    )
    row = {
        "pairs": len(sub.scores),
        "spearman": round(ours["spearman"], 4),
        "pearson": round(ours["pearson"], 4),
        "st_spearman": round(100 * float(ref["x_spearman_cosine"]), 4),
        "st_pearson": round(100 * float(ref["x_pearson_cosine"]), 4),
    }
    row["max_abs_diff"] = round(
        max(abs(row["spearman"] - row["st_spearman"]), abs(row["pearson"] - row["st_pearson"])), 4
    )
    return row


def sick_tokenization(task, cache, step: int, as_stored: float) -> dict:
    """SICK as stored (Moses-tokenized, cased) against the same words lower-cased and detokenized."""
    from qt_hard.evaluation import similarity as sim

    sub = _every(task.test, step)
    lower = sim.Pairs([[w.lower() for w in s] for s in sub.a], [[w.lower() for w in s] for s in sub.b], sub.scores)
    low = sim.evaluate_cosine(sim.RelatednessTask("lower", lower, lower, lower), cache)
    raw = sim.Pairs([detokenize(s) for s in sub.a], [detokenize(s) for s in sub.b], sub.scores)
    detok = sim.evaluate_cosine(sim.RelatednessTask("detok", raw, raw, raw), cache)
    split_off = {",", "'", "'s", "n't", "'re", "'m", "'ve", "'ll", "'d", "."}
    sentences = {" ".join(s) for s in sub.a + sub.b}
    return {
        "as_stored_spearman": as_stored,
        "lowercased_spearman": round(low["spearman"], 4),
        "lowercased_pearson": round(low["pearson"], 4),
        "detokenized_spearman": round(detok["spearman"], 4),
        "detokenized_pearson": round(detok["pearson"], 4),
        "sentences": len(sentences),
        "sentences_with_a_split_token": sum(1 for s in sentences if split_off & set(s.split())),
        "raw_text_measured": False,
    }


def headline(row: dict, model: str) -> str:
    s, k = row["STSBenchmark-cos"], row["SICKRelatedness-cos"]
    tok = row["SICK_tokenization"]
    return (
        f"{model}: STS-B cos {s['spearman']:.2f} (evaluator {s['st_spearman']:.2f}), SICK-R cos "
        f"{k['spearman']:.2f} (evaluator {k['st_spearman']:.2f}), largest difference "
        f"{max(s['max_abs_diff'], k['max_abs_diff']):.4f}; SICK lower-cased {tok['lowercased_spearman']:.2f}, "
        f"detokenized {tok['detokenized_spearman']:.2f}; "
        f"{round(row['wall_seconds'], 0)} s"
    )


def main() -> None:
    args = _parser().parse_args()
    if args.step < 1:
        raise SystemExit(f"error: --step must be >= 1, got {args.step}")

    from qt_hard.evaluation.models import EmbeddingCache
    from qt_hard.experiments.ledger import measurement_stamp
    from qt_hard.paths import data_path

    data = Path(args.data) if args.data else data_path("senteval")
    start = time.perf_counter()
    model, tasks = _load(args.model, data)
    cache = EmbeddingCache(model)
    row = {"model": args.model, "step": args.step, "data": str(data)}
    for name, task in tasks.items():
        row[name] = both_ways(name, task, cache, model, args.step)
    as_stored = row["SICKRelatedness-cos"]["spearman"]
    row["SICK_tokenization"] = sick_tokenization(tasks["SICKRelatedness-cos"], cache, args.step, as_stored)
    row.update(
        {
            "sentences_encoded": cache.n_encoded,
            "encode_seconds": round(cache.seconds, 1),
            "wall_seconds": round(time.perf_counter() - start, 1),
            # the context every benchmark row records (commit, machine, load, the command)
            **measurement_stamp(_bench.ROOT, ["tests/reference/sim_reference.py", *sys.argv[1:]]),
        }
    )
    _bench.emit([row], args.output)
    print(headline(row, args.model), file=sys.stderr)


if __name__ == "__main__":
    main()
