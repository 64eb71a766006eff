"""The one registry of the negatives' named parts: strategies, weightings, filters and estimators.

A *part* is a dataclass whose fields are the keyword options it reads, typed and validated in its
constructor (a ``ValueError`` that names the option). Two roles:

* a **strategy** is chosen by name (``negatives="hard"``): uniform, debiased, hard, ring, label,
  threshold, ot. Exactly one per loss.
* a **modifier** composes with every strategy and is switched on by its own options: the estimator
  (``estimator``, ``tau_plus``, ``floor``), the false-negative guard (``guard``), MNRL's hardness tilt
  (``hardness_mode``), and any part another module of :mod:`qt_hard.negatives` registers.

A part declares, besides its options, everything a reader of the registry asks about it: its ``name``,
the ``paper`` that defines it (cited by the assembled strategy when the part acts: the plugin's
``citation``, the model cards), whether it ``needs_labels``, the options of an ``example`` (the tests run
every part with them, the docs' table shows them), the ``paper_defaults`` that make a strategy its
paper's method where the core's default is a plainer special case, and whether autograd's gradient is
the loss's ``true_gradient`` (False where weights that move with the scores are held fixed).

Everything that names strategies or options reads this registry: :func:`make_strategy`, the
sentence-transformers plugin, each pipeline's ``objective.options`` (:func:`config_options`), the
CLI's config checks (through the losses), the scripts (:func:`strategy_names`), the model cards (through
the strategy's ``papers``), the docs' option table (:func:`option_table`) and the tests (:func:`examples`).
A new weighting is one module of :mod:`qt_hard.negatives` that defines a :class:`Part` subclass with
:func:`register`: the registry imports every module of the package before it answers (discovery), so
configs, the plugin and the docs see it without being edited.

``None`` stands for "not given" everywhere. An option the chosen parts do not read (given their
switches, e.g. label's ``hardening``) is an error that names it; so is an unknown one.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal

from ..schedules import make_schedule
from .estimators import FLOORS, DebiasedEstimator, JSDEstimator, PlainEstimator
from .guard import GUARD_RULES, GUARD_SOURCES, FalseNegativeGuard
from .papers import (
    ASH_2022,
    CHUANG_2020,
    JIANG_2022,
    JIANG_OT,
    LAN_2025,
    MOREIRA_2024,
    OORD_2018,
    ROBINSON_2021,
    SOLATORIO_2024,
    SUN_2020,
    VERA_2025,
    WU_2021,
    Paper,
)
from .weightings import (
    CLIP_READINGS,
    HARDNESS_MODES,
    HardnessTilt,
    HardWeighting,
    OTWeighting,
    RingWeighting,
    SameLabelMask,
    ThresholdWeighting,
    Weighting,
)

# The strategy's structural arguments (NegativeStrategy's own keywords), given beside the parts' options.
STRUCTURAL = ("k", "collision_free", "include_positive", "count", "positives", "skip_anchors_without_negatives")
# The values of the options that name a mode (their parts' annotations; the configs read them as Literal).
CLIPS = ("auto", *CLIP_READINGS)
ESTIMATORS = ("nce", "jsd", "jsd_code")
Estimator = Literal[ESTIMATORS]
# The paper of k, collision_free and include_positive=False (Ash et al. sec. 5 and App. D.1).
STRUCTURAL_PAPER = ASH_2022


def option(default: Any = None, doc: str = "", *, when: Callable | None = None, schedule: bool = False):
    """A part's option: its default, one line for the docs' table, ``when(given, strategy)`` (read only
    if true; ``given`` the options given, ``strategy`` the chosen strategy's class) and whether a number
    may be a ``qt_hard.schedules`` schedule (a mapping with a ``schedule`` key becomes one)."""
    return field(default=default, metadata={"doc": doc, "when": when, "schedule": schedule})


@dataclass
class Part:
    """A registered part: its fields are its options. Subclasses validate in :meth:`check` and add
    what they build to the strategy under assembly in :meth:`contribute`.

    Class attributes (the module docstring): ``name``; ``role``; ``paper``, the papers that define it (a
    tuple, cited when the part :meth:`acts`); ``needs_labels`` (class labels of the anchors and
    candidates, when it acts); ``example``, options that switch it on with typical values (a strategy's
    beside its name); ``paper_defaults``; ``true_gradient``."""

    name: ClassVar[str]
    role: ClassVar[str] = "modifier"
    paper: ClassVar[tuple[Paper, ...]] = ()
    needs_labels: ClassVar[bool] = False
    example: ClassVar[dict] = {}
    paper_defaults: ClassVar[dict] = {}
    true_gradient: ClassVar[bool] = True

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if f.metadata.get("schedule"):
                setattr(self, f.name, make_schedule(getattr(self, f.name)))
        self.check()

    def check(self) -> None:
        """Validate the options (``ValueError`` naming the option) and build what the part adds, as
        ``self.weightings`` (a list of :class:`Weighting`) unless :meth:`contribute` says otherwise."""
        self.weightings: list[Weighting] = []

    def contribute(self, built: "Assembly") -> None:
        """Add the part's weightings (or the estimator, the guard) to ``built``."""
        built.weightings.extend(self.weightings)

    def acts(self, built: "Assembly") -> bool:
        """Whether the part, built into ``built``, changes the loss: a strategy always, a modifier when it
        adds a weighting (a modifier that builds something else says so)."""
        return self.role == "strategy" or bool(self.weightings)

    def cites(self, built: "Assembly") -> tuple[Paper, ...]:
        """The papers of what the part built into ``built``: its ``paper`` when it acts."""
        return self.paper if self.acts(built) else ()

    @classmethod
    def reads(cls, given: dict, strategy: type) -> set[str]:
        """The options this part reads, given the options given and the chosen strategy."""
        return {
            f.name for f in dataclasses.fields(cls) if f.metadata["when"] is None or f.metadata["when"](given, strategy)
        }


@dataclass
class Strategy(Part):
    """A part chosen by name. ``default_tau_plus`` is its debiasing default (None: none); ``switches`` are the
    options whose values decide what else it reads (named in its errors)."""

    role: ClassVar[str] = "strategy"
    default_tau_plus: ClassVar[float | None] = None
    switches: ClassVar[tuple[str, ...]] = ()


@dataclass
class Assembly:
    """What the parts build: the weightings (composed in order), the estimator and the guard; the parts
    that act, with what they declare: their papers and whether any needs labels."""

    strategy: type
    weightings: list = field(default_factory=list)
    estimator: Any = None
    guard: FalseNegativeGuard | None = None
    acting: list = field(default_factory=list)
    papers: list = field(default_factory=list)
    needs_labels: bool = False


STRATEGIES: dict[str, type[Strategy]] = {}
MODIFIERS: dict[str, type[Part]] = {}
_discovered = False


def register(cls: type[Part]) -> type[Part]:
    """Class decorator: add a part to the registry (strategies by name; modifiers in order)."""
    table = STRATEGIES if cls.role == "strategy" else MODIFIERS
    if cls.name in table and table[cls.name] is not cls:
        raise ValueError(f"a part named {cls.name!r} is already registered ({table[cls.name].__qualname__})")
    for f in dataclasses.fields(cls):
        for other in (*STRATEGIES.values(), *MODIFIERS.values()):
            theirs = {g.name: g.default for g in dataclasses.fields(other)}
            if f.name in theirs and theirs[f.name] != f.default and other is not cls:
                raise ValueError(f"option {f.name!r} of {cls.__name__} has another default in {other.__name__}")
    table[cls.name] = cls
    return cls


def discover() -> None:
    """Import every module of :mod:`qt_hard.negatives` once, so that the parts they register are known."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    package = importlib.import_module(__package__)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{__package__}.{module.name}")


def strategy_names() -> tuple[str, ...]:
    """The names a strategy is chosen by, discovered ones included (ask here, never a copy taken earlier)."""
    discover()
    return tuple(STRATEGIES)


def parts() -> list[type[Part]]:
    """Every registered part, strategies first."""
    discover()
    return [*STRATEGIES.values(), *MODIFIERS.values()]


def examples() -> list[tuple[str, str, dict]]:
    """``(part name, negatives, options)`` of every part with an example: a strategy with its own
    options, a modifier's options on the uniform strategy (what composes with every strategy is tried on
    the plainest). The property and equivalence tests run each."""
    out = []
    for cls in parts():
        if cls.role == "strategy":
            out.append((cls.name, cls.name, dict(cls.example)))
        elif cls.example:
            out.append((cls.name, Uniform.name, dict(cls.example)))
    return out


def option_defaults() -> dict[str, Any]:
    """Every option of every part, with its default."""
    return {f.name: f.default for cls in parts() for f in dataclasses.fields(cls)}


def option_names() -> frozenset[str]:
    """Every keyword the strategy builder takes: the parts' options and the structural arguments."""
    return frozenset({*STRUCTURAL, *option_defaults()})


