"""The one registry of strategies and options: every consumer reads it, and each part checks its options."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
import torch

from qt_hard.negatives import make_strategy, registry, two_view_scores

ROOT = Path(__file__).resolve().parent.parent


def test_every_option_is_in_the_docs_table_and_the_builder():
    table = registry.option_table()
    for cls in registry.parts():
        assert f"| `{cls.name}` |" in table
        for f in dataclasses.fields(cls):
            assert f"`{f.name}` ({f.default!r})" in table
            assert f.name in registry.option_names()
    assert set(registry.strategy_names()) >= {"uniform", "debiased", "hard", "ring", "label", "threshold", "ot"}


def test_the_docs_hook_renders_the_table():
    spec = importlib.util.spec_from_file_location("hook", ROOT / "scripts" / "mkdocs_option_table.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (ROOT / "docs" / "api" / "negatives.md").read_text()
    assert hook.MARKER in page
    rendered = hook.on_page_markdown(page)
    assert hook.MARKER not in rendered and registry.option_table() in rendered
    assert hook.on_page_markdown("no marker") == "no marker"


@pytest.mark.parametrize(
    "negatives, options, word",
    [
        ("hard", dict(beta=-1.0), "beta"),
        ("hard", dict(clip="sometimes"), "clip"),
        ("ring", dict(lower=60, upper=40), "lower < upper"),
        ("ot", dict(epsilon=0.0), "epsilon"),
        ("ot", dict(cost="l1"), "cost"),
        ("label", dict(hardening="soft"), "hardening"),
        ("threshold", dict(), "exactly one of tau"),
        ("uniform", dict(tau_plus=1.0), "tau_plus"),
        ("uniform", dict(estimator="mine"), "estimator"),
        ("uniform", dict(guard="cosine"), "guard"),
        ("uniform", dict(hardness_mode="all_negatives"), "hardness_strength"),
    ],
)
def test_each_part_refuses_a_bad_option_by_name_when_built(negatives, options, word):
    with pytest.raises(ValueError, match=word):
        make_strategy(negatives, **options)


def test_a_strategy_built_from_the_registry_matches_the_parts_by_hand():
    from qt_hard.negatives import DebiasedEstimator, FalseNegativeGuard, HardWeighting, NegativeStrategy

    g = torch.Generator().manual_seed(0)
    scores = two_view_scores(*torch.randn(2, 6, 4, generator=g, dtype=torch.float64), temperature=0.5)
    named = make_strategy("hard", beta=0.5, tau_plus=0.1, floor="none", guard="relative", guard_margin=0.1)
    by_hand = NegativeStrategy(
        [HardWeighting(0.5)], DebiasedEstimator(0.1, floor="none"), guard=FalseNegativeGuard("relative", 0.1)
    )
    assert torch.equal(named(scores), by_hand(scores))


def test_config_options_refuse_the_configs_own_keys():
    from qt_hard.text.config import ObjectiveConfig

    sched = {"schedule": "linear", "start": 0.0, "end": 1.0}
    opts = registry.config_options(ObjectiveConfig(negatives="hard", options={"beta": sched}))
    assert callable(opts["beta"])
    for key in ("context", "temperature", "k", "collision_free"):
        with pytest.raises(ValueError, match=f"objective.options.{key}: set it as objective.{key}"):
            registry.config_options(ObjectiveConfig(options={key: 1}))


def test_a_part_name_is_registered_once():
    @dataclasses.dataclass
    class Clash(registry.Part):
        name = "guard"

    with pytest.raises(ValueError, match="already registered"):
        registry.register(Clash)
