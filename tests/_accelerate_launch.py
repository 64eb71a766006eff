"""``qt-hard train`` in a subprocess: one process, or N CPU processes under ``accelerate launch``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def accelerate_command(nproc: int, port: int | str, *target: str) -> list[str]:
    """``accelerate launch`` of ``target`` (a script and its arguments, or ``-m module ...``) with
    ``nproc`` CPU processes on one machine, no mixed precision and no dynamo, at ``port`` (0: a free one)."""
    launcher = shutil.which("accelerate", path=os.path.dirname(sys.executable)) or "accelerate"
    return [
        launcher,
        "launch",
        "--multi_gpu",
        "--num_processes",
        str(nproc),
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(port),
        *target,
    ]


def run_train(cfg_file, out, nproc: int, *flags: str, port: int = 29533, timeout: int = 900) -> None:
    """Train ``cfg_file`` into ``out`` with ``nproc`` processes (gloo on the CPU); asserts success.
    ``flags`` are extra ``qt-hard train`` arguments (e.g. ``--resume``)."""
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    if nproc == 1:
        cmd = [sys.executable, "-m", "qt_hard.cli", "train", str(cfg_file), *flags, f"out_dir={out}"]
    else:
        cmd = accelerate_command(nproc, port, "-m", "qt_hard.cli", "train", str(cfg_file), *flags, f"out_dir={out}")
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
