"""The command-line conventions of the entry points under ``scripts/``, shared so that each script
refuses bad input as ``qt-hard`` does: exit status 2 and one line ``error: ...`` naming the option or
file, no traceback, nothing written; SIGINT or SIGTERM stop it with one line and status 130 or 143
(a training cell checkpoints first, through the training loop's own handlers).

    if __name__ == "__main__":
        sys.exit(run_script(main))

``ScriptParser`` is argparse with one-line refusals; ``seed_list``, ``output_folder`` and
``readable_yaml`` check the inputs every table script takes, before anything is written.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Callable

from qt_hard.cli import Interrupted, signals_stop_the_command
from qt_hard.errors import ArgumentError, OutputLocationError, UserError
from qt_hard.paths import creation_refused


class ScriptParser(argparse.ArgumentParser):
    """argparse whose refusals are one line, ``error: SCRIPT: ...``, status 2."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def run_script(main: Callable[..., int | None], *args) -> int:
    """``main(*args)``'s exit status; a :class:`~qt_hard.errors.UserError` or a ``SystemExit`` with a
    message becomes one line ``error: ...`` and status 2, a signal one line and 128 + its number.
    Any other exception is a bug and keeps its traceback."""
    debug = os.environ.get("QT_HARD_DEBUG", "") not in ("", "0")
    try:
        with signals_stop_the_command():
            return int(main(*args) or 0)
    except (Interrupted, KeyboardInterrupt) as stop:
        signum = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
        print(f"stopped by {signal.Signals(signum).name}; finished cells are kept, a rerun continues", file=sys.stderr)
        return 128 + int(signum)
    except UserError as err:
        if debug:
            raise
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except SystemExit as stop:
        if isinstance(stop.code, str):  # raise SystemExit("message"): the scripts' own refusals
            message = stop.code[len("error: ") :] if stop.code.startswith("error: ") else stop.code
            print(f"error: {' '.join(message.split())}", file=sys.stderr)
            return 2
        raise


def seed_list(text: str, flag: str = "--seeds") -> list[int]:
    """``"0,1,2"`` as integers; an :class:`ArgumentError` naming ``flag`` for anything else."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip() != ""]
    except ValueError:
        raise ArgumentError(f"{flag} must be comma-separated integers, got {text!r}") from None
    if not seeds:
        raise ArgumentError(f"{flag}: no seeds given")
    return seeds


def output_folder(path: str | Path, flag: str = "--out") -> Path:
    """Refuse, before anything is written, an output folder that is a file, cannot be created (a
    trial folder is made and removed, so nothing is left), or that ``qt_hard.paths.guard_output``
    refuses (a saved model, a run's own entry). Returns the path; it is not created."""
    from qt_hard.paths import guard_output

    out = Path(path).expanduser()
    # The one guard of every path flag: never inside a saved model or on a run's own entries.
    guard_output(out, flag, folder=True, may_hold_inputs=True)
    if out.exists():
        if not out.is_dir():
            raise OutputLocationError(f"{flag} {out} is a file, not a folder")
        if not os.access(out, os.W_OK | os.X_OK):
            raise OutputLocationError(f"{flag} {out} is not writable")
        return out
    existing = out.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OutputLocationError(f"{flag} {out} cannot be created ({existing} is a file, not a folder)")
    refused = creation_refused(out, existing)
    if refused:
        raise OutputLocationError(f"{flag} {out} cannot be created ({refused})")
    return out


def readable_yaml(path: str | Path, flag: str) -> dict:
    """The mapping in YAML file ``path`` (a config or a grid), refused in one line when it is missing,
    not text, empty, not YAML or not a mapping."""
    from qt_hard.training.config import read_yaml_mapping

    return read_yaml_mapping(Path(path), flag)
