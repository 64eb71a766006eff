"""How much there is for a false-negative filter to catch on each retrieval dataset, before any filter:
the share of MNRL's in-batch candidates that the training judgements mark relevant to the anchor's query
(:func:`qt_hard.experiments.specs.retrieval_data.in_batch_relevance`), per seed, at each dataset's batch and steps.

    python scripts/in_batch_relevance.py --output results/in_batch_relevance.jsonl

One JSON row per (dataset, seed) with its provenance; the last line is the headline. No model is run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from qt_hard.experiments.ledger import measurement_stamp
from qt_hard.experiments.specs.nfcorpus import NFCorpus
from qt_hard.experiments.specs.retrieval_data import Scifact, in_batch_relevance
from qt_hard.paths import data_path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--scifact-steps", type=int, default=88, help="SciFact's recipe: 88 steps of 32 (4 epochs)")
    parser.add_argument("--nfcorpus-steps", type=int, default=320, help="NFCorpus: 4 epochs of 80 steps of 32")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--output", default=None, help="append the rows to this JSONL file")
    args = parser.parse_args(argv)
    rows, share = [], {}
    start = time.perf_counter()
    for name, cls, steps in (("scifact", Scifact, args.scifact_steps), ("nfcorpus", NFCorpus, args.nfcorpus_steps)):
        sf = cls(data_path("beir", name))
        for seed in (int(s) for s in args.seeds.split(",")):
            r = in_batch_relevance(sf, args.batch_size, steps, seed)
            rows.append({"dataset": name, "seed": seed, "batch_size": args.batch_size, "steps": steps, **r})
            share.setdefault(name, []).append(r["relevant_frac"])
    stamp = measurement_stamp(ROOT, ["scripts/in_batch_relevance.py", *(argv if argv is not None else sys.argv[1:])])
    stamp["wall_s"] = round(time.perf_counter() - start, 2)  # the whole run, every dataset and seed
    for r in rows:
        print(json.dumps({**r, **stamp}))
    if args.output:
        with open(args.output, "a", encoding="utf-8") as fh:
            fh.writelines(json.dumps({**r, **stamp}) + "\n" for r in rows)
    means = {k: sum(v) / len(v) for k, v in share.items()}
    print(
        "in-batch candidates relevant to the anchor's query: "
        + ", ".join(f"{k} {100 * v:.3f}%" for k, v in means.items())
        + f" (mean over seeds {args.seeds}, batch {args.batch_size})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
