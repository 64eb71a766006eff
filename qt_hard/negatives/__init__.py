"""The negatives core: candidate sources, the k-sampler, weightings and estimators, module by module on
docs/architecture.md ("The core"); beside them ``papers`` (the papers the parts implement, BibTeX and
references), ``guard`` (the positive-aware false-negative guard of GISTEmbed / NV-Retriever) and
``directions`` (MNRL's directions and partition modes as tables of the core).
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
