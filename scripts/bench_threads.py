"""Training speed of one config at several torch thread counts, side by side in one run.

Each round trains ``--config`` for ``--steps`` steps through the library's loop once per thread count
of ``--threads`` (``train.num_threads``; the order alternates between rounds), from one data cache
prepared before the clock starts, in a run folder of its own each time. A run's rate is that of its
median step after ``--warmup`` steps (sentences per step / the median seconds between two steps'
ends). A JSON row per (threads, round) and per thread count (median over rounds; ``ratio``: the
median over rounds of that count's rate over the first count's in the same round) is printed, and
appended to ``--output`` with the machine, load average, command and commit; the last line is the
headline.

    nice -n 5 python scripts/bench_threads.py --config configs/qt_books_smoke.yaml --threads 1,2 --steps 150
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402

sys.path.insert(0, str(_bench.ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--threads", default="1,2", help="comma list of train.num_threads")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="runs/bench_threads", help="the shared cache and the run folders")
    ap.add_argument("--output", default=None, help="JSONL the rows are appended to")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. train.batch_size=200")
    args = ap.parse_args(argv)
    if args.steps < args.warmup + 3:
        ap.error("--steps must exceed --warmup by at least 3")
    from qt_hard.experiments.runner import link_shared_cache, prepare_shared_cache
    from qt_hard.training.config import load_config

    threads = [int(t) for t in args.threads.split(",")]
    out = Path(args.out).resolve()
    base = [*args.overrides, f"train.steps={args.steps}", "train.checkpoint_every=0", "train.progress=false"]
    base += ["train.trackers=[csv]", "train.log_every=10"]
    cache = prepare_shared_cache(load_config(args.config, [*base, f"out_dir={out / 'shared'}"]), out / "shared")
    stamp = _bench.stamp(__file__, argv)
    meta = {"config": args.config, "overrides": args.overrides, "steps": args.steps, "warmup": args.warmup, **stamp}
    rates: dict[int, list[float]] = {t: [] for t in threads}
    for rnd in range(args.rounds):
        for t in threads if rnd % 2 == 0 else threads[::-1]:
            run = out / f"t{t}"
            shutil.rmtree(run, ignore_errors=True)
            link_shared_cache(run, cache)
            cfg = load_config(args.config, [*base, f"out_dir={run}", f"train.num_threads={t}"])
            rates[t].append(_bench.train_rate(cfg, args.warmup))
            _bench.emit(
                [{"num_threads": t, "round": rnd, "sentences_per_s": round(rates[t][-1], 1), **meta}], args.output
            )
    heads = []
    for t in threads:
        ratio = _bench.paired_ratio(rates[t], rates[threads[0]])
        heads.append({"num_threads": t, "sentences_per_s": round(statistics.median(rates[t]), 1)})
        heads[-1].update(ratio=round(ratio, 2), **meta)
    _bench.emit(heads, args.output)
    print(
        f"{args.config}, {args.steps} steps x {args.rounds} rounds: "
        + "; ".join(
            f"{r['num_threads']} thread(s) {r['sentences_per_s']:,.0f} sentences/s ({r['ratio']:.2f}x)" for r in heads
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
