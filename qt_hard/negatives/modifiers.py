"""The built-in modifiers, each a registered part (:mod:`.registry`) that composes with every strategy
and is switched on by its own options: the estimator of the negative term (NCE, debiased, Jensen-Shannon),
the false-negative guard (:mod:`.guard`) and sentence-transformers' hardness tilt. They are applied in
the order they are registered (this module's, then the others' by module name, e.g. :mod:`.topm`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .estimators import FLOORS, DebiasedEstimator, JSDEstimator, PlainEstimator
from .guard import GUARD_RULES, GUARD_SOURCES, FalseNegativeGuard
from .papers import CHUANG_2020, LAN_2025, MOREIRA_2024, SOLATORIO_2024, SUN_2020, VERA_2025, Paper
from .registry import Estimator, Part, option, register
from .strategies import uses_nce
from .weightings import HARDNESS_MODES, HardnessTilt


def _floor_read(given: dict, strategy: type) -> bool:
    return uses_nce(given, strategy) and (strategy.default_tau_plus is not None or given.get("tau_plus") is not None)


@register
@dataclass
class Estimation(Part):
    """The estimator of the negative term: NCE (plain, or debiased by tau_plus with a floor; Chuang et
    al. 2020 eq. 6) or InfoGraph's Jensen-Shannon form (``"jsd"``; ``"jsd_code"`` the HCL code's)."""

    name: ClassVar[str] = "estimator"
    paper: ClassVar[tuple[Paper, ...]] = (CHUANG_2020, SUN_2020)
    example: ClassVar[dict] = {"tau_plus": 0.1, "floor": "smooth"}
    estimator: Estimator = option("nce", "'nce', 'jsd' or 'jsd_code'")
    tau_plus: Any = option(None, "class prior of the debiased estimator, in [0, 1)", schedule=True)
    floor: Literal[FLOORS] = option("hard", "'hard', 'smooth' or 'none' (debiased NCE)", when=_floor_read)

    def check(self):
        if self.estimator not in ("nce", "jsd", "jsd_code"):
            raise ValueError(f"estimator must be 'nce', 'jsd' or 'jsd_code', got {self.estimator!r}")
        if isinstance(self.tau_plus, (int, float)) and not 0.0 <= self.tau_plus < 1.0:
            raise ValueError(f"tau_plus must lie in [0, 1), got {self.tau_plus!r}")

    def contribute(self, built):
        tau_plus = built.strategy.default_tau_plus if self.tau_plus is None else self.tau_plus
        if self.estimator != "nce":
            variant = "paper" if self.estimator == "jsd" else "code"
            built.estimator = JSDEstimator(0.0 if tau_plus is None else tau_plus, variant=variant)
        elif tau_plus is not None:
            built.estimator = DebiasedEstimator(tau_plus, floor=self.floor)
        else:
            built.estimator = PlainEstimator()

    def _debiases(self, built) -> bool:
        tau_plus = built.strategy.default_tau_plus if self.tau_plus is None else self.tau_plus
        return tau_plus is not None and (callable(tau_plus) or tau_plus != 0)

    def acts(self, built):
        """Unless it is the plain NCE estimator (no debiasing, or tau_plus 0)."""
        return self.estimator != "nce" or self._debiases(built)

    def cites(self, built):
        """Chuang et al. when it debiases (tau_plus in effect and not 0), InfoGraph for the JSD forms."""
        return (CHUANG_2020,) * self._debiases(built) + (SUN_2020,) * (self.estimator != "nce")


@register
@dataclass
class Guard(Part):
    """The positive-aware false-negative guard of GISTEmbed / NV-Retriever (:class:`FalseNegativeGuard`),
    before the k-sampler."""

    name: ClassVar[str] = "guard"
    paper: ClassVar[tuple[Paper, ...]] = (SOLATORIO_2024, MOREIRA_2024)
    example: ClassVar[dict] = {"guard": "absolute", "guard_margin": 0.1}
    guard: Literal[GUARD_RULES] | None = option(None, "'absolute' or 'relative'")
    guard_margin: float = option(0.0, "margin in cosine units", when=lambda given, s: given.get("guard") is not None)
    guard_source: Literal[GUARD_SOURCES] = option(
        "model", "'model' or 'guide' (attach_guide)", when=lambda given, s: given.get("guard") is not None
    )

    def check(self):
        self.built = (
            None if self.guard is None else FalseNegativeGuard(self.guard, self.guard_margin, self.guard_source)
        )

    def contribute(self, built):
        built.guard = self.built

    def acts(self, built):
        return self.built is not None


@register
@dataclass
class Hardness(Part):
    """sentence-transformers' MNRL hardness weighting (Lan et al. 2025 eq. 5; :class:`HardnessTilt`),
    with the NCE estimator."""

    name: ClassVar[str] = "hardness"
    paper: ClassVar[tuple[Paper, ...]] = (LAN_2025, VERA_2025)
    example: ClassVar[dict] = {"hardness_mode": "in_batch_negatives", "hardness_strength": 9.0}
    true_gradient: ClassVar[bool] = False  # the tilt alpha * cos is a stop-gradient term
    hardness_mode: Literal[HARDNESS_MODES] | None = option(
        None, "'in_batch_negatives', 'hard_negatives' or 'all_negatives'", when=uses_nce
    )
    hardness_strength: Any = option(
        None,
        "alpha >= 0, required with hardness_mode",
        when=lambda given, s: uses_nce(given, s) and given.get("hardness_mode") is not None,
        schedule=True,
    )

    def check(self):
        self.weightings = []
        if self.hardness_mode is not None:
            if self.hardness_strength is None:
                raise ValueError(
                    "hardness_mode needs hardness_strength (alpha: Lan et al. 2025 use 9 on in-batch "
                    "negatives, EmbeddingGemma 5 on hard negatives)"
                )
            self.weightings = [HardnessTilt(self.hardness_strength, self.hardness_mode)]
