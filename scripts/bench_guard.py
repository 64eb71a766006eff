"""Forward + backward time of HardNegativesLoss (its default, and with the false-negative guard) against
sentence-transformers' MultipleNegativesRankingLoss, side by side in one run.

Both losses take the same (B, d) anchor and positive embeddings (optionally an explicit negative column)
through their ``compute_loss_from_embeddings`` and back-propagate to them, so a ratio is the guard's cost
(and the core's) over MNRL's for the same work; no encoder runs. The case ``uniform`` is the plugin's
default, ``HardNegativesLoss(model)``, whose loss is one cross-entropy over the scores. Runs are
interleaved (MNRL, ours, MNRL, ...), each a block of back-to-back calls lasting at least 0.2 s, and the
median of each side is taken; torch runs on ``--threads`` threads (1 unless told), set with
``torch.set_num_threads``. Prints one JSON row per case, appends them to ``--out`` with the machine,
date, commit and command, and ends with a one-line headline: the guard's worst ratio and the default's
at the smallest batch.

    python scripts/bench_guard.py                                   # B 256, d 384, pairs and triplets
    python scripts/bench_guard.py --batch-size 64,256 --cases uniform --negatives 0
    python scripts/bench_guard.py --batch-size 1024 --out /tmp/g.jsonl
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402

TARGET = 1.1  # the guard without a guide: at most 10% over MNRL
DEFAULT_TARGET = 1.05  # the plugin's default: at most 5% over MNRL (batch 64, one thread)

CASES = {
    "uniform+guard": dict(guard="absolute", guard_margin=0.0),
    "uniform+guard_relative": dict(guard="relative", guard_margin=0.05),
    "hard+guard": dict(negatives="hard", beta=1.0, guard="absolute", guard_margin=0.0),
    "uniform": dict(),
}


def bench(name, options, b, d, n_neg, reps, scale=20.0):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from qt_hard.integrations.sentence_transformers import HardNegativesLoss

    leaves = _bench.embeddings(b, d, 2 + n_neg)
    dummy = nn.Identity()  # the losses keep a model but never call it on embeddings
    mnrl = MultipleNegativesRankingLoss(dummy, scale=scale)
    ours = HardNegativesLoss(dummy, scale=scale, **options)
    base, mine = _bench.loss_step(mnrl, leaves), _bench.loss_step(ours, leaves)
    base(), mine()  # warm-up
    calls = _bench.block_calls(base)
    tb, to = _bench.interleaved([base, mine], [calls, calls], reps)
    removed = None
    if options.get("guard"):
        from qt_hard.negatives import one_directional_scores

        cols = [leaf.detach() for leaf in leaves]
        neg = torch.stack(cols[2:], dim=1) if n_neg else None
        scores = one_directional_scores(cols[0], cols[1], neg, temperature=1 / scale, gather_candidates=False)
        removed = ours.strategy.diagnostics(scores)["guard_removed_frac"]
    mb, mo = statistics.median(tb), statistics.median(to)
    return {
        "case": name,
        "B": b,
        "d": d,
        "explicit_negatives": n_neg,
        "mnrl_s": round(mb, 6),
        "ours_s": round(mo, 6),
        "ratio": round(mo / mb, 3),
        "guard_removed_frac": None if removed is None else round(removed, 4),
        "reps": reps,
        "calls_per_block": calls,
    }


def _parser():
    p = _bench.parser(__doc__, reps=7)
    p.add_argument("--batch-size", default="256", help="batch sizes, comma separated")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--negatives", default="0,1", help="explicit negative columns per case, comma separated")
    p.add_argument("--cases", default=",".join(CASES))
    return p


def _meta(argv) -> dict:
    """What every row records of the run: the machine, torch and its threads, the commit, the date
    and the command."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = None
    return {
        "device": f"cpu ({os.cpu_count()} cores)",
        "machine": platform.machine(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "commit": commit or None,
        "measured": datetime.date.today().isoformat(),
        "command": "python scripts/bench_guard.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }


def headline(rows: list[dict], args, batch_sizes: list[int]) -> str:
    """The guard's worst ratio and the default's at the smallest batch, each against its target."""
    parts = []
    guard_rows = [r for r in rows if r["case"] in ("uniform+guard", "uniform+guard_relative")]
    if guard_rows:
        worst = max(r["ratio"] for r in guard_rows)
        verdict = "met" if worst <= TARGET else "NOT met"
        parts.append(f"the guard (no guide) costs {worst:.3f}x MNRL at worst (target <= {TARGET}: {verdict})")
    default_rows = [r for r in rows if r["case"] == "uniform" and r["B"] == min(batch_sizes)]
    if default_rows:
        ratio = max(r["ratio"] for r in default_rows)
        verdict = "met" if ratio <= DEFAULT_TARGET else "NOT met"
        parts.append(
            f"the default HardNegativesLoss(model) {ratio:.3f}x at B={min(batch_sizes)} (target <= {DEFAULT_TARGET}: "
            f"{verdict})"
        )
    where = f"forward + backward, B={args.batch_size}, d={args.dim}, cpu, {args.threads} thread(s)"
    return f"headline: {'; '.join(parts) or 'no guard or default case run'} ({where})"


def main(argv=None):
    args = _parser().parse_args(argv)
    for name in args.cases.split(","):
        if name not in CASES:
            print(f"error: unknown case {name!r}; choose from {', '.join(CASES)}", file=sys.stderr)
            return 2
    try:
        batch_sizes = [int(x) for x in args.batch_size.split(",")]
    except ValueError:
        batch_sizes = []
    if not batch_sizes or min(batch_sizes) < 2 or args.threads < 1:
        print("error: --batch-size takes integers >= 2 (comma separated), --threads one >= 1", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    meta = _meta(argv)
    rows = []
    for b in batch_sizes:
        for n_neg in (int(x) for x in args.negatives.split(",")):
            for name in args.cases.split(","):
                row = {**bench(name, CASES[name], b, args.dim, n_neg, args.reps), **meta}
                row["load_average_1min"] = round(os.getloadavg()[0], 2)  # other work shares the cores
                rows.append(row)
                _bench.emit([row], args.out)
    print(headline(rows, args, batch_sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
