"""One cell of an experiment grid, run the one way: claim it in the ledger, train its config through
the library's loop (``qt_hard.training.loop.train``, resuming the newest checkpoint), read what the
run wrote (``eval.json``, ``metrics.csv``), append the record; and the pool of worker processes that
share a grid's cells, with the time a cell's steps take. How cells resume and share one device:
docs/cli.md (``qt-hard grid``) and docs/benchmarks.md (cells side by side on one device).
"""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from qt_hard import logs
from qt_hard.workers import stop_pool
from qt_hard.experiments.ledger import Ledger

__all__ = [
    "DEVICES",
    "check_device",
    "estimate_line",
    "finished_run",
    "in_processes",
    "link_shared_cache",
    "prepare_shared_cache",
    "read_eval",
    "read_metrics",
    "run_claimed",
    "step_seconds",
    "train_run",
    "use_device",
]

# Where the cells of a grid train: ``auto`` leaves it to accelerate (the GPU when there is one).
DEVICES = ("auto", "cpu", "cuda")


def train_run(cfg, finished: str = "eval.json", on_step=None, must_finish: bool = True) -> Path | None:
    """Train ``cfg`` into its ``out_dir`` unless the file ``finished`` is there already: from the
    newest checkpoint when the folder has one, else from the start (a folder without a checkpoint
    holds at most a run cut short before its first one). Returns the run folder, or None when a
    signal stopped the run (its checkpoint kept); with ``must_finish`` that is a SystemExit
    telling to run the same command again."""
    from qt_hard.training.loop import list_checkpoints, train

    out = Path(cfg.out_dir)
    if finished_run(cfg, finished):
        return out
    resume = bool(list_checkpoints(out))
    train(cfg, resume=resume, overwrite=not resume, on_step=on_step)
    if (out / finished).is_file():
        return out
    if must_finish:
        raise SystemExit(f"{out}: training was interrupted; run the same command again to resume it")
    return None


def finished_run(cfg, finished: str = "eval.json") -> bool:
    """Whether ``cfg``'s run folder holds a finished run (the file ``finished``) of this config. One
    trained from another config (edited in place since) is refused in one line: its result would be
    taken for this config's."""
    from qt_hard.errors import OutputExistsError
    from qt_hard.training.outdir import finished_differences

    out = Path(cfg.out_dir)
    if not (out / finished).is_file():
        return False
    differ = finished_differences(cfg, out)
    if differ:
        raise OutputExistsError(
            f"{out} holds a finished run of another config ({'; '.join(differ)}); remove it to train this "
            "config's, or give another output"
        )
    return True


def read_eval(run_dir: str | os.PathLike) -> dict:
    """The run's final evaluation (``eval.json``)."""
    return json.loads((Path(run_dir) / "eval.json").read_text())


def read_metrics(run_dir: str | os.PathLike) -> list[dict]:
    """The run's logged rows (``metrics.csv``, the csv tracker's), as text."""
    with (Path(run_dir) / "metrics.csv").open() as fh:
        return list(csv.DictReader(fh))


def run_claimed(
    ledger: Ledger,
    claim: Sequence,
    work: Callable[[], dict | list | None],
    keys: Sequence[tuple] = (),
    since: int | None = None,
) -> list | None:
    """Run one cell unless another process holds it: under ``ledger.claim(claim)``, skipped when
    every one of ``keys`` (the ledger keys the cell writes) has a record already (with ``since``, a
    record among those appended after the ledger's first ``since``: a cell run again skips only
    what another process ran again meanwhile), else ``work()`` returns the cell's record (or a list
    of them, or None when it stopped early), each appended. Returns the records, or None when the
    cell was held, finished, or stopped."""
    with ledger.claim(claim) as mine:
        if not mine:
            return None
        done = ledger.done() if since is None else {ledger.key_of(r) for r in ledger.records()[since:]}
        if keys and all(tuple(k) in done for k in keys):
            return None
        records = work()
        if records is None:
            return None
        records = records if isinstance(records, list) else [records]
        for rec in records:
            ledger.append(rec)
    return records


def check_device(device: str, option: str = "--device") -> str:
    """``device`` if it is one of ``DEVICES`` and this machine has it, else a one-line ``UserError``
    naming ``option``."""
    from qt_hard.errors import DeviceUnavailableError, UserError

    if device not in DEVICES:
        raise UserError(f"{option} {device}: choose one of {', '.join(DEVICES)}")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise DeviceUnavailableError(f"{option} cuda: torch sees no CUDA device on this machine")
    return device


