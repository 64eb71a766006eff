"""sentence-transformers loss plugin: the papers' negatives for any ``SentenceTransformer``.

:class:`HardNegativesLoss` is a drop-in replacement for sentence-transformers'
``MultipleNegativesRankingLoss`` (MNRL), and :class:`CachedHardNegativesLoss` its GradCache (Gao et
al., 2021) variant; what each ``negatives`` choice, ``k``, the guard and ``hardness_mode`` do, with
their papers, is on the guide page ``docs/guides/sentence-transformers.md``.

The loss itself is never computed here: every variant is the core's strategy on the score tables of
``qt_hard.negatives.directional_scores`` (``one_directional_scores`` for the default
``query_to_doc``, what ``qt_hard.losses.ranking_loss`` computes). Shapes, with ``B`` the per-device
batch, ``n`` the number of explicit negative columns and ``W`` the number of processes (for the
default direction; the others add the ``W*B`` queries or documents as candidates, as MNRL does):

* anchors ``(B, d)``, positives ``(B, d)``, explicit negatives ``(B, n, d)`` or None;
* candidates of each anchor: the ``W*B`` positives and ``W*B*n`` explicit negatives of the global
  batch (all-gathered with gradients when ``gather_across_devices=True``); the anchor's own
  positive is its positive, everything else a negative.

The cached variant embeds in mini-batches without activations, computes the same core loss on the
whole batch of embeddings, and replays the mini-batches with the cached embedding gradients, so the
number of candidates is bounded by the ``(B, W*B*(1+n))`` score matrix rather than by activation memory.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn
from transformers.utils import logging as _hf_logging

try:  # the GradCache machinery that sentence-transformers' own cached losses share
    from sentence_transformers.base.losses.gradcache import CachedLossMixin as _CachedLossMixin
except ImportError:  # older releases have no reusable mixin: no cached variant there
    _CachedLossMixin = None

from transformers import TrainerCallback

from qt_hard.integrations.st_guide import Guide, embed
from qt_hard.integrations.st_sampling import RankStreams

logger = _hf_logging.get_logger(__name__)

__all__ = [
    "HardNegativesLoss",
    "CachedHardNegativesLoss",
    "EvaluatorCallback",
    "LossProgressCallback",
]


def _check_arguments(scale, beta, beta_units, guard, guide, options, guard_margin=0.0) -> None:
    """The plugin's own arguments (the core's strategy options are checked by their parts); one that
    would be ignored (the guard's margin or guide without a guard) is refused, not dropped."""
    from qt_hard.negatives.registry import option_names

    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    if "temperature" in options:
        raise ValueError("pass scale (= 1/temperature), not temperature, as MultipleNegativesRankingLoss does")
    if beta_units not in ("logit", "cosine"):
        raise ValueError(f"beta_units must be 'logit' or 'cosine', got {beta_units!r}")
    if beta_units == "cosine" and beta is None:
        raise ValueError(
            "beta_units='cosine' is read with beta= only (the strategy's default is in logit units); give beta"
        )
    if beta_units == "cosine" and (isinstance(beta, bool) or not isinstance(beta, (int, float))):
        raise ValueError("beta_units='cosine' takes a number; give a schedule in logit units (beta / scale)")
    if "guard_source" in options:
        raise ValueError("the guard reads the guide's similarities when guide= is given, the model's otherwise")
    if guide is not None and guard is None:
        raise ValueError("guide= is read by the guard: pass guard='absolute' (GISTEmbedLoss's default) or 'relative'")
    if guard_margin != 0.0 and guard is None:
        raise ValueError(
            f"guard_margin={guard_margin!r} is read by the guard only: pass guard='absolute' or 'relative' with it"
        )
    # beta, tau_plus, k and the guard's options are named arguments here; the rest are the core's.
    known = option_names() - {"k", "beta", "tau_plus", "guard", "guard_margin", "guard_source"}
    unknown = sorted(set(options) - known - {"generator"})
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} for HardNegativesLoss; valid: beta, tau_plus, k, generator, "
            f"directions, partition_mode, guard, guard_margin, guide, beta_units, {', '.join(sorted(known))}"
        )


