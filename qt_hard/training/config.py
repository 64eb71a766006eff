"""Training configuration: typed dataclasses, loaded from YAML, overridden by dotted keys.

    cfg = load_config("configs/qt_books.yaml", ["train.lr=0.001", "objective.negatives=hard"])

The loop owns ``out_dir`` and ``train``; the top-level ``pipeline`` key (default ``text``) names
the pipeline (``qt_hard.pipelines``) whose dataclasses define the ``model``, ``data``,
``objective`` (and optionally ``eval``) sections. Every section and key is checked when the config
is read (:mod:`qt_hard.config_types`: each dataclass's annotations, ``Literal`` modes included, read
through pydantic): an unknown key raises ``ConfigError`` naming it (and the keys that do exist), a
value of the wrong type one naming its key path (``train.lr: expected a number, got 'abc'``); so
does a section the chosen pipeline does not declare. The objective's negatives are one type for
every pipeline (:class:`qt_hard.negatives.config.NegativesConfig`). ``save_config`` writes the
resolved config next to the checkpoints.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union, get_args, get_origin, get_type_hints

import yaml
from pydantic import TypeAdapter, ValidationError

from qt_hard.config_types import Text, describe, load_yaml, read_section
from qt_hard.seeds import check_seed
from qt_hard.errors import ConfigError


# The optimizers and learning-rate schedules of ``qt_hard.training.optim`` (named here: no torch import).
OPTIMIZERS = ("adam", "adamw", "sparse_adam")
LR_SCHEDULES = ("constant", "linear", "cosine")
PRECISIONS = ("no", "fp16", "bf16")
TRACKERS = ("tensorboard", "csv")


@dataclass
class TrainConfig:
    """Optimization. batch_size is the *global* batch (split over processes).

    steps: total optimizer steps; when None, ``epochs`` passes over the data.
    weight_decay: Adam's L2 penalty (torch's ``Adam(weight_decay=...)``; 1e-6 in HCL App. D.1 and in
        the graph papers' setup).
    grad_clip: max gradient norm (2.5 in Ash et al., Table 1); None disables.
    mixed_precision: "no" | "fp16" | "bf16" (accelerate).
    checkpoint_every: steps between checkpoints (0: only on signals / at the end).
    num_threads: torch CPU threads per process (None: torch's default). On a shared or small
        CPU, 1 thread per process avoids oversubscription, which can cost 10x.
    optimizer: "adam" | "adamw" | "sparse_adam" (``qt_hard.training.optim``).
    lr_schedule: "constant" | "linear" | "cosine" decay of ``lr`` after ``warmup_steps`` steps of
        linear warm-up (``qt_hard.training.optim.lr_factor``).
    tf32: on CUDA, let float32 matmuls and convolutions use TF32 tensor cores (off: full float32).
    """

    batch_size: int = 64
    steps: Optional[int] = None
    epochs: float = 1.0
    lr: float = 1e-3
    weight_decay: float = 0.0
    grad_clip: Optional[float] = 2.5
    mixed_precision: Literal[PRECISIONS] = "no"
    seed: int = 0
    checkpoint_every: int = 0
    keep_checkpoints: int = 2
    log_every: int = 10
    trackers: list[Literal[TRACKERS]] = field(default_factory=lambda: list(TRACKERS))
    progress: bool = True
    num_threads: Optional[int] = None
    optimizer: Literal[OPTIMIZERS] = "adam"
    lr_schedule: Literal[LR_SCHEDULES] = "constant"
    warmup_steps: int = 0
    tf32: bool = True


PIPELINE_SECTIONS = ("model", "data", "objective", "eval")


@dataclass
class Config:
    """A run's config. ``model``/``data``/``objective``/``eval`` are instances of the dataclasses
    the pipeline declares (``PIPELINE.sections``); left as None they take that class's defaults,
    and a section the pipeline does not declare stays None. ``note``: free text kept with the run,
    printed when training starts and by ``qt-hard eval senteval`` under the run's table (what the
    config was chosen on, say)."""

    out_dir: str = "runs/default"
    pipeline: str = "text"
    model: Any = None
    data: Any = None
    objective: Any = None
    eval: Any = None
    train: TrainConfig = field(default_factory=TrainConfig)
    note: str = ""

    def __post_init__(self):
        sections = pipeline_sections(self.pipeline)
        for name in PIPELINE_SECTIONS:
            if getattr(self, name) is None and name in sections:
                setattr(self, name, sections[name]())


def pipeline_sections(name: str) -> dict:
    """The config sections (name -> dataclass) of pipeline ``name``."""
    from qt_hard.pipelines import get_pipeline

    try:
        sections = dict(get_pipeline(name).sections)
    except ValueError as err:
        raise ConfigError(f"config key 'pipeline': {err}") from None
    bad = sorted(set(sections) - set(PIPELINE_SECTIONS))
    if bad:
        raise ConfigError(f"pipeline {name!r} declares sections {bad}; a pipeline may declare {PIPELINE_SECTIONS}")
    return sections


def _build_config(tree: dict) -> Config:
    """The top level: the pipeline's sections first, so that their keys are checked too; each section
    is read by :func:`qt_hard.config_types.read_section` (typed, one-line errors naming the key)."""
    if not isinstance(tree, dict):
        raise ConfigError(f"config top level must be a mapping, got {tree!r}")
    pipeline = _top_level_text(tree, "pipeline", "text")
    sections = pipeline_sections(pipeline)
    loop_keys = {"out_dir", "pipeline", "train", "note"}
    unknown = sorted(set(tree) - loop_keys - set(sections))
    if unknown:
        raise ConfigError(
            f"unknown config key {unknown[0]!r} (pipeline {pipeline!r}); "
            f"known keys: {sorted(loop_keys | set(sections))}"
        )
    kwargs = {name: read_section(cls, tree.get(name), name) for name, cls in sections.items()}
    for key in ("out_dir", "note"):
        if key in tree:
            kwargs[key] = _top_level_text(tree, key, None)
    return Config(pipeline=pipeline, train=read_section(TrainConfig, tree.get("train"), "train"), **kwargs)


def _top_level_text(tree: dict, key: str, default: str | None) -> str:
    try:
        return TypeAdapter(Text).validate_python(tree.get(key, default))
    except ValidationError as err:
        raise ConfigError(describe(err, key)) from None


def _set_dotted(tree: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for part in parts[:-1]:
        nxt = node.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"cannot set {dotted!r}: {part!r} is not a section")
        node = nxt
    node[parts[-1]] = value


def parse_override(text: str) -> tuple[str, Any]:
    """'train.lr=0.001' -> ('train.lr', 0.001); the value is parsed as YAML (null, true, 1e-3...)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like section.key=value")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {text!r} has an empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as err:
        raise ConfigError(f"override {text!r}: value is not valid YAML ({err})") from None
    return key, value


