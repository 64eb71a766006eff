"""Sizes a config asks for, checked against the machine's memory before anything is allocated.

A typo such as ``train.batch_size=10000000`` or ``model.dim=1e11`` would otherwise reach the
allocator, which refuses it after the data is prepared with a traceback (``DefaultCPUAllocator:
can't allocate memory``). :func:`refuse_unallocatable` refuses it first, in one line that says how
many bytes it would need and how many the machine has.
"""

from __future__ import annotations

import os

__all__ = ["machine_memory", "human_bytes", "refuse_unallocatable"]


def machine_memory() -> int | None:
    """Bytes of memory this process can have: the physical memory, or the control group's limit
    where one is set and smaller; None where neither can be read."""
    total = None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            limit = int(text)
            total = limit if total is None else min(total, limit)
        break
    return total


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"


def refuse_unallocatable(needs: dict[str, tuple[str, int]], available: int | None = None) -> None:
    """``AllocationError`` for the first of ``needs`` (``{what: (the setting that decides it, bytes)}``)
    that is larger than ``available`` (default :func:`machine_memory`), naming the setting and both
    sizes. Nothing is refused where the memory cannot be read."""
    from qt_hard.errors import AllocationError

    available = machine_memory() if available is None else available
    if not available:
        return
    for what, (setting, nbytes) in needs.items():
        if nbytes > available:
            raise AllocationError(
                f"{setting}: {what} would need {human_bytes(nbytes)}, more than the {human_bytes(available)} of "
                "memory this machine has; lower it"
            )
