"""The accelerate training loop: Adam / AdamW / SparseAdam with a learning-rate schedule
(``qt_hard.training.optim``), gradient clipping, optional mixed precision, trackers,
checkpoints (every N steps and on SIGTERM/SIGINT), exact resume, final model to OUT/final/.

Layout of a run folder ``OUT``::

    config.yaml              the resolved config (after overrides)
    checkpoints/step_XXXXXXX/ accelerator.save_state (model, optimizer, RNG of every process)
                              + trainer_state_<rank>.pt (step, negatives-sampler generator)
    metrics.csv              step, epoch, loss (mean over the steps since the previous row),
                             grad_norm (before clipping, same window), lr (of the row's last step),
                             sentences_per_s (CSV tracker), and the weight diagnostics of the
                             logged step's batch (``DIAGNOSTICS``)
    logs/                    TensorBoard
    final/                   the pipeline's saved model (text: qt_hard.load_encoder)
    eval.json, eval.csv      the pipeline's evaluation of the final model (and every
                             ``eval_every`` steps), when it has one

The modality lives in a pipeline (``qt_hard.training.pipeline``), looked up by the config's
``pipeline`` key (``qt_hard.pipelines``): it gives the module, the batches, the objective and
how to save and evaluate; this loop imports none of them by name.

Exact resume: the batch of every step is a pure function of (seed, step) (the pipeline's task), the
negatives sampler draws from a ``torch.Generator`` whose state is checkpointed per process, and
Adam's moments and the global RNG states are restored by ``accelerator.load_state``. An
interrupted-and-resumed run therefore ends with the same weights as an uninterrupted one.

Mixed precision: ``train.mixed_precision: bf16`` runs the encoders under accelerate's autocast (CPU
autocast on a CPU); the loss itself is computed in float32 (the pipeline's objective, e.g. ``qt_hard.text.objectives.float32_loss``). ``fp16``
needs a GPU: on a CPU accelerate would silently train in float32 (no autocast, no scaler), so it
is an error here that says to use bf16.
"""

from __future__ import annotations

import csv
import math
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Callable

import torch

from qt_hard.pipelines import get_pipeline
from qt_hard.training.config import Config, ConfigError, save_config, to_dict
from qt_hard.training.outdir import (
    CHECKPOINT_PREFIX,
    PARTIAL_SUFFIX,
    check_out_dir,
    clear_run,
    list_checkpoints,
    run_folder_lock,
)
from qt_hard.training.optim import clip_gradients, lr_factor, make_optimizer, set_lr, set_tf32


class Stopped(Exception):
    """A run stopped by a signal (after its checkpoint, or at once on a second signal).

    ``exit_status`` is the shell's convention for a process ended by that signal, 128 + its
    number (130 for SIGINT, 143 for SIGTERM), so that ``qt-hard train ... && qt-hard eval ...``
    and a job scheduler see a stopped run as not finished."""

    def __init__(self, signum: int, message: str):
        super().__init__(message)
        self.signum = signum
        self.exit_status = 128 + int(signum)


class SecondSignal(KeyboardInterrupt):
    """A second SIGINT/SIGTERM: raised at once, wherever the loop is (even inside a checkpoint
    write, which then stays an unfinished temporary folder that resume never picks)."""

    def __init__(self, signum: int):
        super().__init__(f"second {signal.Signals(signum).name}: stopping without a checkpoint")
        self.signum = signum


class StopRequest:
    """Set by SIGTERM/SIGINT; the loop checkpoints at the end of the current step and stops.

    A second signal does not wait for the step: it raises ``SecondSignal`` (a
    ``KeyboardInterrupt``) at once, without a checkpoint, so a run stuck between steps can still be
    stopped from the keyboard or by a launcher that repeats its signal."""

    def __init__(self):
        self.requested = False
        self.signum = None
        self._previous = {}

    def _handle(self, signum, frame):
        if self.requested:
            raise SecondSignal(signum)
        self.requested = True
        self.signum = signum

    def install(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (e.g. a notebook worker): no handler
                pass

    def uninstall(self):
        for sig, prev in self._previous.items():
            signal.signal(sig, prev)
        self._previous.clear()


def _flat_hparams(tree: dict, prefix: str = "") -> dict:
    """TensorBoard hparams accept only scalars and strings."""
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat_hparams(value, name + "."))
        elif isinstance(value, (int, float, str, bool)):
            out[name] = value
        else:
            out[name] = str(value)
    return out


