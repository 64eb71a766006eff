"""Typed configuration: every pipeline's objective shares one negatives section (``NegativesConfig``),
typed from the registry's parts and refused while the config is read; every shipped config reads
back as it was written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from qt_hard.errors import ConfigError, UserError
from qt_hard.negatives import make_strategy, registry
from qt_hard.negatives.config import NegativesConfig
from qt_hard.training.config import config_from_dict, load_config, save_config, to_dict

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = ("text", "graph", "vision")


def _read(pipeline: str, overrides: list[str]):
    """The config read with the pipeline's own check left out: what is refused here is refused while
    the YAML is read, not when the objective is built."""
    return config_from_dict({"pipeline": pipeline}, overrides, check_pipeline=False)


def _refused(pipeline: str, overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as err:
        _read(pipeline, overrides)
    assert isinstance(err.value, UserError)
    text = str(err.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_every_pipeline_objective_is_the_one_negatives_section(pipeline):
    cfg = _read(pipeline, ["objective.negatives=hard", "objective.options.beta=2"])
    assert isinstance(cfg.objective, NegativesConfig)
    assert cfg.objective.options == {"beta": 2.0}
    assert cfg.objective.estimator == ("jsd" if pipeline == "graph" else "nce")


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_an_unknown_strategy_is_refused_at_load(pipeline):
    text = _refused(pipeline, ["objective.negatives=nonsense"])
    assert text.startswith("objective.negatives: unknown strategy 'nonsense'; choose one of ")
    assert all(name in text for name in registry.strategy_names())


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("key", ["bogus", "lower"])  # no part's option; another strategy's option
def test_an_unknown_option_is_refused_at_load(pipeline, key):
    text = _refused(pipeline, ["objective.negatives=hard", f"objective.options.{key}=1"])
    assert text.startswith(f"objective.options.{key}: not an option of negatives='hard' (its options: beta, clip")


# objective.negatives (None: the default strategy) -> [(one override, how the refusal begins)].
WRONG_VALUES = {
    "hard": [
        ("objective.options.beta=x", "objective.options.beta: expected a number"),
        ("objective.options.clip=yes", "objective.options.clip: expected one of auto"),
        ("objective.options.detach=1", "objective.options.detach: expected true or false"),
        ("objective.options.tau_plus=1.5", "objective.options (negatives='hard'): tau_plus"),
    ],
    "ot": [
        ("objective.options.sinkhorn_iters=2.5", "objective.options.sinkhorn_iters: expected an integer"),
        ("objective.options.cost=l1", "objective.options.cost: expected one of sqeuclidean, exp"),
    ],
    "label": [("objective.options.beta=2", "objective.options (negatives='label'): option(s) beta")],
    None: [
        ("objective.options.top_m=many", "objective.options.top_m: expected an integer, got 'many'"),
        ("objective.options.guard=both", "objective.options.guard: expected one of absolute, relative"),
        ("objective.options.tau_plus={schedule: nope}", "objective.options.tau_plus: unknown schedule 'nope'"),
        ("objective.estimator=dv", "objective.estimator: expected one of nce, jsd, jsd_code, got 'dv'"),
        ("objective.options.k=3", "objective.options.k: set it as objective.k instead"),
        ("objective.options.estimator=jsd", "objective.options.estimator: set it as objective.estimator instead"),
        ("objective.k=many", "objective.k: expected an integer, got 'many'"),
    ],
}


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize(
    "negatives, override, message", [(n, o, m) for n, rows in WRONG_VALUES.items() for o, m in rows]
)
def test_a_wrong_option_value_is_refused_at_load(pipeline, negatives, override, message):
    strategy = [f"objective.negatives={negatives}"] if negatives else []
    assert _refused(pipeline, [*strategy, override]).startswith(message)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_options_are_kept_typed_and_only_as_given(pipeline):
    schedule = {"schedule": "linear", "start": 0.0, "end": 2.0}
    cfg = _read(pipeline, ["objective.negatives=hard", "objective.options.beta=1e-3", "objective.options.top_m=2.0"])
    assert cfg.objective.options == {"beta": 0.001, "top_m": 2} and isinstance(cfg.objective.options["top_m"], int)
    cfg = _read(pipeline, ["objective.negatives=hard", f"objective.options.beta={schedule}"])
    assert cfg.objective.options == {"beta": schedule}


def test_the_estimator_is_one_field_in_every_pipeline():
    for pipeline in PIPELINES:
        cfg = _read(pipeline, ["objective.estimator=jsd_code", "objective.options.tau_plus=0.5"])
        chosen = cfg.objective.chosen()
        assert chosen.estimator == "jsd_code" and chosen.options.tau_plus == 0.5
        assert make_strategy(chosen).estimator.tau_plus == 0.5


def test_a_strategy_the_registry_learns_is_a_config_value(monkeypatch):
    @registry.dataclass
    class Sharp(registry.Strategy):
        """A test strategy with one typed option."""

        name = "sharp_test"
        gamma: float = registry.option(1.0, "a test option")

    monkeypatch.setitem(registry.STRATEGIES, "sharp_test", Sharp)
    cfg = _read("graph", ["objective.negatives=sharp_test", "objective.options.gamma=2"])
    assert cfg.objective.options == {"gamma": 2.0}
    assert _refused("text", ["objective.negatives=sharp_test", "objective.options.gamma=x"]).startswith(
        "objective.options.gamma: expected a number, got 'x'"
    )


TRAINING_CONFIGS = sorted(
    p
    for p in [*(ROOT / "configs").glob("*.yaml"), *(ROOT / "qt_hard" / "configs").glob("*.yaml")]
    if "blocks" not in yaml.safe_load(p.read_text())  # the k-vs-N grids: their cells below
)


def _same(written, read) -> bool:
    """Whether the value read is the value written (a number written as text, as PyYAML reads 1e-3,
    read as that number)."""
    if isinstance(written, dict):
        return isinstance(read, dict) and all(_same(v, read.get(k)) for k, v in written.items())
    if isinstance(written, str) and isinstance(read, float):
        return float(written) == read
    return written == read or (isinstance(read, list) and written == ",".join(map(str, read)))


@pytest.mark.parametrize("path", TRAINING_CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_config_reads_back_as_written(path, tmp_path):
    tree = yaml.safe_load(path.read_text())
    cfg = load_config(path, check_pipeline=False)
    assert _same(tree, to_dict(cfg))
    again = load_config(save_config(cfg, tmp_path / "config.yaml"), check_pipeline=False)
    assert to_dict(again) == to_dict(cfg)


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("k_vs_n*.yaml")), ids=lambda p: p.name)
def test_every_k_vs_n_cell_reads_back(path, tmp_path):
    from qt_hard.experiments.specs import k_vs_n_grid

    grid = k_vs_n_grid.load_grid(path)
    cells, _ = k_vs_n_grid.expand(grid)
    for cell in cells[:3]:
        cfg = config_from_dict(
            k_vs_n_grid.cell_tree(grid, cell, tmp_path / "cache", tmp_path / "out"), check_pipeline=False
        )
        again = load_config(save_config(cfg, tmp_path / "config.yaml"), check_pipeline=False)
        assert to_dict(again) == to_dict(cfg)
