"""The graph pipeline's config sections (``pipeline: graph``). Defaults are InfoGraph's / HCL's graph
setup (Sun et al. 2020; Robinson et al. 2021, App. D.2): GIN K = 3, hidden 32, batch norm, JSD."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from qt_hard.graph.evaluate import C_GRID
from qt_hard.negatives.config import NegativesConfig
from qt_hard.negatives.registry import Estimator


@dataclass
class GraphDataConfig:
    """A TU dataset (``qt_hard.graph.tu``).

    name: folder under ``path`` (MUTAG, PTC_MR, ENZYMES, PROTEINS, IMDB-BINARY, IMDB-MULTI).
    path: the TU root (default ``$QT_HARD_DATA/tu``).
    node_attributes: append DS_node_attributes.txt (off in the papers' runs: PyG's default).
    degree_features: auto | always | never (one-hot degree for datasets without node labels).
    """

    name: str = "MUTAG"
    path: Optional[str] = None
    node_attributes: bool = False
    degree_features: Literal["auto", "always", "never"] = "auto"


@dataclass
class GraphModelConfig:
    """GIN encoder + InfoGraph discriminators. batch_norm false drops the batch norms (the multi-process
    equality test: torch's SyncBatchNorm is GPU-only, so CPU processes would normalize per shard)."""

    hidden: int = 32
    layers: int = 3
    batch_norm: bool = True

    def validate(self) -> None:
        if self.hidden < 1 or self.layers < 1:
            raise ValueError(f"model.hidden and model.layers must be >= 1, got {self.hidden}, {self.layers}")


@dataclass
class GraphObjectiveConfig(NegativesConfig):
    """``qt_hard.losses.LocalGlobalLoss``: nodes against the graphs of the (global) batch; the shared
    negatives section (:class:`~qt_hard.negatives.config.NegativesConfig`) with the graph defaults.

    negatives: uniform (InfoGraph) | hard (HCL; options.clip names the reading, e.g. rescaled) | label (H-SCL: same-label
        graphs dropped; options.hardening: exp with beta) | ot (options.epsilon) | ring | debiased | ...
    estimator: jsd (paper; debiased by options.tau_plus; the graph default) | jsd_code (the HCL code's form) | nce.
    """

    estimator: Estimator = "jsd"
    temperature: float = 1.0
    normalize: bool = False


@dataclass
class GraphEvalConfig:
    """SVM readout (``qt_hard.graph.evaluate.svm_accuracy``) of the frozen graph embeddings.

    every_epochs: also evaluate every N epochs (the papers' curves; 0: only after training).
    final: evaluate after training (written to OUT/eval.json).
    """

    every_epochs: int = 0
    final: bool = True
    folds: int = 10
    inner_folds: int = 5
    C: list = field(default_factory=lambda: list(C_GRID))
    seed: int = 0

    def validate(self) -> None:
        if self.every_epochs < 0 or self.folds < 2 or self.inner_folds < 2:
            raise ValueError("eval.every_epochs must be >= 0 and eval.folds, eval.inner_folds >= 2")
