"""The built-in strategies, each a registered part (:mod:`.registry`): one is chosen by name
(``negatives="hard"``) and supplies the weightings of :mod:`.weightings` that define it, with its options
typed and checked here. Uniform (InfoNCE), debiased (Chuang et al. 2020), hard (Robinson et al. 2021),
ring (Wu et al. 2021), label (H-SCL, Jiang et al. 2022), threshold (H-UCL) and ot (Jiang et al.'s
entropic OT). A strategy of one's own is a module like this one (see :mod:`.topm`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal

from .papers import CHUANG_2020, JIANG_2022, JIANG_OT, OORD_2018, ROBINSON_2021, WU_2021, Paper
from .registry import Strategy, option, register
from .weightings import (
    CLIP_READINGS,
    HardWeighting,
    OTWeighting,
    RingWeighting,
    SameLabelMask,
    ThresholdWeighting,
)

CLIPS = ("auto", *CLIP_READINGS)


def uses_nce(given: dict, strategy: type) -> bool:
    return given.get("estimator", "nce") == "nce"


def _hardening(value: str) -> Callable:
    return lambda given, strategy: given.get("hardening") == value


_BETA_DOC = "concentration of the weights exp(beta * logit), >= 0"
_CLIP_DOC = "the reading of the weights on raw inner products (HardWeighting)"


@register
@dataclass
class Uniform(Strategy):
    """InfoNCE / NT-Xent: every allowed candidate weighs the same."""

    name: ClassVar[str] = "uniform"
    paper: ClassVar[tuple[Paper, ...]] = (OORD_2018,)


@register
@dataclass
class Debiased(Strategy):
    """Chuang et al. 2020: uniform weights, the debiased estimator (tau_plus 0.1 unless given)."""

    name: ClassVar[str] = "debiased"
    paper: ClassVar[tuple[Paper, ...]] = (CHUANG_2020,)
    example: ClassVar[dict] = {"tau_plus": 0.1}
    default_tau_plus: ClassVar[float | None] = 0.1


@register
@dataclass
class Hard(Strategy):
    """HCL, Robinson et al. 2021 eq. 5-6: importance weights exp(beta * s), the floored estimator
    (tau_plus 0 unless given: HCL's criterion keeps its floor without debiasing)."""

    name: ClassVar[str] = "hard"
    paper: ClassVar[tuple[Paper, ...]] = (ROBINSON_2021,)
    example: ClassVar[dict] = {"beta": 1.0, "tau_plus": 0.1}
    default_tau_plus: ClassVar[float | None] = 0.0
    beta: Any = option(1.0, _BETA_DOC, schedule=True)
    clip: Literal[CLIPS] = option("auto", _CLIP_DOC)
    detach: bool = option(False, "stop gradients through the weights")

    def check(self):
        self.weightings = [HardWeighting(self.beta, clip=self.clip, detach=self.detach)]


@register
@dataclass
class Ring(Strategy):
    """Ring, Wu et al. 2021 sec. 4: the candidates between two similarity percentiles."""

    name: ClassVar[str] = "ring"
    paper: ClassVar[tuple[Paper, ...]] = (WU_2021,)
    example: ClassVar[dict] = {"lower": 10.0, "upper": 90.0}
    lower: Any = option(0.0, "lower percentile in [0, 100)", schedule=True)
    upper: Any = option(100.0, "upper percentile in (0, 100]", schedule=True)

    def check(self):
        numbers = all(isinstance(v, (int, float)) for v in (self.lower, self.upper))
        if numbers and not 0.0 <= self.lower < self.upper <= 100.0:
            raise ValueError(f"ring percentiles need 0 <= lower < upper <= 100, got [{self.lower}, {self.upper}]")
        self.weightings = [RingWeighting(self.lower, self.upper)]


@register
@dataclass
class Label(Strategy):
    """H-SCL, Jiang et al. 2022: same-label candidates dropped, hardened by ``hardening``."""

    name: ClassVar[str] = "label"
    paper: ClassVar[tuple[Paper, ...]] = (JIANG_2022,)
    needs_labels: ClassVar[bool] = True
    example: ClassVar[dict] = {"hardening": "exp", "beta": 1.0}
    # H-SCL's hardening is exponential in beta (Jiang et al. Sec. III); the core's default (None) is SCL.
    paper_defaults: ClassVar[dict] = {"hardening": "exp"}
    switches: ClassVar[tuple[str, ...]] = ("hardening",)
    hardening: Literal["exp", "threshold"] | None = option(
        None, "None, 'exp' (beta, clip, detach) or 'threshold' (tau or level)"
    )
    beta: Any = option(1.0, _BETA_DOC, when=_hardening("exp"), schedule=True)
    clip: Literal[CLIPS] = option("auto", _CLIP_DOC, when=_hardening("exp"))
    detach: bool = option(False, "stop gradients through the weights", when=_hardening("exp"))
    tau: Any = option(None, "threshold on e^logit", when=_hardening("threshold"), schedule=True)
    level: Any = option(None, "threshold on the similarity (H-SCL eq. 4)", when=_hardening("threshold"), schedule=True)
    label_relation: Any = option(
        None, "callable(anchor labels, candidate labels) -> bool table of the anchor's own (default: equal labels)"
    )

    def check(self):
        if self.label_relation is not None and not callable(self.label_relation):
            raise ValueError(f"label_relation must be callable or None, got {self.label_relation!r}")
        self.weightings = [SameLabelMask(self.label_relation)]
        if self.hardening == "exp":
            self.weightings.append(HardWeighting(self.beta, clip=self.clip, detach=self.detach))
        elif self.hardening == "threshold":
            self.weightings.append(ThresholdWeighting(tau=self.tau, level=self.level))
        elif self.hardening is not None:
            raise ValueError(f"hardening must be None, 'exp' or 'threshold', got {self.hardening!r}")


@register
@dataclass
class Threshold(Strategy):
    """H-UCL(tau): the thresholded hardening 1(e^s >= tau) without labels (Jiang et al. 2022 sec. III-A)."""

    name: ClassVar[str] = "threshold"
    paper: ClassVar[tuple[Paper, ...]] = (JIANG_2022,)
    example: ClassVar[dict] = {"level": 0.0}
    tau: Any = option(None, "threshold on e^logit", schedule=True)
    level: Any = option(None, "threshold on the similarity (H-SCL eq. 4)", schedule=True)

    def check(self):
        self.weightings = [ThresholdWeighting(tau=self.tau, level=self.level)]


@register
@dataclass
class OT(Strategy):
    """Entropic OT coupling, Jiang, Ishwar & Aeron 2023 eq. 5 (:class:`OTWeighting`)."""

    name: ClassVar[str] = "ot"
    paper: ClassVar[tuple[Paper, ...]] = (JIANG_OT,)
    example: ClassVar[dict] = {"epsilon": 0.5}
    true_gradient: ClassVar[bool] = False  # the coupling is solved on detached costs
    epsilon: Any = option(0.5, "entropic regularization > 0", schedule=True)
    cost: Literal["sqeuclidean", "exp"] = option("sqeuclidean", "'sqeuclidean' or 'exp'")
    kappa: float = option(0.0, "offset of the 'exp' cost", when=lambda given, s: given.get("cost") == "exp")
    sinkhorn_iters: int = option(
        20, "Sinkhorn iterations", when=lambda given, s: given.get("marginals", "uniform") == "uniform"
    )
    marginals: Literal["uniform", "none"] = option("uniform", "'uniform' (the OT problem) or 'none' (the Gibbs kernel)")
    coupling: Literal["full", "drawn"] = option("full", "with k: 'full' (solved on the full table) or 'drawn'")

    def check(self):
        if isinstance(self.epsilon, (int, float)) and not self.epsilon > 0:
            raise ValueError(f"OT epsilon must be > 0, got {self.epsilon}")
        args = (self.epsilon, self.cost, self.kappa, self.sinkhorn_iters, self.marginals, self.coupling)
        self.weightings = [OTWeighting(*args)]
