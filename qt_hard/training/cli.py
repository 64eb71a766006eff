"""``qt-hard train CONFIG.yaml [section.key=value ...] [--resume]``.

Under several processes: ``accelerate launch --num_processes N -m qt_hard.cli train CONFIG.yaml`` on
N GPUs; on CPUs ``ACCELERATE_USE_CPU=true torchrun --standalone --nproc_per_node N -m qt_hard.cli train
CONFIG.yaml``. ``train.batch_size`` is the global batch, split evenly over the processes.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import traceback

log = logging.getLogger(__name__)


def run_train(args: argparse.Namespace) -> int:
    """Exit status 0 for a finished run; 128 + the signal's number (130 SIGINT, 143 SIGTERM) for a
    run stopped by a signal, after its checkpoint (or at once on a second signal)."""
    from qt_hard.training.config import load_config, validate
    from qt_hard.training.outdir import check_out_dir

    overrides = list(args.overrides)
    if args.out:  # a text key: the path as typed, never a YAML value (qt_hard.training.config)
        overrides.append(f"out_dir={args.out}")
    # Keys, types and numbers; then the output folder; then the pipeline's own check (the
    # objective, built by the core, and the data paths): all before any data is read.
    cfg = load_config(args.config, overrides, check_pipeline=False)
    check_out_dir(cfg, resume=args.resume, overwrite=args.overwrite, config_file=args.config)
    validate(cfg)
    if cfg.note:
        log.info("note: %s", cfg.note.strip())
    # torch is imported here, after the config is known to be good
    from qt_hard.training.loop import SecondSignal, Stopped, train

    try:
        exit_at_once_on_error(train, cfg, resume=args.resume, overwrite=args.overwrite, raise_on_stop=True)
    except (Stopped, SecondSignal) as stop:  # the shell's status of a process a signal ended
        print(f"qt-hard: {stop}", file=sys.stderr)
        return 128 + int(stop.signum)
    except KeyboardInterrupt:  # Ctrl-C before the loop's handler is installed (data preparation)
        print("qt-hard: interrupted before training started; nothing to resume", file=sys.stderr)
        return 128 + int(signal.SIGINT)
    return 0


def exit_at_once_on_error(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``; under a launcher with several processes (``WORLD_SIZE`` > 1), an
    exception prints its traceback (a user error: its one-line message) and ends this process at
    once with status 1.

    A normal exit can block: at interpreter shutdown the process group's destructor and any
    non-daemon thread wait, while the peers sit in a collective (gloo waits 30 minutes) for the
    failed process. Ending the process closes its connections, so the peers' collective fails with
    "Connection closed by peer", and the launcher (torchrun, ``accelerate launch``) sees the failure
    and stops the remaining processes."""
    from qt_hard.training.loop import Stopped

    try:
        return fn(*args, **kwargs)
    except Stopped:  # every process stopped at the same step after the checkpoint: a normal exit
        raise
    except BaseException as err:
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            raise
        from qt_hard.errors import UserError

        rank = os.environ.get("RANK", "?")
        print(f"[rank {rank}] training failed; ending this process so that the others stop too:", file=sys.stderr)
        if isinstance(err, UserError):  # the message says what to change: one line, as without a launcher
            print(f"qt-hard: {err}", file=sys.stderr)
        else:
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="train a model (text, graph or image pipeline) from a YAML config",
        description="qt-hard train CONFIG.yaml [section.key=value ...] [--resume]: train the config's model "
        "(text, graph or image pipeline).",
    )
    p.add_argument("config", help="YAML config (see configs/)")
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="section.key=value",
        help="override config values, e.g. train.lr=0.001 objective.negatives=hard",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest complete checkpoint in out_dir (the config may change "
        "only in bookkeeping keys and a longer step budget)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run already in out_dir (its files are removed when training starts; only a "
        "folder that holds a qt-hard run config)",
    )
    p.add_argument("--out", help="output folder (same as out_dir=...; a path as typed, never a YAML value)")
    p.set_defaults(func=run_train)
