"""The function forms of the losses (``contrastive_loss``, ``context_loss``, ``ranking_loss``,
``local_global_loss``): their signatures, written out here so that any change to a name, kind,
default or type fails; their agreement with the module forms' constructors and ``forward``; and the
same numbers as the module forms on random inputs (to 1e-6)."""

from __future__ import annotations

import inspect

import pytest
import torch

from qt_hard.losses import (
    ContextLoss,
    ContrastiveLoss,
    LocalGlobalLoss,
    RankingLoss,
    context_loss,
    contrastive_loss,
    local_global_loss,
    ranking_loss,
)
from qt_hard.negatives import make_strategy

PK, KW, VAR = "POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY", "VAR_KEYWORD"
NO = inspect.Parameter.empty
T, T_OPT, STRATEGY = "torch.Tensor", "torch.Tensor | None", "str | NegativeStrategy"
GENERATOR = ("generator", KW, None, "torch.Generator | None")
OPTIONS = ("options", VAR, NO, "Any")
K = ("k", KW, None, "int | None")
# The keywords every form ends with (the function form's own two last).
TAIL = [("include_positive", KW, True, "bool"), ("gather", KW, True, "bool"), GENERATOR, OPTIONS]

# (name, kind, default, annotation) of each parameter, in order.
EXPECTED = {
    contrastive_loss: [
        ("z1", PK, NO, T),
        ("z2", PK, NO, T),
        ("negatives", PK, "uniform", STRATEGY),
        ("labels", KW, None, T_OPT),
        ("temperature", KW, 0.5, "float"),
        K,
        ("normalize", KW, True, "bool"),
        *TAIL,
    ],
    context_loss: [
        ("f_emb", PK, NO, T),
        ("g_emb", PK, NO, T),
        ("negatives", PK, "uniform", STRATEGY),
        ("doc_ids", KW, None, T_OPT),
        ("context", KW, 1, "int"),
        ("temperature", KW, 1.0, "float"),
        ("normalize", KW, False, "bool"),
        K,
        *TAIL,
    ],
    ranking_loss: [
        ("anchors", PK, NO, T),
        ("positives", PK, NO, T),
        ("explicit_negatives", PK, None, T_OPT),
        ("negatives", PK, "uniform", STRATEGY),
        ("labels", KW, None, T_OPT),
        ("extra_candidates", KW, None, T_OPT),
        ("in_batch", KW, True, "bool"),
        ("extra_labels", KW, None, T_OPT),
        ("temperature", KW, 0.05, "float"),
        K,
        ("normalize", KW, True, "bool"),
        *TAIL,
    ],
    local_global_loss: [
        ("node_emb", PK, NO, T),
        ("graph_emb", PK, NO, T),
        ("batch", PK, NO, T),
        ("negatives", PK, "uniform", STRATEGY),
        ("labels", KW, None, T_OPT),
        ("estimator", KW, "jsd", "str"),
        ("temperature", KW, 1.0, "float"),
        ("normalize", KW, False, "bool"),
        K,
        *TAIL[1:],
    ],
}

MODULE = {contrastive_loss: ContrastiveLoss, context_loss: ContextLoss, ranking_loss: RankingLoss}
MODULE[local_global_loss] = LocalGlobalLoss
# How many of forward's arguments come before the strategy in the function form.
LEADING = {contrastive_loss: 2, context_loss: 2, ranking_loss: 3, local_global_loss: 3}


