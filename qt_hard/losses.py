"""The contrastive objectives, assembled from the negatives core.

Each objective is defined once, as a module (for training loops, with ``set_progress`` for schedules):
its constructor takes the strategy and the configuration, its ``forward`` one batch. Its function form
(one line for tests, users and our own checks) takes the batch's leading tensors, then the strategy,
then keyword-only the rest of the batch, the constructor's keywords, ``generator`` (the k-sampler's
random generator; None: torch's default one) and the strategy's options; it builds the module and
calls it once, so the two forms give the same numbers by construction.

* :func:`contrastive_loss` / :class:`ContrastiveLoss`: the two-view objective (SimCLR, HCL, Ash et
  al. D.1). With ``negatives="hard", beta=0, tau_plus=0`` it is SimCLR's NT-Xent; with
  ``negatives="hard", beta, tau_plus`` it is HCL's ``criterion`` (Robinson et al. 2021, Fig. 13 and
  the official code).
* :func:`context_loss` / :class:`ContextLoss`: Quick-Thoughts (multi-positive context window); by
  default the positives share one softmax denominator (``positives="joint"``, S2V's ``build_loss``),
  ``positives="per_positive"`` gives each positive its own denominator of the negatives.
* :func:`ranking_loss` / :class:`RankingLoss`: anchors against positives and explicit negatives
  (sentence-transformers' MultipleNegativesRankingLoss layout).
* :func:`local_global_loss` / :class:`LocalGlobalLoss`: InfoGraph (Sun et al. 2020; HCL App. B),
  nodes against graphs with the Jensen-Shannon estimator (``estimator="jsd"``) by default.

Degenerate batches are refused, never scored: embeddings that hold NaN or an infinity raise
:class:`~qt_hard.errors.NonFiniteError` and a batch in which an anchor has no negative (one pair,
one graph, one class under ``collision_free`` or a label mask) raises
:class:`~qt_hard.errors.NotEnoughCandidatesError`, unless ``skip_anchors_without_negatives=True``
leaves such anchors out; both are ``ValueError``. As with any torch loss, the
result has a gradient only when an input requires one (``loss.backward()`` on embeddings without
``requires_grad`` is autograd's own error).

Example::

    >>> import torch
    >>> from qt_hard.losses import contrastive_loss
    >>> z1, z2 = torch.randn(8, 16), torch.randn(8, 16)
    >>> loss = contrastive_loss(z1, z2, "hard", beta=1.0, tau_plus=0.1, temperature=0.5)
    >>> loss.shape
    torch.Size([])
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch
from torch import nn

from .negatives.distributed import world
from .negatives.registry import Chosen
from .negatives.scores import context_scores, node_graph_scores, one_directional_scores, two_view_scores
from .negatives.strategy import NegativeStrategy, generator_at, make_strategy


def check_finite(**tensors) -> None:
    """``NonFiniteError`` (a ValueError) naming the first of ``tensors`` (name -> tensor or None) that
    holds NaN or an infinity; one device-to-host read for all of them."""
    floats = {k: t for k, t in tensors.items() if torch.is_tensor(t) and t.is_floating_point()}
    if not floats:
        return
    finite = torch.stack([torch.isfinite(t).all() for t in floats.values()])
    if bool(finite.all()):
        return
    from .errors import NonFiniteError

    name = list(floats)[int((~finite).nonzero()[0])]
    raise NonFiniteError(f"{name} holds NaN or infinite values; a contrastive loss of them would be NaN")


def _strategy(negatives, k, include_positive, options) -> NegativeStrategy:
    # make_strategy checks the options: unknown ones and those the strategy does not read are errors.
    if isinstance(negatives, NegativeStrategy):
        if options or k is not None or include_positive is not True:
            raise ValueError("pass options either to the NegativeStrategy or here, not both")
        return negatives
    return make_strategy(negatives, k=k, include_positive=include_positive, **options)


class _StrategyLoss(nn.Module):
    """Holds a strategy built once, and the training progress that drives its schedules."""

    def __init__(self, negatives, k, include_positive, options, temperature, normalize, gather):
        super().__init__()
        self.strategy = _strategy(negatives, k, include_positive, options)
        self.temperature, self.normalize, self.gather = temperature, normalize, gather
        self.generator: torch.Generator | None = None
        self.want_diagnostics = False
        self.last_diagnostics: dict | None = None

    def set_progress(self, progress: float) -> None:
        """Training progress in [0, 1] (e.g. step / total_steps) for scheduled parameters."""
        self.strategy.set_progress(progress)

    def _scores(self, build, *batch, **more):
        """``build`` (a score builder of :mod:`qt_hard.negatives.scores`) on the batch, with the loss's
        temperature, normalization and gather."""
        kw = dict(temperature=self.temperature, normalize=self.normalize, gather_candidates=self.gather)
        return build(*batch, **kw, **more)

    def _loss(self, scores, reduce=None) -> torch.Tensor:
        """The strategy's loss (``reduce(scores, generator)``, default the strategy's batch mean); with
        ``want_diagnostics`` set, also the weight diagnostics of this batch
        (:meth:`NegativeStrategy.diagnostics`) in ``last_diagnostics``, the flag then cleared."""
        reduce = reduce or self.strategy
        if not self.want_diagnostics:
            return reduce(scores, self.generator)
        state = self.generator.get_state() if self.generator is not None else None
        loss = reduce(scores, self.generator)
        self.last_diagnostics = self.strategy.diagnostics(scores, generator_at(self.generator, state))
        self.want_diagnostics = False
        return loss

    def extra_repr(self) -> str:
        return repr(self.strategy)


class ContrastiveLoss(_StrategyLoss):
    """Two-view contrastive loss, averaged over the 2B anchors: ``ContrastiveLoss("hard", beta=1.0)(z1, z2)``.

    Args:
        negatives: a strategy name of :mod:`qt_hard.negatives.registry` ("uniform", "debiased", "hard",
            "ring", "label", "ot", "threshold") or a :class:`NegativeStrategy`.
        temperature: t; logits are <u, v> / t.
        k: negatives per anchor drawn from the 2B-2 candidates (None = all).
        normalize: L2-normalize the embeddings (False for Quick-Thoughts / bag-of-words / InfoGraph,
            then name a ``clip`` reading with hard weights).
        include_positive: False drops e^{s+} from the denominator (Ash et al. D.1).
        gather: under torch.distributed, candidates from every process.
        **options: strategy options (see :func:`qt_hard.negatives.make_strategy`).

    Called with the batch of :func:`contrastive_loss` (``z1, z2``: (B, d); ``labels``), it returns the scalar
    loss, and raises, as that function does.
    """

    def __init__(
        self,
        negatives="uniform",
        *,
        temperature: float = 0.5,
        k: int | None = None,
        normalize: bool = True,
        include_positive: bool = True,
        gather: bool = True,
        **options,
    ):
        super().__init__(negatives, k, include_positive, options, temperature, normalize, gather)

    def forward(self, z1: torch.Tensor, z2: torch.Tensor, labels=None) -> torch.Tensor:
        check_finite(z1=z1, z2=z2)
        return self._loss(self._scores(two_view_scores, z1, z2, labels=labels))


class ContextLoss(_StrategyLoss):
    """Quick-Thoughts objective on B consecutive sentences (Logeswaran & Lee 2018; HCL App. D.3); by
    default the positives share one denominator (``positives="joint"``).

    Args:
        context: positives are the sentences within 1..context positions (same document).
        Other arguments as :class:`ContrastiveLoss`.

    Called with the batch of :func:`context_loss` (``f_emb, g_emb``: (B, d); ``doc_ids``), it returns the
    scalar loss, and raises, as that function does.
    """

    def __init__(
        self,
        negatives="uniform",
        *,
        context: int = 1,
        temperature: float = 1.0,
        normalize: bool = False,
        k: int | None = None,
        include_positive: bool = True,
        gather: bool = True,
        **options,
    ):
        # The positives share one denominator unless told otherwise (a NegativeStrategy keeps its own).
        if not isinstance(negatives, NegativeStrategy) and "positives" not in options:
            options = {**options, "positives": "joint"}
        super().__init__(negatives, k, include_positive, options, temperature, normalize, gather)
        self.context = context

    def forward(self, f_emb: torch.Tensor, g_emb: torch.Tensor, doc_ids=None) -> torch.Tensor:
        check_finite(f_emb=f_emb, g_emb=g_emb)
        return self._loss(self._scores(context_scores, f_emb, g_emb, context=self.context, doc_ids=doc_ids))


class RankingLoss(_StrategyLoss):
    """Anchors against all positives and explicit negatives of the batch (MNRL layout).

    Args:
        negatives: the strategy (as in :class:`ContrastiveLoss`).
        temperature: 1 / scale (sentence-transformers' default scale 20 is temperature 0.05).
        Other arguments as :class:`ContrastiveLoss`.

    Called with the batch of :func:`ranking_loss` (``anchors, positives``: (B, d); ``explicit_negatives``,
    ``labels``, ``extra_candidates``, ``in_batch``, ``extra_labels``), it returns the scalar loss, and
    raises, as that function does.
    """

    def __init__(
        self,
        negatives="uniform",
        *,
        temperature: float = 0.05,
        k: int | None = None,
        normalize: bool = True,
        include_positive: bool = True,
        gather: bool = True,
        **options,
    ):
        # The constructor of ContrastiveLoss, with MNRL's temperature (scale 20) as the default.
        super().__init__(negatives, k, include_positive, options, temperature, normalize, gather)

    def forward(
        self,
        anchors,
        positives,
        explicit_negatives=None,
        labels=None,
        extra_candidates=None,
        in_batch: bool = True,
        extra_labels=None,
    ) -> torch.Tensor:
        check_finite(
            anchors=anchors,
            positives=positives,
            explicit_negatives=explicit_negatives,
            extra_candidates=extra_candidates,
        )
        batch = (anchors, positives, explicit_negatives)
        more = dict(labels=labels, extra_candidates=extra_candidates, extra_labels=extra_labels, in_batch=in_batch)
        return self._loss(self._scores(one_directional_scores, *batch, **more))


def _node_mean(per_anchor: torch.Tensor, counted: torch.Tensor) -> torch.Tensor:
    """Mean over the counted nodes of the *global* batch. Processes hold different node counts, so
    each process returns ``sum_local / n_global * W``: DDP's gradient average over W processes then
    equals one process on the whole batch (the node count is a constant: no gradient)."""
    total = per_anchor[counted].sum()
    n = counted.sum().to(per_anchor.dtype)
    _, size = world()
    if size > 1:
        n = n.detach().clone()
        torch.distributed.all_reduce(n)
        return total / n.clamp_min(1) * size
    if not bool(counted.any()):
        raise ValueError("no node in the batch has a positive graph")
    return total / n


class LocalGlobalLoss(_StrategyLoss):
    """InfoGraph's local-global objective (Sun et al. 2020, eq. 4-5; Robinson et al. 2021, App. B):
    every node against the graphs of the (global) batch, its own graph the positive, averaged over
    the nodes: ``LocalGlobalLoss("hard", beta=1.0, clip="rescaled")``.

    Args:
        negatives: any strategy name (uniform = InfoGraph, hard = HCL's graph variant with
            ``clip="rescaled"``, label = H-SCL, ot = the OT paper) or a :class:`NegativeStrategy`.
        estimator: "jsd" (the paper), "jsd_code" (the HCL code's form) or "nce".
        Other arguments as :class:`ContrastiveLoss`.

    Called with the batch of :func:`local_global_loss` (``node_emb``: (n, d), ``graph_emb``: (g, d),
    ``batch``: (n,); ``labels``), it returns the node-averaged loss, and raises, as that function does.
    """

    def __init__(
        self,
        negatives="uniform",
        *,
        estimator: str = "jsd",
        temperature: float = 1.0,
        normalize: bool = False,
        k: int | None = None,
        gather: bool = True,
        **options,
    ):
        if not isinstance(negatives, (NegativeStrategy, Chosen)):  # these carry their own estimator
            options = {"estimator": estimator, **options}
        super().__init__(negatives, k, True, options, temperature, normalize, gather)

    def forward(self, node_emb: torch.Tensor, graph_emb: torch.Tensor, batch, labels=None) -> torch.Tensor:
        check_finite(node_emb=node_emb, graph_emb=graph_emb)
        scores = self._scores(node_graph_scores, node_emb, graph_emb, batch, labels=labels)
        return self._loss(scores, lambda sc, gen: _node_mean(*self.strategy.per_anchor(sc, gen)))


@functools.cache
def _split_of(cls: type[_StrategyLoss]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the constructor's keywords, ``**options`` left out; ``forward``'s arguments) of a module, by name."""
    init = [p.name for p in inspect.signature(cls).parameters.values() if p.kind is not p.VAR_KEYWORD]
    forward = [p.name for p in inspect.signature(cls.forward).parameters.values()][1:]
    return tuple(init), tuple(forward)


def _call_once(cls: type[_StrategyLoss], arguments: dict[str, Any]) -> torch.Tensor:
    """The body of every function form: its ``arguments`` (its own ``locals()``, named as ``cls``'s
    constructor and ``forward`` name them, plus ``generator`` and ``options``) build ``cls`` once, with
    ``generator`` as the k-sampler's, and the module is called once on the batch. Returns the loss."""
    init, forward = _split_of(cls)
    module = cls(**{name: arguments[name] for name in init}, **arguments["options"])
    module.generator = arguments["generator"]
    return module(*(arguments[name] for name in forward))


def contrastive_loss(
    z1: torch.Tensor,
    z2: torch.Tensor,
    negatives: str | NegativeStrategy = "uniform",
    *,
    labels: torch.Tensor | None = None,
    temperature: float = 0.5,
    k: int | None = None,
    normalize: bool = True,
    include_positive: bool = True,
    gather: bool = True,
    generator: torch.Generator | None = None,
    **options: Any,
) -> torch.Tensor:
    """Two-view contrastive loss of B positive pairs, averaged over the 2B anchors: the function form
    of :class:`ContrastiveLoss` (the module built from the arguments and called once).

    Each view is an anchor whose partner view is its positive and whose candidates are the other 2B-2
    views; with logits ``s = <u, v> / t`` its loss is ``-s+ + log(e^{s+} + Q * E_hat)``, ``Q`` its
    negatives (2B-2, or ``k``) and ``E_hat`` the strategy's estimate of the mean of ``e^{s_j}`` over
    them (weighted, and debiased by ``tau_plus``): Robinson et al. (2021), eq. 4 and Fig. 13 (HCL's
    ``criterion`` with ``"hard"``); ``"uniform"`` is SimCLR's NT-Xent; ``include_positive=False`` drops
    ``e^{s+}`` from the denominator (Ash et al. 2022, D.1).

    Args:
        z1, z2: (B, d) embeddings of the two views of B positive pairs.
        labels: (B,) labels, for "label" negatives and ``collision_free=True``.
        negatives, temperature, k, normalize, include_positive, gather, **options: as :class:`ContrastiveLoss`.

    Returns the scalar loss; degenerate batches raise ``NonFiniteError`` or ``NotEnoughCandidatesError`` (module docstring).
    """
    return _call_once(ContrastiveLoss, locals())


def context_loss(
    f_emb: torch.Tensor,
    g_emb: torch.Tensor,
    negatives: str | NegativeStrategy = "uniform",
    *,
    doc_ids: torch.Tensor | None = None,
    context: int = 1,
    temperature: float = 1.0,
    normalize: bool = False,
    k: int | None = None,
    include_positive: bool = True,
    gather: bool = True,
    generator: torch.Generator | None = None,
    **options: Any,
) -> torch.Tensor:
    """Quick-Thoughts objective on B consecutive sentences (Logeswaran & Lee 2018; Robinson et al. 2021,
    App. D.3): the function form of :class:`ContextLoss` (the module built from the arguments and called
    once).

    Sentence i is an anchor with logits ``s_ij = <f(s_i), g(s_j)> / t`` against every other sentence j;
    the P_i sentences within ``context`` positions of it in the same document are its positives, the
    rest its candidate negatives. By default the positives share one denominator (``positives="joint"``,
    S2V's ``build_loss``): ``-(1/P_i) sum_p s+_p + log(sum_p e^{s+_p} + Q * E_hat)``, ``Q`` the
    negatives and ``E_hat`` the strategy's estimate of the mean of ``e^{s_j}`` over them (Robinson et
    al. 2021, eq. 4); ``positives="per_positive"`` gives each positive ``-s+ + log(e^{s+} + Q * E_hat)``
    and averages them.

    Args:
        f_emb, g_emb: (B, d) encodings of the same B consecutive sentences by f and by g.
        doc_ids: (B,) document ids; no positive pair crosses two documents (None: one document).
        negatives, context, temperature, normalize, k, include_positive, gather, **options: as
            :class:`ContextLoss` (positives are the sentences within 1..``context`` positions).

    Returns the scalar loss; degenerate batches raise ``NonFiniteError`` or ``NotEnoughCandidatesError`` (module docstring).

    Example::

        >>> f, g = torch.randn(6, 16), torch.randn(6, 16)
        >>> context_loss(f, g, "hard", beta=1.0, clip="rescaled", context=2).shape
        torch.Size([])
    """
    return _call_once(ContextLoss, locals())


def ranking_loss(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    explicit_negatives: torch.Tensor | None = None,
    negatives: str | NegativeStrategy = "uniform",
    *,
    labels: torch.Tensor | None = None,
    extra_candidates: torch.Tensor | None = None,
    in_batch: bool = True,
    extra_labels: torch.Tensor | None = None,
    temperature: float = 0.05,
    k: int | None = None,
    normalize: bool = True,
    include_positive: bool = True,
    gather: bool = True,
    generator: torch.Generator | None = None,
    **options: Any,
) -> torch.Tensor:
    """Anchors against all positives and explicit negatives of the batch (MNRL layout), averaged over the
    B anchors: the function form of :class:`RankingLoss` (the module built from the arguments, called once).

    Anchor i's positive is ``positives[i]``; its candidate negatives are the other positives, every
    explicit negative and any ``extra_candidates`` (a queue: MoCo, Wu et al. 2021, Alg. 1). With logits
    ``s = <a, c> / t`` its loss is ``-s+ + log(e^{s+} + Q * E_hat)`` (Robinson et al. 2021, eq. 4),
    ``E_hat`` the strategy's estimate over its Q negatives; ``"uniform"`` is MNRL's cross-entropy.

    Args:
        anchors, positives: (B, d); explicit_negatives: optional (B, n, d) explicit negatives.
        labels: (B,) labels, for "label" negatives and ``collision_free=True``.
        extra_candidates: optional (M, d) shared candidates (e.g. :class:`EmbeddingQueue`).
        in_batch: False uses only ``extra_candidates`` as negatives (MoCo).
        extra_labels: (M,) class labels of ``extra_candidates``, -1 for unknown (``EmbeddingQueue.labels()``;
            needed with ``labels``).
        negatives, temperature, k, normalize, include_positive, gather, **options: as :class:`RankingLoss`
            (temperature: 1 / scale; sentence-transformers' default scale 20 is temperature 0.05).

    Returns the scalar loss; degenerate batches raise ``NonFiniteError`` or ``NotEnoughCandidatesError`` (module docstring).

    Example::

        >>> a, p, n = torch.randn(4, 16), torch.randn(4, 16), torch.randn(4, 2, 16)
        >>> ranking_loss(a, p, n, "hard", beta=0.5).shape
        torch.Size([])
    """
    return _call_once(RankingLoss, locals())


def local_global_loss(
    node_emb: torch.Tensor,
    graph_emb: torch.Tensor,
    batch: torch.Tensor,
    negatives: str | NegativeStrategy = "uniform",
    *,
    labels: torch.Tensor | None = None,
    estimator: str = "jsd",
    temperature: float = 1.0,
    normalize: bool = False,
    k: int | None = None,
    gather: bool = True,
    generator: torch.Generator | None = None,
    **options: Any,
) -> torch.Tensor:
    """InfoGraph's local-global objective (Sun et al. 2020, eq. 4-5; Robinson et al. 2021, App. B),
    averaged over the nodes: the function form of :class:`LocalGlobalLoss` (the module built from the
    arguments and called once).

    Every node u is an anchor against the graphs of the (global) batch, its own graph the positive, with
    logits ``s = <h_u, H(G')> / t`` (the discriminator T of App. B.1). The Jensen-Shannon estimator
    (``estimator="jsd"``) gives the node ``sp(-s+) + E_q sp(s)``, ``sp`` the softplus and ``E_q`` the
    mean over its negative graphs under the strategy's weights (uniform: InfoGraph; ``"hard"``:
    ``q(G') ~ exp(beta s)``, HCL App. B.2); ``estimator="nce"`` is the softmax form
    ``-s+ + log(e^{s+} + Q * E_hat)`` of :func:`contrastive_loss`.

    Args:
        node_emb: (n, d) local-discriminator outputs of the nodes.
        graph_emb: (g, d) global ones.
        batch: (n,) graph index of each node (torch_geometric's ``batch``).
        labels: (g,) graph labels, for label-aware negatives.
        negatives, estimator, temperature, normalize, k, gather, **options: as :class:`LocalGlobalLoss`
            (estimator: "jsd", the paper; "jsd_code", the HCL code's form; or "nce").

    Returns the scalar loss; degenerate batches raise ``NonFiniteError`` or ``NotEnoughCandidatesError`` (module docstring).

    Example::

        >>> h, H = torch.randn(7, 4), torch.randn(3, 4)
        >>> float(local_global_loss(h, H, torch.tensor([0, 0, 1, 1, 1, 2, 2]))) > 0
        True
    """
    return _call_once(LocalGlobalLoss, locals())
