"""The one registry of the negatives' named parts: strategies, weightings, filters and estimators.

A *part* is a dataclass whose fields are the keyword options it reads, typed and validated in its
constructor (a ``ValueError`` that names the option). Two roles:

* a **strategy** is chosen by name (``negatives="hard"``): uniform, debiased, hard, ring, label,
  threshold, ot (:mod:`.strategies`). Exactly one per loss.
* a **modifier** composes with every strategy and is switched on by its own options: the estimator
  (``estimator``, ``tau_plus``, ``floor``), the false-negative guard (``guard``), MNRL's hardness tilt
  (``hardness_mode``) (:mod:`.modifiers`), and any part another module of :mod:`qt_hard.negatives`
  registers (:mod:`.topm`).

This module keeps the registration and what is asked of the registered parts (:class:`Part`); the
parts live in the modules named for what they are.

Everything that names strategies or options reads this registry (docs/architecture.md, "The core"); a
new part is one module of :mod:`qt_hard.negatives` that registers it (docs/guides/extending.md), found
by :func:`discover` without an edit elsewhere.

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
from .guard import FalseNegativeGuard
from .papers import ASH_2022, Paper
from .weightings import Weighting

# The strategy's structural arguments (NegativeStrategy's own keywords), given beside the parts' options.
STRUCTURAL = ("k", "collision_free", "include_positive", "count", "positives", "skip_anchors_without_negatives")
# The values of the options that name a mode (their parts' annotations; the configs read them as Literal).
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

    Besides its options a part declares, as class attributes, everything a reader of the registry asks
    about it: ``name``; ``role``; ``paper``, the papers that define it (a tuple, cited by the assembled
    strategy when the part :meth:`acts`: the plugin's ``citation``, the model cards); ``needs_labels``
    (class labels of the anchors and candidates, when it acts); ``example``, options that switch it on
    with typical values (a strategy's beside its name; the tests run every part with them, the docs'
    table shows them); ``paper_defaults``, which make a strategy its paper's method where the core's
    default is a plainer special case; ``true_gradient``, False where weights that move with the scores
    are held fixed."""

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


class Chosen:
    """A strategy chosen with its options validated and typed, which builds its own parts
    (:meth:`assemble`): a config's negatives (:class:`qt_hard.negatives.config.Negatives`), given to
    :func:`~qt_hard.negatives.make_strategy` or a loss in place of a name and options."""

    def assemble(self) -> Assembly:
        raise NotImplementedError


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
            out.append((cls.name, "uniform", dict(cls.example)))
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