def strategy_class(negatives) -> type[Strategy]:
    names = strategy_names()
    if not isinstance(negatives, str) or negatives not in names:
        raise ValueError(
            f"unknown negatives {negatives!r}; choose one of {', '.join(names)} or pass a NegativeStrategy"
        )
    return STRATEGIES[negatives]


def options_read(negatives: str, options: dict) -> set[str]:
    """The options that strategy ``negatives`` and the modifiers read, given the switches among ``options``."""
    strategy = strategy_class(negatives)
    given = {key: v for key, v in options.items() if v is not None}
    return set().union(*(cls.reads(given, strategy) for cls in (strategy, *MODIFIERS.values())))


def check_options(negatives: str, options: dict) -> dict:
    """The options given (None dropped), after refusing unknown ones (``TypeError``) and those the
    chosen parts do not read (``ValueError``); both name the options."""
    strategy = strategy_class(negatives)
    unknown = sorted(set(options) - set(option_defaults()))
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; valid: {', '.join(sorted(option_names()))}")
    given = {key: v for key, v in options.items() if v is not None}
    read = options_read(negatives, given)
    unread = sorted(set(given) - read)
    if unread:
        which = f"negatives={negatives!r}" + "".join(f" with {s}={given.get(s)!r}" for s in strategy.switches)
        raise ValueError(f"option(s) {', '.join(unread)} do not apply to {which} (it reads {', '.join(sorted(read))})")
    return given


