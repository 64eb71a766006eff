"""Candidate sources: who is compared with whom (the first two stages of docs/architecture.md's pipeline).

Every objective of the five papers reduces to one table per batch, :class:`ContrastScores`:
for each of A anchors, the logits of its P positives and of its C candidate negatives, plus masks.
The builders below produce it for the four layouts the library uses (:func:`two_view_scores`,
:func:`one_directional_scores`, :func:`context_scores`, :func:`node_graph_scores`, each with its
papers); the strategies in :mod:`qt_hard.negatives.strategy` consume it, whatever produced it.

Logits are ``scale * <anchor, candidate>`` with ``scale = 1 / temperature``. Under torch.distributed
the candidates are gathered from every process with gradients (:mod:`.distributed`), anchors stay
local, and candidate indices are global.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .distributed import gather, world


@dataclass
class ContrastScores:
    """Scores of A anchors against their positives and C candidates.

    Attributes:
        pos: (A, P) positive logits.
        pos_valid: (A, P) bool, which positive slots are real (anchors have 1..P positives).
        neg: (A, C) candidate logits, ``scale * <anchor, candidate>``.
        neg_valid: (A, C) bool, which candidates may serve as negatives of each anchor
            (the anchor itself and its positives are excluded).
        scale: 1 / temperature, so that raw inner products are ``neg / scale``.
        anchor_labels: (A,) class labels of the anchors, or None.
        cand_labels: (C,) class labels of the candidates, or None.
        cand_label_known: (C,) bool, False for candidates of unknown class (explicit negatives,
            queue entries); they never count as same-class.
        anchor_sqnorm, cand_sqnorm: (A,), (C,) squared norms of the embeddings (the OT cost needs
            ||f(x) - f(x')||^2 = |a|^2 + |c|^2 - 2 <a, c>), or None to compute them from
            ``anchor_emb`` / ``cand_emb`` when asked (:meth:`sqnorms`).
        anchor_emb, cand_emb: (A, d), (C, d) the embeddings the logits were made of (detached).
        cand_index: None for a full table. After :meth:`select` (the k-sampler), (A, k) the column
            of the full table each entry came from; the per-candidate attributes are then (A, k).
        n_columns: C of the full table (set by :meth:`select`).
        full, full_allowed: after :meth:`select`, the full table and the (A, C) mask of allowed
            candidates the columns were drawn from (OT's full coupling needs them); else None.
        cand_owner: (C,) long, for an explicit negative column the global index of the pair it was
            given with, -1 for every other candidate; None in layouts without explicit negatives.
        anchor_index: (A,) long, the global pair index of each anchor (with ``cand_owner``: which
            columns are the anchor's *own* explicit negatives, MNRL's ``hard_negatives``).
        normalized: True when the logits are of unit-norm embeddings (cosines / t), False when of raw
            inner products (Quick-Thoughts, bags of words, InfoGraph), None when the builder does not
            say. Hard weights read it to choose their default ``clip`` (:class:`HardWeighting`).
        anchor_column: (A,) long, in layouts where the anchors are candidates too (the two-view
            layout), the column of the full table that holds anchor i itself: entries (i, anchor_column[j])
            and (j, anchor_column[i]) are then one inner product. None in the other layouts.
        guide: a frozen guide model's table of the same layout (:func:`qt_hard.negatives.attach_guide`),
            read by the false-negative guard with ``source="guide"`` (GISTEmbed); else None.
        tilt_columns: (C,) bool, the columns MNRL's hardness tilt may touch (its query-to-document
            block when the table joins several directions, :mod:`.directions`); None = every column.
    """

    pos: torch.Tensor
    pos_valid: torch.Tensor
    neg: torch.Tensor
    neg_valid: torch.Tensor
    scale: float
    anchor_labels: torch.Tensor | None = None
    cand_labels: torch.Tensor | None = None
    cand_label_known: torch.Tensor | None = None
    anchor_sqnorm: torch.Tensor | None = None
    cand_sqnorm: torch.Tensor | None = None
    cand_index: torch.Tensor | None = None
    n_columns: int | None = None
    anchor_emb: torch.Tensor | None = None
    cand_emb: torch.Tensor | None = None
    full: "ContrastScores | None" = None
    full_allowed: torch.Tensor | None = None
    cand_owner: torch.Tensor | None = None
    anchor_index: torch.Tensor | None = None
    normalized: bool | None = None
    anchor_column: torch.Tensor | None = None
    guide: "ContrastScores | None" = None
    tilt_columns: torch.Tensor | None = None
    # (target, neg, pos, neg_valid and the masks' and table's versions) as mark_softmax found them. Not
    # an __init__ field: dataclasses.replace, select() and a new table start without it.
    _softmax_mark: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def mark_softmax(self, target: torch.Tensor) -> "ContrastScores":
        """Declare ``neg`` each anchor's whole softmax (a builder does, once the table is made): column
        ``target[i]`` (A,) of ``neg`` holds anchor i's one positive logit (``pos[i, 0]``) and is its only
        invalid column; every other column is a valid negative. Returns the table.

        The mark holds only while ``neg``, ``pos`` and ``neg_valid`` are the tensors it was made on, unedited:
        a table whose fields are replaced (``dataclasses.replace``, assignment) or whose ``neg`` or
        ``neg_valid`` is changed in place is read by :meth:`softmax` from its masks again."""
        self._softmax_mark = (target, self.neg, self.pos, self.neg_valid, self.neg_valid._version, self.neg._version)
        return self

    def softmax(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The table as one softmax per anchor: ``(logits (A, L), target (A,))`` such that
        ``F.cross_entropy(logits, target, reduction="none")[i] = -s+_i + log(e^{s+_i} + sum_j e^{s_ij})``,
        the sum over anchor i's valid negatives (InfoNCE, van den Oord et al. 2018 eq. 4).

        A table marked by its builder (:meth:`mark_softmax`) is its own logits, ``(neg, target)``. Any other
        table with one positive slot, real for every anchor, gives ``[pos | neg with -inf at the invalid
        candidates]`` and target 0. None where the table is not one softmax per anchor: several positive
        slots (each positive its own softmax, or the joint form), or an anchor without its positive."""
        mark = self._softmax_mark
        if mark is not None:
            target, neg, pos, valid, valid_version, neg_version = mark
            same = neg is self.neg and pos is self.pos and valid is self.neg_valid
            if same and valid._version == valid_version and neg._version == neg_version:
                return self.neg, target
        if self.pos.shape[1] != 1 or not bool(self.pos_valid.all()):
            return None
        logits = torch.cat([self.pos, self.neg.masked_fill(~self.neg_valid, float("-inf"))], dim=1)
        return logits, torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)

    def own_explicit(self) -> torch.Tensor | None:
        """(A, C) bool: the candidate is one of the anchor's own explicit negatives; None when the
        layout has none."""
        if self.cand_owner is None or self.anchor_index is None:
            return None
        return self.column(self.cand_owner) == self.anchor_index[:, None]

    def sqnorms(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(A,) and (C,) -- (A, k) after :meth:`select` -- squared norms of anchors and candidates."""
        a, c = self.anchor_sqnorm, self.cand_sqnorm
        if a is None and self.anchor_emb is not None:
            a = self.anchor_emb.pow(2).sum(dim=1)
        if c is None and self.cand_emb is not None:
            c = self.cand_emb.pow(2).sum(dim=1)
            if self.cand_index is not None:
                c = c[None, :].expand(self.cand_index.shape[0], -1).gather(1, self.cand_index)
        if a is None or c is None:
            raise ValueError("OT negatives need the embeddings' squared norms in ContrastScores")
        return a, c

    @staticmethod
    def column(x: torch.Tensor) -> torch.Tensor:
        """A per-candidate attribute, (C,) or (A, k), broadcastable against the (A, C) table."""
        return x[None, :] if x.dim() == 1 else x

    def same_label(self, relation=None) -> torch.Tensor:
        """(A, C) bool: the candidate shares the anchor's label (needs labels), or, with ``relation``, is
        related to it: ``relation(anchor_labels (A, 1), candidate_labels (1, C) or (A, k))`` returns the
        (A, C) bool table (e.g. the candidate's document is judged relevant to the anchor's query, when
        the labels index the training rows). Candidates of unknown label are never the anchor's own."""
        if self.anchor_labels is None or self.cand_labels is None:
            raise ValueError("label-aware negatives (label weighting, collision_free) need labels")
        a, c = self.anchor_labels[:, None], self.column(self.cand_labels)
        same = a == c if relation is None else torch.as_tensor(relation(a, c), dtype=torch.bool, device=a.device)
        if same.shape != torch.broadcast_shapes(a.shape, c.shape):
            raise ValueError(
                f"label_relation returned shape {tuple(same.shape)}, expected {tuple(torch.broadcast_shapes(a.shape, c.shape))}"
            )
        if self.cand_label_known is not None:
            same = same & self.column(self.cand_label_known)
        return same

    def select(self, index: torch.Tensor, allowed: torch.Tensor | None = None) -> "ContrastScores":
        """The table restricted to ``index`` (A, k) columns per anchor (the k sampled negatives): every
        later stage then works on (A, k) instead of (A, C). All selected entries count as allowed.
        ``allowed`` (A, C), the mask they were drawn from, is kept with the full table (``full``)."""
        if self.cand_index is not None:
            raise ValueError("select() applies to a full table")
        pick = lambda x: None if x is None else x[None, :].expand(index.shape[0], -1).gather(1, index)
        # The per-anchor fields stay; the per-candidate ones are picked; the guide stays with the full table.
        return dataclasses.replace(
            self,
            neg=self.neg.gather(1, index),
            neg_valid=torch.ones_like(index, dtype=torch.bool),
            cand_labels=pick(self.cand_labels),
            cand_label_known=pick(self.cand_label_known),
            cand_sqnorm=pick(self.cand_sqnorm),
            cand_index=index,
            n_columns=self.neg.shape[1],
            full=self,
            full_allowed=self.neg_valid if allowed is None else allowed,
            cand_owner=pick(self.cand_owner),
            tilt_columns=pick(self.tilt_columns),
            guide=None,
        )


def _check_embeddings(name: str, x: torch.Tensor) -> None:
    if x.dim() != 2:
        raise ValueError(f"{name} must be (batch, dim), got shape {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise ValueError(f"{name} is an empty batch")


def _table(
    pos, neg, valid, scale, anchors, cands, normalize, anchor_labels, cand_labels, pos_valid=None, **more
) -> ContrastScores:
    """A table with the (detached) embeddings it was made of; every positive slot is real unless
    ``pos_valid`` says otherwise."""
    return ContrastScores(
        pos=pos,
        pos_valid=torch.ones_like(pos, dtype=torch.bool) if pos_valid is None else pos_valid,
        neg=neg,
        neg_valid=valid,
        scale=scale,
        anchor_labels=anchor_labels,
        cand_labels=cand_labels,
        anchor_emb=anchors.detach(),
        cand_emb=cands.detach(),
        normalized=normalize,
        **more,
    )


def _check_pair(name_x: str, x: torch.Tensor, name_y: str, y: torch.Tensor) -> None:
    _check_embeddings(name_x, x)
    _check_embeddings(name_y, y)
    if x.shape != y.shape:
        raise ValueError(f"{name_x} and {name_y} must have the same shape, got {tuple(x.shape)} and {tuple(y.shape)}")


def _check_temperature(temperature: float) -> float:
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    return 1.0 / float(temperature)


def _labels(labels, n: int, device) -> torch.Tensor | None:
    if labels is None:
        return None
    labels = torch.as_tensor(labels, device=device)
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {tuple(labels.shape)}")
    return labels


def two_view_scores(
    z1: torch.Tensor,
    z2: torch.Tensor,
    *,
    temperature: float = 0.5,
    labels=None,
    normalize: bool = True,
    gather_candidates: bool = True,
) -> ContrastScores:
    """The two-view layout of SimCLR / HCL (Robinson et al. 2021, eq. 5, Fig. 13) and of Ash et al. D.1.

    Args:
        z1, z2: (b, d) the two views of b positive pairs on this process.
        temperature: logits are ``<u, v> / temperature``.
        labels: optional (b,) class labels of the pairs (label-aware negatives, collision-free k).
        normalize: project the embeddings onto the unit sphere first (SimCLR/HCL). Quick-Thoughts,
            bag-of-words and InfoGraph embeddings are used unnormalized.
        gather_candidates: under torch.distributed, use every process's views as candidates.

    Returns:
        ContrastScores with A = 2b anchors (z1 then z2), C = 2B candidates (all of Z1 then all of Z2,
        B the global batch), one positive each (the partner view), and each anchor's own view and
        its partner excluded from the candidates, leaving 2B - 2.
    """
    _check_pair("z1", z1, "z2", z2)
    scale = _check_temperature(temperature)
    b = z1.shape[0]
    anchors = torch.cat([z1, z2], dim=0)  # (2b, d): z1 then z2
    if normalize:
        anchors = F.normalize(anchors, dim=1)
    z1, z2 = anchors[:b], anchors[b:]
    labels = _labels(labels, b, z1.device)
    if gather_candidates and world()[1] > 1:
        all1, offset = gather(z1)
        all2, _ = gather(z2)
        cands = torch.cat([all1, all2], dim=0)
    else:
        cands, offset = anchors, 0  # one process: the candidates are the anchors
    B = cands.shape[0] // 2
    neg = (anchors * scale) @ cands.T  # (2b, 2B); scaling the (2b, d) side saves two (2b, 2B) passes

    local = torch.arange(b, device=z1.device) + offset
    self_idx = torch.cat([local, local + B])
    partner = torch.cat([local + B, local])
    rows = torch.arange(2 * b, device=z1.device)
    # The partner of a local view is local too: its logit costs O(b d) from the embeddings, where
    # indexing the (2b, 2B) table would add a full-size scatter to the backward pass. <z1_i, z2_i> is
    # the positive logit of both views of pair i.
    pair_logit = (z1 * z2).sum(dim=1) * scale
    pos = torch.cat([pair_logit, pair_logit]).unsqueeze(1)
    valid = torch.ones_like(neg, dtype=torch.bool)
    valid[rows, self_idx] = False
    valid[rows, partner] = False

    anchor_labels = cand_labels = None
    if labels is not None:
        all_labels = gather(labels, with_grad=False)[0] if gather_candidates else labels
        anchor_labels = torch.cat([labels, labels])
        cand_labels = torch.cat([all_labels, all_labels])
    return _table(pos, neg, valid, scale, anchors, cands, normalize, anchor_labels, cand_labels, anchor_column=self_idx)


def one_directional_scores(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor | None = None,
    *,
    temperature: float = 0.05,
    labels=None,
    normalize: bool = True,
    gather_candidates: bool = True,
    extra_candidates: torch.Tensor | None = None,
    extra_labels=None,
    in_batch: bool = True,
) -> ContrastScores:
    """Anchor i against all positives and explicit negatives of the batch (sentence-transformers'
    MultipleNegativesRankingLoss layout), and optionally a queue (MoCo / Ring Alg. 1).

    Args:
        anchors: (b, d).
        positives: (b, d), positives[i] is anchor i's positive.
        negatives: optional (b, n, d) explicit (hard) negatives; they join every anchor's candidates.
        temperature: logits are ``<a, c> / temperature`` (sentence-transformers' ``scale = 1/t``).
        labels: optional (b,) labels of the pairs; the explicit negatives and extra candidates are of
            unknown label (never treated as same-class).
        normalize: cosine similarity (True, as MNRL) or raw inner products.
        gather_candidates: under torch.distributed, candidates come from every process.
        extra_candidates: optional (M, d) further candidates shared by all anchors, e.g. a queue
            of past embeddings (MoCo; Ring Alg. 1). Used as given (no gather; detach it yourself).
        extra_labels: (M,) class labels of ``extra_candidates``, negative for unknown (e.g.
            :meth:`EmbeddingQueue.labels`). Required when ``labels`` are given together with extra
            candidates: a label-aware strategy must not take a queued row of the anchor's own class
            for a negative without a word.
        in_batch: use the batch's positives/negatives as candidates; False keeps only the extras
            (MoCo: negatives come from the queue alone).

    Returns:
        ContrastScores with A = b anchors, one positive each, and C candidates ordered as
        [all positives (B), negatives[:, 0] of all pairs (B), ..., negatives[:, n-1] (B), extras (M)],
        B the global batch; the anchor's own positive column is excluded from its candidates.
    """
    _check_pair("anchors", anchors, "positives", positives)
    b, d = anchors.shape
    negatives = _explicit(negatives, b, d)
    extra_labels = _extra_labels(extra_candidates, extra_labels, labels, d, anchors.device)
    scale = _check_temperature(temperature)
    norm = (lambda x: F.normalize(x, dim=-1)) if normalize else (lambda x: x)
    anchors, positives = norm(anchors), norm(positives)
    labels = _labels(labels, b, anchors.device)
    cands, offset, B, n_batch = _mnrl_candidates(positives, negatives, extra_candidates, norm, gather_candidates)
    neg = _scaled_products(anchors, cands, scale)
    rows = torch.arange(b, device=anchors.device)
    target = rows + offset
    owner = None if negatives is None else _explicit_owner(B, n_batch, cands.shape[0], anchors.device)
    pos = _own_positive(anchors, positives, neg, target, scale)
    valid = _mnrl_valid(neg, rows, target, n_batch, in_batch)
    cand_labels, known = _mnrl_labels(labels, gather_candidates, cands.shape[0], extra_labels)
    extra = dict(cand_label_known=known, cand_owner=owner, anchor_index=target)
    table = _table(pos, neg, valid, scale, anchors, cands, normalize, labels, cand_labels, **extra)
    # In-batch, the anchor's own positive is its one excluded column: the table is its softmax as it is.
    return table.mark_softmax(target) if in_batch else table


def _mnrl_candidates(positives, negatives, extra_candidates, norm, gather_candidates):
    """The (C, d) candidates of :func:`one_directional_scores` in its column order, with this process's
    offset into the global batch, B (the global batch) and the number of in-batch columns."""
    all_pos, offset = gather(positives) if gather_candidates else (positives, 0)
    B = all_pos.shape[0]
    blocks = [all_pos]
    if negatives is not None:
        all_neg = gather(norm(negatives))[0] if gather_candidates else norm(negatives)
        # Column-major over the explicit negatives: block j holds negative j of every pair, so the
        # positives stay in columns 0..B-1 and anchor i's positive is column offset + i after the
        # gather, never one of the hard negatives.
        blocks.extend(all_neg[:, j] for j in range(all_neg.shape[1]))
    n_batch = sum(x.shape[0] for x in blocks)
    if extra_candidates is not None:
        blocks.append(norm(extra_candidates))
    cands = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=0)
    return cands, offset, B, n_batch


def _own_positive(anchors, positives, neg, target, scale: float) -> torch.Tensor:
    """(b, 1) each anchor's positive logit, ``scale * <a_i, p_i>``: read from column ``target[i]`` of the
    (b, C) table ``neg`` or computed from the (b, d) embeddings, whichever is fewer passes."""
    if neg.shape[1] <= anchors.shape[1]:  # C <= d: the table's column is the cheaper read
        return neg.gather(1, target[:, None])
    return (anchors * positives).sum(dim=1, keepdim=True) * scale


def _mnrl_valid(neg, rows, target, n_batch: int, in_batch: bool) -> torch.Tensor:
    """(b, C) bool, the candidates each anchor may take as negatives: all but its own positive (column
    ``target[i]``), and only the extra candidates when not ``in_batch``."""
    valid = torch.ones_like(neg, dtype=torch.bool)
    if not in_batch:
        valid[:, :n_batch] = False
    valid[rows, target] = False
    return valid


def _mnrl_labels(labels, gather_candidates: bool, n_cands: int, extra_labels):
    """(C,) candidate labels and (C,) whether each is known (:func:`_candidate_labels`), or (None, None)
    without labels."""
    if labels is None:
        return None, None
    all_labels = gather(labels, with_grad=False)[0] if gather_candidates else labels
    return _candidate_labels(all_labels, n_cands, extra_labels)


def _scaled_products(anchors: torch.Tensor, cands: torch.Tensor, scale: float) -> torch.Tensor:
    """``scale * anchors @ cands.T``, the scale applied to the smaller of the (A, d) side and the (A, C)
    table (it costs a pass over it forward and backward)."""
    if anchors.shape[1] <= cands.shape[0]:
        return (anchors * scale) @ cands.T
    return (anchors @ cands.T) * scale


def _explicit_owner(B: int, n_batch: int, n_cands: int, device) -> torch.Tensor:
    """(C,) the global pair index of each explicit negative column, -1 for the others: block j of the
    explicit negatives holds pair 0..B-1's j-th negative, column B + j*B + p."""
    owner = torch.full((n_cands,), -1, dtype=torch.long, device=device)
    owner[B:n_batch] = torch.arange(B, device=device).repeat((n_batch - B) // B)
    return owner


def _explicit(negatives: torch.Tensor | None, b: int, d: int) -> torch.Tensor | None:
    """The explicit negatives as (b, n, d) (a (b, d) tensor is one per pair)."""
    if negatives is None:
        return None
    if negatives.dim() == 2:
        negatives = negatives.unsqueeze(1)
    if negatives.dim() != 3 or negatives.shape[0] != b or negatives.shape[2] != d:
        raise ValueError(f"negatives must be ({b}, n, {d}), got {tuple(negatives.shape)}")
    return negatives


def _extra_labels(extra_candidates, extra_labels, labels, d: int, device) -> torch.Tensor | None:
    """Check the extra candidates (M, d) and return their labels (M,) as a tensor, or None."""
    if extra_candidates is None:
        if extra_labels is not None:
            raise ValueError("extra_labels without extra_candidates")
        return None
    if extra_candidates.dim() != 2 or extra_candidates.shape[1] != d:
        raise ValueError(f"extra_candidates must be (M, {d}), got {tuple(extra_candidates.shape)}")
    if extra_labels is None:
        if labels is not None:
            raise ValueError(
                "labels with extra_candidates need extra_labels (their classes, -1 for unknown; "
                "EmbeddingQueue.labels()), or label-aware negatives would keep same-class rows"
            )
        return None
    extra_labels = torch.as_tensor(extra_labels, device=device)
    if extra_labels.shape != (extra_candidates.shape[0],) or extra_labels.is_floating_point():
        raise ValueError(
            f"extra_labels must be ({extra_candidates.shape[0]},) integer labels, "
            f"got dtype {extra_labels.dtype} shape {tuple(extra_labels.shape)}"
        )
    return extra_labels


def _candidate_labels(all_labels: torch.Tensor, n_cands: int, extra_labels: torch.Tensor | None):
    """(C,) candidate labels and (C,) whether each is known: the B positives carry their pair's label,
    the explicit negatives none, the extra candidates theirs (negative = unknown)."""
    B = all_labels.shape[0]
    cand_labels = torch.full((n_cands,), -1, dtype=all_labels.dtype, device=all_labels.device)
    cand_labels[:B] = all_labels
    known = torch.zeros(n_cands, dtype=torch.bool, device=all_labels.device)
    known[:B] = True
    if extra_labels is not None:
        m = extra_labels.shape[0]
        cand_labels[n_cands - m :] = extra_labels.to(all_labels.dtype)
        known[n_cands - m :] = extra_labels >= 0
    return cand_labels, known


def context_scores(
    f_emb: torch.Tensor,
    g_emb: torch.Tensor,
    *,
    context: int = 1,
    temperature: float = 1.0,
    normalize: bool = False,
    doc_ids=None,
    gather_candidates: bool = True,
) -> ContrastScores:
    """Quick-Thoughts scores (Logeswaran & Lee 2018, section 3; HCL App. D.3): f(s_i).g(s_j) of B
    consecutive sentences, the sentences within +-c positions (same document) the positives.

    Args:
        f_emb: (b, d) f(s_i) of b consecutive sentences (the input encoder).
        g_emb: (b, d) g(s_i) of the same sentences (the context encoder).
        context: c; sentences within 1..c positions are the positives.
        temperature: logits are ``f(s_i).g(s_j) / temperature`` (Quick-Thoughts uses 1).
        normalize: Quick-Thoughts scores raw inner products (False).
        doc_ids: optional (b,) document of each sentence; neighbours in another document are not
            positives (no positive pair crosses two books).
        gather_candidates: under torch.distributed, g of every process's sentences are candidates;
            processes must hold consecutive slices of one global batch, in rank order.

    Returns:
        ContrastScores with A = b anchors, P = 2c positive slots (offsets -c..-1, 1..c; slots outside
        the batch or the document are invalid), C = B candidates, the sentence itself and its valid
        positives excluded.
    """
    _check_pair("f_emb", f_emb, "g_emb", g_emb)
    if not isinstance(context, int) or context < 1:
        raise ValueError(f"context must be a positive integer, got {context!r}")
    scale = _check_temperature(temperature)
    if normalize:
        f_emb, g_emb = F.normalize(f_emb, dim=1), F.normalize(g_emb, dim=1)
    b = f_emb.shape[0]
    device = f_emb.device
    doc_ids = _labels(doc_ids, b, device)
    all_g, offset = gather(g_emb) if gather_candidates else (g_emb, 0)
    all_docs = doc_ids if doc_ids is None or not gather_candidates else gather(doc_ids, with_grad=False)[0]
    B = all_g.shape[0]
    neg = (f_emb * scale) @ all_g.T  # (b, B)
    rows = torch.arange(b, device=device)
    me = rows + offset
    offsets = torch.cat([torch.arange(-context, 0, device=device), torch.arange(1, context + 1, device=device)])
    idx = me[:, None] + offsets[None, :]  # (b, 2c)
    pos_valid = (idx >= 0) & (idx < B)
    idx = idx.clamp(0, B - 1)
    if all_docs is not None:
        pos_valid &= all_docs[idx] == doc_ids[:, None]
    pos = torch.einsum("bd,bpd->bp", f_emb, all_g[idx]) * scale
    valid = torch.ones_like(neg, dtype=torch.bool)
    valid[rows, me] = False
    # Only real positives leave the candidate set; a neighbour from another book stays a negative.
    # (Clamped out-of-range slots may alias a real positive's column, so index only valid slots.)
    valid[rows[:, None].expand_as(idx)[pos_valid], idx[pos_valid]] = False
    return _table(pos, neg, valid, scale, f_emb, all_g, normalize, None, None, pos_valid=pos_valid)


def node_graph_scores(
    node_emb: torch.Tensor,
    graph_emb: torch.Tensor,
    batch,
    *,
    temperature: float = 1.0,
    labels=None,
    normalize: bool = False,
    gather_candidates: bool = True,
) -> ContrastScores:
    """InfoGraph's local-global layout (Sun et al. 2020, section 3.2; Robinson et al. 2021, App. B.1):
    the anchors are the *nodes*, the candidates the *graphs*, each node's own graph its positive.

    Args:
        node_emb: (n, d) node (patch) embeddings h_u of this process's graphs.
        graph_emb: (g, d) graph embeddings H(G) of this process's graphs.
        batch: (n,) int, the local index in [0, g) of each node's graph (torch_geometric's ``batch``).
        temperature: logits are ``<h_u, H(G)> / temperature`` (InfoGraph: 1, raw inner products).
        labels: optional (g,) graph labels; a node carries its graph's label (H-SCL's same-label mask).
        normalize: L2-normalize both sides first (InfoGraph does not).
        gather_candidates: under torch.distributed, every process's graphs are candidates.

    Returns:
        ContrastScores with A = n anchors, one positive each (column ``offset + batch[i]`` of the G
        global graphs, excluded from the candidates), C = G candidates.
    """
    _check_embeddings("node_emb", node_emb)
    _check_embeddings("graph_emb", graph_emb)
    if node_emb.shape[1] != graph_emb.shape[1]:
        raise ValueError(
            f"node_emb and graph_emb must have the same width, got {node_emb.shape[1]} and {graph_emb.shape[1]}"
        )
    scale = _check_temperature(temperature)
    n, g = node_emb.shape[0], graph_emb.shape[0]
    device = node_emb.device
    batch = torch.as_tensor(batch, device=device)
    if batch.shape != (n,) or batch.dtype.is_floating_point:
        raise ValueError(f"batch must be ({n},) integer graph indices, got {tuple(batch.shape)} {batch.dtype}")
    if n and (int(batch.min()) < 0 or int(batch.max()) >= g):
        raise ValueError(f"batch holds graph indices outside [0, {g})")
    if normalize:
        node_emb, graph_emb = F.normalize(node_emb, dim=1), F.normalize(graph_emb, dim=1)
    labels = _labels(labels, g, device)
    cands, offset = gather(graph_emb) if gather_candidates else (graph_emb, 0)
    neg = (node_emb * scale) @ cands.T  # (n, G)
    # The positive logit from the embeddings: O(n d), no scatter into the (n, G) table's backward.
    pos = ((node_emb * graph_emb[batch]).sum(dim=1) * scale).unsqueeze(1)
    valid = torch.ones_like(neg, dtype=torch.bool)
    valid[torch.arange(n, device=device), batch.long() + offset] = False
    anchor_labels = cand_labels = None
    if labels is not None:
        cand_labels = gather(labels, with_grad=False)[0] if gather_candidates else labels
        anchor_labels = labels[batch.long()]
    table = _table(pos, neg, valid, scale, node_emb, cands, normalize, anchor_labels, cand_labels)
    return table.mark_softmax(batch.long() + offset)  # the node's own graph is its one excluded column
