"""``qt-hard train``: nothing lost, nothing silently wrong.

``--out`` is a path, never a YAML value; ``--overwrite`` replaces only a folder that holds a run; a
resume is checked against a saved config that must read whole; a NaN loss stops the run before the
weights are touched; a checkpoint that cannot be written, or one whose files are not the step's,
loses nothing. The runs are a bag of words on the synthetic corpus (batch 8, a few steps): after the
first, each takes a fraction of a second in this process.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import yaml

from qt_hard.cli import main

TINY = {
    "model": {"kind": "bow", "dim": 16},
    "data": {"kind": "synthetic", "num_classes": 4, "sentences_per_class": 20, "vocab_size": 50},
    "objective": {"negatives": "uniform", "normalize": False, "temperature": 1.0},
    "train": {"batch_size": 8, "steps": 3, "lr": 0.01, "progress": False, "trackers": ["csv"], "num_threads": 1},
}


@pytest.fixture
def cfg(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({"out_dir": str(tmp_path / "default"), **TINY}))
    return path


def _one_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("qt-hard: error:")]
    assert len(err) == 1, err
    return err[0]


def _tree(folder: Path) -> dict:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))
    }


def test_out_is_a_path_not_a_yaml_value(cfg, tmp_path, monkeypatch, capsys):
    """The issue's third example: ``--out 'exp #2' --overwrite`` trained into ``exp/`` (the text after
    ``#`` read as a YAML comment) and replaced the run there; ``--out 2024-01-05`` was refused as a date."""
    monkeypatch.chdir(tmp_path)
    assert main(["train", str(cfg), "--out", "exp"]) == 0
    before = _tree(tmp_path / "exp")
    assert main(["train", str(cfg), "--out", "exp #2", "--overwrite"]) == 0
    assert (tmp_path / "exp #2" / "final").is_dir()
    assert _tree(tmp_path / "exp") == before
    assert main(["train", str(cfg), "--out", "2024-01-05"]) == 0
    assert (tmp_path / "2024-01-05" / "final").is_dir()
    saved = yaml.safe_load((tmp_path / "2024-01-05" / "config.yaml").read_text())
    assert saved["out_dir"] == "2024-01-05"
    # a text key given as an override is a path too
    assert main(["train", str(cfg), "out_dir=exp #3"]) == 0
    assert (tmp_path / "exp #3" / "final").is_dir()


def test_nan_loss_stops_before_the_weights_change(cfg, tmp_path, capsys):
    """The issue's last example: a run whose loss became NaN exited 0 with NaN weights saved as final/."""
    out = tmp_path / "nan"
    args = ["train", str(cfg), "--out", str(out), "train.lr=1e30", "train.steps=4", "train.checkpoint_every=1"]
    assert main(args) == 2
    line = _one_line(capsys)
    assert "training stopped at step 2/4" in line and "not finite" in line and "step_0000001" in line
    assert not (out / "final").exists()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_0000001"]


def _wiki_dump(path: Path, topic: str) -> Path:
    from test_data_wiki import doc, sentences

    path.write_text("".join(doc(i, f"{topic} {i}", [sentences(f"{topic}{i}", 6)]) for i in range(4)))
    return path


