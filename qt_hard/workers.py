"""Worker processes of the library's process pools (book splitting, Wiki tokenizing, control rows,
grid cells).

A forked worker inherits its parent's signal handlers: under the command line, SIGTERM and SIGINT
raise ``qt_hard.cli.Interrupted``, so a pool terminated after a failure (``Pool.terminate`` sends
SIGTERM to each worker) would print a traceback from every worker. Resetting the handlers in the
worker's initializer is not enough on its own: a signal that arrives between the fork and the
initializer still runs the inherited handler. So every pool here starts its workers with SIGINT and
SIGTERM *blocked* in the starting thread (:func:`signals_held`); a worker inherits that mask (across
``exec`` too, for spawned ones), and its initializer (:func:`leave_signals_to_parent`) first sets
its own actions, SIGTERM's default (die without a word) and SIGINT ignored (a Ctrl-C reaches the
whole process group), and only then unblocks them. A signal sent in between waits, pending, and
meets the worker's own action: no child ever runs the parent's handlers. The pools' helper threads
are created inside the same window and keep the mask, so workers they start later (a pool replacing
a worker) are born the same way; the parent's main thread gets its mask back at once, and a signal
held meanwhile is delivered to it then.

:func:`process_pool` (a ``ProcessPoolExecutor``) and :func:`worker_pool` (a ``multiprocessing``
pool) are the two ways the library starts workers; both do the above.
"""

from __future__ import annotations

import contextlib
import os
import signal
from concurrent.futures import ProcessPoolExecutor

_STOPS = (signal.SIGINT, signal.SIGTERM)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM blocked in the calling thread while the block runs (processes and threads
    started in it inherit the mask); the thread's previous mask afterwards, when any signal that
    arrived meanwhile is delivered. A no-op where the platform has no signal masks."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def stop_signals_handled_by(handler):
    """While the block runs, ``handler(signum, frame)`` handles SIGINT and SIGTERM; the previous
    handlers come back afterwards, however the block ends. Only the main thread may set handlers:
    in another (a notebook's worker thread) the block runs with the handlers as they are."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in _STOPS}
    try:
        yield
    finally:
        for sig, prev in previous.items():
            signal.signal(sig, prev)


def leave_signals_to_parent() -> None:
    """In a pool's worker: SIGTERM ends it at once (the default action), SIGINT is ignored; set
    before the two are unblocked (they were blocked when the worker started, see the module)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)


def _start_worker(initializer, initargs) -> None:
    """A worker's first act: the signals left to the parent, then the pool's own initializer."""
    leave_signals_to_parent()
    if initializer is not None:
        initializer(*initargs)


class _HeldSignalsExecutor(ProcessPoolExecutor):
    """A ``ProcessPoolExecutor`` whose workers are started with the stop signals held: in Python
    3.11+ the workers (and the manager thread that replaces them) start inside ``submit``."""

    def submit(self, fn, /, *args, **kwargs):
        with signals_held():
            return super().submit(fn, *args, **kwargs)


def process_pool(
    workers: int, *, initializer=None, initargs: tuple = (), max_tasks_per_child: int | None = None
) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` spawned processes that leave SIGINT and SIGTERM to
    this process from their first instruction on (see the module), then run ``initializer(*initargs)``."""
    import multiprocessing as mp

    return _HeldSignalsExecutor(
        workers,
        mp_context=mp.get_context("spawn"),
        initializer=_start_worker,
        initargs=(initializer, tuple(initargs)),
        max_tasks_per_child=max_tasks_per_child,
    )


def worker_pool(processes: int, *, start: str = "spawn"):
    """A ``multiprocessing`` pool of ``processes`` workers (``start``: ``"spawn"`` or ``"fork"``,
    spawn where the platform cannot fork) that leave SIGINT and SIGTERM to this process from their
    first instruction on (see the module)."""
    import multiprocessing as mp

    if start not in mp.get_all_start_methods():
        start = "spawn"
    with signals_held():
        return mp.get_context(start).Pool(processes, initializer=leave_signals_to_parent)


def stop_pool(ex) -> None:
    """End a ``ProcessPoolExecutor``'s work in flight at once (a stop or an error), rather than wait
    for it: its worker processes (its ``_processes``, the one way the standard library keeps them)
    terminated, the jobs not started cancelled."""
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        proc.terminate()
    ex.shutdown(wait=False, cancel_futures=True)
