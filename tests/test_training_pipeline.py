"""The loop's pipeline interface: a pipeline chosen by the config's ``pipeline`` key declares its
own config sections (unknown keys still rejected), trains through the same loop, saves and
evaluates; the loop and the config code name no pipeline."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import yaml

from qt_hard.pipelines import get_pipeline, register_pipeline
from qt_hard.training.config import ConfigError, config_from_dict, load_config

register_pipeline("toy", "_toy_pipeline")


def toy_tree(tmp_path, **train):
    return {
        "pipeline": "toy",
        "out_dir": str(tmp_path / "run"),
        "model": {"dim": 6},
        "data": {"points": 32},
        "objective": {"negatives": "hard"},
        "train": {
            "batch_size": 8,
            "steps": 12,
            "log_every": 1,
            "progress": False,
            "trackers": ["csv"],
            "num_threads": 1,
            **train,
        },
    }


def test_pipeline_sections_are_checked():
    cfg = config_from_dict({"pipeline": "toy"})
    assert cfg.model.dim == 8 and cfg.data.points == 64 and cfg.eval is None
    with pytest.raises(ConfigError, match="model.kind"):
        config_from_dict({"pipeline": "toy", "model": {"kind": "bow"}})  # a text key, not a toy one
    with pytest.raises(ConfigError, match="'eval'"):
        config_from_dict({"pipeline": "toy", "eval": {}})  # a section toy does not declare
    with pytest.raises(ConfigError, match="data.points"):
        config_from_dict({"pipeline": "toy"}, ["data.points=2"])  # the section's own validate
    with pytest.raises(ConfigError, match="model.dim"):
        config_from_dict({"pipeline": "toy"}, ["model.dim=1"])  # the pipeline's validate
    with pytest.raises(ConfigError, match="unknown pipeline 'nope'"):
        config_from_dict({"pipeline": "nope"})
    with pytest.raises(ConfigError, match="not found"):
        config_from_dict({"pipeline": "no_such_package.pipeline"})
    # The default stays text: its sections, and its keys, are what a config without the key gets.
    assert config_from_dict({}).data.kind == "synthetic"


def test_text_is_the_first_pipeline():
    text = get_pipeline("text")
    assert set(text.sections) == {"model", "data", "objective", "eval"}
    assert text.ddp_kwargs(config_from_dict({"model": {"kind": "hf", "hf_path": "x"}})) == {
        "find_unused_parameters": True
    }


def test_loop_and_config_name_no_pipeline():
    root = Path(__file__).resolve().parents[1] / "qt_hard" / "training"
    for path in root.glob("*.py"):
        src = path.read_text()
        hits = re.findall(
            r"^\s*(?:from|import)\s+qt_hard\.(?:text|graph|vision)\b.*|kind\s*==\s*[\"'](?:hf|graph|text)[\"']",
            src,
            flags=re.M,
        )
        assert not hits, f"{path.name} names a pipeline: {hits}"


def test_toy_pipeline_trains_saves_and_evaluates(tmp_path):
    from qt_hard.training.loop import train

    out = train(config_from_dict(toy_tree(tmp_path)))
    assert (out / "final" / "toy.pt").is_file()
    result = json.loads((out / "eval.json").read_text())
    assert result["step"] == 12 and result["steps_seen"] == 12 and result["self_sim"] == pytest.approx(1.0)
    with open(out / "eval.csv") as fh:
        assert [int(r["step"]) for r in csv.DictReader(fh)] == [5, 10, 12]
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["pipeline"] == "toy" and "eval" not in saved
    again = load_config(out / "config.yaml")
    assert again.model.dim == 6 and again.objective.negatives == "hard"


def test_toy_pipeline_resume_is_exact(tmp_path):
    import torch

    from qt_hard.training.loop import train

    train(config_from_dict({**toy_tree(tmp_path), "out_dir": str(tmp_path / "straight")}))

    class Stop(Exception):
        pass

    def interrupt(step, loss):
        if step == 7:
            raise Stop

    tree = toy_tree(tmp_path, checkpoint_every=3)
    tree["out_dir"] = str(tmp_path / "cut")
    with pytest.raises(Stop):
        train(config_from_dict(tree), on_step=interrupt)
    train(config_from_dict(tree), resume=True)
    a = torch.load(tmp_path / "straight" / "final" / "toy.pt")
    b = torch.load(tmp_path / "cut" / "final" / "toy.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)
    with open(tmp_path / "cut" / "eval.csv") as fh:
        assert [int(r["step"]) for r in csv.DictReader(fh)] == [5, 10, 12]


def test_declared_stats_reach_metrics_csv(tmp_path, monkeypatch):
    """An objective that declares the statistics it records (``qt_hard.diagnostics.RecordsStats``) is
    asked for them before each logged step only, and the loop writes those that are metrics.csv
    columns (the weight statistics) to the logged rows."""
    import sys

    from qt_hard.diagnostics import RecordsStats
    from qt_hard.training.loop import train

    get_pipeline("toy")
    toy = sys.modules["_toy_pipeline"]
    asked = []

    class Recording(toy.ToyLoss):
        recorded_stats = ("beta", "not_a_column")

        def __init__(self, negatives):
            super().__init__(negatives)
            self.pending = False

        def request_stats(self):
            self.pending = True

        def __call__(self, module, batch, generator=None):
            asked.append(self.pending)
            return super().__call__(module, batch, generator)

        def take_stats(self):
            out = {"beta": 0.25 * len(asked), "not_a_column": 1.0} if self.pending else None
            self.pending = False
            return out

    assert isinstance(Recording("uniform"), RecordsStats)
    monkeypatch.setattr(toy, "ToyLoss", Recording)
    out = train(config_from_dict(toy_tree(tmp_path, steps=6, log_every=3)))
    assert asked == [False, False, True, False, False, True]
    with open(out / "metrics.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [(int(r["step"]), r["beta"], r["ess_frac"]) for r in rows] == [(3, "0.75", ""), (6, "1.5", "")]
    assert "not_a_column" not in rows[0]


def test_loss_objective_records_its_loss_weight_stats():
    """A pipeline objective holding a loss of ``qt_hard.losses`` records that loss's weight statistics
    of the requested batch, once; an object that records nothing has no recorder."""
    import torch

    from qt_hard.diagnostics import WEIGHT_STATS, stats_recorder
    from qt_hard.losses import ContrastiveLoss
    from qt_hard.training.pipeline import LossObjective

    objective = LossObjective()
    objective.loss = ContrastiveLoss("hard", beta=1.0)
    assert stats_recorder(objective) is objective
    assert set(WEIGHT_STATS) <= set(objective.recorded_stats)
    z1, z2 = torch.randn(8, 4), torch.randn(8, 4)
    objective.loss(z1, z2)
    assert objective.take_stats() is None
    objective.request_stats()
    objective.loss(z1, z2)
    stats = objective.take_stats()
    assert stats["beta"] == 1.0 and 0.0 < stats["ess_frac"] <= 1.0
    assert set(stats) <= set(objective.recorded_stats)
    assert objective.take_stats() is None
    assert stats_recorder(torch.nn.Linear(2, 2)) is None and stats_recorder(object()) is None
