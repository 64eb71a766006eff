"""Exact per-row order statistics of a masked score table (the percentiles of Ring negatives).

Sorting every row of an (A, C) table is the obvious way and, on CPU, the slowest pass of a training
step by far (``torch.sort`` is ~3.5x the cost of the (A, C, d) matrix product it follows, and
``kthvalue`` one such product per call). A selection only needs the rows' ranks near the wanted
positions, so for wide tables we bucket instead:

1. each row's values go into ``bins`` equal-width buckets between the row's min and max;
2. a per-row histogram of the allowed entries and its cumulative sum tell, for each wanted rank,
   the bucket it falls in and how many allowed entries lie below that bucket;
3. only that bucket's entries (about C / bins of them) are gathered, sorted, and indexed.

The result is exact: the same value ``sorted(row[mask])[rank]`` that a full sort gives.
"""

from __future__ import annotations

import torch

from .sampler import count_rows

_SORT_BELOW = 128  # narrow rows: a plain sort is as cheap as the bookkeeping
_BLOCK = 1 << 21


def row_order_statistics(s: torch.Tensor, mask: torch.Tensor, ranks: torch.Tensor, bins: int = 256) -> torch.Tensor:
    """The ``ranks[i, q]``-th smallest (0-based) of ``s[i, mask[i]]``.

    Args:
        s: (A, C) finite values.
        mask: (A, C) bool, the entries that take part.
        ranks: (A, Q) int64, each ``< mask[i].sum()``.
        bins: buckets per row for wide rows.

    Returns:
        (A, Q) values of ``s``.
    """
    if s.dim() != 2 or mask.shape != s.shape or ranks.dim() != 2 or ranks.shape[0] != s.shape[0]:
        raise ValueError(
            f"need s (A, C), mask (A, C), ranks (A, Q); got {tuple(s.shape)}, {tuple(mask.shape)}, {tuple(ranks.shape)}"
        )
    a, c = s.shape
    if a == 0 or ranks.shape[1] == 0:
        return s.new_empty(ranks.shape)
    if c < _SORT_BELOW:
        return s.masked_fill(~mask, float("inf")).sort(dim=1).values.gather(1, ranks)
    # Row blocks of ~2M entries: the temporaries (an int64 bucket table above all) stay small enough to
    # be reused from the heap, where whole-table ones are fresh pages, zeroed by the OS, every call.
    block = max(1, _BLOCK // c)
    if a > block:
        return torch.cat(
            [_bucketed(s[i : i + block], mask[i : i + block], ranks[i : i + block], bins) for i in range(0, a, block)]
        )
    return _bucketed(s, mask, ranks, bins)


def _bucketed(s: torch.Tensor, mask: torch.Tensor, ranks: torch.Tensor, bins: int) -> torch.Tensor:
    a, c = s.shape
    s = s.detach()
    # 1. Buckets between the row's min and max over all entries (a superset of the allowed ones).
    lo = s.amin(dim=1, keepdim=True)
    width = s.amax(dim=1, keepdim=True) - lo
    width = torch.where(width > 0, width, torch.ones_like(width))
    # (bins - 1/2) keeps the row max inside the last bucket without a clamp pass.
    bucket = (s - lo).mul_((bins - 0.5) / width).to(torch.int64)
    # 2. Histogram of the allowed entries; the wanted rank's bucket and the allowed count below it.
    # int16 counts halve the traffic on CPU; elsewhere int32, the type every backend scatters and searches.
    cdtype = torch.int16 if c < 2**15 and s.device.type == "cpu" else torch.int32
    hist = torch.zeros(a, bins, dtype=cdtype, device=s.device)
    hist.scatter_add_(1, bucket, mask.view(torch.uint8).to(cdtype))
    cum = hist.cumsum(dim=1, dtype=cdtype)
    target = torch.searchsorted(cum, ranks.to(cdtype), right=True)  # first bucket with cum > rank
    below = torch.where(target > 0, cum.gather(1, (target - 1).clamp_min(0)), torch.zeros_like(target, dtype=cdtype))
    rows = torch.arange(a, device=s.device)
    out = torch.empty(ranks.shape, dtype=s.dtype, device=s.device)
    for q in range(ranks.shape[1]):
        # 3. The entries of the wanted bucket, packed left into an (A, W) table padded with +inf.
        sel = (bucket == target[:, q : q + 1]) & mask
        r, col = sel.nonzero(as_tuple=True)
        n = count_rows(sel).to(torch.int64)
        start = n.cumsum(0) - n
        pos = torch.arange(r.shape[0], device=s.device) - start[r]
        width_q = int(n.max())
        packed = torch.full((a, width_q), float("inf"), dtype=s.dtype, device=s.device)
        packed[r, pos] = s[r, col]
        inside = (ranks[:, q] - below[:, q].to(torch.int64)).clamp(0, width_q - 1)
        out[:, q] = packed.sort(dim=1).values[rows, inside]
    return out
