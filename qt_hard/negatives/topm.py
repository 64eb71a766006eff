"""The top-m mask: each anchor keeps only its m highest-scoring negatives.

This is the hard-example mining that pytorch-metric-learning's miners do before a loss (its
``BatchHardMiner`` keeps the single hardest negative, m = 1): per anchor, the candidates that survive
everything else (collision removal, the false-negative guard, the k draw, and the strategy's own
support: other-label for ``"label"``, the band for ``"ring"``) are ranked by their logit, and only the
m highest stay negatives. The rest are neither weighed nor counted: the negative term sums over the
kept ones (``Q_i`` is their number, ``min(m, available)``), as a mined loss sums over its mined pairs.
The scores are read detached (the choice carries no gradient); the strategy's weights, estimator and
tilt then apply to the m negatives as they would to all of them.

Option ``top_m`` (a positive integer, or None for off) of any strategy:
``make_strategy("hard", beta=1.0, top_m=16)``, ``HardNegativesLoss(model, top_m=16)``, a config's
``objective.options.top_m``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .papers import Paper
from .registry import Part, option, register
from .weightings import LogWeights, Weighting


class TopMMask(Weighting):
    """Keep, per anchor, the ``m`` highest logits among the negatives it is given (``mask``); see the
    module docstring. (A, C) support; ties at the m-th place are broken by ``torch.topk``.

    Args:
        m: how many negatives each anchor keeps, a positive integer (an anchor with fewer keeps all).
    """

    restricts_support = True  # the negative term sums over the kept negatives
    on_support = True  # ranks the negatives the other weightings leave

    def __init__(self, m: int):
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"top_m must be a positive integer (negatives kept per anchor), got {m!r}")
        self.m = m

    def weigh(self, scores, mask, progress):
        if self.m >= mask.shape[1]:
            return LogWeights()
        ranked = scores.neg.detach().masked_fill(~mask, float("-inf"))
        index = ranked.topk(self.m, dim=1, sorted=False).indices
        keep = torch.zeros_like(mask).scatter_(1, index, True) & mask
        return LogWeights(keep=keep)


MUSGRAVE_2020 = Paper(
    "musgrave2020pytorch",
    "PyTorch Metric Learning",
    ("Musgrave, Kevin", "Belongie, Serge", "Lim, Ser-Nam"),
    "2020",
    eprint="2008.09164",
)


@register
@dataclass
class TopM(Part):
    """A miner's top-m (pytorch-metric-learning): each anchor keeps its m highest-scoring negatives."""

    name: ClassVar[str] = "top_m"
    paper: ClassVar[tuple[Paper, ...]] = (MUSGRAVE_2020,)
    example: ClassVar[dict] = {"top_m": 3}
    top_m: int | None = option(None, "negatives kept per anchor, its highest-scoring (None: all)")

    def check(self):
        self.weightings = [] if self.top_m is None else [TopMMask(self.top_m)]
