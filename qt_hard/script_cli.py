"""The command-line conventions of the entry points under ``scripts/``, shared so that each script
refuses bad input as ``qt-hard`` does: exit status 2 and one line ``error: ...`` naming the option or
file, no traceback, nothing written; SIGINT or SIGTERM stop it with one line and status 130 or 143
(a training cell checkpoints first, through the training loop's own handlers).

    if __name__ == "__main__":
        sys.exit(run_script(main))

``ScriptParser`` is argparse with one-line refusals; ``readable_yaml`` checks a config or grid file
before anything is written (``qt_hard.paths.output_folder`` and ``qt_hard.experiments.grid.seed_list``
check the output folder and the seeds).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Callable

from qt_hard import logs
from qt_hard.cli import Interrupted, signals_stop_the_command
from qt_hard.errors import UserError


class ScriptParser(argparse.ArgumentParser):
    """argparse whose refusals are one line, ``error: SCRIPT: ...``, status 2."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def run_script(main: Callable[..., int | None], *args) -> int:
    """``main(*args)``'s exit status; a :class:`~qt_hard.errors.UserError` or a ``SystemExit`` with a
    message becomes one line ``error: ...`` and status 2, a signal one line and 128 + its number.
    Any other exception is a bug and keeps its traceback."""
    debug = os.environ.get("QT_HARD_DEBUG", "") not in ("", "0")
    logs.configure()
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


def readable_yaml(path: str | Path, flag: str) -> dict:
    """The mapping in YAML file ``path`` (a config or a grid), refused in one line when it is missing,
    not text, empty, not YAML or not a mapping."""
    from qt_hard.training.config import read_yaml_mapping

    return read_yaml_mapping(Path(path), flag)