def use_device(device: str | None) -> None:
    """Make the cells this process trains run on ``device``: ``cpu`` hides every GPU from it (set
    before CUDA starts, in a fresh worker) and tells accelerate to use the CPU; ``cuda`` and
    ``auto`` (or None) leave accelerate its default, the current GPU where there is one, so that
    the workers of ``in_processes(..., device="cuda")`` share that GPU."""
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        os.environ["ACCELERATE_USE_CPU"] = "true"


def _start_worker(device: str | None, logging_state: tuple[int, bool] | None) -> None:
    """A spawned worker's start: its device (:func:`use_device`) and, where the parent configured
    the package's messages, the same configuration (a spawned process inherits none)."""
    use_device(device)
    if logging_state is not None:
        logs.configure(*logging_state)


def in_processes(
    fn: Callable, jobs: Sequence[tuple], workers: int = 1, fresh: bool = False, device: str | None = None
) -> Iterator:
    """``fn(*job)`` for every job, as they finish: in this process with one worker, else in
    ``workers`` spawned processes running side by side (``fresh``: a new process per job, so that no
    process-wide state of one run, accelerate's included, reaches the next). ``device`` (one of
    ``DEVICES``; None: as ``auto``) is where their cells train (:func:`use_device`; with one worker,
    this process). ``fn`` must be importable by name."""
    if workers <= 1:
        use_device(device)
        for job in jobs:
            yield fn(*job)
        return
    from concurrent.futures import as_completed

    from qt_hard.workers import process_pool

    ex = process_pool(
        workers,
        max_tasks_per_child=1 if fresh else None,
        initializer=_start_worker,
        initargs=(device, logs.configured()),
    )
    try:
        for fut in as_completed([ex.submit(fn, *job) for job in jobs]):
            yield fut.result()
    except BaseException:
        # A stop (a signal, a cell's error, the caller leaving) ends the cells in flight instead of
        # waiting for them to finish, which can take the better part of an hour: their claims are taken
        # over by the next run, and the ledger holds whole records only.
        stop_pool(ex)
        raise
    ex.shutdown(wait=True)


def prepare_shared_cache(cfg, folder: str | os.PathLike) -> Path:
    """Build the data of ``cfg`` (its pipeline's own preparation: sentences split, vocabulary
    fitted, token ids written) into ``folder/cache`` once, before cells that share it start, so
    that none of them prepares it and all of them only read it. Returns the cache folder. The cells'
    configs must agree with ``cfg`` on what keys the cache (the data and tokenizer settings), or
    each would build a copy of its own next to it."""
    from qt_hard.pipelines import get_pipeline

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    get_pipeline(cfg.pipeline).build(cfg, folder)  # the data stays on disk; the module built is not kept
    return folder / "cache"


def link_shared_cache(run_dir: str | os.PathLike, cache: str | os.PathLike) -> Path:
    """``run_dir/cache`` as a link to the shared ``cache`` (made once; a real folder there is kept)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    link = run_dir / "cache"
    if not link.exists() and not link.is_symlink():
        link.symlink_to(Path(cache).resolve(), target_is_directory=True)
    return link


def step_seconds(cfg) -> tuple[float, int]:
    """(median seconds per step after the first, steps per epoch) of a short run of ``cfg`` through
    the loop (its ``train.steps`` sets how short; the first step is a warm-up)."""
    import numpy as np

    from qt_hard.training.loop import train

    stamps: list[float] = []
    out = train(cfg, on_step=lambda step, loss: stamps.append(time.perf_counter()))
    last = read_metrics(out)[-1]
    return float(np.median(np.diff(stamps))), round(int(last["step"]) / float(last["epoch"]))


def estimate_line(per_cell_s: Sequence[float], workers: int) -> str:
    """The plan's closing line: the cell time of the cells still to run, and per worker."""
    left = sum(per_cell_s)
    return (
        f"estimated time: {left / 60:.1f} min of cell time for the {len(per_cell_s)} cells to run; "
        f"about {left / 60 / max(workers, 1):.1f} min with {workers} worker(s) if they do not slow each other"
    )
