"""Scoped torch thread counts (encoding and the evaluation's solvers pick their own)."""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Run the block with ``torch.set_num_threads(n)``, restoring the old count afterwards
    (``None`` or 0: leave the count as it is)."""
    if not n:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        torch.set_num_threads(old)
