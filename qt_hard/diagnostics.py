"""The statistics an objective records for the training log, and the benchmarks' memory probe.

"Diagnostics" names four different things in this project; each has its own name:

* **weight statistics** (:data:`WEIGHT_STATS`, recorded through :class:`RecordsStats` here): what a
  negatives strategy's weights do to one training batch (effective sample size, ``w_max / w_min``,
  the share of negatives pushed up, ...; computed by
  :meth:`qt_hard.negatives.NegativeStrategy.diagnostics`). An objective declares the statistics it
  records; the training loop asks for them through :func:`stats_recorder` at the steps it logs and
  writes them to ``metrics.csv`` columns and TensorBoard's ``weights/`` scalars.
* **collision diagnostics** (the text pipeline's ``eval.diagnostics`` key,
  ``qt_hard.text.readouts``): how same-class candidates act on the loss, measured with the final
  model on its data's held-out split, in ``eval.json``.
* **cell diagnostics** (a k-versus-N ledger record's ``diagnostics`` and its ``results.diag.jsonl``,
  ``qt_hard.experiments.specs.k_vs_n``): each grid cell's collision diagnostics, copied from its
  ``eval.json``.
* **memory probe** (:class:`LargestTensor`): the largest tensor any op produces inside a block,
  for the benchmark scripts and the tests.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# The weight statistics the training loop logs, in the order of their metrics.csv columns.
WEIGHT_STATS = ("beta", "tilt", "ess_frac", "w_ratio_median", "pushed_up_frac", "score_std", "floor_binds_frac")


@runtime_checkable
class RecordsStats(Protocol):
    """An objective (or loss) that records named statistics of a batch when asked: the one way the
    training loop finds them, in the manner of pytorch-metric-learning's ``collect_stats``.

    ``recorded_stats`` declares the names it may record (the loop logs those of
    :data:`WEIGHT_STATS`); ``request_stats()`` asks for the statistics of the next call's batch;
    ``take_stats()`` returns them (a dict of floats, or None when none were recorded) and forgets
    them."""

    recorded_stats: tuple[str, ...]

    def request_stats(self) -> None: ...

    def take_stats(self) -> dict[str, float] | None: ...


class _FlagAttributes:
    """:class:`RecordsStats` over a loss that records its weight statistics through the attributes
    ``want_diagnostics`` (set: record the next batch's) and ``last_diagnostics`` (the record, or
    None): the loss modules of :mod:`qt_hard.losses`."""

    # What NegativeStrategy.diagnostics returns; the loop logs those of WEIGHT_STATS.
    recorded_stats = (*WEIGHT_STATS, "guard_removed_frac")

    def __init__(self, loss):
        self.loss = loss

    def request_stats(self) -> None:
        self.loss.want_diagnostics = True

    def take_stats(self) -> dict[str, float] | None:
        out, self.loss.last_diagnostics = self.loss.last_diagnostics, None
        return out


def stats_recorder(obj) -> RecordsStats | None:
    """``obj`` as a :class:`RecordsStats`: itself when it declares one, an adapter over a loss that
    records through ``want_diagnostics`` / ``last_diagnostics``, or None when it records nothing."""
    if isinstance(obj, RecordsStats):
        return obj
    if isinstance(obj, torch.nn.Module) and "want_diagnostics" in vars(obj) and "last_diagnostics" in vars(obj):
        return _FlagAttributes(obj)
    return None


class LargestTensor(TorchDispatchMode):
    """Context manager recording the largest tensor (in elements) any op produces inside it, forward
    and backward alike: the memory check "O(B x candidates), never B x candidates x d" on any device.

        >>> with LargestTensor() as probe:
        ...     loss_fn(z1, z2).backward()
        >>> probe.largest
    """

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out
