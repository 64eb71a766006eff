"""What a pipeline hands the training loop: the one interface between a modality and the loop.

The loop (``qt_hard.training.loop``) knows no modality. A *pipeline* (text, graph, ...) is a
module that defines ``PIPELINE``, an object with ``sections`` (the config sections it owns),
``validate(cfg)``, ``ddp_kwargs(cfg)`` and ``build(cfg, out) -> PipelineRun`` (:class:`Pipeline` gives
the defaults); the Pipelines table of ``docs/architecture.md`` says what the loop gets from each.

Pipelines are found by name through ``qt_hard.pipelines`` (a registry, or a dotted module path
in the config's ``pipeline`` key), so the loop never imports one by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Protocol

if TYPE_CHECKING:  # annotations only: the config is read and checked without importing torch
    import torch


class Pipeline:
    """The defaults of a pipeline (see the module docstring): no checks across sections, no DDP keywords.
    A pipeline subclasses it and gives ``sections`` and ``build``."""

    sections: dict

    def validate(self, cfg) -> None:
        return None

    def ddp_kwargs(self, cfg) -> dict:
        return {}

    def build(self, cfg, out: Path) -> "PipelineRun":
        raise NotImplementedError


class BatchTask(Protocol):
    """Batches as a pure function of (seed, step): exact resume needs only the step.

    ``local_batch(step, rank, world)`` is process ``rank``'s shard of the global batch of
    ``step`` (W processes together see exactly what one process would, in rank order);
    ``sentences_per_row`` (items each batch row carries) only scales the logged throughput.
    """

    sentences_per_row: int

    def batches_per_epoch(self) -> int: ...

    def local_batch(self, step: int, rank: int, world: int) -> dict: ...


class Objective(Protocol):
    """``loss = objective(module, batch, generator)``, a float32 scalar built from the core
    (``qt_hard.losses`` / ``qt_hard.negatives``); ``set_progress(step / total)`` before each step
    drives schedules. ``generator`` is the loop's checkpointed negatives-sampler generator. An
    objective that also records statistics of a batch declares them as a
    :class:`qt_hard.diagnostics.RecordsStats` (:class:`LossObjective` does), and the loop logs them."""

    def set_progress(self, progress: float) -> None: ...

    def __call__(
        self, module: torch.nn.Module, batch: dict, generator: Optional[torch.Generator] = None
    ) -> torch.Tensor: ...


class LossObjective:
    """Base of the pipelines' objectives that hold one loss module of :mod:`qt_hard.losses` in
    ``self.loss``: schedules' progress goes to it, and it records its loss's weight statistics.

    It is a :class:`qt_hard.diagnostics.RecordsStats`: ``request_stats()`` asks for the weight
    statistics of the next call's batch (:meth:`qt_hard.negatives.NegativeStrategy.diagnostics`);
    ``take_stats()`` returns them (a dict of floats, or None) and forgets them. The loop calls both
    around the steps it logs."""

    loss: torch.nn.Module

    def set_progress(self, progress: float) -> None:
        self.loss.set_progress(progress)

    def _loss_stats(self):
        from qt_hard.diagnostics import stats_recorder  # torch: imported when a run is built, not with the config

        return stats_recorder(self.loss)

    @property
    def recorded_stats(self) -> tuple[str, ...]:
        recorder = self._loss_stats()
        return recorder.recorded_stats if recorder is not None else ()

    def request_stats(self) -> None:
        recorder = self._loss_stats()
        if recorder is not None:
            recorder.request_stats()

    def take_stats(self) -> dict[str, float] | None:
        recorder = self._loss_stats()
        return recorder.take_stats() if recorder is not None else None


@dataclass
class PipelineRun:
    """One run's pieces, as ``build(cfg, out)`` returns them.

    module:     the trained ``nn.Module`` (the loop wraps it with ``accelerator.prepare``).
    task:       a ``BatchTask``.
    objective:  an ``Objective``.
    save:       ``save(module, folder)`` writes the final model (main process, unwrapped module).
    evaluate:   ``evaluate(module, step) -> dict`` of metrics on the unwrapped module, or None.
                The loop calls it on the main process after the final save (metrics go to
                ``OUT/eval.json``) and every ``eval_every`` steps (rows of ``OUT/eval.csv``).
                It must leave the module in the mode it found it and draw no global RNG.
    eval_every: steps between evaluations during training (0: only at the end).
    """

    module: torch.nn.Module
    task: BatchTask
    objective: Objective
    save: Callable[[torch.nn.Module, Path], None]
    evaluate: Optional[Callable[[torch.nn.Module, int], dict]] = None
    eval_every: int = 0