def assemble(negatives: str, options: dict) -> Assembly:
    """Check ``options`` and build every part: the strategy's weightings, then each modifier's."""
    given = check_options(negatives, options)
    strategy = strategy_class(negatives)
    built = Assembly(strategy)
    for cls in (strategy, *MODIFIERS.values()):
        names = {f.name for f in dataclasses.fields(cls)}
        part = cls(**{key: v for key, v in given.items() if key in names})
        part.contribute(built)
        if part.acts(built):
            built.acting.append(part)
            built.papers.extend(part.cites(built))
            built.needs_labels = built.needs_labels or part.needs_labels
    return built


def config_options(cfg) -> dict:
    """A pipeline config's negatives (``qt_hard.negatives.config.NegativesConfig``) as the core's keyword
    options: ``objective.options`` (mappings with a ``schedule`` key become schedules) and the
    estimator; a key of ``options`` that is one of the config's own fields (or a loss argument: k,
    temperature, normalize, include_positive) is refused, naming where it goes."""
    own = {f.name for f in dataclasses.fields(cfg)} | {"k", "temperature", "normalize", "include_positive"}
    for key in cfg.options:
        if key in own - {"options"}:
            raise ValueError(f"objective.options.{key}: set it as objective.{key} instead")
    options = {key: (make_schedule(v) if isinstance(v, dict) else v) for key, v in cfg.options.items()}
    return {**options, "estimator": cfg.estimator}


def option_table() -> str:
    """The Markdown table of every registered part: its options, an example, what it is and its papers
    (the docs' option table)."""
    lines = ["| part | role | options (default) | example | what it is | paper |", "|---|---|---|---|---|---|"]
    for cls in parts():
        opts = ", ".join(
            f"`{f.name}` ({f.default!r})" + (f": {f.metadata['doc']}" if f.metadata["doc"] else "")
            for f in dataclasses.fields(cls)
        )
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        role = "`negatives`" if cls.role == "strategy" else "any strategy"
        if cls.needs_labels:
            role += ", needs labels"
        given = ({"negatives": cls.name} if cls.role == "strategy" else {}) | cls.example
        example = f"`{', '.join(f'{key}={v!r}' for key, v in given.items())}`" if given else "-"
        papers = "; ".join(p.cite() for p in cls.paper) or "-"
        lines.append(f"| `{cls.name}` | {role} | {opts or '-'} | {example} | {doc} | {papers} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------- strategies
def _nce(given: dict, strategy: type) -> bool:
    return given.get("estimator", "nce") == "nce"


def _hardening(value: str) -> Callable:
    return lambda given, strategy: given.get("hardening") == value


def _one_threshold(tau, level) -> None:
    if (tau is None) == (level is None):
        raise ValueError(
            "thresholded negatives need exactly one of tau (on e^logit) or level (on the "
            "similarity, e.g. the H-SCL schedule of eq. 4)"
        )


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
            _one_threshold(self.tau, self.level)
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
        _one_threshold(self.tau, self.level)
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


# ----------------------------------------------------------------------------------------- modifiers
def _floor_read(given: dict, strategy: type) -> bool:
    return _nce(given, strategy) and (strategy.default_tau_plus is not None or given.get("tau_plus") is not None)


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
        None, "'in_batch_negatives', 'hard_negatives' or 'all_negatives'", when=_nce
    )
    hardness_strength: Any = option(
        None,
        "alpha >= 0, required with hardness_mode",
        when=lambda given, s: _nce(given, s) and given.get("hardness_mode") is not None,
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
