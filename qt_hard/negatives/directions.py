"""Directions and partitions of the ranking loss, as sentence-transformers' MNRL has them (6.x).

For a batch of pairs (query q_i, document d_i) with optional explicit negatives, MNRL's ``directions``
choose which similarities enter the softmax of pair i:

* ``query_to_doc``   q_i against every document (all positives and explicit negatives of the batch);
  always present, it holds the positive pair;
* ``query_to_query`` q_i against every other query;
* ``doc_to_query``   d_i against every query (the symmetric term; q_i is the positive pair again);
* ``doc_to_doc``     d_i against every document that does not belong to query i.

``partition_mode`` (one ``"joint"`` softmax, or ``"per_direction"`` softmaxes averaged, the symmetric
loss among them) is as docs/guides/sentence-transformers.md describes it.

Here each softmax is one :class:`~qt_hard.negatives.scores.ContrastScores` table, so every strategy
(weights, guard, k, debiasing) applies to it unchanged:

* per direction: one table per direction, ``query_to_doc`` = :func:`one_directional_scores` (q, d, negatives)
  and ``doc_to_query`` = :func:`one_directional_scores` (d, q); the loss is the mean of the tables' losses;
* joint: one table whose candidate columns are the blocks of the chosen directions side by side. In
  the ``doc_to_query`` block the pair's own query is the positive pair *a second time*: MNRL's joint
  softmax has e^{s+} twice in its denominator. It enters here as a second positive slot of the same
  logit, with the positives sharing one denominator (``positives="joint"`` of the strategy), which is
  ``-s+ + log(2 e^{s+} + sum of the negatives)``, MNRL's value and gradient.

MNRL's hardness tilt touches only the query-to-document block (``ContrastScores.tilt_columns``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from .distributed import gather
from .scores import ContrastScores, one_directional_scores

DIRECTIONS = ("query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc")
PARTITION_MODES = ("joint", "per_direction")


def check_directions(directions: Sequence[str], partition_mode: str) -> tuple[str, ...]:
    """The directions as a tuple in MNRL's order, after MNRL's checks (ValueError otherwise)."""
    if isinstance(directions, str):
        directions = (directions,)
    directions = tuple(directions)
    if not directions:
        raise ValueError("directions must name at least one direction (query_to_doc is required)")
    unknown = sorted(set(directions) - set(DIRECTIONS))
    if unknown:
        raise ValueError(f"unknown direction(s) {', '.join(unknown)}; valid: {', '.join(DIRECTIONS)}")
    if "query_to_doc" not in directions:
        raise ValueError("directions must include 'query_to_doc' (it holds the positive pair)")
    if partition_mode not in PARTITION_MODES:
        raise ValueError(f"partition_mode must be one of {', '.join(PARTITION_MODES)}, got {partition_mode!r}")
    if partition_mode == "per_direction" and set(directions) & {"query_to_query", "doc_to_doc"}:
        raise ValueError(
            "partition_mode='per_direction' needs every direction's candidates to hold the positive pair; "
            "query_to_query and doc_to_doc never do: use partition_mode='joint'"
        )
    return tuple(d for d in DIRECTIONS if d in directions)


def directional_scores(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor | None = None,
    *,
    directions: Sequence[str] = ("query_to_doc",),
    partition_mode: str = "joint",
    temperature: float = 0.05,
    labels=None,
    normalize: bool = True,
    gather_candidates: bool = True,
) -> list[ContrastScores]:
    """The tables of MNRL's chosen directions (module docstring).

    Args:
        anchors, positives: (b, d) queries and their documents; negatives: optional (b, n, d).
        directions, partition_mode: as MNRL's (checked by :func:`check_directions`).
        temperature, labels, normalize, gather_candidates: as :func:`one_directional_scores`.

    Returns:
        A list of tables: one (``query_to_doc`` alone, or a joint partition) or two (per direction:
        query_to_doc, then doc_to_query). Every table has b anchors; a joint table with doc_to_query
        has two positive slots per anchor (the same pair), else one. Joint columns: the query_to_doc
        candidates of :func:`one_directional_scores`, then the B global queries (query_to_query), the B
        global queries (doc_to_query), the query_to_doc candidates again (doc_to_doc), for the chosen
        directions in that order.
    """
    directions = check_directions(directions, partition_mode)
    kw = dict(temperature=temperature, normalize=normalize, gather_candidates=gather_candidates)
    q2d = one_directional_scores(anchors, positives, negatives, labels=labels, **kw)
    if directions == ("query_to_doc",):
        return [q2d]
    if partition_mode == "per_direction":  # directions are query_to_doc and doc_to_query
        d2q = one_directional_scores(positives, anchors, None, labels=labels, **kw)
        # Set on the fresh table (not replaced): it keeps its builder's softmax mark.
        d2q.tilt_columns = torch.zeros(d2q.neg.shape[1], dtype=torch.bool, device=d2q.neg.device)
        return [q2d, d2q]
    return [_joint(q2d, anchors, positives, negatives, directions, labels, **kw)]


def _joint(q2d, anchors, positives, negatives, directions, labels, *, temperature, normalize, gather_candidates):
    """One table of every chosen direction's block (see :func:`directional_scores`)."""
    scale = q2d.scale
    norm = (lambda x: F.normalize(x, dim=-1)) if normalize else (lambda x: x)
    q, d = norm(anchors), norm(positives)
    b = q.shape[0]
    q_all, offset = gather(q) if gather_candidates else (q, 0)
    rows = torch.arange(b, device=q.device)
    me = rows + offset
    labels = None if labels is None else torch.as_tensor(labels, device=q.device)
    all_labels = labels if labels is None or not gather_candidates else gather(labels, with_grad=False)[0]

    # Each block: (logits (b, C_k), valid (b, C_k), candidate labels, whether they are known).
    blocks = [(q2d.neg, q2d.neg_valid, q2d.cand_labels, q2d.cand_label_known)]
    pos = q2d.pos
    if "query_to_query" in directions:
        blocks.append(_query_block(q, q_all, rows, me, scale, all_labels))
    if "doc_to_query" in directions:
        blocks.append(_query_block(d, q_all, rows, me, scale, all_labels))
        s = blocks[-1][0]
        pos = torch.cat([pos, s[rows, me][:, None]], dim=1)  # the positive pair, seen from the document
    if "doc_to_doc" in directions:
        blocks.append(_doc_block(q2d, d, negatives, norm, me, scale, gather_candidates))
    return _joint_table(q2d, pos, blocks, labels is not None, normalize)


