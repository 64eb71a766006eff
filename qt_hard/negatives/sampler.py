"""Decoupled number of negatives (Ash et al. 2022, section 5 and D.1).

For each anchor draw ``k`` of its allowed candidates uniformly *without replacement*, independently per
anchor, vectorized over the anchors. Two exact samplers, chosen by cost:

* Floyd's algorithm (Bentley & Floyd 1987) for small k: for j = n-k, ..., n-1 draw t uniform in
  [0, j] and take t, or j if t was taken already. Each k-subset of {0..n-1} comes out with probability
  1 / C(n, k). k steps over (A,) vectors with an (A, C) bitmap of what is taken, and one cumulative
  count that maps the drawn ordinals to columns.
* Random keys for large k: every allowed candidate gets an i.i.d. uniform key and the k smallest keys
  are kept; the ranks of i.i.d. keys form a uniformly random permutation.

Collision-free mode (Ash et al. section 5, Fig. 3 right) drops candidates that share the anchor's
class *before* sampling, so the k negatives are drawn only from other classes.
"""

from __future__ import annotations

import torch


def count_rows(mask: torch.Tensor) -> torch.Tensor:
    """(A,) number of True entries per row of an (A, C) bool mask, as a narrow integer.

    ``mask.sum(1)`` first widens the whole mask to int64; summing its bytes into int16 (int32 for very
    wide rows) is an order of magnitude cheaper on CPU."""
    dtype = torch.int16 if mask.shape[1] < 2**15 else torch.int32
    return mask.view(torch.uint8).sum(dim=1, dtype=dtype)


def _check(mask: torch.Tensor, k) -> torch.Tensor:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer or None (all candidates), got {k!r}")
    counts = count_rows(mask)
    if counts.numel() and int(counts.min()) < k:
        worst = int(counts.argmin())
        raise ValueError(
            f"k={k} negatives requested but anchor {worst} has only {int(counts[worst])} candidates "
            f"(of {mask.shape[1]} columns); lower k or enlarge the batch"
        )
    return counts


def sample_k_indices(mask: torch.Tensor, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw ``k`` allowed candidates per row, uniformly without replacement.

    Args:
        mask: (A, C) bool, the allowed candidates of each anchor.
        k: negatives per anchor, 1 <= k <= the smallest row count.
        generator: optional ``torch.Generator`` on ``mask.device`` for reproducible draws.

    Returns:
        (A, k) int64 column indices, distinct within each row, all inside ``mask`` (in no particular
        order).

    Raises:
        ValueError: if ``k`` is not a positive integer or some anchor has fewer than ``k`` candidates
        (asking for more negatives than exist is an error, never a silent clamp).
    """
    counts = _check(mask, k)
    a, c = mask.shape
    if k > 256:  # k sequential steps of Floyd would cost more than one pass of random keys
        keys = torch.rand(mask.shape, generator=generator, device=mask.device)
        keys = keys.masked_fill(~mask, 2.0)  # uniform keys are < 1, so disallowed ones are never kept
        return keys.topk(k, dim=1, largest=False, sorted=False).indices
    n = counts.to(torch.int64)
    rows = torch.arange(a, device=mask.device)
    ordinals = torch.empty(k, a, dtype=torch.int64, device=mask.device)
    taken = torch.zeros(a, c, dtype=torch.bool, device=mask.device)  # by ordinal: O(1) membership
    draws = torch.rand(k, a, generator=generator, device=mask.device, dtype=torch.float64)
    for step in range(k):
        top = n - k + step  # draw from [0, top]
        t = torch.minimum((draws[step] * (top + 1)).to(torch.int64), top)
        t = torch.where(taken[rows, t], top, t)
        taken[rows, t] = True
        ordinals[step] = t
    ordinals = ordinals.T.contiguous()
    # Ordinal r (0-based among the row's allowed candidates) is the first column where the running
    # count of allowed candidates reaches r + 1.
    # (A narrow running count: the cumulative sum is one of the costlier passes on CPU.)
    dtype = torch.int16 if c < 2**15 else torch.int32
    running = mask.view(torch.uint8).cumsum(dim=1, dtype=dtype)
    return torch.searchsorted(running, (ordinals + 1).to(dtype))


def sample_k_negatives(mask: torch.Tensor, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """:func:`sample_k_indices` as a mask: (A, C) bool with exactly ``k`` True entries per row, all
    inside ``mask``."""
    idx = sample_k_indices(mask, k, generator)
    return torch.zeros_like(mask).scatter_(1, idx, True)