# The objective's weight diagnostics (qt_hard.negatives.NegativeStrategy.diagnostics) of the logged
# step's batch, in every row of metrics.csv where the objective reports them.
DIAGNOSTICS = ["beta", "tilt", "ess_frac", "w_ratio_median", "pushed_up_frac", "score_std", "floor_binds_frac"]


class CSVTracker:
    """Append-only metrics.csv; on resume, rows after the resumed step are dropped first."""

    FIELDS = ["step", "epoch", "loss", "grad_norm", "lr", "sentences_per_s", "elapsed_s", *DIAGNOSTICS]

    def __init__(self, path: Path, resume_step: int):
        self.path = path
        rows = []
        if resume_step > 0 and path.is_file():
            with path.open() as fh:
                rows = [r for r in csv.DictReader(fh) if int(r["step"]) <= resume_step]
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, self.FIELDS)
            w.writeheader()
            w.writerows(rows)

    def log(self, row: dict) -> None:
        with self.path.open("a", newline="") as fh:
            csv.DictWriter(fh, self.FIELDS).writerow({k: row.get(k, "") for k in self.FIELDS})


def train(
    cfg: Config,
    resume: bool = False,
    on_step: Callable[[int, float], None] | None = None,
    overwrite: bool = False,
    raise_on_stop: bool = False,
) -> Path:
    """Train per ``cfg``; returns the run folder. ``on_step(step, loss)`` is called after each step
    (tests use it to interrupt a run). With ``resume`` the newest complete checkpoint in
    ``cfg.out_dir`` that loads is loaded (newer ones that do not are skipped, with the reason
    printed) and the run continues from its step; without it, a folder that holds a run is
    refused unless ``overwrite`` (its files are then removed when training starts). The folder is
    checked before anything is read (``check_out_dir``). A run stopped by SIGINT/SIGTERM
    checkpoints and returns, or with ``raise_on_stop`` raises ``Stopped`` (the CLI's exit 130/143).

    Under several processes an exception here propagates on its own process only; the CLI
    (``qt_hard.training.cli.exit_at_once_on_error``) then ends that process at once so that the
    others are taken down instead of waiting for it in a collective."""
    checks = check_out_dir(cfg, resume, overwrite)  # before the folder is created or locked
    with run_folder_lock(Path(cfg.out_dir).expanduser()):
        return _train(cfg, resume, on_step, overwrite, raise_on_stop, checks)


