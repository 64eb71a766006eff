"""Interruptions and reruns: nothing lost, nothing silently replaced.

A stopped run exits 130 (SIGINT) / 143 (SIGTERM) after its checkpoint; a second signal during the
checkpoint write leaves only a ``.partial`` folder; a truncated newest checkpoint is skipped; each
then ``--resume`` ends with the weights of the uninterrupted run. A folder that holds a run is
refused without ``--overwrite``; ``--resume`` refuses a config that changes what is trained.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import torch
import yaml
from test_training import qt_config

from qt_hard.cli import main
from qt_hard.training import loop, outdir
from tests._signals import signal_at

REPO = Path(__file__).resolve().parent.parent
STEPS = 12


def _tree(tmp_path, **train):
    # k < all candidates: the sampler's generator state matters for exact resume too.
    tree = qt_config(tmp_path, steps=STEPS, checkpoint_every=3, **train)
    tree["objective"]["k"] = 6
    return tree


def _config_file(tmp_path, tree) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


def _weights(run_dir: Path) -> dict:
    import qt_hard

    return qt_hard.load_encoder(run_dir / "final").module.state_dict()


def _assert_same_weights(a_dir: Path, b_dir: Path) -> None:
    a, b = _weights(a_dir), _weights(b_dir)
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)


@pytest.fixture()
def straight(tmp_path):
    """(config file, folder of the uninterrupted run)."""
    cfg = _config_file(tmp_path, _tree(tmp_path))
    out = tmp_path / "straight"
    assert main(["train", str(cfg), "--out", str(out)]) == 0
    return cfg, out


def _stopped(cfg: Path, out: Path, monkeypatch, at_step: int, signum: int) -> int:
    """``qt-hard train CFG --out OUT`` signalled at the end of step ``at_step``: its exit status."""
    with monkeypatch.context() as m:
        m.setattr(loop, "train", partial(loop.train, on_step=signal_at(at_step, signum)))
        return main(["train", str(cfg), "--out", str(out)])


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_exits_128_plus_signal_and_resume_matches(straight, tmp_path, monkeypatch, capsys, signum, status):
    cfg, reference = straight
    out = tmp_path / "stopped"
    assert _stopped(cfg, out, monkeypatch, 5, signum) == status
    assert "continue with --resume" in capsys.readouterr().err
    assert not (out / "final").exists()
    assert [p.name for p in loop.list_checkpoints(out)] == ["step_0000003", "step_0000005"]
    assert main(["train", str(cfg), "--out", str(out), "--resume"]) == 0
    _assert_same_weights(reference, out)


def test_second_sigint_during_checkpoint_write_leaves_a_partial_folder(straight, tmp_path, monkeypatch):
    cfg, reference = straight
    out = tmp_path / "twice"
    real_save = torch.save

    def save_then_interrupt(obj, f, *args, **kwargs):
        # The first file of step 5's checkpoint is written, then a second Ctrl-C arrives.
        real_save(obj, f, *args, **kwargs)
        if "step_0000005" in str(f):
            os.kill(os.getpid(), signal.SIGINT)

    with monkeypatch.context() as m:
        m.setattr(torch, "save", save_then_interrupt)
        m.setattr(loop, "train", partial(loop.train, on_step=signal_at(5, signal.SIGINT)))
        assert main(["train", str(cfg), "--out", str(out)]) == 130
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert names == ["step_0000003", "step_0000005" + loop.PARTIAL_SUFFIX]
    assert [p.name for p in loop.list_checkpoints(out)] == ["step_0000003"]
    assert main(["train", str(cfg), "--out", str(out), "--resume"]) == 0
    _assert_same_weights(reference, out)


def test_truncated_newest_checkpoint_is_skipped_with_its_reason(straight, tmp_path, monkeypatch, capsys):
    cfg, reference = straight
    out = tmp_path / "truncated"
    assert _stopped(cfg, out, monkeypatch, 7, signal.SIGTERM) == 143
    newest = loop.list_checkpoints(out)[-1]
    assert newest.name == "step_0000007"
    weights = newest / "pytorch_model.bin"
    weights.write_bytes(weights.read_bytes()[:100])
    capsys.readouterr()
    assert main(["train", str(cfg), "--out", str(out), "--resume"]) == 0
    captured = capsys.readouterr()
    assert "skipped" in captured.err and "step_0000007" in captured.err
    assert "resumed from" in captured.err and "step_0000006" in captured.err
    _assert_same_weights(reference, out)


def test_no_checkpoint_loads_is_one_line(straight, tmp_path, monkeypatch, capsys):
    cfg, _ = straight
    out = tmp_path / "all_bad"
    assert _stopped(cfg, out, monkeypatch, 2, signal.SIGTERM) == 143
    (ckpt,) = loop.list_checkpoints(out)
    (ckpt / "pytorch_model.bin").write_bytes(b"")
    capsys.readouterr()
    assert main(["train", str(cfg), "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("qt-hard: error: --resume: no checkpoint under") and "step_0000002" in err[-1]


def test_finished_run_is_not_replaced_without_overwrite(straight, tmp_path, capsys):
    cfg, out = straight
    import shutil

    shutil.rmtree(out / "checkpoints")  # a common way to save disk after a run
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert main(["train", str(cfg), "--out", str(out), "train.steps=3"]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("qt-hard: error: out_dir") and "--overwrite" in line and "final" in line
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    # --overwrite replaces it: a 3-step run now, its metrics only
    assert main(["train", str(cfg), "--out", str(out), "train.steps=3", "--overwrite"]) == 0
    assert yaml.safe_load((out / "config.yaml").read_text())["train"]["steps"] == 3
    assert (out / "metrics.csv").read_text().count("\n") == 1 + 3


@pytest.mark.parametrize(
    "override, key",
    [
        ("train.lr=0.1", "train.lr: 0.01 -> 0.1"),
        ("objective.negatives=uniform", "objective.negatives: 'hard' -> 'uniform'"),
        (f"train.steps={STEPS - 2}", f"train.steps: {STEPS} -> {STEPS - 2}"),
        ("model.embed_dim=24", "model.embed_dim: 16 -> 24"),
    ],
)
def test_resume_refuses_a_changed_config(tmp_path, monkeypatch, capsys, override, key):
    tree = _tree(tmp_path)
    cfg = _config_file(tmp_path, tree)
    out = tmp_path / "run"
    assert _stopped(cfg, out, monkeypatch, 4, signal.SIGTERM) == 143
    if override.startswith("objective.negatives"):
        override = [override, "objective.options={}"]  # uniform reads no beta
    else:
        override = [override]
    saved = (out / "config.yaml").read_bytes()
    capsys.readouterr()
    assert main(["train", str(cfg), "--out", str(out), "--resume", *override]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and line.startswith("qt-hard: error: --resume: the config differs") and key in line
    assert (out / "config.yaml").read_bytes() == saved
    # bookkeeping and a longer budget are allowed, and the record then says the new budget
    assert (
        main(
            [
                "train",
                str(cfg),
                "--out",
                str(out),
                "--resume",
                f"train.steps={STEPS + 2}",
                "train.log_every=5",
                "train.num_threads=2",
            ]
        )
        == 0
    )
    assert yaml.safe_load((out / "config.yaml").read_text())["train"]["steps"] == STEPS + 2


def test_resume_differences_lists_only_what_may_not_change():
    saved = {
        "out_dir": "a",
        "train": {"steps": 10, "lr": 0.1, "trackers": ["csv"]},
        "objective": {"options": {"beta": 1.0}},
    }
    given = {"out_dir": "b", "train": {"steps": 20, "lr": 0.1, "trackers": []}, "objective": {"options": {"beta": 2.0}}}
    assert outdir.resume_differences(saved, given) == ["objective.options: {'beta': 1.0} -> {'beta': 2.0}"]
    assert outdir.resume_differences(given, saved) == [
        "objective.options: {'beta': 2.0} -> {'beta': 1.0}",
        "train.steps: 20 -> 10",
    ]
    # a key the saved config does not have (written by a version without it) is not compared
    assert outdir.resume_differences(saved, {**saved, "train": {**saved["train"], "new_key": 1}}) == []


def _rows(path: Path) -> int:
    return max(0, len(path.read_text().splitlines()) - 1) if path.is_file() else 0


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_installed_command_exit_status_after_a_signal(tmp_path, signum, status):
    """The real process: a long run signalled once it has logged a step exits 128 + signal."""
    tree = qt_config(tmp_path, steps=100_000)
    cfg = _config_file(tmp_path, tree)
    out = tmp_path / "proc"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("QT_HARD_DEBUG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "qt_hard.cli", "train", str(cfg), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        while _rows(out / "metrics.csv") < 2 and proc.poll() is None:
            time.sleep(0.1)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    assert "Traceback" not in err
    assert len(loop.list_checkpoints(out)) == 1 and not (out / "final").exists()
