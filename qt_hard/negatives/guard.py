"""The false-negative guard: drop the candidates that score too close to (or above) the anchor's positive.

Why, and how it composes (removed before anything else sees it: neither weighed, counted nor drawn by
``k``), is on docs/guides/sentence-transformers.md, "The false-negative guard": GISTEmbed (Solatorio
2024, section 3.1) and NV-Retriever (Moreira et al. 2024, section 3, TopK-MarginPos / TopK-PercPos)
tie the cut to the anchor's *own* positive. Candidate j of anchor i is removed when

    absolute:  sim_ij > sim+_i - margin
    relative:  sim_ij > sim+_i - |sim+_i| * margin

with ``sim`` in similarity units (the cosine for normalized embeddings), not logits: the margin means
what it means in sentence-transformers (``GISTEmbedLoss``'s ``margin_strategy`` / ``margin``,
``util.mine_hard_negatives``' ``absolute_margin`` / ``relative_margin``). The relative rule is written
as sentence-transformers 6 writes it (sign-safe): for a positive ``sim+`` it is NV-Retriever's
``sim_ij > sim+_i * (1 - margin)`` (TopK-PercPos with percentage ``1 - margin``); for a negative
``sim+`` the product form would *raise* the threshold, the sign-safe form lowers it. Comparisons are
strict, so with the absolute rule and margin 0 a candidate that ties the positive stays.

An anchor with several positives (Quick-Thoughts' context window) compares with its *smallest* valid
positive, as ``mine_hard_negatives`` does with several positives: a candidate that scores like one of
the anchor's own positives is suspect. An anchor without a positive keeps every candidate.

The similarities are the model's own (``source="model"``: the logits divided by the scale, detached),
or a frozen guide model's (``source="guide"``, GISTEmbed): a :class:`ContrastScores` of the same
layout built from the guide's embeddings and attached as ``scores.guide`` (:func:`attach_guide`).
"""

from __future__ import annotations

import dataclasses
import math

import torch

from .scores import ContrastScores

GUARD_RULES = ("absolute", "relative")
GUARD_SOURCES = ("model", "guide")


class FalseNegativeGuard:
    """Positive-aware false-negative filter (GISTEmbed / NV-Retriever), see the module docstring.

    Args:
        rule: ``"absolute"`` (``sim > sim+ - margin``) or ``"relative"`` (``sim > sim+ - |sim+| margin``).
        margin: in similarity units (cosine), a finite number; 0 removes the candidates that outscore the
            positive (GISTEmbedLoss's default).
        source: ``"model"`` (the scores' own similarities) or ``"guide"`` (``scores.guide``'s).
    """

    def __init__(self, rule: str = "absolute", margin: float = 0.0, source: str = "model"):
        if rule not in GUARD_RULES:
            raise ValueError(f"guard must be one of {', '.join(GUARD_RULES)}, got {rule!r}")
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin):
            raise ValueError(f"guard_margin must be a finite number (cosine units), got {margin!r}")
        if source not in GUARD_SOURCES:
            raise ValueError(f"guard_source must be one of {', '.join(GUARD_SOURCES)}, got {source!r}")
        self.rule, self.margin, self.source = rule, float(margin), source

    def keep(self, scores: ContrastScores) -> torch.Tensor:
        """(A, C) bool: True where the candidate survives the guard."""
        table = scores if self.source == "model" else scores.guide  # whose similarities the rule reads
        if table is None:
            raise ValueError(
                "guard_source='guide' needs the guide model's similarities on the scores (qt_hard.negatives.attach_guide)"
            )
        # The smallest valid positive (the hardest one) sets the threshold; +inf for no positive.
        # In logit units (the margin times the scale), so that the (A, C) table is read once, as is.
        pos = table.pos.detach().masked_fill(~scores.pos_valid, float("inf")).amin(dim=1, keepdim=True)
        if self.rule == "absolute":
            threshold = pos - self.margin * table.scale
        else:  # inf - inf * 0 is NaN: an anchor without a positive keeps everything
            threshold = (pos - pos.abs() * self.margin).nan_to_num(nan=float("inf"), posinf=float("inf"))
        return table.neg.detach() <= threshold

    def __repr__(self) -> str:
        return f"FalseNegativeGuard(rule={self.rule!r}, margin={self.margin!r}, source={self.source!r})"


def attach_guide(scores: ContrastScores, guide: ContrastScores) -> ContrastScores:
    """``scores`` with a guide model's table attached (``scores.guide``): the same layout (anchors,
    positive slots and candidate columns in the same order), typically the same builder called on the
    frozen guide's embeddings with ``normalize=True`` and ``temperature=1`` (cosines)."""
    if guide.pos.shape != scores.pos.shape or guide.neg.shape != scores.neg.shape:
        raise ValueError(
            f"the guide's table {tuple(guide.pos.shape)} / {tuple(guide.neg.shape)} does not match the model's "
            f"{tuple(scores.pos.shape)} / {tuple(scores.neg.shape)} (positives / candidates)"
        )
    guide = dataclasses.replace(guide, pos=guide.pos.detach(), neg=guide.neg.detach())
    return dataclasses.replace(scores, guide=guide)
