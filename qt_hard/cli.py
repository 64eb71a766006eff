"""The ``qt-hard`` command line.

Each area of the library registers its own subcommand through a ``register(subparsers)``
function, so this file only wires them together:

* ``qt-hard train CONFIG.yaml [key=value ...]``  (qt_hard.training.cli; text, graph or image per the config)
* ``qt-hard eval senteval|wiki|compare ...``       (qt_hard.evaluation.cli)
* ``qt-hard data get|list|wiki|books ...``         (qt_hard.data.cli)

The conventions every command shares, as ``docs/cli.md`` states them: a user error
(``qt_hard.errors.UserError``, an argparse refusal, an allocation the memory refuses) is one line
``qt-hard: error: ...`` and status 2 (``--debug`` shows its traceback), a signal one line and 130 or 143.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from qt_hard.errors import UserError
from qt_hard.workers import stop_signals_handled_by


class OneLineParser(argparse.ArgumentParser):
    """argparse's refusals as one line (``qt-hard: error: qt-hard eval senteval: argument ...``),
    status 2, like every other refusal of the command line; ``--help`` shows the usage."""

    def error(self, message: str):
        self.exit(2, f"qt-hard: error: {self.prog}: {message} (see {self.prog} --help)\n")


class Interrupted(BaseException):
    """SIGINT or SIGTERM received outside a training loop (which handles its own)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def signals_stop_the_command():
    """SIGINT and SIGTERM raise :class:`Interrupted` while the block runs (SIGTERM would otherwise end
    the process without a word); the previous handlers come back afterwards."""

    def stop(signum, frame):
        raise Interrupted(signum)

    return stop_signals_handled_by(stop)


def build_parser() -> argparse.ArgumentParser:
    from qt_hard.data import cli as data_cli
    from qt_hard.evaluation import cli as evaluation_cli
    from qt_hard.experiments import gridrun as grid_cli
    from qt_hard.training import cli as training_cli

    parser = OneLineParser(
        prog="qt-hard",
        description="Contrastive embeddings with pluggable negatives: the text, graph and image pipelines' "
        "training, their evaluation, and the data sets they read.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of user errors too (or set QT_HARD_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for area in (training_cli, evaluation_cli, data_cli, grid_cli):
        area.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug is accepted anywhere on the line, not only before the subcommand.
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    parser = build_parser()
    # argparse stops filling a nargs="*" positional at the first option, so "train CFG --out D k=v"
    # would leave k=v unrecognized; subcommands that take overrides collect such leftovers.
    args, extra = parser.parse_known_args(argv)
    if extra:
        stray = [x for x in extra if x.startswith("-") or "=" not in x]
        if stray or not hasattr(args, "overrides"):
            parser.error(f"unrecognized arguments: {' '.join(stray or extra)}")
        args.overrides = list(args.overrides) + extra
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from qt_hard import logs

    logs.configure()
    try:
        with signals_stop_the_command():
            result = args.func(args)
    except (Interrupted, KeyboardInterrupt) as stop:
        signum = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
        print(f"qt-hard: stopped by {signal.Signals(signum).name}; no result was written", file=sys.stderr)
        return 128 + int(signum)
    except UserError as err:
        if debug or os.environ.get("QT_HARD_DEBUG", "") not in ("", "0"):
            raise
        # One line, as argparse reports its own usage errors; the message already says what to do.
        print(f"qt-hard: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as err:
        # A size no check foresaw, refused by the allocator itself: one line that says so.
        if not out_of_memory(err) or debug or os.environ.get("QT_HARD_DEBUG", "") not in ("", "0"):
            raise
        reason = " ".join(str(err).split())[:300] or type(err).__name__
        print(f"qt-hard: error: out of memory ({reason}); lower the batch, model or data sizes", file=sys.stderr)
        return 2
    return int(result or 0)


def out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocator's refusal: Python's or numpy's ``MemoryError``, torch's CPU
    allocator ("can't allocate memory") or CUDA's ``OutOfMemoryError``."""
    if isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError":
        return True
    return isinstance(err, RuntimeError) and "can't allocate memory" in str(err)


if __name__ == "__main__":
    sys.exit(main())
