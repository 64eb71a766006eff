"""A cell for ``qt_hard.experiments.runner.in_processes`` tests: importable by name, so that spawned
workers find it (the tests folder is on the path they inherit)."""

from __future__ import annotations

import os
from pathlib import Path


def train_linked(tree: dict, run_dir: str, cache: str) -> dict:
    """Train the config ``tree`` into ``run_dir`` reading the shared ``cache``; what the worker saw."""
    from qt_hard.experiments.runner import link_shared_cache
    from qt_hard.training.config import config_from_dict
    from qt_hard.training.loop import train

    link_shared_cache(run_dir, cache)
    train(config_from_dict({**tree, "out_dir": run_dir}))
    return {
        "pid": os.getpid(),
        "accelerate_cpu": os.environ.get("ACCELERATE_USE_CPU"),
        "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "saved": (Path(run_dir) / "final").is_dir(),
    }