def _is_text_key(tree: dict, dotted: str) -> bool:
    """Whether config key ``dotted`` holds text (``str`` or ``Optional[str]``: paths, names), given
    the pipeline that ``tree`` names; False for a key that does not exist (its error comes later)."""
    parts = dotted.split(".")
    try:
        sections = {"train": TrainConfig, **pipeline_sections(str(tree.get("pipeline", "text")))}
    except ConfigError:
        return False
    if len(parts) == 1:
        tp = get_type_hints(Config).get(parts[0]) if parts[0] in ("out_dir", "note", "pipeline") else None
    else:
        cls = sections.get(parts[0])
        for part in parts[1:-1]:  # a nested section (a dataclass field)
            tp = _field_type(cls, part)
            cls = tp if dataclasses.is_dataclass(tp) else None
        tp = _field_type(cls, parts[-1])
    args = [a for a in get_args(tp) if a is not type(None)] if get_origin(tp) is Union else [tp]
    return args == [str]


def _field_type(cls: type | None, name: str) -> Any:
    """The annotation of field ``name`` of dataclass ``cls``; None where there is no such field."""
    if cls is None or name not in {f.name for f in dataclasses.fields(cls)}:
        return None
    return get_type_hints(cls)[name]


def _text_value(raw: str) -> str | None:
    """An override's text for a text key, as typed: never read as YAML, so that ``exp #2`` keeps its
    ``#`` and ``2024-01-05`` stays a folder name rather than a date. A quoted value loses its quotes;
    ``null``, ``~`` and nothing stand for None."""
    text = raw.strip()
    if text in ("", "null", "~", "Null", "NULL"):
        return None
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return str(yaml.safe_load(text))
    return text


def config_from_dict(tree: dict, overrides: list[str] | tuple[str, ...] = (), check_pipeline: bool = True) -> Config:
    """Config from a nested dict plus dotted overrides (applied in order); ``check_pipeline=False``
    leaves out the pipeline's own check (``validate``), for a caller that runs it later. An override
    of a text key (a path, a name) takes its value as typed (:func:`_text_value`), other keys read it
    as YAML."""
    tree = yaml.safe_load(yaml.safe_dump(tree or {}))  # deep copy of plain data
    for text in overrides:
        key, _, raw = text.partition("=")
        if key.strip() and _is_text_key(tree, key.strip()):
            key, value = key.strip(), _text_value(raw)
        else:
            key, value = parse_override(text)
        _set_dotted(tree, key, value)
    cfg = _build_config(tree)
    validate(cfg, check_pipeline)
    return cfg