def _warn_hard_floor(estimator, scale: float) -> None:
    """Warn when the debiased estimator's hard floor will bind for every well-matched pair."""
    from qt_hard.negatives import DebiasedEstimator

    tau_plus = getattr(estimator, "tau_plus", 0)
    if isinstance(estimator, DebiasedEstimator) and estimator.floor == "hard" and tau_plus != 0 and scale > 5:
        # Measured on MiniLM/MRPC at scale 20: tau_plus=0.05 puts every anchor on the floor,
        # loss and gradient exactly 0 for the whole run.
        logger.warning(
            "debiasing with floor='hard' at scale %.3g: the estimate (E - tau_plus e^{s+})/(1 - tau_plus) "
            "falls under the floor e^{-scale} for any well-matched pair, and such anchors get no "
            "gradient at all; pass floor='smooth', or a smaller scale (HCL uses scale 2)",
            scale,
        )


def _model_name(model: nn.Module) -> str:
    """A short name of a model for the model card (its hub id or folder when known)."""
    card = getattr(model, "model_card_data", None)
    name = getattr(card, "base_model", None) or getattr(model, "name_or_path", None)
    return str(name) if name else type(model).__name__


def _card_value(value: Any) -> Any:
    """A JSON-friendly form of a config value for the model card (schedules as their dict)."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _card_value(v) for k, v in value.items()}
    return repr(value)


class HardNegativesLoss(nn.Module):
    """MNRL with pluggable negatives: hard, debiased, ring, label-aware, OT, a false-negative guard and ``k``.

    For each local anchor ``a_i`` with positive ``p_i`` and candidates ``C`` (every positive and
    explicit negative of the (global) batch but ``p_i``), with ``s = scale * cos`` (the logit),

        ``loss_i = -s(a_i, p_i) + log(e^{s(a_i, p_i)} + Q_i * E_hat_w[e^{s(a_i, c)}])``

    where ``Q_i`` is the number of negatives and ``E_hat_w`` the weighted (optionally debiased) mean of
    the negatives' terms chosen by ``negatives`` (Robinson et al. 2021, Eq. 3-5). With the defaults
    (``negatives="uniform"``) this is exactly MNRL: ``-log softmax(s_i)[p_i]``, the InfoNCE loss (van den
    Oord et al. 2018). The result is the mean over the local anchors, a scalar tensor. Every variant is
    the ``qt_hard.negatives`` core's strategy on the score tables of
    ``qt_hard.negatives.directional_scores``; nothing of the loss is computed here.

    Args:
        model: the ``SentenceTransformer`` being trained.
        negatives: ``"uniform"`` (the default: MNRL), ``"hard"``, ``"debiased"``, ``"ring"``,
            ``"label"``, ``"threshold"`` or ``"ot"``, or a core ``NegativeStrategy`` object (which then
            carries ``k``, the guard and every option). Hard negatives are asked for by name.
        beta: concentration of the ``"hard"`` / ``"label"`` weights ``w_j ~ exp(beta * s_j)``. In the
            default ``beta_units="logit"`` it multiplies the logit ``s = scale * cos`` (the official HCL
            code's form); ``0`` gives uniform weights. ``None`` keeps the strategy's default (1). A number
            or a ``qt_hard.schedules`` schedule (advanced by :meth:`set_progress`). Given with a strategy
            that reads no beta, it is an error.
        tau_plus: class prior of the debiased estimator (Chuang et al. 2020, Eq. 6); ``None`` keeps the
            strategy's default (``0`` for ``"hard"``, ``0.1`` for ``"debiased"``, no debiasing for the
            others). A number in [0, 1) or a schedule.
        scale: inverse temperature, as MNRL's (``scale=20`` is ``temperature=0.05``).
        k: negatives drawn per anchor without replacement (Ash et al. 2022); ``None`` uses every
            candidate. A batch with fewer than ``k`` candidates per anchor raises ``ValueError``, except
            a batch smaller than the largest seen so far (an epoch's partial last batch), where ``k`` is
            capped with a one-time warning (or pass ``dataloader_drop_last=True``). The draws come from
            ``generator`` when given, else from a per-process stream seeded from the global RNG and the
            process rank at every call (:meth:`k_generator`), so processes draw independently and a
            checkpoint of the trainer's RNG states resumes the same draws.
        normalize: cosine similarity (``True``, MNRL's default ``cos_sim``) or dot product.
        gather_across_devices: all-gather the candidates (with gradients) from every process, so that
            each process scores its own anchors against the global batch (MNRL's argument).
        directions: MNRL's ``directions``: a tuple of ``"query_to_doc"`` (required), ``"query_to_query"``,
            ``"doc_to_query"``, ``"doc_to_doc"``; each direction's similarities join the softmax of the
            pair (``qt_hard.negatives.directions``).
        partition_mode: MNRL's ``partition_mode``: ``"joint"`` (one softmax over every chosen
            direction) or ``"per_direction"`` (one loss per direction, averaged; query_to_doc and
            doc_to_query only). ``directions=("query_to_doc", "doc_to_query")`` with
            ``partition_mode="per_direction"`` is the symmetric loss. The chosen negatives, weights,
            guard and ``k`` apply to each direction's candidates.
        guard: the false-negative guard, ``None`` (off), ``"absolute"`` or ``"relative"``: candidate ``c``
            of anchor ``a`` is dropped from the negatives (not weighed, not counted, not drawn by ``k``)
            when ``cos(a, c) > cos(a, p) - guard_margin`` (absolute) or ``cos(a, c) > cos(a, p) -
            |cos(a, p)| * guard_margin`` (relative), as ``GISTEmbedLoss``'s ``margin_strategy`` and
            ``mine_hard_negatives``' ``absolute_margin`` / ``relative_margin`` define them
            (``qt_hard.negatives.FalseNegativeGuard``). The similarities are the model's own, or the
            ``guide``'s.
        guard_margin: the guard's margin in cosine units (default 0: drop what outscores the positive).
        guide: a frozen ``SentenceTransformer`` whose cosines the guard reads (GISTEmbed); ``None``: the
            model's own. It embeds every column under ``torch.no_grad()``. A guide with another
            vocabulary (or a shorter ``max_seq_length``) gets the texts decoded from the model's
            ``input_ids`` and re-tokenized, as ``GISTEmbedLoss`` does; both models need a
            ``transformers`` tokenizer for that, else ``ValueError``.
        beta_units: ``"logit"`` (default) or ``"cosine"``. In ``"cosine"`` units ``beta`` is the tilt per
            unit of cosine, ``w_j ~ exp(beta * cos_j)``, and the loss uses ``beta / scale`` in logit units
            (a number only). Conversion: a logit-unit beta ``b`` at scale ``S`` tilts ``b * S`` per unit
            of cosine. HCL's runs (temperature 0.5, scale 2) with beta 1 tilt 2 per unit of cosine, so at
            scale 20 logit beta 1 (a tilt of 20) is ten times HCL's tilt, and HCL's tilt is logit beta
            0.1, or ``beta=2.0, beta_units="cosine"``.
        **options: further core options, e.g. ``lower`` / ``upper`` (ring percentiles), ``hardening`` /
            ``tau`` (H-SCL; ``"label"`` defaults to ``hardening="exp"``), ``epsilon`` / ``cost`` /
            ``sinkhorn_iters`` (OT), ``floor`` (debiasing), ``clip``, ``collision_free`` (needs labels),
            ``include_positive``, ``generator`` (k-sampler), ``hardness_mode`` (``"in_batch_negatives"``,
            ``"hard_negatives"``, ``"all_negatives"``) with ``hardness_strength``: MNRL's hardness
            weighting with MNRL's arguments, on top of any ``negatives``.

    References:
        - InfoNCE / MNRL: van den Oord et al. 2018, https://arxiv.org/abs/1807.03748; Henderson et al. 2017.
        - Hard and debiased negatives: Robinson et al., ICLR 2021, https://arxiv.org/abs/2010.04592 (Sec. 3,
          Eq. 3-5); Chuang et al. 2020 (Eq. 6).
        - Ring: Wu et al., ICLR 2021 (Sec. 4). Label-aware (H-SCL): Jiang et al. 2022 (Sec. III). OT: Jiang,
          Ishwar & Aeron 2023 (Eq. 5). ``k``: Ash et al., AISTATS 2022 (Sec. 5).
        - The guard: GISTEmbed, Solatorio 2024, https://arxiv.org/abs/2402.16829; NV-Retriever, Moreira et al.
          2024, https://arxiv.org/abs/2407.15831 (positive-aware hard-negative mining).

    Requirements:
        1. (anchor, positive) pairs, (anchor, positive, negative) triplets or (anchor, positive,
           negative_1, ..., negative_n) n-tuples (``mine_hard_negatives``' ``"triplet"`` and ``"n-tuple"``
           output formats).
        2. A ``label`` column of class ids where the strategy needs labels (``negatives="label"``,
           ``collision_free=True``: :attr:`needs_labels`).

    Relations (equal to MNRL with the defaults, to ``GISTEmbedLoss`` with a guide; composes with
    ``MatryoshkaLoss``) and a training example: ``docs/guides/sentence-transformers.md``.
    """

    def __init__(
        self,
        model: nn.Module,
        negatives: Any = "uniform",
        beta: Any = None,
        tau_plus: Any = None,
        scale: float = 20.0,
        k: int | None = None,
        normalize: bool = True,
        gather_across_devices: bool = False,
        directions: tuple[str, ...] = ("query_to_doc",),
        partition_mode: str = "joint",
        guard: str | None = None,
        guard_margin: float = 0.0,
        guide: nn.Module | None = None,
        beta_units: str = "logit",
        **options: Any,
    ) -> None:
        super().__init__()
        from qt_hard.negatives import check_directions

        _check_arguments(scale, beta, beta_units, guard, guide, options, guard_margin)
        self.directions = check_directions(directions, partition_mode)
        self.partition_mode = partition_mode
        self.generator = options.pop("generator", None)
        self.model = model
        self.negatives = negatives
        self.beta = beta
        self.beta_units = beta_units
        self.tau_plus = tau_plus
        self.scale = float(scale)
        self.k = k
        self.normalize = bool(normalize)
        self.gather_across_devices = bool(gather_across_devices)
        self.guard = guard
        self.guard_margin = guard_margin
        self.guide = guide
        self._guide = None if guide is None else Guide(model, guide)
        self.options = dict(options)
        self.progress = 0.0
        self._largest_batch = 0  # the largest local batch seen: a smaller one is an epoch's last
        self._warned_short = False
        self._k_streams = RankStreams()
        # Set record_guard to keep, per call, each table's (before, kept) candidate masks in last_guard;
        # record_floor, each table's fraction of anchors on the debiased estimator's floor in last_floor.
        self.record_guard = False
        self.last_guard: list[tuple[Tensor, Tensor]] | None = None
        self.record_floor = False
        self.last_floor: list[float] | None = None
        # Built once, so that set_progress moves its schedules (beta annealing, ring band).
        self.strategy, self._reads = self._build_strategy()

    def _build_strategy(self):
        """The core strategy of the arguments, and the options it reads (empty for a strategy object)."""
        from qt_hard.negatives import NegativeStrategy, make_strategy
        from qt_hard.negatives.registry import options_read

        # MNRL's joint softmax with doc_to_query holds the positive pair twice: the core's joint-positives form.
        two_positives = self.partition_mode == "joint" and "doc_to_query" in self.directions
        if isinstance(self.negatives, NegativeStrategy):
            given = (self.k, self.tau_plus, self.beta, self.guard)
            if self.options or any(v is not None for v in given):
                raise ValueError("a NegativeStrategy object carries its own k, guard and options; pass them to it")
            if two_positives and self.negatives.positives != "joint":
                raise ValueError("doc_to_query in a joint partition needs the strategy's positives='joint'")
            return self.negatives, set()
        from qt_hard.negatives.registry import strategy_class

        # The strategy as its paper defines it, where the core's default is a plainer special case
        # (H-SCL's exponential hardening for "label"); an option given here wins.
        options = {**strategy_class(self.negatives).paper_defaults, **self.options}
        if self.beta is not None:
            options["beta"] = self.beta / self.scale if self.beta_units == "cosine" else self.beta
        options["tau_plus"] = self.tau_plus
        if self.guard is not None:
            source = "model" if self.guide is None else "guide"
            options.update(guard=self.guard, guard_margin=self.guard_margin, guard_source=source)
        if two_positives:
            if options.get("positives", "joint") != "joint":
                raise ValueError("doc_to_query in a joint partition is MNRL's softmax only with positives='joint'")
            options["positives"] = "joint"
        strategy = make_strategy(self.negatives, k=self.k, **options)
        _warn_hard_floor(strategy.estimator, self.scale)
        return strategy, options_read(self.negatives, options)

    # -- the loss -------------------------------------------------------------------------------

    @property
    def temperature(self) -> float:
        return 1.0 / self.scale

    @property
    def strategy_name(self) -> str:
        return self.negatives if isinstance(self.negatives, str) else type(self.negatives).__name__

    @property
    def needs_labels(self) -> bool:
        """Whether the strategy reads class labels (a part that needs them, or collision-free sampling)."""
        return self.strategy.needs_labels

    def set_progress(self, progress: float) -> None:
        """Training progress in [0, 1], read by schedule-valued options (beta annealing, ring band)."""
        if not 0.0 <= float(progress) <= 1.0:
            raise ValueError(f"progress must lie in [0, 1], got {progress!r}")
        self.progress = float(progress)
        self.strategy.set_progress(self.progress)

    def guide_embeddings(self, sentence_features: list[dict[str, Tensor]]) -> list[Tensor] | None:
        """The guide's ``(B, d)`` embeddings of every column (None without a guide), without gradients
        (:meth:`qt_hard.integrations.st_guide.Guide.embeddings`). Call it on the features *before* the
        model embeds them."""
        return None if self._guide is None else self._guide.embeddings(sentence_features)

    def compute_loss_from_embeddings(
        self, embeddings: list[Tensor], labels: Tensor | None = None, guide_embeddings: list[Tensor] | None = None
    ) -> Tensor:
        """The core loss of per-column embeddings ``[anchors (B,d), positives (B,d), neg_1 (B,d), ...]``;
        ``guide_embeddings`` (the same columns from the guide) when the guard reads a guide."""
        if len(embeddings) < 2:
            raise ValueError(
                f"{type(self).__name__} needs (anchor, positive[, negative_1, ...]) columns, got {len(embeddings)} column(s)"
            )
        batch = embeddings[0].shape[0]
        for j, emb in enumerate(embeddings):
            if emb.dim() != 2 or emb.shape[0] != batch:
                raise ValueError(
                    f"column {j} has embeddings of shape {tuple(emb.shape)}; every column must be ({batch}, d)"
                )
        anchors, positives = embeddings[0], embeddings[1]
        # (B, n, d): row i holds anchor i's own explicit negatives, in column order.
        negatives = torch.stack(embeddings[2:], dim=1) if len(embeddings) > 2 else None
        if self.needs_labels:
            if labels is None:
                raise ValueError(
                    f"negatives={self.strategy_name!r} (label-aware or collision-free) needs class labels: "
                    "add a 'label' column to the training dataset"
                )
            if labels.dim() != 1 or labels.shape[0] != batch or labels.is_floating_point():
                raise ValueError(
                    f"labels must be ({batch},) integer class ids, got dtype {labels.dtype} shape {tuple(labels.shape)}"
                )
        else:
            labels = None  # MNRL ignores a label/score column; so do the label-free strategies
        from qt_hard.negatives import attach_guide, directional_loss, directional_scores

        layout = dict(
            directions=self.directions,
            partition_mode=self.partition_mode,
            gather_candidates=self.gather_across_devices,
        )
        tables = directional_scores(
            anchors,
            positives,
            negatives,
            temperature=self.temperature,
            labels=labels,
            normalize=self.normalize,
            **layout,
        )
        if guide_embeddings is not None:
            if len(guide_embeddings) != len(embeddings):
                raise ValueError(f"{len(guide_embeddings)} guide columns for {len(embeddings)} model columns")
            g_neg = torch.stack(guide_embeddings[2:], dim=1) if len(guide_embeddings) > 2 else None
            # The guide's cosines, in the same layout (GISTEmbed's guided similarities).
            guides = directional_scores(
                guide_embeddings[0], guide_embeddings[1], g_neg, temperature=1.0, normalize=True, **layout
            )
            tables = [attach_guide(t, g) for t, g in zip(tables, guides)]
        strategy = self._strategy_for(tables, batch)
        self._record(strategy, tables)
        return directional_loss(strategy, tables, self.k_generator(anchors.device) if strategy.k is not None else None)

    def _record(self, strategy, tables) -> None:
        """Per direction's table, what the audits read: the guard's (before, kept) candidate masks under
        ``record_guard``, the share of anchors on the debiased floor under ``record_floor``."""
        if self.record_guard:
            self.last_guard = [strategy.guard_masks(t) for t in tables]
        if self.record_floor:
            # The k-sampler's draw here comes from a generator of its own: the training draws and the
            # global RNG stay as they are without the record.
            own = torch.Generator(tables[0].neg.device).manual_seed(0) if strategy.k is not None else None
            self.last_floor = [strategy.floor_binds(t, own) for t in tables]

    def _strategy_for(self, tables, batch: int):
        """The strategy, with ``k`` capped at the candidates of a batch smaller than the largest seen
        (the partial last batch of an epoch); a full batch with too few candidates stays an error."""
        short = batch < self._largest_batch
        self._largest_batch = max(self._largest_batch, batch)
        k = self.strategy.k
        if k is None or not short:
            return self.strategy
        available = min(self.strategy.fewest_candidates(t) for t in tables)
        if available >= k:
            return self.strategy
        if available < 1:
            raise ValueError(f"the short last batch ({batch} rows) leaves an anchor without any negative")
        if not self._warned_short:
            logger.warning(
                "k=%d negatives requested, but a batch of %d rows (smaller than the earlier %d: the last, partial "
                "batch of an epoch) has only %d candidates per anchor; k is capped there (warned once). Pass "
                "dataloader_drop_last=True to the training arguments to skip such batches instead.",
                k,
                batch,
                self._largest_batch,
                available,
            )
            self._warned_short = True
        capped = copy.copy(self.strategy)
        capped.k = available
        return capped

    def k_generator(self, device: torch.device) -> torch.Generator | None:
        """The generator of the k-sampler: the user's ``generator`` if given, else this process's
        stream on ``device`` (:class:`qt_hard.integrations.st_sampling.RankStreams`: reseeded at every
        call from the global CPU RNG and the process rank, so processes draw independently and the
        draws resume with the RNG states the trainer checkpoints)."""
        return self.generator if self.generator is not None else self._k_streams(device)

    def check_batch(self, features: list[dict[str, Tensor]], labels: Tensor | None = None) -> None:
        """Refuse, before the encoder runs, a batch the loss cannot use: a batch of one pair without
        explicit negatives (its anchor has no negative on one process) and labels whose rows are not
        the batch's."""
        rows = [next((v.shape[0] for v in f.values() if torch.is_tensor(v) and v.dim() > 0), None) for f in features]
        batch = rows[0] if rows else None
        if batch is None:
            return
        from qt_hard.negatives import world

        if batch < 2 and len(features) == 2 and not (self.gather_across_devices and world()[1] > 1):
            raise ValueError(
                f"{type(self).__name__}: a batch of {batch} (anchor, positive) pair leaves the anchor without "
                "a negative; use a batch size >= 2 or add negative columns"
            )
        if torch.is_tensor(labels) and labels.dim() > 0 and labels.shape[0] != batch:
            raise ValueError(f"{type(self).__name__}: {labels.shape[0]} labels for a batch of {batch} rows")

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        """sentence-transformers' loss contract: tokenized columns in, scalar loss out."""
        features = list(sentence_features)
        self.check_batch(features, labels)
        guide = self.guide_embeddings(features)  # before the model fills the feature dicts
        return self.compute_loss_from_embeddings(embed(self.model, features), labels, guide)

    # -- model-card metadata ----------------------------------------------------------------------

    def get_config_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "negatives": self.strategy_name,
            # beta only means something to the hard / label weights; show it only there.
            "beta": self.beta if "beta" in self._reads else None,
            "tau_plus": self.tau_plus,
            "scale": self.scale,
            "k": self.k,
            "normalize": self.normalize,
            "gather_across_devices": self.gather_across_devices,
            "directions": list(self.directions),
            "partition_mode": self.partition_mode,
            **self.options,
        }
        if self.beta_units != "logit":
            config["beta_units"] = self.beta_units
        if self.guard is not None:
            config.update(guard=self.guard, guard_margin=self.guard_margin)
            config["guide"] = None if self.guide is None else _model_name(self.guide)
        return {key: _card_value(value) for key, value in config.items()}

    @property
    def citation(self) -> str:
        """BibTeX of the papers the strategy computes (``NegativeStrategy.papers``: each acting part's
        ``paper`` in the registry, and Ash et al. for ``k`` / ``collision_free``); a strategy object built
        by hand cites the ``papers`` it was given."""
        return "".join(p.bibtex() for p in self.strategy.papers)


