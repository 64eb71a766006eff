"""``qt-hard train CONFIG.yaml [section.key=value ...] [--resume]``.

Under several processes: ``accelerate launch --num_processes N -m qt_hard.cli train CONFIG.yaml``
(CPU: add ``--multi_gpu`` and set ``ACCELERATE_USE_CPU=true``); ``train.batch_size`` is the global
batch, split evenly over the processes.
"""

from __future__ import annotations

import argparse


def run_train(args: argparse.Namespace) -> int:
    from qt_hard.training.config import load_config
    from qt_hard.training.loop import train

    overrides = list(args.overrides)
    if args.out:
        overrides.append(f"out_dir={args.out}")
    cfg = load_config(args.config, overrides)
    train(cfg, resume=args.resume)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train", help="train a model (text or graph pipeline) from a YAML config",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("config", help="YAML config (see configs/)")
    p.add_argument("overrides", nargs="*", metavar="section.key=value",
                   help="override config values, e.g. train.lr=0.001 objective.negatives=hard")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in out_dir")
    p.add_argument("--out", help="output folder (same as out_dir=...)")
    p.set_defaults(func=run_train)
