"""Cells side by side: aggregate training sentences/s of N copies of one cell running at once, each in
a process of its own (``qt_hard.experiments.runner.in_processes``), on one device.

The cell is ``scripts/bench_train_speed.py``'s ``s2v_gru`` case (``configs/qt_s2v.yaml``'s bidirectional
GRU pair, batch 400, on the first 60 books), trained through the library's loop. Its data is prepared
once (``runner.prepare_shared_cache``) and every cell's run folder links that cache, so the cells
only read it. For each N of ``--cells``:

* N cells start together: each trains ``--warmup`` steps, then waits until all N have (a file per
  cell in the round's folder), so that the timed steps of all of them overlap;
* aggregate sentences/s: the sentences of every cell's timed steps over the span from the first timed
  step's start to the last one's end (a slow cell lengthens the span: the figure is what N cells
  together deliver); per cell, the rate of its median step;
* memory per cell: each cell process's peak RSS, and on a GPU the peak of its allocated and reserved
  memory (``torch.cuda.max_memory_allocated`` / ``max_memory_reserved``; the CUDA context, a few
  hundred MiB a process, comes on top).

A JSON row per (N, cell) and per N is printed (``--output``: appended as JSONL, with the machine,
threads, load average, command and commit); the last line is the headline: aggregate sentences/s at
each N and its ratio to N = 1.

    python scripts/bench_side_by_side.py --device cuda --cells 1,2,4,8 --steps 60 --warmup 10   # a GPU
    DRY=1 python scripts/bench_side_by_side.py --out runs/side_by_side_dry                    # CPU, toy

``DRY=1`` (or ``--dry``): the same mechanism at toy size on the CPU: a 16-unit GRU pair on one book,
batch 32, N = 1, 2, 4, one thread per cell, a few steps. Its rates are no measurement of the model.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable from a checkout without installing; workers import this file by name
sys.path.insert(0, str(ROOT / "scripts"))
import _bench  # noqa: E402

DRY_SET = [
    "model.embed_dim=16",
    "model.hidden_dim=16",
    "data.max_books=1",
    "data.exclude_books=null",
    "train.batch_size=32",
    "data.max_vocab=5000",
]


def case_config(out: Path, steps: int, threads: int, overrides: list[str]):
    """The ``s2v_gru`` case of bench_train_speed.py (the same config tree), into ``out``."""
    from bench_train_speed import _config

    return _config("s2v_gru", out, steps, threads, overrides)


def cell(tree: dict, run_dir: str, cache: str, warmup: int, gate: str, n: int, index: int) -> dict:
    """One cell (in its worker): train ``tree`` into ``run_dir`` from the shared ``cache``; after
    ``warmup`` steps, wait for the other cells of the round (files in ``gate``). Returns the wall-clock
    times at which its timed steps ended, the first one's start, and its memory."""
    import torch

    from qt_hard.experiments.runner import link_shared_cache
    from qt_hard.training.config import config_from_dict
    from qt_hard.training.loop import train

    link_shared_cache(run_dir, cache)
    stamps: list[float] = []

    def on_step(step, loss):
        if step == warmup:
            Path(gate, f"ready{index}").touch()
            deadline = time.time() + 600
            while len(list(Path(gate).glob("ready*"))) < n and time.time() < deadline:
                time.sleep(0.005)
        stamps.append(time.time())  # after the gate: the stamp at `warmup` starts the timed steps

    train(config_from_dict({**tree, "out_dir": run_dir}), on_step=on_step, overwrite=True)
    gpu = {}
    if torch.cuda.is_available():
        gpu = {
            "gpu_peak_allocated_mib": round(torch.cuda.max_memory_allocated() / 2**20),
            "gpu_peak_reserved_mib": round(torch.cuda.max_memory_reserved() / 2**20),
        }
    return {
        "index": index,
        "pid": os.getpid(),
        "timed": stamps[warmup - 1 :],  # the timed steps run from stamps[warmup - 1] to stamps[-1]
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        **gpu,
    }


def aggregate(cells: list[dict], sentences_per_step: int) -> dict:
    """Aggregate sentences/s of cells whose ``timed`` lists hold the end of the step before their
    first timed step, then the end of each timed step: all timed sentences over the span from the
    earliest start to the latest end; per cell, the rate of its median step."""
    starts = [c["timed"][0] for c in cells]
    ends = [c["timed"][-1] for c in cells]
    steps = sum(len(c["timed"]) - 1 for c in cells)
    span = max(ends) - min(starts)
    per_cell = [
        sentences_per_step / statistics.median(b - a for a, b in zip(c["timed"], c["timed"][1:])) for c in cells
    ]
    return {
        "aggregate_sentences_per_s": round(steps * sentences_per_step / span, 1),
        "span_s": round(span, 2),
        "start_spread_s": round(max(starts) - min(starts), 3),
        "per_cell_sentences_per_s": [round(r, 1) for r in per_cell],
    }


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    dry_env = os.environ.get("DRY") == "1"
    ap.add_argument("--dry", action="store_true", default=dry_env, help="toy sizes on the CPU (also DRY=1)")
    ap.add_argument("--cells", default=None, help="comma list of N (default 1,2,4; a GPU: 1,2,4,8)")
    ap.add_argument("--device", default=None, help="cpu | cuda (default: cuda where there is one; --dry: cpu)")
    ap.add_argument("--steps", type=int, default=None, help="steps a cell trains (default 60; --dry 30)")
    ap.add_argument("--warmup", type=int, default=None, help="steps before the timed ones (default 10; --dry 5)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads of each cell")
    ap.add_argument("--out", default="runs/side_by_side", help="the shared cache and the cells' run folders")
    ap.add_argument("--output", default=None, help="JSONL the rows are appended to")
    ap.add_argument("overrides", nargs="*", help="config overrides of the cell, e.g. train.batch_size=200")
    return ap