def _train(
    cfg: Config,
    resume: bool,
    on_step: Callable[[int, float], None] | None,
    overwrite: bool,
    raise_on_stop: bool,
    checkpoints: list[Path],
) -> Path:
    """:func:`train` in its locked run folder; ``checkpoints`` as ``check_out_dir`` found them."""
    from accelerate import Accelerator, PartialState
    from accelerate.utils import DistributedDataParallelKwargs, parse_flag_from_env, set_seed

    out = Path(cfg.out_dir).expanduser()
    trackers = list(cfg.train.trackers)
    pipeline = get_pipeline(cfg.pipeline)
    ddp_kwargs = pipeline.ddp_kwargs(cfg)
    handlers = [DistributedDataParallelKwargs(**ddp_kwargs)] if ddp_kwargs else []
    # Checked before the Accelerator exists: its process-wide state would keep the bad setting.
    check_mixed_precision(cfg.train.mixed_precision, PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU")).device)
    accelerator = Accelerator(
        mixed_precision=cfg.train.mixed_precision,
        log_with="tensorboard" if "tensorboard" in trackers else None,
        project_dir=str(out),
        kwargs_handlers=handlers,
    )
    rank, world = accelerator.process_index, accelerator.num_processes
    if cfg.train.batch_size % world:
        raise ConfigError(f"train.batch_size={cfg.train.batch_size} (global) is not divisible by {world} processes")
    main = accelerator.is_main_process

    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    set_tf32(cfg.train.tf32, accelerator.device)
    if accelerator.device.type == "cpu":
        keep_freed_memory()
    # Same seed on every process: identical initial weights (DDP also broadcasts rank 0's).
    set_seed(cfg.train.seed)
    with accelerator.main_process_first():
        run = pipeline.build(cfg, out)
    module, task, objective = run.module, run.task, run.objective
    if hasattr(task, "to_device"):  # batches gathered where the model runs (qt_hard.text.tasks)
        task.to_device(accelerator.device)
    # Adam's fused kernel (one pass over each parameter instead of torch's dozen foreach passes; the
    # same update): on a CPU it takes a 2 x 30k x 300 embedding table's step from ~1.3 s to ~0.1 s,
    # most of a bag-of-words Quick-Thoughts step before (scripts/bench_qt_step.py).
    optimizer = make_optimizer(module, cfg.train, accelerator.device)
    module, optimizer = accelerator.prepare(module, optimizer)

    generator = torch.Generator(device=accelerator.device)
    generator.manual_seed(cfg.train.seed * 1009 + 17 + rank)  # per-process negatives draws

    steps_per_epoch = task.batches_per_epoch()
    total = cfg.train.steps or max(1, math.ceil(cfg.train.epochs * steps_per_epoch))
    step = 0
    if resume:
        ckpt, state = _load_newest(checkpoints, accelerator, rank)
        step = int(state["step"])
        generator.set_state(state["generator"])
        if main:
            print(f"resumed from {ckpt} at step {step}/{total}")

    if main:
        if overwrite:
            clear_run(out)
        save_config(cfg, out / "config.yaml")
    if "tensorboard" in trackers:
        accelerator.init_trackers("logs", config=_flat_hparams(to_dict(cfg)))
    csv_tracker = CSVTracker(out / "metrics.csv", step) if main and "csv" in trackers else None

    def save_checkpoint(at_step: int) -> Path:
        path = out / "checkpoints" / f"{CHECKPOINT_PREFIX}{at_step:07d}"
        # Written under a temporary name and renamed once every process has written its part: a
        # write cut short (a second Ctrl-C, a killed job) leaves only a .partial folder, which
        # list_checkpoints never offers to --resume.
        partial = path.with_name(path.name + PARTIAL_SUFFIX)
        if main:
            shutil.rmtree(partial, ignore_errors=True)
        accelerator.wait_for_everyone()
        # Pickled, not safetensors: on a GPU, cuDNN packs a GRU's weights into one flat buffer, so
        # its parameters share storage and accelerate's safetensors path drops all but one of them
        # ("Removed shared tensor ... while saving"); load_state would then miss those keys.
        accelerator.save_state(str(partial), safe_serialization=False)
        torch.save(
            {"step": at_step, "generator": generator.get_state(), "world": world}, partial / f"trainer_state_{rank}.pt"
        )
        accelerator.wait_for_everyone()
        if main:
            shutil.rmtree(path, ignore_errors=True)  # a step saved before, e.g. by an earlier stop
            partial.rename(path)
        accelerator.wait_for_everyone()
        if main and cfg.train.keep_checkpoints > 0:
            for old in list_checkpoints(out)[: -cfg.train.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        return path

    stop = StopRequest()
    stop.install()
    from tqdm.auto import tqdm

    show = main and cfg.train.progress
    # A bar's \r frames are noise in a log file: where stderr is not a terminal, a plain line at
    # every log_every steps instead.
    lines_only = show and not sys.stderr.isatty()
    bar = tqdm(total=total, initial=step, disable=not show or lines_only, desc="train", dynamic_ncols=True)
    sentences_per_step = cfg.train.batch_size * getattr(task, "sentences_per_row", 1)
    module.train()
    t_start, t_window, window_steps = time.perf_counter(), time.perf_counter(), 0
    window_loss, window_grad = 0.0, 0.0
    interrupted = False
    try:
        while step < total:
            objective.set_progress(step / total)
            lr = cfg.train.lr * lr_factor(step, total, cfg.train.lr_schedule, cfg.train.warmup_steps)
            set_lr(optimizer, lr)
            logs_next = (step + 1) % max(1, cfg.train.log_every) == 0 or step + 1 == total
            if logs_next and hasattr(objective, "request_diagnostics"):
                objective.request_diagnostics()
            batch = accelerator_to(task.local_batch(step, rank, world), accelerator.device)
            with accelerator.autocast():
                loss = objective(module, batch, generator)
            accelerator.backward(loss)
            grad_norm = None
            if cfg.train.grad_clip:
                grad_norm = clip_gradients(accelerator, module, cfg.train.grad_clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            window_steps += 1
            loss_value = float(loss.detach())
            window_loss += loss_value
            window_grad += grad_norm if grad_norm is not None else 0.0
            bar.update(1)
            if step % max(1, cfg.train.log_every) == 0 or step == total:
                now = time.perf_counter()
                speed = sentences_per_step * window_steps / max(now - t_window, 1e-9)
                # One batch's loss swings by +-0.2 on real text: log the window's mean.
                mean_loss = window_loss / window_steps
                mean_grad = window_grad / window_steps if grad_norm is not None else ""
                t_window, window_steps, window_loss, window_grad = now, 0, 0.0, 0.0
                row = {
                    "step": step,
                    "epoch": round(step / steps_per_epoch, 4),
                    "loss": mean_loss,
                    "grad_norm": mean_grad,
                    "lr": lr,
                    "sentences_per_s": round(speed, 1),
                    "elapsed_s": round(now - t_start, 2),
                }
                diag = objective.take_diagnostics() if hasattr(objective, "take_diagnostics") else None
                if diag:
                    row.update({k: round(v, 6) for k, v in diag.items() if k in DIAGNOSTICS})
                bar.set_postfix(loss=f"{mean_loss:.4f}", sent_s=f"{speed:.0f}")
                if lines_only:
                    print(
                        f"train: step {step}/{total} loss {mean_loss:.4f} sentences/s {speed:.0f}",
                        file=sys.stderr,
                        flush=True,
                    )
                if "tensorboard" in trackers:
                    logged = {"loss": mean_loss, "sentences_per_s": speed, "lr": lr}
                    if grad_norm is not None:
                        logged["grad_norm"] = mean_grad
                    if diag:
                        logged.update({f"weights/{k}": v for k, v in diag.items() if k in DIAGNOSTICS})
                    accelerator.log(logged, step=step)
                if csv_tracker is not None:
                    csv_tracker.log(row)
            if on_step is not None:
                on_step(step, loss_value)
            if _any_process(stop.requested, accelerator):
                interrupted = True
                save_checkpoint(step)
                if main:
                    print(f"\nstopped by signal at step {step}/{total}; checkpoint saved, continue with --resume")
                break
            if cfg.train.checkpoint_every and step % cfg.train.checkpoint_every == 0 and step < total:
                save_checkpoint(step)
            if run.evaluate is not None and run.eval_every and step % run.eval_every == 0 and step < total and main:
                _log_eval(out / "eval.csv", step, run.evaluate(accelerator.unwrap_model(module), step))
    finally:
        bar.close()
        stop.uninstall()

    if not interrupted:
        save_checkpoint(step)
        accelerator.wait_for_everyone()
        if main:
            run.save(accelerator.unwrap_model(module), out / "final")
            print(f"final model saved to {out / 'final'}")
            if run.evaluate is not None:
                _write_eval(out, step, run.evaluate(accelerator.unwrap_model(module), step))
    # Every process has written its part before the trackers stop; end_training then finishes the
    # trackers and destroys the process group (accelerate >= 1.x), so no collective may follow it.
    accelerator.wait_for_everyone()
    accelerator.end_training()
    if interrupted and raise_on_stop:
        raise Stopped(
            stop.signum,
            f"stopped by {signal.Signals(stop.signum).name} at step {step}/{total}; "
            f"checkpoint saved, continue with --resume",
        )
    return out


def _load_newest(checkpoints: list[Path], accelerator, rank: int):
    """(checkpoint, trainer state) of the newest of ``checkpoints`` that every process can load.

    A checkpoint that fails to load (a truncated file: torch's "PytorchStreamReader failed", a
    short pickle) is skipped with a line saying which and why, and the next older one is tried;
    loading an older one overwrites everything the failed attempt may have loaded (weights,
    optimizer, RNG states). ``CheckpointError`` when none loads."""
    import pickle

    from qt_hard.errors import CheckpointError

    reasons = []
    for ckpt in reversed(checkpoints):
        error = None
        try:
            accelerator.load_state(str(ckpt))
            state = torch.load(ckpt / f"trainer_state_{rank}.pt", weights_only=False)
        except (RuntimeError, OSError, EOFError, KeyError, ValueError, pickle.UnpicklingError) as err:
            error = " ".join(str(err).split())[:200] or type(err).__name__
        if not _any_process(error is not None, accelerator):
            return ckpt, state
        reasons.append(f"{ckpt.name}: {error or 'another process could not load it'}")
        if accelerator.is_main_process:
            print(f"--resume: skipped {ckpt} (it does not load: {reasons[-1].split(': ', 1)[1]})", file=sys.stderr)
    raise CheckpointError(f"--resume: no checkpoint under {checkpoints[0].parent} loads ({'; '.join(reasons)})")


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep freed blocks of up to 1 GiB for reuse instead of unmapping them.

    A word model's embedding gradient is a fresh dense (V, d) tensor every step (36 MB for 30k x 300);
    above glibc's largest automatic mmap threshold (32 MB) each one was mapped, page-faulted in while
    being zero-filled, and unmapped again, which took half of a bag-of-words Quick-Thoughts step on a
    CPU (``scripts/bench_qt_step.py``). Process-wide; a no-op (False) where the C library is not
    glibc."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(mallopt(M_MMAP_THRESHOLD, 1 << 30)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


def check_mixed_precision(mode: str, device: torch.device) -> None:
    """fp16 on a CPU is an error: accelerate would run it as float32 without saying so."""
    if mode == "fp16" and torch.device(device).type == "cpu":
        raise ConfigError(
            "train.mixed_precision=fp16 needs a GPU; on a CPU accelerate trains in float32 "
            "without autocast. Use train.mixed_precision=bf16 (CPU autocast) or 'no'."
        )


def accelerator_to(batch, device):
    if isinstance(batch, dict):
        return {k: accelerator_to(v, device) for k, v in batch.items()}
    # non_blocking: a pinned host batch (prefetched) is copied while the step goes on.
    return batch.to(device, non_blocking=True) if isinstance(batch, torch.Tensor) else batch


def _log_eval(path: Path, step: int, metrics: dict) -> None:
    """One row of ``OUT/eval.csv`` (step + the pipeline's scalar metrics); the header is written
    with the first row. On resume, rows after the resumed step would be re-evaluated: keep them
    out by dropping any row whose step is not below this one first."""
    row = {"step": step, **{k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}}
    rows = []
    if path.is_file():
        with path.open() as fh:
            rows = [r for r in csv.DictReader(fh) if int(r["step"]) < step]
    fields = list(dict.fromkeys([*(rows[0].keys() if rows else []), *row]))
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fields)
        w.writeheader()
        w.writerows(rows + [row])


def _write_eval(out: Path, step: int, metrics: dict) -> None:
    """``OUT/eval.json``: the pipeline's evaluation of the final model; a summary line printed."""
    import json

    (out / "eval.json").write_text(json.dumps({"step": step, **metrics}, indent=1, default=str) + "\n")
    scalars = {k: v for k, v in metrics.items() if isinstance(v, (int, float))}
    print("eval: " + ", ".join(f"{k}={v:.4g}" for k, v in scalars.items()))
    _log_eval(out / "eval.csv", step, metrics)


def _any_process(flag: bool, accelerator) -> bool:
    """True if any process got a stop signal, so that all of them checkpoint at the same step."""
    if accelerator.num_processes == 1:
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=accelerator.device)
    return bool(accelerator.reduce(t, reduction="sum").item() > 0)