def _params(fn) -> list[tuple]:
    return [(p.name, p.kind.name, p.default, p.annotation) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("fn", list(EXPECTED), ids=lambda fn: fn.__name__)
def test_signature_is_the_recorded_one(fn):
    assert _params(fn) == EXPECTED[fn]
    assert inspect.signature(fn).return_annotation == "torch.Tensor"
    assert fn.__module__ == "qt_hard.losses" and fn.__qualname__ == fn.__name__
    assert fn.__doc__ and f":class:`{MODULE[fn].__name__}`" in fn.__doc__


@pytest.mark.parametrize("fn", list(EXPECTED), ids=lambda fn: fn.__name__)
def test_signature_is_forward_then_the_constructor(fn):
    """forward's arguments (the first ``LEADING`` before the strategy), then the constructor's keywords
    (same names, defaults and types), ``generator`` and the constructor's ``**options``."""
    cls, lead = MODULE[fn], LEADING[fn]
    batch = _params(cls.forward)[1:]
    negatives, *config = _params(cls.__init__)[1:]
    got = {p[0]: p for p in _params(fn)}
    assert [p[0] for p in _params(fn)] == [p[0] for p in batch[:lead]] + ["negatives"] + [
        p[0] for p in batch[lead:] + config[:-1]
    ] + ["generator", "options"]
    for name, _, default, annotation in batch + [negatives] + config:
        assert got[name][2] == default, name
        assert annotation is NO or got[name][3] == annotation, name


def test_ranking_loss_module_default_temperature_is_mnrl():
    assert inspect.signature(RankingLoss).parameters["temperature"].default == 0.05
    assert RankingLoss().temperature == 0.05
    assert ContrastiveLoss().temperature == 0.5


def _rand(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _cases():
    z1, z2, h, H = _rand(8, 6, seed=1), _rand(8, 6, seed=2), _rand(9, 6, seed=3), _rand(4, 6, seed=4)
    negs, bank = _rand(8, 2, 6, seed=5), _rand(10, 6, seed=6)
    labels, docs = torch.arange(8) % 3, torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    node_batch, graph_labels = torch.tensor([0, 0, 1, 1, 1, 2, 2, 3, 3]), torch.tensor([0, 1, 0, 1])
    pair, ctx, rank, graph = (z1, z2), (z1, z2), (z1, z2, negs), (h, H, node_batch)
    return [
        (contrastive_loss, pair, "uniform", {}, {}),
        (contrastive_loss, pair, "hard", {}, dict(beta=1.0, tau_plus=0.1, temperature=0.2)),
        (contrastive_loss, pair, "label", dict(labels=labels), dict(hardening="exp", beta=1.0)),
        (contrastive_loss, pair, "ring", {}, dict(lower=10, upper=90, k=6)),
        (contrastive_loss, pair, "uniform", {}, dict(temperature=1.0, normalize=False, include_positive=False)),
        (contrastive_loss, pair, make_strategy("hard", beta=1.0, k=5), {}, {}),
        (context_loss, ctx, "uniform", dict(doc_ids=docs), dict(context=2)),
        (context_loss, ctx, "hard", {}, dict(beta=1.0, clip="rescaled", positives="per_positive", k=3)),
        (context_loss, ctx, "debiased", {}, dict(tau_plus=0.1, temperature=0.5, normalize=True, gather=False)),
        (ranking_loss, rank, "uniform", {}, {}),
        (ranking_loss, rank, "hard", dict(labels=labels), dict(beta=0.5, k=5, collision_free=True)),
        (ranking_loss, (z1, z2, None), "ring", dict(extra_candidates=bank, in_batch=False), dict(lower=20, upper=80)),
        (local_global_loss, graph, "uniform", {}, {}),
        (local_global_loss, graph, "hard", {}, dict(beta=1.0, clip="rescaled", k=2)),
        (local_global_loss, graph, "label", dict(labels=graph_labels), dict(hardening="exp", beta=1.0)),
        (local_global_loss, graph, "uniform", {}, dict(estimator="nce", temperature=0.5)),
    ]


@pytest.mark.parametrize("case", range(len(_cases())))
def test_function_form_equals_module_form(case):
    fn, data, negatives, batch_kw, config = _cases()[case]
    module = MODULE[fn](negatives, **config)
    module.generator = torch.Generator().manual_seed(7)
    want = module(*data, **batch_kw)
    got = fn(*data, negatives, **batch_kw, **config, generator=torch.Generator().manual_seed(7))
    assert torch.isfinite(want)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