def run_round(n: int, device: str, tree: dict, cache: Path, out: Path, warmup: int) -> tuple[list[dict], float]:
    """N cells at once: their results (in cell order) and the round's wall seconds."""
    from qt_hard.experiments.runner import in_processes

    gate = out / f"n{n}" / "gate"
    shutil.rmtree(out / f"n{n}", ignore_errors=True)
    gate.mkdir(parents=True)
    jobs = [(tree, str(out / f"n{n}" / f"cell{i}"), str(cache), warmup, str(gate), n, i) for i in range(n)]
    t1 = time.perf_counter()
    cells = sorted(in_processes(cell, jobs, workers=n, fresh=True, device=device), key=lambda c: c["index"])
    return cells, time.perf_counter() - t1


def round_rows(n: int, cells: list[dict], summary: dict, device: str, meta: dict) -> list[dict]:
    """A row per cell (its memory), then the round's row: ``summary`` (N, the aggregate, the ratio
    to N = 1, the seconds) with the largest memory of a cell."""
    rows = []
    for c in cells:
        row = {"cells": n, "cell": c["index"], "peak_rss_mib": c["peak_rss_mib"]}
        row.update({k: v for k, v in c.items() if k.startswith("gpu_")})
        rows.append({**row, **meta})
    summary["peak_rss_mib_per_cell"] = max(c["peak_rss_mib"] for c in cells)
    if device == "cuda":
        summary["gpu_peak_reserved_mib_per_cell"] = max(c["gpu_peak_reserved_mib"] for c in cells)
    return [*rows, {**summary, **meta}]


def headline(rows: list[dict], meta: dict, dry: bool) -> str:
    heads = [r for r in rows if "aggregate_sentences_per_s" in r]
    return (
        f"side by side on {meta['device']} (s2v_gru{' DRY' if dry else ''}, batch {meta['batch_size']}, "
        f"{meta['threads_per_cell']} thread(s) a cell): "
        + "; ".join(
            f"N={r['cells']} {r['aggregate_sentences_per_s']:,.0f} sentences/s ({r['ratio_to_one']:.2f}x), "
            f"{r['peak_rss_mib_per_cell']} MiB RSS a cell"
            for r in heads
        )
    )


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    import torch

    from qt_hard.experiments.runner import check_device, prepare_shared_cache
    from qt_hard.training.config import to_dict

    device = args.device or ("cpu" if args.dry or not torch.cuda.is_available() else "cuda")
    check_device(device)
    cells_n = [int(x) for x in (args.cells or ("1,2,4,8" if device == "cuda" else "1,2,4")).split(",")]
    steps = args.steps or (30 if args.dry else 60)
    warmup = args.warmup or (5 if args.dry else 10)
    if steps < warmup + 3:
        ap.error("--steps must exceed --warmup by at least 3")
    overrides = [*(DRY_SET if args.dry else []), *args.overrides]
    out = Path(args.out).resolve()
    cfg = case_config(out / "shared", steps, args.threads, overrides)
    t0 = time.perf_counter()
    cache = prepare_shared_cache(cfg, out / "shared")
    prepare_s = time.perf_counter() - t0
    tree = to_dict(cfg)
    stamp = _bench.stamp(__file__, argv)
    meta = {
        "case": "s2v_gru",
        "dry": args.dry,
        "device": torch.cuda.get_device_name(0) if device == "cuda" else f"cpu ({os.cpu_count()} cores)",
        "threads_per_cell": args.threads,
        "batch_size": cfg.train.batch_size,
        "steps": steps,
        "warmup": warmup,
        "overrides": overrides,
        **stamp,
    }
    rows, base = [], None
    for n in cells_n:
        cells, wall = run_round(n, device, tree, cache, out, warmup)
        agg = aggregate(cells, cfg.train.batch_size)
        base = base or agg["aggregate_sentences_per_s"]
        summary = {"cells": n, **agg, "ratio_to_one": round(agg["aggregate_sentences_per_s"] / base, 2)}
        summary.update(round_wall_s=round(wall, 1), prepare_s=round(prepare_s, 1))
        rows += round_rows(n, cells, summary, device, meta)
        _bench.emit(
            rows[-(n + 1) :], args.output
        )  # each round's rows as it ends: a run stopped at a deadline keeps them
    print(headline(rows, meta, args.dry))
    return 0


if __name__ == "__main__":
    sys.exit(main())
