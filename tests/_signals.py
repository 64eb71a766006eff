"""Stopping a training run from inside, as a user's Ctrl-C or a scheduler's SIGTERM would.

``signal_at(step)`` is an ``on_step`` callback for ``qt_hard.training.loop.train``: at that step it
sends the signal to this process, whose handler in the loop checkpoints and stops the run.
"""

from __future__ import annotations

import os
import signal


def signal_at(step_wanted: int, signum: int = signal.SIGTERM):
    """An ``on_step(step, loss)`` callback that sends ``signum`` to this process at ``step_wanted``."""

    def on_step(step, loss):
        if step == step_wanted:
            os.kill(os.getpid(), signum)

    return on_step
