"""Encoding speed of a Quick-Thoughts model: ``SentenceEncoder.encode`` and the evaluation's
``EmbeddingCache`` on N MR sentences, sentences/s over three repetitions.

The model has the sizes of a training config (default configs/qt_books.yaml: GRU pair 128/256),
random weights and a vocabulary built from the sentences; pass --model to time a saved one.

    python scripts/bench_encode.py [--config configs/qt_books.yaml | --model OUT/final] [--n 5000] [--out F.jsonl]

Prints one JSON line (appended to ``--out`` with machine, date, commit, torch, threads, load average and
command); the last line is the median encode speed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402


def main() -> None:
    import numpy as np
    import torch

    from qt_hard.paths import data_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/qt_books.yaml")
    ap.add_argument("--model", default=None, help="a saved model instead of a random one")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--out", default=None, help="append the row, with machine, date and commit, to this JSONL")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    lines: list[str] = []
    for name in ("rt-polarity.pos", "rt-polarity.neg"):
        with open(data_path("senteval", "MR", name), encoding="latin-1") as fh:
            lines += [line.strip() for line in fh][: args.n // 2]
    if args.model:
        import qt_hard

        enc = qt_hard.load_encoder(args.model)
    else:
        from qt_hard.encoders import random_encoder

        enc = random_encoder(args.config, lines, seed=0)
    from qt_hard.evaluation.models import EmbeddingCache

    direct, cached = [], []
    for _ in range(3):
        t = time.perf_counter()
        enc.encode(lines, batch_size=args.batch_size)
        direct.append(round(len(lines) / (time.perf_counter() - t)))
        t = time.perf_counter()
        EmbeddingCache(enc, batch_size=64).embed(lines)
        cached.append(round(len(lines) / (time.perf_counter() - t)))
    row = {
        "n": len(lines),
        "config": None if args.model else args.config,
        "model": args.model,
        "batch_size": args.batch_size,
        "torch_threads": torch.get_num_threads(),
        "dim": enc.dim,
        "encode_sent_s": direct,
        "embedding_cache_sent_s": cached,
    }
    _bench.emit([{**row, **_bench.stamp(__file__)}], args.out)
    print(f"encode: {int(np.median(direct))} sentences/s")


if __name__ == "__main__":
    main()
