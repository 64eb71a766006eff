"""The accelerate training loop: Adam / AdamW / SparseAdam with a learning-rate schedule
(``qt_hard.training.optim``), gradient clipping, optional mixed precision, trackers,
checkpoints (every N steps and on SIGTERM/SIGINT), exact resume, final model to OUT/final/.

Layout of a run folder ``OUT``::

    config.yaml              the resolved config (after overrides)
    checkpoints/step_XXXXXXX/ accelerator.save_state (model, optimizer, RNG of every process)
                              + trainer_state_<rank>.pt (step, negatives-sampler generator)
    metrics.csv              step, epoch, loss (the global batch's loss, mean over the steps since
                             the previous row; under several processes the mean of their losses),
                             grad_norm (before clipping, same window), lr (of the row's last step),
                             sentences_per_s (CSV tracker), and the weight statistics of the
                             logged step's batch (``qt_hard.diagnostics.WEIGHT_STATS``), where the
                             objective records them (``qt_hard.diagnostics.RecordsStats``; the main
                             process's anchors under several processes)
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

Mixed precision (``train.mixed_precision``: bf16 under accelerate's autocast, the loss in float32;
fp16 refused on a CPU): ``docs/guides/text-training.md``.
"""

from __future__ import annotations

import csv
import math
import logging
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Callable

import torch

from qt_hard.diagnostics import WEIGHT_STATS, stats_recorder
from qt_hard.errors import NonFiniteError, WriteFailedError
from qt_hard.files import csv_text, sync_tree, write_failed, write_text
from qt_hard.pipelines import get_pipeline
from qt_hard.training.config import Config, ConfigError, save_config, to_dict
from qt_hard.training.outdir import (
    CHECKPOINT_PREFIX,
    PARTIAL_SUFFIX,
    check_out_dir,
    clear_run,
    flat_keys,
    list_checkpoints,
    run_folder_lock,
)
from qt_hard.training.optim import clip_gradients, gradient_norm, lr_factor, make_optimizer, set_lr, set_tf32
from qt_hard.workers import stop_signals_handled_by

log = logging.getLogger(__name__)


class Stopped(Exception):
    """A run stopped by a signal ``signum`` after its checkpoint. ``qt-hard train`` exits with the shell's
    status of a process ended by that signal, 128 + its number (130 for SIGINT, 143 for SIGTERM), so that
    ``qt-hard train ... && qt-hard eval ...`` and a job scheduler see a stopped run as not finished."""

    def __init__(self, signum: int, message: str):
        super().__init__(message)
        self.signum = signum


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

    def __call__(self, signum, frame):  # the SIGINT / SIGTERM handler while the steps run
        if self.requested:
            raise SecondSignal(signum)
        self.requested = True
        self.signum = signum


def _hparams(cfg: Config) -> dict:
    """The config by dotted key, as TensorBoard's hparams take it: scalars and strings only."""
    flat = flat_keys(to_dict(cfg), whole=())
    return {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in flat.items()}


def _rows_up_to(path: Path, last_step: int) -> list[dict]:
    """The rows of the CSV file ``path`` (none where it is missing) whose ``step`` is at most ``last_step``."""
    if not path.is_file():
        return []
    with path.open() as fh:
        return [r for r in csv.DictReader(fh) if int(r["step"]) <= last_step]


class CSVTracker:
    """Append-only metrics.csv; on resume, rows after the resumed step are dropped first."""

    FIELDS = ["step", "epoch", "loss", "grad_norm", "lr", "sentences_per_s", "elapsed_s", *WEIGHT_STATS]

    def __init__(self, path: Path, resume_step: int):
        self.path = path
        rows = _rows_up_to(path, resume_step) if resume_step > 0 else []
        write_text(path, csv_text(self.FIELDS, rows), "metrics file")

    def log(self, row: dict) -> None:
        try:
            with self.path.open("a", newline="") as fh:
                fh.write(csv_text(self.FIELDS, [row], header=False))
        except OSError as err:
            raise write_failed(err, self.path, "metrics file") from None


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
        # The named steps of a run, in order: setup (``_Training``), resume, the run folder's outputs,
        # the steps (each: step, log, checkpoint and evaluation when due), finish.
        run = _Training(cfg)
        if resume:
            run.resume(checks)
        run.open_outputs(overwrite)
        interrupted = run.train_steps(on_step)
        run.finish(interrupted)
        if interrupted and raise_on_stop:
            raise Stopped(
                run.stop_signum,
                f"stopped by {signal.Signals(run.stop_signum).name} at step {run.step}/{run.total}; "
                f"checkpoint saved, continue with --resume",
            )
        return run.out


