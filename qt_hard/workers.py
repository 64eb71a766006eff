"""Worker processes of the library's process pools (book splitting, Wiki tokenizing, control rows).

A forked worker inherits its parent's signal handlers: under the command line, SIGTERM and SIGINT
raise ``qt_hard.cli.Interrupted``, so a pool terminated after a failure (``Pool.terminate`` sends
SIGTERM to each worker) would print a traceback from every worker. ``leave_signals_to_parent`` is
the pools' initializer: a worker dies on SIGTERM without a word and ignores SIGINT (a Ctrl-C reaches
the whole process group), so that the parent alone decides, reports once and ends the pool.
"""

from __future__ import annotations

import os
import signal


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def leave_signals_to_parent() -> None:
    """In a pool's worker: SIGTERM ends it at once (the default action), SIGINT is ignored."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_pool(ex) -> None:
    """End a ``ProcessPoolExecutor``'s work in flight at once (a stop or an error), rather than wait
    for it: its worker processes (its ``_processes``, the one way the standard library keeps them)
    terminated, the jobs not started cancelled."""
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        proc.terminate()
    ex.shutdown(wait=False, cancel_futures=True)
