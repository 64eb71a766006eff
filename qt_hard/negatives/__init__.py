"""The negatives core (DESIGN.md): candidate sources, the k-sampler, weightings and estimators.

``scores``      who is compared with whom: :class:`ContrastScores` and its three builders
``sampler``     k negatives per anchor, uniformly without replacement, collision-free option
``weightings``  uniform, hard (HCL), ring, same-label mask / threshold (H-SCL), entropic OT
``estimators``  plain and debiased (hard or smooth floor), in log space
``strategy``    :class:`NegativeStrategy` assembling them into the loss; :func:`make_strategy`
``queue``       a FIFO memory bank of past embeddings (MoCo / MoCoRing)
``distributed`` the all-gather with gradients that makes the global batch the candidate set
"""

from .distributed import gather, world
from .estimators import DebiasedEstimator, PlainEstimator
from .queue import EmbeddingQueue
from .sampler import sample_k_negatives
from .scores import ContrastScores, context_scores, one_directional_scores, two_view_scores
from .strategy import NAMES, NegativeStrategy, make_strategy
from .weightings import (HardWeighting, OTWeighting, RingWeighting, SameLabelMask, ThresholdWeighting,
                         UniformWeighting, Weighting, rescale_scores)

__all__ = [
    "ContrastScores", "two_view_scores", "one_directional_scores", "context_scores",
    "sample_k_negatives", "Weighting", "UniformWeighting", "HardWeighting",
    "RingWeighting", "SameLabelMask", "ThresholdWeighting", "OTWeighting", "rescale_scores",
    "PlainEstimator", "DebiasedEstimator", "NegativeStrategy", "make_strategy", "NAMES",
    "EmbeddingQueue", "gather", "world",
]
