"""One process of a multi-process training test, started by ``accelerate launch`` (see
tests/test_training_distributed.py). It runs ``qt_hard.training.loop.train`` like ``qt-hard train``
does, plus two faults that only ONE rank (``--rank``) suffers after a given step:

--signal-at N   the rank sends itself SIGTERM after step N (as a cluster scheduler would to one
                process); every rank must stop at the same step with one checkpoint.
--raise-at N    the rank raises after step N while a non-daemon thread (``--linger`` seconds, as a
                leftover writer thread would) keeps an ordinary exit from completing; through the
                CLI's ``exit_at_once_on_error`` the process ends anyway, and the peers must fail at
                once, not wait in their next collective for the backend's 30-minute timeout.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("config")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--rank", type=int, default=1)
    p.add_argument("--signal-at", type=int, default=None)
    p.add_argument("--raise-at", type=int, default=None)
    p.add_argument("--linger", type=float, default=120.0)
    args = p.parse_args()

    from qt_hard.training.cli import exit_at_once_on_error
    from qt_hard.training.config import load_config
    from qt_hard.training.loop import train

    rank = int(os.environ.get("RANK", "0"))

    def fault(step, loss):
        if rank != args.rank:
            return
        if step == args.signal_at:
            os.kill(os.getpid(), signal.SIGTERM)
        if step == args.raise_at:
            raise RuntimeError(f"injected failure on rank {rank} at step {step}")

    if args.raise_at is not None and rank == args.rank:
        threading.Thread(target=time.sleep, args=(args.linger,), daemon=False).start()
    exit_at_once_on_error(train, load_config(args.config), resume=args.resume, on_step=fault)
    return 0


if __name__ == "__main__":
    sys.exit(main())
