"""Schedules: hyper-parameters as functions of training progress p in [0, 1].

A parameter of a negative strategy may be a number or a :class:`Schedule`; the strategy evaluates it
at the progress the training loop reports (``loss.set_progress(step / total_steps)``). In a config a
schedule is a mapping with a ``schedule`` key, e.g. ``beta: {schedule: beta_anneal, beta: 1.0,
changes: 4}``, turned into an object by :func:`make_schedule`.

* :class:`BetaAnnealing`: HCL App. D.1. With e epochs and l "changes", beta_1 = beta and every e/l
  epochs beta drops by beta/l ("down"), so at progress p: ``beta * (1 - floor(p l) / l)``, ending at
  beta/l. "up" is the mirror image, ``beta * (floor(p l) + 1) / l``, from beta/l up to beta (the
  paper reports both directions do similarly).
* :class:`Linear` and :class:`Step`: Ring's annealing policies (Wu et al. appendix, "Exploring
  annealing policies": w_u from 100% to 10% linearly over the first epochs, then constant; the step
  policy moves in equal jumps). Usable for any parameter.
* :class:`HSCLThreshold`: H-SCL(tau), Jiang et al. (2022) eq. 4, ``l = start + (epoch - 1)/(E - 1)
  (end - start)`` with the epoch fraction read as p: the level, for the threshold weighting's ``level=``.
"""

from __future__ import annotations

import math
from typing import Any


class Schedule:
    """A value as a function of training progress p in [0, 1]."""

    def __call__(self, progress: float) -> float:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {"schedule": _NAME_OF[type(self)], **vars(self)}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def _clip01(p: float) -> float:
    return min(max(float(p), 0.0), 1.0)


class Linear(Schedule):
    """From ``start`` at progress ``begin`` to ``end`` at progress ``until``, constant outside."""

    def __init__(self, start: float, end: float, until: float = 1.0, begin: float = 0.0):
        if not 0.0 <= begin < until <= 1.0:
            raise ValueError(f"linear schedule needs 0 <= begin < until <= 1, got begin={begin}, until={until}")
        self.start, self.end, self.until, self.begin = start, end, until, begin

    def __call__(self, progress):
        frac = _clip01((progress - self.begin) / (self.until - self.begin))
        return self.start + (self.end - self.start) * frac


class Step(Schedule):
    """From ``start`` to ``end`` in ``steps`` equal jumps, taken at progress 1/(steps+1), 2/(steps+1), ..."""

    def __init__(self, start: float, end: float, steps: int = 4):
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"step schedule needs steps >= 1, got {steps!r}")
        self.start, self.end, self.steps = start, end, steps

    def __call__(self, progress):
        jumps = min(math.floor(_clip01(progress) * (self.steps + 1)), self.steps)
        return self.start + (self.end - self.start) * jumps / self.steps


class BetaAnnealing(Schedule):
    """HCL App. D.1's annealing of the concentration beta in ``changes`` steps (see module doc)."""

    def __init__(self, beta: float, changes: int = 4, direction: str = "down"):
        if not isinstance(changes, int) or changes < 1:
            raise ValueError(f"beta annealing needs changes >= 1, got {changes!r}")
        if direction not in ("down", "up"):
            raise ValueError(f"beta annealing direction must be 'down' or 'up', got {direction!r}")
        self.beta, self.changes, self.direction = beta, changes, direction

    def __call__(self, progress):
        done = min(math.floor(_clip01(progress) * self.changes), self.changes - 1)
        if self.direction == "down":
            return self.beta * (1.0 - done / self.changes)
        return self.beta * (done + 1) / self.changes


class HSCLThreshold(Schedule):
    """The level of H-SCL(tau), Jiang et al. (2022) eq. 4: ``l = start + p (end - start)``.

    Pass it as ``level`` (not ``tau``) of the threshold negatives: their ``tau = e^{l / gamma}`` ties the
    threshold to the loss's temperature gamma, which the weighting takes from the scores, so the cut is
    ``cos >= l`` whatever the temperature (a temperature of its own here would make it ``cos >= l t'/t``).
    """

    def __init__(self, start: float = -0.5, end: float = 0.0):
        self.start, self.end = start, end

    def __call__(self, progress):
        return self.start + _clip01(progress) * (self.end - self.start)


_SCHEDULES = {"linear": Linear, "step": Step, "beta_anneal": BetaAnnealing, "hscl_threshold": HSCLThreshold}
_NAME_OF = {cls: name for name, cls in _SCHEDULES.items()}


def make_schedule(spec):
    """A number stays a number; ``{"schedule": NAME, **params}`` becomes that schedule."""
    if isinstance(spec, (Schedule, int, float)) or spec is None:
        return spec
    if isinstance(spec, dict):
        spec = dict(spec)
        name = spec.pop("schedule", None)
        if name not in _SCHEDULES:
            raise ValueError(f"unknown schedule {name!r}; choose one of {', '.join(_SCHEDULES)}")
        try:
            return _SCHEDULES[name](**spec)
        except TypeError as err:
            raise ValueError(f"bad parameters for schedule {name!r}: {err}") from None
    raise ValueError(f"a schedule must be a number or a mapping with a 'schedule' key, got {spec!r}")


def at(value, progress: float):
    """Evaluate ``value`` at ``progress`` if it is a schedule, else return it."""
    return value(progress) if isinstance(value, Schedule) else value
