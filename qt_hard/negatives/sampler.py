"""Decoupled number of negatives (Ash et al. 2022, section 5 and D.1).

For each anchor draw ``k`` of its candidates uniformly *without replacement*, independently per
anchor, in one vectorized op: give every allowed candidate an i.i.d. uniform key and keep the ``k``
smallest keys of each row. The ranks of i.i.d. keys form a uniformly random permutation, so the kept
set is a uniformly random k-subset of the row's allowed candidates.

Collision-free mode (Ash et al. section 5, Fig. 3 right) drops candidates that share the anchor's
class *before* sampling, so the k negatives are drawn only from other classes.
"""

from __future__ import annotations

import torch


def sample_k_negatives(mask: torch.Tensor, k: int,
                       generator: torch.Generator | None = None) -> torch.Tensor:
    """Keep ``k`` uniformly drawn allowed candidates per row.

    Args:
        mask: (A, C) bool, the allowed candidates of each anchor.
        k: negatives per anchor, 1 <= k <= the smallest row count.
        generator: optional ``torch.Generator`` on ``mask.device`` for reproducible draws.

    Returns:
        (A, C) bool with exactly ``k`` True entries per row, all inside ``mask``.

    Raises:
        ValueError: if ``k`` is not positive or some anchor has fewer than ``k`` candidates
        (asking for more negatives than exist is an error, never a silent clamp).
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer or None (all candidates), got {k!r}")
    counts = mask.sum(dim=1)
    if counts.numel() and int(counts.min()) < k:
        worst = int(counts.argmin())
        raise ValueError(
            f"k={k} negatives requested but anchor {worst} has only {int(counts[worst])} candidates "
            f"(of {mask.shape[1]} columns); lower k or enlarge the batch"
        )
    keys = torch.rand(mask.shape, generator=generator, device=mask.device)
    keys = keys.masked_fill(~mask, 2.0)  # uniform keys are < 1, so disallowed ones are never kept
    idx = keys.topk(k, dim=1, largest=False, sorted=False).indices
    return torch.zeros_like(mask).scatter_(1, idx, True)