class EvaluatorCallback(TrainerCallback):
    """Calls an evaluator of :mod:`qt_hard.evaluation.evaluator` on the model being trained after each of
    ``steps`` and hands ``on_result(step, result)`` its result: the same evaluators as ``qt-hard eval``
    and the grids. The model is evaluated in eval mode at ``max_seq_length`` (default: its own), then put
    back as it was, and the CPU random state is restored, so that the run goes on as it would without
    the evaluations (a run stopped at step s equals the step s of a longer one)."""

    def __init__(self, evaluator, steps, on_result, max_seq_length: int | None = None) -> None:
        self.evaluator, self.steps, self.on_result = evaluator, set(steps), on_result
        self.max_seq_length = max_seq_length

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step not in self.steps:
            return
        rng, train_len = torch.get_rng_state(), model.max_seq_length
        model.eval()
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        result = self.evaluator(model)
        model.max_seq_length = train_len
        model.train()
        torch.set_rng_state(rng)
        self.on_result(state.global_step, result)


class LossProgressCallback(TrainerCallback):
    """Feeds ``global_step / max_steps`` to ``loss.set_progress`` before every training step.

    Pass it to ``SentenceTransformerTrainer(callbacks=[LossProgressCallback(loss)])`` so that
    schedules (HCL's beta annealing, App. D.1; the ring's annealed band, Wu et al. Sec. 5) advance.
    """

    def __init__(self, loss: nn.Module) -> None:
        if not hasattr(loss, "set_progress"):
            raise TypeError(f"{type(loss).__name__} has no set_progress(p)")
        self.loss = loss

    def on_step_begin(self, args, state, control, **kwargs):
        if state.max_steps:
            self.loss.set_progress(min(1.0, state.global_step / state.max_steps))


