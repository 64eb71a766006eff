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
