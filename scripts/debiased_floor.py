"""Where the debiased estimator's floor binds at the start of training: for each debiased row of the
retrieval comparisons (the papers' hard clamp and the smooth floor, each tau+), the share of anchors
whose estimate of the negative term sits on the floor (those anchors get no gradient; Chuang et al.
2020, eq. 6), under the starting model (all-MiniLM-L6-v2), on the first training batches of a seed
(``Scifact.pairs_for``: the batches the grid trains on), inputs cut to the recipe's 128 tokens.

    python scripts/debiased_floor.py --output results/debiased_floor.jsonl

One JSON row per (dataset, row) with its provenance; the last line is the headline.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="the first training batches of the seed")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--datasets", default="scifact,nfcorpus")
    parser.add_argument("--output", default=None, help="append the rows to this JSONL file")
    return parser.parse_args(argv)


def measure(model, name: str, args) -> list[dict]:
    """One row per debiased row of the comparison: its share of anchors on the floor over the first
    ``args.batches`` training batches of dataset ``name`` under ``model``."""
    import torch

    from qt_hard.experiments.specs.nfcorpus import NFCorpus
    from qt_hard.experiments.specs.retrieval_data import Scifact
    from qt_hard.experiments.specs.scifact import BASE_RECIPE, ROWS, build_loss
    from qt_hard.negatives import directional_scores
    from qt_hard.paths import data_path

    cls = {"scifact": Scifact, "nfcorpus": NFCorpus}.get(name)
    if cls is None:
        raise SystemExit(f"--datasets: unknown dataset {name!r} (scifact, nfcorpus)")
    sf = cls(data_path("beir", name))
    texts = sf.texts(sf.pairs_for(args.seed, args.batches, args.batch_size))
    with torch.no_grad():
        q = model.encode([t[0] for t in texts], convert_to_tensor=True, batch_size=args.batch_size)
        d = model.encode([t[1] for t in texts], convert_to_tensor=True, batch_size=args.batch_size)
    out = []
    for row in (r for r in ROWS if ROWS[r].changes["kwargs"].get("negatives") == "debiased"):
        loss = build_loss(row, model, BASE_RECIPE)
        layout = dict(directions=loss.directions, partition_mode=loss.partition_mode, normalize=True)
        fracs = []
        for b in range(0, len(texts), args.batch_size):
            table = directional_scores(
                q[b : b + args.batch_size], d[b : b + args.batch_size], temperature=loss.temperature, **layout
            )[0]
            fracs.append(loss.strategy.floor_binds(table))
        kw = ROWS[row].changes["kwargs"]
        out.append(
            {
                "dataset": name,
                "row": row,
                "tau_plus": kw["tau_plus"],
                "floor": kw.get("floor", "hard"),
                "scale": BASE_RECIPE["scale"],
                "seed": args.seed,
                "batches": len(fracs),
                "batch_size": args.batch_size,
                "floor_binds_frac": sum(fracs) / len(fracs),
                "floor_binds_min": min(fracs),
                "floor_binds_max": max(fracs),
            }
        )
    return out


def main(argv=None) -> int:
    args = _parse(argv)
    from qt_hard.experiments.ledger import measurement_stamp
    from qt_hard.experiments.specs.scifact import MINILM, TAU_PLUS
    from qt_hard.experiments.specs.st_finetuning import load_start

    start = time.perf_counter()
    model = load_start(MINILM)
    model.max_seq_length = args.max_seq_length
    model.eval()
    out = [r for name in args.datasets.split(",") for r in measure(model, name, args)]
    stamp = measurement_stamp(ROOT, ["scripts/debiased_floor.py", *(argv if argv is not None else sys.argv[1:])])
    stamp["wall_s"] = round(time.perf_counter() - start, 2)  # the whole run
    for r in out:
        print(json.dumps({**r, **stamp}))
    if args.output:
        with open(args.output, "a", encoding="utf-8") as fh:
            fh.writelines(json.dumps({**r, **stamp}) + "\n" for r in out)
    by: dict = {}
    for r in out:
        by.setdefault((r["dataset"], r["floor"]), []).append(r["floor_binds_frac"])
    print(
        f"anchors on the debiased floor at the start (tau+ {', '.join(f'{t:g}' for t in TAU_PLUS)}): "
        + ", ".join(f"{ds} {fl} {100 * min(v):.0f}-{100 * max(v):.0f}%" for (ds, fl), v in by.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