def test_overwrite_with_a_new_wiki_source_builds_from_it(cfg, tmp_path, capsys):
    """The issue's fifth example: ``--overwrite`` with a new Wiki source kept training on the Wiki-N
    cached from the old one (the cache was named by article count and sentence minimum only)."""
    out = tmp_path / "wiki_run"
    wiki = ["data.kind=wiki", "data.articles=4", "data.min_sentences=5", "train.batch_size=4", "train.steps=2"]
    a, b = _wiki_dump(tmp_path / "a.txt", "apple"), _wiki_dump(tmp_path / "b.txt", "banana")
    assert main(["train", str(cfg), "--out", str(out), *wiki, f"data.wiki_source={a}"]) == 0
    assert main(["train", str(cfg), "--out", str(out), "--overwrite", *wiki, f"data.wiki_source={b}"]) == 0
    built = sorted((out / "cache").glob("wiki_4_5*"))
    titles = {p.name: (p / "index.tsv").read_text().split("\n")[1].split("\t")[2] for p in built}
    # Rebuilt in its documented place (RUN/cache/wiki_N_M) from the new source, never the old build.
    assert titles == {"wiki_4_5": "banana 0"}, titles
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["data"]["wiki_source"] == str(b)

    # The token cache of the build, cut short as a kill mid-write once left it: refused, not a traceback.
    tokens = max((out / "cache" / "wiki_tokens").glob("wiki-tokens-*"), key=lambda p: p.stat().st_mtime_ns)
    tokens.write_bytes(tokens.read_bytes()[:100])
    assert main(["train", str(cfg), "--out", str(out), "--overwrite", *wiki, f"data.wiki_source={b}"]) == 2
    assert f"token cache {tokens} is damaged" in _one_line(capsys)


def _run_with_checkpoints(cfg, out: Path, steps: int = 2) -> None:
    assert main(["train", str(cfg), "--out", str(out), f"train.steps={steps}", "train.checkpoint_every=1"]) == 0


def test_resume_refuses_a_damaged_saved_config(cfg, tmp_path, capsys):
    """The issue's fifth example, second half: with the run's config.yaml cut short, ``--resume
    train.lr=0.5`` was accepted and rewrote it with the new value for the whole run."""
    out = tmp_path / "run"
    _run_with_checkpoints(cfg, out)
    saved = out / "config.yaml"
    text = saved.read_text()
    saved.write_text(text[: text.index("\ntrain:") + 1])  # a write cut short before the train section
    damaged = saved.read_bytes()
    assert main(["train", str(cfg), "--out", str(out), "--resume", "train.steps=3", "train.lr=0.5"]) == 2
    assert "train.lr: 0.001 -> 0.5" in _one_line(capsys)  # the saved file lost the run's 0.01: defaults fill in
    assert saved.read_bytes() == damaged
    saved.write_text("out_dir: run\nmodel: {kind: bow, dim: 16}\ntrain: {lrr: 1}\n")  # not a config
    assert main(["train", str(cfg), "--out", str(out), "--resume", "train.steps=3"]) == 2
    assert "cannot be read as a config" in _one_line(capsys)


def test_overwrite_replaces_only_a_run(cfg, tmp_path, capsys):
    """--overwrite removed a folder's logs/ and metrics.csv whatever they were; now only a run's, and
    it says which."""
    mine = tmp_path / "mine"
    (mine / "logs").mkdir(parents=True)
    (mine / "logs" / "notes.txt").write_text("my notes\n")
    (mine / "metrics.csv").write_text("my,numbers\n")
    before = _tree(mine)
    assert main(["train", str(cfg), "--out", str(mine), "--overwrite"]) == 2
    assert "no readable run config.yaml" in _one_line(capsys)
    assert _tree(mine) == before
    run = tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["train", str(cfg), "--out", str(run), "--overwrite"]) == 0
    assert f"--overwrite: replacing the run in {run}" in capsys.readouterr().err


def test_out_never_lands_on_a_model_or_the_config(cfg, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(run)]) == 0
    final = _tree(run / "final")
    assert main(["train", str(cfg), "--out", str(run / "final"), "--overwrite"]) == 2
    assert "is a saved model" in _one_line(capsys)
    assert main(["train", str(cfg), "--out", str(run / "checkpoints")]) == 2
    assert "run's own" in _one_line(capsys)
    assert main(["train", str(cfg), "--out", str(run / "final" / "sub")]) == 2
    assert "inside the saved model" in _one_line(capsys)
    assert _tree(run / "final") == final
    own = tmp_path / "exp"
    own.mkdir()
    (own / "config.yaml").write_text(cfg.read_text() + "# my comments\n")
    assert main(["train", str(own / "config.yaml"), "--out", str(own)]) == 2
    assert "is out_dir's config.yaml, which training writes" in _one_line(capsys)
    assert (own / "config.yaml").read_text().endswith("# my comments\n")