def _query_block(side, q_all, rows, me, scale, all_labels):
    """The query_to_query (``side`` = q) or doc_to_query (``side`` = d) block: (b, B) logits against every
    query of the (global) batch, without column ``me[i]``, with the queries' labels."""
    s = (side * scale) @ q_all.T  # (b, B) against every query of the (global) batch
    v = torch.ones_like(s, dtype=torch.bool)
    v[rows, me] = False  # q_i itself (query_to_query) or the positive pair (doc_to_query)
    known = None if all_labels is None else torch.ones(q_all.shape[0], dtype=torch.bool, device=side.device)
    return s, v, all_labels, known


def _doc_block(q2d, d, negatives, norm, me, scale, gather_candidates):
    """The doc_to_doc block: d_i against the query_to_doc candidates (every document, then the explicit
    negatives), without the pair's own document and its own explicit negatives."""
    d_all = gather(d)[0] if gather_candidates else d
    docs = [d_all]
    if negatives is not None:
        n = norm(negatives if negatives.dim() == 3 else negatives.unsqueeze(1))
        n_all = gather(n)[0] if gather_candidates else n
        docs.extend(n_all[:, j] for j in range(n_all.shape[1]))
    s = (d * scale) @ torch.cat(docs, dim=0).T
    column = torch.arange(s.shape[1], device=d.device)
    own = column[None, :] == me[:, None]  # the pair's own document
    if q2d.cand_owner is not None:
        own = own | (q2d.cand_owner[None, :] == me[:, None])  # and its own explicit negatives
    return s, q2d.neg_valid.new_ones(s.shape) & ~own, q2d.cand_labels, q2d.cand_label_known


def _joint_table(q2d, pos, blocks, labelled: bool, normalize: bool) -> ContrastScores:
    """The blocks side by side as one table; MNRL's tilt touches the first (query_to_doc) block only."""
    neg, valid, cand_labels, known = (list(x) for x in zip(*blocks))
    b = pos.shape[0]
    c1 = q2d.neg.shape[1]
    total = sum(x.shape[1] for x in neg)
    device = q2d.neg.device
    cand_owner = None
    if q2d.cand_owner is not None:
        cand_owner = torch.cat([q2d.cand_owner, torch.full((total - c1,), -1, dtype=torch.long, device=device)])
    tilt_columns = torch.zeros(total, dtype=torch.bool, device=device)
    tilt_columns[:c1] = True
    return ContrastScores(
        pos=pos,
        pos_valid=torch.ones_like(pos, dtype=torch.bool),
        neg=torch.cat(neg, dim=1),
        neg_valid=torch.cat(valid, dim=1),
        scale=q2d.scale,
        anchor_labels=q2d.anchor_labels,
        cand_labels=torch.cat(cand_labels) if labelled else None,
        cand_label_known=torch.cat(known) if labelled else None,
        # Unit vectors: ||a - c||^2 = 2 - 2 cos whichever side the anchor is (OT's cost); raw inner
        # products mix two anchors' norms in one row, so OT gets no norms there (it says so).
        anchor_sqnorm=torch.ones(b, device=device) if normalize else None,
        cand_sqnorm=torch.ones(total, device=device) if normalize else None,
        cand_owner=cand_owner,
        anchor_index=q2d.anchor_index,
        normalized=normalize,
        tilt_columns=tilt_columns,
    )


def directional_loss(strategy, tables: Sequence[ContrastScores], generator: torch.Generator | None = None):
    """The batch loss over the tables of :func:`directional_scores`: their mean (MNRL's per-direction
    average; one table otherwise). A joint table with two positive slots (doc_to_query) needs the
    strategy's ``positives="joint"``, the form that equals MNRL's single softmax."""
    if any(t.pos.shape[1] > 1 for t in tables) and strategy.positives != "joint":
        raise ValueError(
            "a joint partition with doc_to_query holds the positive pair twice; MNRL's softmax is the "
            "strategy's positives='joint' form (got positives={!r})".format(strategy.positives)
        )
    losses = [strategy(t, generator) for t in tables]
    return losses[0] if len(losses) == 1 else torch.stack(losses).mean()
