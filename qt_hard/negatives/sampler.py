"""Decoupled number of negatives (Ash et al. 2022, section 5 and D.1).

For each anchor draw ``k`` of its allowed candidates uniformly *without replacement*, independently per
anchor, vectorized over the anchors. Two exact samplers, chosen by cost:

* First distinct draws, for k well below the candidate count: draw columns i.i.d. uniformly, drop
  the draws that hit a disallowed column or repeat an earlier draw, and keep the first k that remain.
  The distinct allowed values of an i.i.d. uniform sequence, in order of first appearance, are a
  uniformly random ordering of the allowed set (the law is invariant under relabelling the allowed
  columns), so the first k form a uniform k-subset. About ``k / (allowed fraction)`` draws per row
  suffice; a row that falls short (rare by the margin taken) is drawn again, which keeps the law
  uniform by the same symmetry. Work is O(A k log k): nothing of size (A, C). The number of draws
  depends on the fewest allowed candidates of a row, so two masks (plain and collision-free) take
  the same stream from one generator state only where it comes out the same; then the draw of the
  smaller mask is the larger one's with its disallowed columns replaced by the next draws.
* Random keys otherwise: every allowed candidate gets an i.i.d. uniform key and the k smallest keys
  are kept; the ranks of i.i.d. keys form a uniformly random permutation. One pass over (A, C).
"""

from __future__ import annotations

import torch

from qt_hard.errors import NotEnoughCandidatesError


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
        raise NotEnoughCandidatesError(
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
    n_min = int(counts.min()) if a else k
    if 2 * k > n_min or 4 * n_min < c:  # many draws would repeat or miss: keys are cheaper
        keys = torch.rand(mask.shape, generator=generator, device=mask.device)
        keys = keys.masked_fill(~mask, 2.0)  # uniform keys are < 1, so disallowed ones are never kept
        return keys.topk(k, dim=1, largest=False, sorted=False).indices
    # Draws needed: k distinct values lose ~k^2 / 2n to repeats, and hits land on allowed columns at
    # rate n / c; a 25% margin plus 16 makes a redraw rare.
    m = int(1.25 * (k + k * k / (2 * n_min)) * c / n_min) + 16
    out = torch.empty(a, k, dtype=torch.int64, device=mask.device)
    todo = torch.arange(a, device=mask.device)
    position = torch.arange(m, device=mask.device)
    while todo.numel():
        draws = (torch.rand(todo.numel(), m, generator=generator, device=mask.device) * c).to(torch.int64)
        draws.clamp_(max=c - 1)
        ordered, order = draws.sort(dim=1, stable=True)  # a repeat sorts right after its first draw
        first = torch.ones_like(ordered, dtype=torch.bool)
        first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        good = torch.zeros_like(first).scatter_(1, order, first) & mask[todo[:, None], draws]
        done = count_rows(good) >= k
        # The first k good draws: good positions keep their index as key, the rest go behind.
        key = torch.where(good, position, position + m)
        picked = draws.gather(1, key.topk(k, dim=1, largest=False, sorted=False).indices)
        out[todo[done]] = picked[done]
        todo = todo[~done]
    return out


def sample_k_negatives(mask: torch.Tensor, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """:func:`sample_k_indices` as a mask: (A, C) bool with exactly ``k`` True entries per row, all
    inside ``mask``."""
    idx = sample_k_indices(mask, k, generator)
    return torch.zeros_like(mask).scatter_(1, idx, True)
