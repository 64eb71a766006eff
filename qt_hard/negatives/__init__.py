"""The negatives core (docs/architecture.md): candidate sources, the k-sampler, weightings and estimators.

``scores``      who is compared with whom: :class:`ContrastScores` and its four builders
``sampler``     k negatives per anchor, uniformly without replacement, collision-free option
``weightings``  uniform, hard (HCL), MNRL's hardness tilt, ring, same-label mask / threshold (H-SCL), entropic OT, as
                factored log-weights (:class:`LogWeights`: support, tilt, dense table)
``logmeanexp``  the weighted log-mean-exp they all reduce to, one fused autograd function
``select``      exact per-row order statistics (Ring's percentiles) without sorting rows
``ot``          Sinkhorn: a log-domain first iteration, then exp-domain scalings
``estimators``  plain and debiased (hard or smooth floor), in log space; InfoGraph's JSD
``strategy``    :class:`NegativeStrategy` assembling them into the loss; :func:`make_strategy`
``registry``    one declared part per strategy and per modifier, with its options (names, defaults, checks),
                papers, label needs and example
``papers``      the papers the parts implement (BibTeX, short and one-line references)
``topm``        the top-m mask: each anchor keeps its m highest-scoring negatives (a miner's top-m)
``guard``       the positive-aware false-negative guard (GISTEmbed / NV-Retriever), model or guide similarities
``directions``  MNRL's directions and partition modes (query/doc to query/doc) as tables of the core
``queue``       a FIFO memory bank of past embeddings and their labels (MoCo / MoCoRing)
``distributed`` the all-gather with gradients that makes the global batch the candidate set
"""

from .distributed import gather, world
from .directions import DIRECTIONS, PARTITION_MODES, check_directions, directional_loss, directional_scores
from . import registry
from .estimators import DebiasedEstimator, JSDEstimator, PlainEstimator
from .guard import FalseNegativeGuard, attach_guide
from .queue import EmbeddingQueue
from .logmeanexp import tilted_log_mean_exp
from .sampler import count_rows, sample_k_indices, sample_k_negatives
from .scores import ContrastScores, context_scores, node_graph_scores, one_directional_scores, two_view_scores
from .strategy import NegativeStrategy, make_strategy
from .weightings import (
    HardnessTilt,
    HardWeighting,
    LogWeights,
    OTWeighting,
    RingWeighting,
    SameLabelMask,
    ThresholdWeighting,
    UniformWeighting,
    Weighting,
    clip_bound,
)

__all__ = [
    "ContrastScores",
    "two_view_scores",
    "one_directional_scores",
    "context_scores",
    "sample_k_negatives",
    "sample_k_indices",
    "count_rows",
    "tilted_log_mean_exp",
    "LogWeights",
    "Weighting",
    "UniformWeighting",
    "HardWeighting",
    "HardnessTilt",
    "RingWeighting",
    "SameLabelMask",
    "ThresholdWeighting",
    "OTWeighting",
    "clip_bound",
    "PlainEstimator",
    "DebiasedEstimator",
    "JSDEstimator",
    "node_graph_scores",
    "NegativeStrategy",
    "FalseNegativeGuard",
    "attach_guide",
    "DIRECTIONS",
    "PARTITION_MODES",
    "check_directions",
    "directional_scores",
    "directional_loss",
    "make_strategy",
    "registry",
    "EmbeddingQueue",
    "gather",
    "world",
]
