"""Training throughput of the README's ``accelerate launch`` command under each mixed-precision mode.

For every mode in ``--precisions`` (``no``, ``bf16``, ``fp16``) this runs, side by side on the same
machine,

    accelerate launch [--multi_gpu] --num_processes N -m qt_hard.cli train CONFIG \\
        --out OUT/<mode> train.steps=S train.mixed_precision=<mode> train.checkpoint_every=0 train.progress=false

(on a machine without a GPU with ``ACCELERATE_USE_CPU=true``, as the README's CPU line), then reads
the run's ``metrics.csv`` (the loop logs sentences/s per ``train.log_every`` window) and prints one
JSON row per mode: the median sentences/s over the windows after the first (which holds the
warm-up), the wall time of the whole command, the last window's loss. The last line is a headline
with each mode's throughput as a ratio of ``no`` (float32) measured in the same invocation.

A mode whose run folder already holds ``final/`` is not rerun (the script resumes after a timeout;
``--fresh`` starts over). A mode that fails (fp16 on a CPU is an error by design) gets a row with
its error and no number.

    python scripts/bench_precision.py --steps 300 --out runs/bench_precision         # here (CPU)
    python scripts/bench_precision.py --steps 2000 --precisions no bf16 fp16       # a GPU
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402


def _launcher() -> list[str]:
    exe = shutil.which("accelerate", path=os.path.dirname(sys.executable)) or shutil.which("accelerate")
    return [exe] if exe else [sys.executable, "-m", "accelerate.commands.accelerate_cli"]


def launch_command(mode: str, args, out: Path) -> list[str]:
    """The README's ``accelerate launch`` of ``qt-hard train`` for one mode, into ``out``."""
    cmd = _launcher() + [
        "launch",
        "--num_processes",
        str(args.num_processes),
        "--num_machines",
        "1",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        "0",
    ]
    if args.num_processes > 1:
        cmd.append("--multi_gpu")
    return cmd + [
        "-m",
        "qt_hard.cli",
        "train",
        args.config,
        "--out",
        str(out),
        f"train.steps={args.steps}",
        # mixed_precision quoted: YAML reads a bare no as False.
        f"train.mixed_precision='{mode}'",
        "train.checkpoint_every=0",
        "train.progress=false",
        f"train.log_every={args.log_every}",
        *args.overrides,
    ]


def _error(proc) -> str:
    """The training process's own exception, not the launcher's CalledProcessError after it."""
    lines = [
        ln
        for ln in proc.stderr.splitlines()
        if re.match(r"^[\w.]+(Error|Exception): ", ln) and "CalledProcessError" not in ln
    ]
    return lines[0][-300:] if lines else f"exit {proc.returncode}: {proc.stderr[-300:]}"


def run_mode(mode: str, args, env: dict) -> dict:
    import torch

    out = Path(args.out) / mode
    row = {
        "mode": mode,
        "device": _bench.device_name(),
        "num_processes": args.num_processes,
        "config": args.config,
        "steps": args.steps,
    }
    if not (out / "final").is_dir():
        shutil.rmtree(out, ignore_errors=True)
        cmd = launch_command(mode, args, out)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        row["wall_s"] = round(time.perf_counter() - t0, 2)
        row["command"] = " ".join(["accelerate", *cmd[1:]] if cmd[0].endswith("accelerate") else cmd)
        if proc.returncode != 0:
            row["error"] = _error(proc)
            return row
    with open(out / "metrics.csv") as fh:
        rows = list(csv.DictReader(fh))
    speeds = [float(r["sentences_per_s"]) for r in rows[1:]] or [float(r["sentences_per_s"]) for r in rows]
    row.update(
        sentences_per_s=round(statistics.median(speeds), 1),
        windows=len(speeds),
        final_loss=round(float(rows[-1]["loss"]), 4),
        torch=torch.__version__,
    )
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/qt_books_smoke.yaml")
    p.add_argument("--precisions", nargs="+", default=["no", "bf16", "fp16"], help="any of no, bf16, fp16")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--num-processes", type=int, default=1)
    p.add_argument("--out", default="runs/bench_precision")
    p.add_argument("--fresh", action="store_true", help="rerun modes whose run folder is complete")
    p.add_argument("overrides", nargs="*", help="extra config overrides, e.g. train.batch_size=256")
    args, extra = p.parse_known_args(argv)
    stray = [x for x in extra if "=" not in x or x.startswith("-")]
    if stray:
        p.error(f"unrecognized arguments: {' '.join(stray)}")
    # nargs="+" also takes overrides written after --precisions: move them back.
    args.overrides = list(args.overrides) + [x for x in args.precisions if "=" in x] + extra
    args.precisions = [x for x in args.precisions if "=" not in x]
    bad = sorted(set(args.precisions) - {"no", "bf16", "fp16"})
    if bad or not args.precisions:
        p.error(f"--precisions: {bad or 'none given'}; choose from no, bf16, fp16")
    if args.steps <= args.log_every:
        p.error("--steps must exceed --log-every: the first window (warm-up) is left out of the median")
    if args.fresh:
        shutil.rmtree(args.out, ignore_errors=True)

    import torch

    env = dict(os.environ)
    if not torch.cuda.is_available():
        env["ACCELERATE_USE_CPU"] = "true"  # the README's CPU line
    results = []
    for mode in args.precisions:
        row = run_mode(mode, args, env)
        results.append(row)
        print(json.dumps(row), flush=True)
    base = next((r["sentences_per_s"] for r in results if r["mode"] == "no" and "sentences_per_s" in r), None)
    parts = []
    for r in results:
        if "sentences_per_s" not in r:
            parts.append(f"{r['mode']}: failed")
        elif base:
            parts.append(f"{r['mode']} {r['sentences_per_s']:.0f} sent/s ({r['sentences_per_s'] / base:.2f}x)")
        else:
            parts.append(f"{r['mode']} {r['sentences_per_s']:.0f} sent/s")
    print(
        f"train speed on {_bench.device_name()}, {args.num_processes} process(es), {args.config}: " + "; ".join(parts)
    )
    return (
        0 if all("sentences_per_s" in r for r in results if not (r["mode"] == "fp16" and "cpu" in r["device"])) else 1
    )


if __name__ == "__main__":
    sys.exit(main())