def test_a_checkpoint_that_cannot_be_written_loses_nothing(cfg, tmp_path, capsys, monkeypatch):
    """A full disk during a checkpoint: one line, the earlier checkpoint whole, no .partial folder."""
    out = tmp_path / "run"
    real_fsync = os.fsync

    def full_disk(fd):
        if "step_0000002" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    assert main(["train", str(cfg), "--out", str(out), "train.steps=3", "train.checkpoint_every=1"]) == 2
    line = _one_line(capsys)
    assert "checkpoint" in line and "No space left on device" in line and "--resume" in line
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_0000001"]
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert main(["train", str(cfg), "--out", str(out), "train.steps=3", "--resume"]) == 0
    assert (out / "final").is_dir()


def test_a_checkpoint_with_the_wrong_content_is_skipped(cfg, tmp_path, capsys):
    """A checkpoint whose trainer state is another step's (a file copied over it) or not a trainer
    state at all is skipped with its reason, never loaded; with none left, one line."""
    import shutil

    import torch

    out = tmp_path / "run"
    _run_with_checkpoints(cfg, out, steps=3)  # keeps step 2 and 3
    ckpts = out / "checkpoints"
    shutil.copy(ckpts / "step_0000002" / "trainer_state_0.pt", ckpts / "step_0000003" / "trainer_state_0.pt")
    shutil.rmtree(out / "final")
    assert main(["train", str(cfg), "--out", str(out), "train.steps=4", "--resume"]) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and "step_0000003" in err and "trainer state is of step 2" in err
    for ckpt in ckpts.iterdir():
        torch.save([1, 2, 3], ckpt / "trainer_state_0.pt")
    assert main(["train", str(cfg), "--out", str(out), "train.steps=6", "--resume"]) == 2
    assert "no checkpoint under" in _one_line(capsys)


@pytest.mark.parametrize(
    "override, setting",
    [
        ("train.batch_size=10000000", "train.batch_size"),
        ("model.dim=100000000000", "model.dim"),
        ("data.sentences_per_class=1000000000000", "data.num_classes x data.sentences_per_class"),
        ("data.vocab_size=100000000000", "data.num_classes x data.vocab_size"),
    ],
)
def test_unallocatable_sizes_are_refused_before_allocation(cfg, tmp_path, capsys, override, setting):
    """These reached the allocator after the data was made and ended in a traceback."""
    out = tmp_path / "big"
    assert main(["train", str(cfg), "--out", str(out), override]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"qt-hard: error: {setting}: ") and "would need" in line and "of memory" in line
    assert not out.exists()


def test_a_grid_cell_that_goes_nan_records_nothing(cfg, tmp_path):
    """An experiment grid's cell runs through the same loop: a NaN stops it with the one-line error
    (a UserError, which the scripts print as one line), and the ledger gets no record of it."""
    from qt_hard.errors import NonFiniteError
    from qt_hard.experiments.ledger import Ledger
    from qt_hard.experiments.runner import run_claimed, train_run
    from qt_hard.training.config import load_config

    cell = load_config(cfg, [f"out_dir={tmp_path / 'cell'}", "train.lr=1e30", "train.steps=3"])
    ledger = Ledger(tmp_path / "grid", ("row",), {"grid": "tiny"})
    with pytest.raises(NonFiniteError, match="training stopped at step 2/3"):
        run_claimed(ledger, ("hard",), lambda: {"row": "hard", "dir": str(train_run(cell))})
    assert ledger.records() == [] and not list((tmp_path / "grid" / "claims").iterdir())
