"""The package's messages: every module logs to ``logging.getLogger(__name__)``, a logger under
``qt_hard``, and the command line (``qt-hard``, the grid's workers) decides where they go.

Diagnostics, such as a checkpoint resumed, a cache read or rebuilt, a data folder being built or a
file written, are logged; a command's output (its tables, its results, its listings) is printed.
Used as a library, qt-hard leaves the configuration to the caller, as :mod:`logging` intends: INFO
messages appear once the caller configures ``qt_hard`` (or the root logger) at INFO.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["PACKAGE", "configure", "configured"]

PACKAGE = "qt_hard"


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a line is logged, not the stream of the
    moment it was made: a caller may replace it, as pytest's capture does."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def configure(level: int = logging.INFO, timestamps: bool = False) -> logging.Logger:
    """Send the package's messages at ``level`` and above to standard error, one line each, as
    ``MESSAGE`` (``HH:MM:SS MESSAGE`` with ``timestamps``, for long grids). Calling it again changes
    the level and the format, never adds a second handler. The package's records stop at its own
    handler, so that a root logger configured elsewhere (SentEval's ``basicConfig``) does not print
    them twice."""
    logger = logging.getLogger(PACKAGE)
    handler = next((h for h in logger.handlers if isinstance(h, _Stderr)), None)
    if handler is None:
        handler = _Stderr()
        logger.addHandler(handler)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S") if timestamps else logging.Formatter("%(message)s")
    )
    handler.timestamps = timestamps
    logger.setLevel(level)
    logger.propagate = False
    return logger


def configured() -> tuple[int, bool] | None:
    """(level, timestamps) of the package's handler when :func:`configure` set one, else None: what a
    spawned worker needs to log as its parent does."""
    logger = logging.getLogger(PACKAGE)
    for h in logger.handlers:
        if isinstance(h, _Stderr):
            return logger.level, h.timestamps
    return None
