"""The negatives of every pipeline's objective: one config type, built from the registry's parts.

:class:`NegativesConfig` is the part of a config's ``objective`` section that the text, graph and vision
pipelines share: the strategy (``negatives``), the estimator of the negative term (``estimator``, a field
in every pipeline), ``k`` and the parts' ``options``. Each pipeline's objective section subclasses it
with its own fields (temperature, include_positive, ...)::

    objective:
      negatives: hard
      estimator: nce
      options: {beta: 1.0, clip: rescaled, tau_plus: 0.1}

When the config is read, :meth:`NegativesConfig.validate` checks the section against
:func:`negatives_schema`: (the adapter of) a pydantic union discriminated by ``negatives`` with one member per registered
strategy, whose ``options`` model holds the options of that strategy and of every modifier, typed from
the parts' annotations (a ``schedule`` option: a number, or a mapping with a ``schedule`` key). Then the
parts are built once from the options, so that what their constructors refuse (an option the chosen
switches do not read, ``tau_plus`` outside [0, 1), a ring band out of order) is refused at load as
well. Every error is one line naming the key path (``objective.options.beta: expected a number, got
'x'``). A strategy registered by a module of :mod:`qt_hard.negatives` is in the union without an edit
here.

The validated section (a :class:`Negatives`, :meth:`NegativesConfig.chosen`) is what a pipeline builds
its loss from (``ContrastiveLoss(cfg.chosen(), temperature=...)``): the typed options travel to the
parts, never an options dict that is read again.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional, Union, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, TypeAdapter, ValidationError, create_model

from qt_hard.config_types import parse_number, config_type, describe
from qt_hard.errors import ConfigError
from qt_hard.schedules import make_schedule

from . import registry
from .registry import Estimator

# The loss's own arguments, set beside ``negatives`` in a config, never among its ``options``.
LOSS_ARGUMENTS = ("k", "temperature", "normalize", "include_positive", "collision_free")


def _scheduled(value: Any) -> Any:
    """A schedulable option: a number (or text that parses as one) or a schedule mapping, kept as given."""
    if isinstance(value, dict):
        make_schedule(value)  # refuses an unknown schedule or its bad parameters, naming them
        return dict(value)
    number = parse_number(value)
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise ValueError(f"expected a number (or a mapping with a 'schedule' key), got {value!r}")
    return number


Scheduled = Annotated[Any, PlainValidator(_scheduled)]


def _option_type(part: type, f: dataclasses.Field) -> Any:
    if f.metadata.get("schedule"):
        return Optional[Scheduled] if f.default is None else Scheduled
    return config_type(get_type_hints(part)[f.name])


@functools.cache
def _options_model(strategy: type, modifiers: tuple[type, ...]) -> type[BaseModel]:
    """The options that ``strategy`` with ``modifiers`` takes, typed; the estimator is the section's own."""
    fields = {}
    for part in (strategy, *modifiers):
        for f in dataclasses.fields(part):
            if f.name != "estimator":
                fields[f.name] = (_option_type(part, f), None)
    return create_model(f"{strategy.__name__}Options", __config__=ConfigDict(extra="forbid"), **fields)


class Negatives(BaseModel, registry.Chosen):
    """A config's negatives, validated: the strategy's name (``negatives``), the estimator and the typed
    ``options`` of that strategy and the modifiers; one subclass per registered strategy
    (:func:`negatives_schema`). :func:`~qt_hard.negatives.make_strategy` (and every loss) builds from it."""

    model_config = ConfigDict(extra="forbid")
    estimator: Estimator = "nce"

    def given(self) -> dict:
        """The options set, with the estimator: what the parts are built from."""
        return {**self.options.model_dump(exclude_unset=True), "estimator": self.estimator}

    def assemble(self) -> registry.Assembly:
        return registry.assemble(self.negatives, self.given())


@functools.cache
def _schema(strategies: tuple[type, ...], modifiers: tuple[type, ...]) -> TypeAdapter:
    members = [
        create_model(
            f"{cls.__name__}Negatives",
            __base__=Negatives,
            negatives=(Literal[cls.name], ...),
            options=(_options_model(cls, modifiers), ...),
        )
        for cls in strategies
    ]
    return TypeAdapter(Annotated[Union[tuple(members)], Field(discriminator="negatives")])


def negatives_schema() -> TypeAdapter:
    """The pydantic adapter of ``{negatives, options}``: a union discriminated by the strategy's name, one
    member per registered strategy (discovered ones included)."""
    registry.discover()
    return _schema(tuple(registry.STRATEGIES.values()), tuple(registry.MODIFIERS.values()))


def _schema_error(err: ValidationError, negatives: str, prefix: str) -> str:
    first = err.errors(include_url=False)[0]
    if first["type"] == "union_tag_invalid":
        names = ", ".join(registry.strategy_names())
        return f"{prefix}.negatives: unknown strategy {negatives!r}; choose one of {names}"
    if first["type"] == "extra_forbidden":
        key = ".".join(str(part) for part in first["loc"][2:])
        strategy = registry.STRATEGIES[negatives]
        valid = ", ".join(sorted(_options_model(strategy, tuple(registry.MODIFIERS.values())).model_fields))
        return f"{prefix}.options.{key}: not an option of negatives={negatives!r} (its options: {valid})"
    return describe(err, prefix, skip=1)


@dataclass
class NegativesConfig:
    """Which negatives, with which weights: the strategy's name, the estimator, ``k`` and the options of
    the registry's parts (module docstring). A pipeline's objective section subclasses it.

    negatives: a registered strategy (``qt_hard.negatives.registry.strategy_names()``).
    estimator: nce (InfoNCE, debiased by ``options.tau_plus``) | jsd (InfoGraph's Jensen-Shannon form) |
        jsd_code (the HCL graph code's form).
    k: negatives drawn per anchor, without replacement (None: all candidates).
    options: keyword options of the parts (beta, clip, tau_plus, lower, upper, epsilon, guard, top_m, ...);
        a mapping with a ``schedule`` key is a ``qt_hard.schedules`` schedule.
    """

    negatives: str = "uniform"
    estimator: Estimator = "nce"
    k: Optional[int] = None
    options: dict = field(default_factory=dict)

    def validate(self) -> None:
        """Refuse an unknown strategy, an unknown option, one the strategy does not read, or a value of
        the wrong type or out of range; keep the options as validated."""
        self.options = self.chosen().options.model_dump(exclude_unset=True)

    def chosen(self) -> Negatives:
        """The section validated and typed, its parts built once: what a loss is built from
        (``ContrastiveLoss(cfg.chosen(), ...)``). ``ConfigError`` naming the key path (module docstring)
        for what the registry refuses, and for a key of ``options`` that is set beside ``negatives``:
        a field of the section or one of :data:`LOSS_ARGUMENTS`."""
        options = {} if self.options is None else self.options
        if not isinstance(options, dict):
            raise ConfigError(f"objective.options: expected a mapping, got {options!r}")
        own = ({f.name for f in dataclasses.fields(self)} | set(LOSS_ARGUMENTS)) - {"options"}
        key = next((key for key in options if key in own), None)
        if key is not None:
            raise ConfigError(f"objective.options.{key}: set it as objective.{key} instead")
        try:
            chosen = negatives_schema().validate_python(
                {"negatives": self.negatives, "options": options, "estimator": self.estimator}
            )
        except ValidationError as err:
            raise ConfigError(_schema_error(err, self.negatives, "objective")) from None
        try:
            chosen.assemble()
        except (ValueError, TypeError) as err:
            raise ConfigError(f"objective.options (negatives={self.negatives!r}): {err}") from None
        return chosen
