"""The one registry of strategies and options: every consumer reads it, and each part checks its options."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
import torch

from qt_hard.negatives import make_strategy, papers, registry, two_view_scores

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
    spec = importlib.util.spec_from_file_location("hook", ROOT / "docgen" / "mkdocs_hooks.py")
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


def test_a_configs_negatives_reach_the_parts_typed_and_its_own_keys_are_refused():
    from qt_hard.negatives.config import LOSS_ARGUMENTS, NegativesConfig, Negatives
    from qt_hard.schedules import Schedule
    from qt_hard.text.config import ObjectiveConfig
    from qt_hard.training.config import ConfigError

    sched = {"schedule": "linear", "start": 0.0, "end": 1.0}
    chosen = ObjectiveConfig(negatives="hard", options={"beta": sched, "tau_plus": "0.1"}).chosen()
    assert isinstance(chosen, Negatives) and chosen.options.tau_plus == 0.1  # typed: the text read as a number
    built = make_strategy(chosen, k=3)
    assert isinstance(built.weightings[0].beta, Schedule) and built.k == 3
    with pytest.raises(ValueError, match="carries its own options"):
        make_strategy(chosen, beta=2.0)
    for key in ("context", "temperature", "k", "collision_free"):
        with pytest.raises(ConfigError, match=f"objective.options.{key}: set it as objective.{key}"):
            ObjectiveConfig(options={key: 1}).chosen()
    # one list for every refusal: the bare negatives config (no collision_free field of its own) refuses
    # the loss's arguments as well
    for key in LOSS_ARGUMENTS:
        with pytest.raises(ConfigError, match=f"objective.options.{key}: set it as objective.{key}"):
            NegativesConfig(options={key: 1}).chosen()


def test_a_part_name_is_registered_once():
    @dataclasses.dataclass
    class Clash(registry.Part):
        name = "guard"

    with pytest.raises(ValueError, match="already registered"):
        registry.register(Clash)


# ------------------------------------------------------------------------------------------------
# Every reader asks the registry: each part with an example reaches the builder, the configs, the
# sentence-transformers plugin, the docs' table and the citations without being named anywhere.
EXAMPLES = [pytest.param(part, negatives, options, id=part) for part, negatives, options in registry.examples()]
PARTS = {cls.name: cls for cls in registry.parts()}


def _acting_parts(negatives, options):
    """The classes of the parts that act in the strategy built from ``negatives`` and ``options``."""
    return [type(part) for part in registry.assemble(negatives, options).acting]


def test_every_strategy_and_every_modifier_has_an_example():
    names = [part for part, _, _ in registry.examples()]
    assert set(registry.strategy_names()) <= set(names)
    assert {"estimator", "guard", "hardness"} <= set(names)


@pytest.mark.parametrize("part, negatives, options", EXAMPLES)
def test_the_example_is_built_with_its_parts_papers_and_label_needs(part, negatives, options):
    strategy = make_strategy(negatives, **options)
    acting = _acting_parts(negatives, options)
    assert PARTS[part] in acting  # the example switches the part on
    for cls in acting:
        assert cls.paper, f"{cls.name} declares no paper"
        assert any(p in strategy.papers for p in cls.paper)  # the estimator cites one of its two
    assert strategy.needs_labels == any(cls.needs_labels for cls in acting)


@pytest.mark.parametrize("part, negatives, options", EXAMPLES)
def test_the_example_is_a_valid_config_with_its_papers_on_the_model_card_and_a_row_of_the_docs_table(
    part, negatives, options
):
    from qt_hard.text.card import model_card
    from qt_hard.training.config import config_from_dict

    data = {"kind": "synthetic"} if make_strategy(negatives, **options).needs_labels else {}
    cfg = config_from_dict({"data": data, "objective": {"negatives": negatives, "options": options}})
    card = model_card(cfg, ["StaticEmbedding"])
    assert all(p.reference() in card for p in PARTS[part].paper if p in make_strategy(negatives, **options).papers)
    assert any(p.reference() in card for p in PARTS[part].paper)
    row = next(line for line in registry.option_table().splitlines() if line.startswith(f"| `{part}` |"))
    for key, value in options.items():
        assert f"{key}={value!r}" in row
    assert all(p.cite() in row for p in PARTS[part].paper)


@pytest.mark.parametrize("part, negatives, options", EXAMPLES)
def test_the_example_reaches_the_sentence_transformers_plugin(part, negatives, options):
    from torch import nn

    from qt_hard.integrations.sentence_transformers import HardNegativesLoss

    loss = HardNegativesLoss(nn.Identity(), negatives=negatives, **options)
    g = torch.Generator().manual_seed(2)
    columns = [torch.randn(6, 4, generator=g, dtype=torch.float64) for _ in range(3)]
    labels = torch.tensor([0, 1, 0, 1, 2, 2]) if loss.needs_labels else None
    value = loss.compute_loss_from_embeddings(columns, labels)
    assert torch.isfinite(value)
    if loss.needs_labels:
        with pytest.raises(ValueError, match="needs class labels"):
            loss.compute_loss_from_embeddings(columns, None)
    for cls in _acting_parts(negatives, {**registry.strategy_class(negatives).paper_defaults, **options}):
        assert any(p.bibtex() in loss.citation for p in cls.paper)


def test_a_strategy_registered_later_is_asked_for_everywhere(monkeypatch):
    """A strategy that no module names (registered here, as a new module of the package would be): the
    builder, the plugin (its label needs, its citation), and the configs find it."""
    from torch import nn

    from qt_hard.integrations.sentence_transformers import HardNegativesLoss
    from qt_hard.negatives import SameLabelMask
    from qt_hard.training.config import config_from_dict

    @dataclasses.dataclass
    class Lot(registry.Strategy):
        """Same-label candidates dropped (a stand-in for a new label-aware strategy)."""

        name = "lot"
        paper = (papers.Paper("doe2031", "Negatives by Lot", ("Doe, Jane",), "2031"),)
        needs_labels = True
        example = {}

        def check(self):
            self.weightings = [SameLabelMask()]

    registry.discover()
    monkeypatch.setitem(registry.STRATEGIES, "lot", Lot)
    assert "lot" in registry.strategy_names() and "lot" in registry.option_table()
    strategy = make_strategy("lot")
    paper = Lot.paper[0]
    assert strategy.needs_labels and strategy.papers == (paper,)
    loss = HardNegativesLoss(nn.Identity(), negatives="lot")
    assert loss.needs_labels and loss.citation == paper.bibtex()
    g = torch.Generator().manual_seed(0)
    a, p = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g)
    with pytest.raises(ValueError, match="needs class labels"):
        loss.compute_loss_from_embeddings([a, p], None)
    assert torch.isfinite(loss.compute_loss_from_embeddings([a, p], torch.tensor([0, 1, 0, 1])))
    config_from_dict({"data": {"kind": "synthetic"}, "objective": {"negatives": "lot"}})


def test_the_strategy_cites_each_acting_part_once_and_ash_for_the_structural_options():
    assert make_strategy("uniform").papers == (papers.OORD_2018,)
    assert make_strategy("hard").papers == (papers.ROBINSON_2021,)  # tau_plus 0: no debiasing
    assert make_strategy("hard", tau_plus=0.1).papers == (papers.ROBINSON_2021, papers.CHUANG_2020)
    assert make_strategy("debiased").papers == (papers.CHUANG_2020,)  # the strategy and its estimator: once
    assert make_strategy("uniform", estimator="jsd").papers == (papers.OORD_2018, papers.SUN_2020)
    for structural in (dict(k=2), dict(collision_free=True), dict(include_positive=False)):
        assert make_strategy("uniform", **structural).papers == (papers.OORD_2018, papers.ASH_2022)
    assert papers.ROBINSON_2021.cite() == "Robinson et al. 2021"
    assert papers.SOLATORIO_2024.cite() == "Solatorio 2024"
    assert papers.ROBINSON_2021.reference().startswith("Robinson, Chuang, Sra & Jegelka, *Contrastive Learning")
    entry = papers.ASH_2022.bibtex()
    assert entry.startswith("\n@inproceedings{ash2022investigating,\n") and "archivePrefix={arXiv}" in entry