if _CachedLossMixin is not None:

    class CachedHardNegativesLoss(_CachedLossMixin, HardNegativesLoss):
        """GradCache variant of :class:`HardNegativesLoss` (Gao et al., 2021, Sec. 3).

        Same loss, same arguments (passed to :class:`HardNegativesLoss`'s constructor as they are),
        plus the keyword-only ``mini_batch_size`` and ``show_progress_bar``: the columns are embedded
        ``mini_batch_size`` rows at a time without a graph, the core loss of the full
        ``(B, d)`` embeddings is back-propagated to the embeddings only, and each mini-batch is
        then re-embedded with gradients and fed its cached embedding gradient (same RNG state, so
        dropout agrees). Activation memory is that of one mini-batch; the candidate count is
        bounded only by the ``(B, W*B*(1+n))`` score matrix.
        """

        def __init__(
            self, *args: Any, mini_batch_size: int = 32, show_progress_bar: bool = False, **kwargs: Any
        ) -> None:
            # Every loss argument goes through HardNegativesLoss's own constructor: one signature,
            # one construction path, the same strategy (and defaults) as the uncached loss.
            HardNegativesLoss.__init__(self, *args, **kwargs)
            if isinstance(mini_batch_size, bool) or not isinstance(mini_batch_size, int) or mini_batch_size < 1:
                raise ValueError(f"mini_batch_size must be a positive integer, got {mini_batch_size!r}")
            self.mini_batch_size = mini_batch_size
            self.mini_batch_num_tokens = None
            self._guide_batch: list[Tensor] | None = None
            self.show_progress_bar = show_progress_bar

        def calculate_loss(
            self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False
        ) -> Tensor:
            """Core loss of the concatenated mini-batch embeddings ``reps[column][chunk] (b, d)``."""
            embeddings = [torch.cat(chunks, dim=0) for chunks in reps]
            loss = self.compute_loss_from_embeddings(embeddings, labels, self._guide_batch)
            if with_backward:
                # The score matrix is small next to the encoder's activations, so the whole batch
                # is one backward; the mixin then replays the encoder per mini-batch.
                loss.backward()
                loss = loss.detach()
            return loss

        def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
            features = list(sentence_features)
            if len(features) < 2:
                raise ValueError(
                    f"{type(self).__name__} needs (anchor, positive[, negative_1, ...]) columns, got {len(features)}"
                )
            self.check_batch(features, labels)
            # The guide embeds the whole batch once, without a graph, in mini-batches of the same size.
            self._guide_batch = self._guide_in_minibatches(features)
            try:
                return self.forward_cached(features, labels)
            finally:
                self._guide_batch = None

        def _guide_in_minibatches(self, features: list[dict[str, Tensor]]) -> list[Tensor] | None:
            if self.guide is None:
                return None
            from sentence_transformers.base.losses.gradcache import _create_minibatch, _get_batch_size

            columns = []
            for f in features:
                n = _get_batch_size(f)
                chunks = [
                    self.guide_embeddings([_create_minibatch(f, b, min(b + self.mini_batch_size, n))])[0]
                    for b in range(0, n, self.mini_batch_size)
                ]
                columns.append(torch.cat(chunks, dim=0))
            return columns

        def get_config_dict(self) -> dict[str, Any]:
            return {**super().get_config_dict(), "mini_batch_size": self.mini_batch_size}

        @property
        def citation(self) -> str:
            return (
                super().citation
                + """
@inproceedings{gao2021scaling,
      title={Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup},
      author={Luyu Gao and Yunyi Zhang and Jiawei Han and Jamie Callan},
      booktitle={Proceedings of the 6th Workshop on Representation Learning for NLP},
      year={2021},
}
"""
            )

else:  # pragma: no cover - sentence-transformers without the GradCache mixin

    class CachedHardNegativesLoss:  # type: ignore[no-redef]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError(
                "CachedHardNegativesLoss needs sentence-transformers >= 5 "
                "(sentence_transformers.base.losses.gradcache.CachedLossMixin)"
            )