def load_config(
    path: str | Path | None, overrides: list[str] | tuple[str, ...] = (), check_pipeline: bool = True
) -> Config:
    """Read a YAML config (None: all defaults) and apply dotted overrides (``check_pipeline`` as in
    ``config_from_dict``)."""
    tree = read_yaml_mapping(Path(path), "config file") if path is not None else {}
    return config_from_dict(tree, overrides, check_pipeline)


def read_yaml_mapping(path: Path, what: str) -> dict:
    """The mapping at the top of YAML file ``path``; ``ConfigError`` (naming ``what`` and the
    path) when the file is missing, not text, empty, not YAML, or not a mapping."""
    if not path.is_file():
        raise ConfigError(f"{what} {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{what} {path} is not a text file (not UTF-8 at byte {err.start})") from None
    except OSError as err:
        raise ConfigError(f"{what} {path} cannot be read: {err.strerror}") from None
    try:
        tree = load_yaml(text, f"{what} {path}")
    except yaml.YAMLError as err:
        raise ConfigError(f"{what} {path} is not valid YAML: {err}") from None
    if tree is None:
        raise ConfigError(f"{what} {path} is empty (no YAML mapping in it)")
    if not isinstance(tree, dict):
        raise ConfigError(f"{what} {path} must hold a mapping at the top level")
    return tree


def validate(cfg: Config, check_pipeline: bool = True) -> None:
    """Every check that needs no data: the loop's numbers first (cheap), then each section's own
    ``validate`` and (``check_pipeline``) the pipeline's, which may build the objective (see
    ``qt_hard.text``) and so import torch."""
    from qt_hard.pipelines import get_pipeline

    _check_train(cfg.train)
    if not str(cfg.out_dir).strip():
        raise ConfigError("out_dir must be a folder name, got an empty string")
    try:
        for name in PIPELINE_SECTIONS:
            section = getattr(cfg, name)
            if hasattr(section, "validate"):
                section.validate()
        if check_pipeline:
            get_pipeline(cfg.pipeline).validate(cfg)
    except ConfigError:
        raise
    except ValueError as err:  # a section's own check: report it as the config error it is
        raise ConfigError(str(err)) from None


def _check_train(t: TrainConfig) -> None:
    """The loop's own numbers: finite and in range, so that a typo fails here and not after the
    data is prepared (or, for a NaN learning rate, never)."""
    positive = {"lr": t.lr, "epochs": t.epochs}
    if t.grad_clip is not None:
        positive["grad_clip"] = t.grad_clip
    for name, value in positive.items():
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"train.{name} must be a finite number > 0, got {value!r}")
    if not math.isfinite(t.weight_decay) or t.weight_decay < 0:
        raise ConfigError(f"train.weight_decay must be a finite number >= 0, got {t.weight_decay!r}")
    at_least = {
        "checkpoint_every": (t.checkpoint_every, 0),
        "keep_checkpoints": (t.keep_checkpoints, 0),
        "log_every": (t.log_every, 1),
    }
    if t.num_threads is not None:
        at_least["num_threads"] = (t.num_threads, 1)
    for name, (value, low) in at_least.items():
        if value < low:
            raise ConfigError(f"train.{name} must be >= {low}, got {value!r}")
    if t.batch_size < 2:
        raise ConfigError(f"train.batch_size must be >= 2, got {t.batch_size}")
    check_seed(t.seed, "train.seed")
    if t.steps is not None and t.steps < 1:
        raise ConfigError(f"train.steps must be >= 1, got {t.steps}")
    if t.warmup_steps < 0:
        raise ConfigError(f"train.warmup_steps must be >= 0, got {t.warmup_steps}")
    if t.optimizer == "sparse_adam" and t.weight_decay:
        raise ConfigError("train.optimizer=sparse_adam has no weight decay; set train.weight_decay=0 or use adamw")


def to_dict(cfg: Config) -> dict:
    """Plain data of ``cfg``; sections the pipeline does not declare (None) are left out."""
    return {k: v for k, v in dataclasses.asdict(cfg).items() if v is not None}


def save_config(cfg: Config, path: str | Path) -> Path:
    """Write ``cfg`` as YAML to ``path``, whole or not at all (:func:`qt_hard.files.write_text`)."""
    from qt_hard.files import write_text

    return write_text(path, yaml.safe_dump(to_dict(cfg), sort_keys=False), "run config")