class _Window:
    """The steps since the previous logged row: their count, summed loss and gradient norm, and
    when the window (and the run) started."""

    def __init__(self):
        self.t_start = self.t_window = time.perf_counter()
        self.steps, self.loss, self.grad = 0, 0.0, 0.0

    def add(self, loss_value: float, grad_norm: float | None) -> None:
        self.steps += 1
        self.loss += loss_value
        self.grad += grad_norm if grad_norm is not None else 0.0

    def close(self) -> tuple[float, float, int, float]:
        """(summed loss, summed gradient norm, steps, seconds) of the window, which then restarts."""
        now = time.perf_counter()
        out = (self.loss, self.grad, self.steps, now - self.t_window)
        self.t_window, self.steps, self.loss, self.grad = now, 0, 0.0, 0.0
        return out


class _Training:
    """One run of :func:`train`, built by its first step (setup) and advanced by the others."""

    def __init__(self, cfg: Config):
        """Setup: the accelerator, the pipeline's module, batches and objective, the optimizer and the
        negatives generator, all seeded, so that a run is a function of its config."""
        from accelerate import Accelerator, PartialState
        from accelerate.utils import DistributedDataParallelKwargs, parse_flag_from_env, set_seed

        self.cfg = cfg
        self.out = out = Path(cfg.out_dir).expanduser()
        self.trackers = list(cfg.train.trackers)
        pipeline = get_pipeline(cfg.pipeline)
        ddp_kwargs = pipeline.ddp_kwargs(cfg)
        handlers = [DistributedDataParallelKwargs(**ddp_kwargs)] if ddp_kwargs else []
        # Checked before the Accelerator exists: its process-wide state would keep the bad setting.
        check_mixed_precision(
            cfg.train.mixed_precision, PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU")).device
        )
        self.accelerator = accelerator = Accelerator(
            mixed_precision=cfg.train.mixed_precision,
            log_with="tensorboard" if "tensorboard" in self.trackers else None,
            project_dir=str(out),
            kwargs_handlers=handlers,
        )
        self.rank, self.world = accelerator.process_index, accelerator.num_processes
        check_launch(self.world)
        if cfg.train.batch_size % self.world:
            raise ConfigError(
                f"train.batch_size={cfg.train.batch_size} (global) is not divisible by {self.world} processes"
            )
        self.main = accelerator.is_main_process

        if cfg.train.num_threads:
            torch.set_num_threads(cfg.train.num_threads)
        set_tf32(cfg.train.tf32, accelerator.device)
        if accelerator.device.type == "cpu":
            keep_freed_memory()
        # Same seed on every process: identical initial weights (DDP also broadcasts rank 0's).
        set_seed(cfg.train.seed)
        with accelerator.main_process_first():
            self.run = pipeline.build(cfg, out)
        module, self.task, self.objective = self.run.module, self.run.task, self.run.objective
        if hasattr(self.task, "to_device"):  # batches gathered where the model runs (qt_hard.text.batches)
            self.task.to_device(accelerator.device)
        # Adam's fused kernel (one pass over each parameter instead of torch's dozen foreach passes; the
        # same update): on a CPU it takes a 2 x 30k x 300 embedding table's step from ~1.3 s to ~0.1 s,
        # most of a bag-of-words Quick-Thoughts step before (scripts/bench_train.py step).
        optimizer = make_optimizer(module, cfg.train, accelerator.device)
        self.module, self.optimizer = accelerator.prepare(module, optimizer)
        self.stats = stats_recorder(self.objective)

        self.generator = torch.Generator(device=accelerator.device)
        self.generator.manual_seed(cfg.train.seed * 1009 + 17 + self.rank)  # per-process negatives draws

        self.steps_per_epoch = self.task.batches_per_epoch()
        self.total = cfg.train.steps or max(1, math.ceil(cfg.train.epochs * self.steps_per_epoch))
        self.step = 0

    def resume(self, checkpoints: list[Path]) -> None:
        """Resume: load the newest of ``checkpoints`` that loads (weights, optimizer, RNG states)
        and continue from its step with its negatives generator."""
        ckpt, state = _load_newest(checkpoints, self.accelerator, self.rank)
        self.step = int(state["step"])
        self.generator.set_state(state["generator"])
        if self.main:
            log.info("resumed from %s at step %d/%d", ckpt, self.step, self.total)

    def open_outputs(self, overwrite: bool) -> None:
        """The run folder's outputs: an overwritten run's files removed, config.yaml, the trackers
        (TensorBoard; metrics.csv cut to the resumed step)."""
        if self.main:
            if overwrite:
                clear_run(self.out)
            save_config(self.cfg, self.out / "config.yaml")
        if "tensorboard" in self.trackers:
            self.accelerator.init_trackers("logs", config=_hparams(self.cfg))
        csv_on = self.main and "csv" in self.trackers
        self.csv_tracker = CSVTracker(self.out / "metrics.csv", self.step) if csv_on else None

    def train_steps(self, on_step: Callable[[int, float], None] | None) -> bool:
        """Every step from the current one to the last, with the progress bar (or plain lines where
        stderr is not a terminal), the logged rows, and the checkpoints and evaluations when due.
        A SIGINT/SIGTERM to any process checkpoints every process at the end of its step and stops
        them: returns whether the run stopped so (``stop_signum``: the signal this process got)."""
        from tqdm.auto import tqdm

        show = self.main and self.cfg.train.progress
        # A bar's \r frames are noise in a log file: where stderr is not a terminal, a plain line at
        # every log_every steps instead.
        self.lines_only = show and not sys.stderr.isatty()
        self.bar = tqdm(
            total=self.total, initial=self.step, disable=not show or self.lines_only, desc="train", dynamic_ncols=True
        )
        self.module.train()
        self.window = _Window()
        stop = StopRequest()
        try:
            with stop_signals_handled_by(stop):
                while self.step < self.total:
                    loss_value, grad_norm, lr = self.train_step()
                    self.bar.update(1)
                    if self._logs_at(self.step):
                        self.log(lr, grad_norm)
                    if on_step is not None:
                        on_step(self.step, loss_value)
                    if _any_process(stop.requested, self.accelerator):
                        self.checkpoint(self.step)
                        if self.main:
                            log.warning(
                                "stopped by signal at step %d/%d; checkpoint saved, continue with --resume",
                                self.step,
                                self.total,
                            )
                        return True
                    self.when_due()
        finally:
            self.bar.close()
            self.stop_signum = stop.signum
        return False

    def _logs_at(self, step: int) -> bool:
        """Whether the row of ``step`` (counted from 1) is logged: every ``log_every`` steps and the last."""
        return step % max(1, self.cfg.train.log_every) == 0 or step == self.total

    def train_step(self) -> tuple[float, float | None, float]:
        """Step: one optimizer step on the batch of the current step; (loss, gradient norm before
        clipping or None without clipping, learning rate). The objective records its weight
        statistics on the steps that are logged."""
        cfg = self.cfg.train
        self.objective.set_progress(self.step / self.total)
        lr = cfg.lr * lr_factor(self.step, self.total, cfg.lr_schedule, cfg.warmup_steps)
        set_lr(self.optimizer, lr)
        if self.stats is not None and self._logs_at(self.step + 1):
            self.stats.request_stats()
        batch = accelerator_to(self.task.local_batch(self.step, self.rank, self.world), self.accelerator.device)
        try:
            with self.accelerator.autocast():
                loss = self.objective(self.module, batch, self.generator)
        except NonFiniteError as err:  # the loss refuses non-finite embeddings (qt_hard.losses)
            raise NonFiniteError(
                f"training stopped at step {self.step + 1}/{self.total}: {err}; no final model was written"
            ) from None
        self.accelerator.backward(loss)
        grad_norm = None
        if cfg.grad_clip:
            grad_norm = clip_gradients(self.accelerator, self.module, cfg.grad_clip)
        loss_value = float(loss.detach())
        self._refuse_non_finite(loss_value, grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.window.add(loss_value, grad_norm)
        return loss_value, grad_norm, lr

    def _refuse_non_finite(self, loss_value: float, grad_norm: float | None) -> None:
        """Stop before the optimizer step when the step's loss or gradient norm is NaN or infinite:
        the weights (and every checkpoint) stay those of the last good step, and the run ends with
        ``NonFiniteError`` naming the step. Under fp16 the gradient is left to the loss scaler, which
        skips a step with an infinite gradient by design. Every process stops at the same step."""
        if grad_norm is None and self.cfg.train.mixed_precision != "fp16":
            grad_norm = gradient_norm(self.module)
        checked = [loss_value] + ([grad_norm] if self.cfg.train.mixed_precision != "fp16" else [])
        bad = not all(math.isfinite(v) for v in checked)
        if not _any_process(bad, self.accelerator):
            return
        last = list_checkpoints(self.out)
        kept = f"the last good checkpoint is {last[-1].name}" if last else "no checkpoint was written yet"
        raise NonFiniteError(
            f"training stopped at step {self.step + 1}/{self.total}: the loss is {loss_value:.4g} and the gradient "
            f"norm {grad_norm if grad_norm is not None else float('nan'):.4g} (not finite); no final model was "
            f"written and {kept} (lower train.lr or check the data)"
        )

    def log(self, lr: float, grad_norm: float | None) -> None:
        """Log: the window's mean loss and gradient norm, throughput and the weight statistics, to the
        progress bar or a plain line, TensorBoard and metrics.csv."""
        loss_sum, grad_sum, steps, seconds = self.window.close()
        loss_sum = _process_mean(loss_sum, self.accelerator)
        sentences_per_step = self.cfg.train.batch_size * getattr(self.task, "sentences_per_row", 1)
        speed = sentences_per_step * steps / max(seconds, 1e-9)
        # One batch's loss swings by +-0.2 on real text: log the window's mean.
        mean_loss = loss_sum / steps
        mean_grad = grad_sum / steps if grad_norm is not None else ""
        row = {
            "step": self.step,
            "epoch": round(self.step / self.steps_per_epoch, 4),
            "loss": mean_loss,
            "grad_norm": mean_grad,
            "lr": lr,
            "sentences_per_s": round(speed, 1),
            "elapsed_s": round(self.window.t_window - self.window.t_start, 2),
        }
        stats = self.stats.take_stats() if self.stats is not None else None
        if stats:
            row.update({k: round(v, 6) for k, v in stats.items() if k in WEIGHT_STATS})
        self.bar.set_postfix(loss=f"{mean_loss:.4f}", sent_s=f"{speed:.0f}")
        if self.lines_only:
            log.info("train: step %d/%d loss %.4f sentences/s %.0f", self.step, self.total, mean_loss, speed)
        if "tensorboard" in self.trackers:
            logged = {"loss": mean_loss, "sentences_per_s": speed, "lr": lr}
            if grad_norm is not None:
                logged["grad_norm"] = mean_grad
            if stats:
                logged.update({f"weights/{k}": v for k, v in stats.items() if k in WEIGHT_STATS})
            self.accelerator.log(logged, step=self.step)
        if self.csv_tracker is not None:
            self.csv_tracker.log(row)

    def when_due(self) -> None:
        """Checkpoint every ``checkpoint_every`` steps and evaluate every ``eval_every`` steps (rows of
        eval.csv); not at the last step, where :meth:`finish` does both."""
        step, total = self.step, self.total
        if self.cfg.train.checkpoint_every and step % self.cfg.train.checkpoint_every == 0 and step < total:
            self.checkpoint(step)
        run = self.run
        if run.evaluate is not None and run.eval_every and step % run.eval_every == 0 and step < total and self.main:
            _log_eval(self.out / "eval.csv", step, run.evaluate(self.accelerator.unwrap_model(self.module), step))

    def checkpoint(self, at_step: int) -> Path:
        """Checkpoint: ``OUT/checkpoints/step_XXXXXXX`` (accelerate's state of every process and each
        process's trainer state), then the oldest beyond ``keep_checkpoints`` removed."""
        accelerator, main, out = self.accelerator, self.main, self.out
        path = out / "checkpoints" / f"{CHECKPOINT_PREFIX}{at_step:07d}"
        # Written under a temporary name and renamed once every process has written its part: a
        # write cut short (a second Ctrl-C, a killed job) leaves only a .partial folder, which
        # list_checkpoints never offers to --resume.
        partial = path.with_name(path.name + PARTIAL_SUFFIX)
        if main:
            shutil.rmtree(partial, ignore_errors=True)
        accelerator.wait_for_everyone()
        try:
            # Pickled, not safetensors: on a GPU, cuDNN packs a GRU's weights into one flat buffer, so
            # its parameters share storage and accelerate's safetensors path drops all but one of them
            # ("Removed shared tensor ... while saving"); load_state would then miss those keys.
            accelerator.save_state(str(partial), safe_serialization=False)
            torch.save(
                {"step": at_step, "generator": self.generator.get_state(), "world": self.world},
                partial / f"trainer_state_{self.rank}.pt",
            )
            # On disk before the rename: a crash right after it must not leave a checkpoint of empty files.
            sync_tree(partial)
        except (OSError, RuntimeError) as err:  # a full disk: torch's writer raises RuntimeError
            shutil.rmtree(partial, ignore_errors=True)
            if isinstance(err, RuntimeError) and not _is_write_error(err):
                raise
            raise WriteFailedError(
                f"checkpoint {path} could not be written ({_write_reason(err)}); the earlier checkpoints are "
                "kept, continue with --resume once there is room"
            ) from None
        accelerator.wait_for_everyone()
        if main:
            shutil.rmtree(path, ignore_errors=True)  # a step saved before, e.g. by an earlier stop
            partial.rename(path)
        accelerator.wait_for_everyone()
        if main and self.cfg.train.keep_checkpoints > 0:
            for old in list_checkpoints(out)[: -self.cfg.train.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        return path

    def finish(self, interrupted: bool) -> None:
        """Finish: unless ``interrupted``, the last checkpoint, the final model (OUT/final/) and the
        final evaluation (eval.json); then the trackers end on every process."""
        accelerator = self.accelerator
        if not interrupted:
            self.checkpoint(self.step)
            accelerator.wait_for_everyone()
            if self.main:
                self.run.save(accelerator.unwrap_model(self.module), self.out / "final")
                log.info("final model saved to %s", self.out / "final")
                if self.run.evaluate is not None:
                    _write_eval(
                        self.out, self.step, self.run.evaluate(accelerator.unwrap_model(self.module), self.step)
                    )
        # Every process has written its part before the trackers stop; end_training then finishes the
        # trackers and destroys the process group (accelerate >= 1.x), so no collective may follow it.
        accelerator.wait_for_everyone()
        accelerator.end_training()


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
            _check_trainer_state(state, ckpt)
        except (
            RuntimeError,
            OSError,
            EOFError,
            KeyError,
            ValueError,
            TypeError,
            AttributeError,
            IndexError,
            pickle.UnpicklingError,
        ) as err:
            error = " ".join(str(err).split())[:200] or type(err).__name__
        if not _any_process(error is not None, accelerator):
            return ckpt, state
        reasons.append(f"{ckpt.name}: {error or 'another process could not load it'}")
        if accelerator.is_main_process:
            log.warning("--resume: skipped %s (it does not load: %s)", ckpt, reasons[-1].split(": ", 1)[1])
    raise CheckpointError(f"--resume: no checkpoint under {checkpoints[0].parent} loads ({'; '.join(reasons)})")


def _check_trainer_state(state, ckpt: Path) -> None:
    """A trainer state that is not what :meth:`_Training.checkpoint` wrote for this checkpoint (another
    file copied over it, another step's): ``ValueError`` saying what is wrong."""
    if not isinstance(state, dict) or not {"step", "generator"} <= set(state):
        raise ValueError(f"{ckpt.name}: its trainer state is not a qt-hard trainer state (no step and generator)")
    step = int(state["step"])
    if step != int(ckpt.name[len(CHECKPOINT_PREFIX) :]):
        raise ValueError(f"{ckpt.name}: its trainer state is of step {step}")
    if not isinstance(state["generator"], torch.Tensor):
        raise ValueError(f"{ckpt.name}: its trainer state's generator is not a generator state")


def _is_write_error(err: BaseException) -> bool:
    """Whether a RuntimeError of torch's file writer reports a failed write (it wraps the OS error)."""
    text = str(err).lower()
    return any(m in text for m in ("no space left", "file write failed", "unexpected pos", "errno", "quota"))


def _write_reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return " ".join(str(err).split())[:160] or type(err).__name__


def keep_freed_memory() -> bool:
    """Let glibc's malloc keep freed blocks of up to 1 GiB for reuse instead of unmapping them.

    A word model's embedding gradient is a fresh dense (V, d) tensor every step (36 MB for 30k x 300);
    above glibc's largest automatic mmap threshold (32 MB) each one was mapped, page-faulted in while
    being zero-filled, and unmapped again, which took half of a bag-of-words Quick-Thoughts step on a
    CPU (``scripts/bench_train.py step``). Process-wide; a no-op (False) where the C library is not
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


def check_launch(processes: int) -> None:
    """A launcher that started several processes (``WORLD_SIZE``) whose accelerator sees one: on a
    machine without a GPU accelerate joins processes only when told to use the CPU, and each would
    otherwise train its own copy into the same folder and caches. Refused on every process."""
    launched = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if launched > 1 and processes == 1:
        raise ConfigError(
            f"launched as {launched} processes (WORLD_SIZE={launched}), but accelerate found no device to "
            "run them together on and would train separate copies into one folder; on CPUs set "
            "ACCELERATE_USE_CPU=true (e.g. ACCELERATE_USE_CPU=true torchrun --standalone --nproc_per_node "
            f"{launched} -m qt_hard.cli train CONFIG)"
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
    rows = _rows_up_to(path, step - 1)
    fields = list(dict.fromkeys([*(rows[0].keys() if rows else []), *row]))
    write_text(path, csv_text(fields, rows + [row]), "evaluation file")


def _write_eval(out: Path, step: int, metrics: dict) -> None:
    """``OUT/eval.json``: the pipeline's evaluation of the final model; a summary line printed."""
    import json

    write_text(
        out / "eval.json", json.dumps({"step": step, **metrics}, indent=1, default=str) + "\n", "evaluation file"
    )
    scalars = {k: v for k, v in metrics.items() if isinstance(v, (int, float))}
    print("eval: " + ", ".join(f"{k}={v:.4g}" for k, v in scalars.items()))
    _log_eval(out / "eval.csv", step, metrics)


def _process_mean(value: float, accelerator) -> float:
    """``value`` averaged over the processes (itself under one); a collective, so every process calls
    it at the same steps. Each process's loss is the mean over its own anchors of an equal share of
    the global batch, so the mean of the processes' losses is the loss one process computes on the
    whole batch; the main process's own value would be the loss of its share only."""
    if accelerator.num_processes == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=accelerator.device)
    return float(accelerator.reduce(t, reduction="mean").item())


def _any_process(flag: bool, accelerator) -> bool:
    """True if any process got a stop signal, so that all of them checkpoint at the same step."""
    return _process_mean(float(flag), accelerator) > 0
