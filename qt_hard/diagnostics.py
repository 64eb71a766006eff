"""Diagnostics shared by the benchmark scripts and the tests."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode


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
