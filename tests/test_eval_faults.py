"""``qt-hard eval``: nothing lost, nothing silently wrong.

An output that would land on the model or on an input is refused before the model loads; the
embedding cache is keyed by the model's weights (a retrained model never reads the old embeddings),
written whole after the result, and refused in one line when damaged; non-finite embeddings, result
files of two kinds and a damaged run config are refused in one line. Every evaluation here runs
``qt-hard eval`` in this process on the tiny SentEval files of ``test_eval_senteval`` and a random
bag-of-words model folder (no training), so each costs well under a second.
"""

from __future__ import annotations

import errno
import json
import os

import numpy as np
import pytest
from test_eval_senteval import fixture_lines, write_senteval

from qt_hard.cli import main


@pytest.fixture
def world(tmp_path, monkeypatch):
    """(SentEval folder, a saved random bag-of-words model folder) under ``tmp_path``."""
    from qt_hard.data.sources import senteval as senteval_source
    from qt_hard.encoders import random_encoder

    data = write_senteval(tmp_path / "se")
    monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines())
    model = tmp_path / "run" / "final"
    random_encoder("bow", ["a b c good bad the movie"] * 3, seed=0).save(model)
    return data, model


def _eval(data, model, *extra) -> int:
    return main(
        ["eval", "senteval", "--model", str(model), "--data", str(data), "--tasks", "CR", "--kfold", "2", *extra]
    )


def _one_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("qt-hard: error:")]
    assert len(err) == 1, err
    return err[0]


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_output_onto_the_model_file_is_refused(world, capsys):
    """The issue's first example: ``--output RUN/final/model.safetensors`` wrote the results JSON
    over the model and exited 0."""
    data, model = world
    before = _snapshot(model)
    assert _eval(data, model, "--output", str(model / "model.safetensors")) == 2
    assert "inside the saved model" in _one_line(capsys)
    assert _snapshot(model) == before
    # A run's own files and a file of another kind are refused too; a new file beside the run is fine.
    (model.parent / "config.yaml").write_text("out_dir: run\ntrain: {}\n")
    (model.parent / "metrics.csv").write_text("step,loss\n")
    assert _eval(data, model, "--output", str(model.parent / "metrics.csv")) == 2
    assert "run's own" in _one_line(capsys)
    notes = model.parent / "notes.txt"
    notes.write_text("mine\n")
    assert _eval(data, model, "--output", str(notes)) == 2
    assert "is not a result file qt-hard wrote" in _one_line(capsys)
    assert notes.read_text() == "mine\n"
    assert _eval(data, model, "--output", str(data / "CR" / "r.json")) == 2
    assert "inside the data folder" in _one_line(capsys)
    assert _eval(data, model, "--output", str(model.parent / "cr.json")) == 0
    assert _eval(data, model, "--output", str(model.parent / "cr.json")) == 0  # its own result: replaced


def _retrain(model):
    """The same folder, other weights (what retraining into the same --out does)."""
    from safetensors.torch import load_file, save_file

    weights = load_file(model / "model.safetensors")
    save_file({k: v + 1.0 for k, v in weights.items()}, model / "model.safetensors")
    os.utime(model / "model.safetensors", ns=(1, 2_000_000_000_000_000_000))


def test_cache_is_keyed_by_the_weights(world, tmp_path, capsys):
    """The issue's fourth example: a model retrained into the same folder read the old model's
    embeddings from --cache and reported the old score."""
    data, model = world
    cache = tmp_path / "emb.npz"
    assert _eval(data, model, "--cache", str(cache), "--output", str(tmp_path / "a.json")) == 0
    assert _eval(data, model, "--cache", str(cache), "--output", str(tmp_path / "a2.json")) == 0
    assert "cached embeddings" in capsys.readouterr().err  # same weights: read
    _retrain(model)
    assert _eval(data, model, "--cache", str(cache), "--output", str(tmp_path / "b.json")) == 0
    err = capsys.readouterr().err
    assert "made from other weights" in err and "cached embeddings from" not in err
    assert _eval(data, model, "--output", str(tmp_path / "fresh.json")) == 0  # no cache at all
    b, fresh = (json.loads((tmp_path / n).read_text())["results"]["CR"] for n in ("b.json", "fresh.json"))
    assert b["acc"] == fresh["acc"]
    # a cache of another model spec is refused before the model loads (it was a ValueError traceback)
    assert _eval(data, model.parent, "--cache", str(cache)) == 2
    assert "holds the embeddings of model" in _one_line(capsys)


def test_cache_that_cannot_be_written_costs_no_result(world, tmp_path, capsys, monkeypatch):
    """An unwritable --cache is refused before the evaluation; a write that fails at the end (a full
    disk) leaves the result written, the old cache whole and no partial file."""
    data, model = world
    (tmp_path / "ro").mkdir()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert _eval(data, model, "--cache", str(blocker / "emb.npz"), "--output", str(tmp_path / "r.json")) == 2
    assert "--cache" in _one_line(capsys)
    cache = tmp_path / "emb.npz"
    assert _eval(data, model, "--cache", str(cache)) == 0
    old = cache.read_bytes()
    _retrain(model)  # the next run writes the cache anew
    real_fsync = os.fsync

    def full_disk(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".npz"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    assert _eval(data, model, "--cache", str(cache), "--output", str(tmp_path / "r.json")) == 2
    line = _one_line(capsys)
    assert "No space left on device" in line and "the results were written to" in line
    assert json.loads((tmp_path / "r.json").read_text())["results"]["CR"]["acc"] > 0
    assert cache.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


@pytest.mark.parametrize("damage", ["truncated", "garbage", "nan rows"])
def test_damaged_cache_is_refused_in_one_line(world, tmp_path, capsys, damage):
    data, model = world
    cache = tmp_path / "emb.npz"
    assert _eval(data, model, "--cache", str(cache)) == 0
    if damage == "truncated":  # what a kill mid-write used to leave
        cache.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])
    elif damage == "garbage":
        cache.write_bytes(b"not an npz file")
    else:
        with np.load(cache, allow_pickle=True) as f:
            parts = {k: f[k] for k in f.files}
        parts["embeddings"][0, 0] = np.nan
        with open(cache, "wb") as fh:
            np.savez(fh, **parts)
    before = cache.read_bytes()
    assert _eval(data, model, "--cache", str(cache)) == 2
    assert f"embedding cache {cache} is damaged" in _one_line(capsys)
    assert cache.read_bytes() == before


def test_non_finite_embeddings_are_refused(world, capsys):
    """A model with NaN weights (a run trained into a NaN loss) is refused, not a traceback."""
    from safetensors.torch import load_file, save_file

    data, model = world
    weights = load_file(model / "model.safetensors")
    save_file({k: v * float("nan") for k, v in weights.items()}, model / "model.safetensors")
    assert _eval(data, model) == 2
    assert "hold NaN or infinite values" in _one_line(capsys)


def test_compare_of_two_kinds_is_refused(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"kind": "senteval", "results": {"CR": {"acc": 70.0}}}))
    b.write_text(json.dumps({"kind": "wiki", "results": {"linear": {"acc": 50.0}, "classes": 3}}))
    assert main(["eval", "compare", str(a), str(b)]) == 2
    assert "cannot compare a 'senteval' result with a 'wiki' result" in _one_line(capsys)


def test_eval_wiki_refuses_a_damaged_run_config(tmp_path, capsys):
    from test_data_wiki import make_archive

    wiki = make_archive(tmp_path, n_articles=2, n_sent=10)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("data: {kind: wiki, seed: [0\n")  # cut short mid-write
    args = ["eval", "wiki", "--model", str(run), "--data", str(wiki), "--classes", "2"]
    assert main(args) == 2
    assert "is not valid YAML" in _one_line(capsys)


def test_task_file_with_a_byte_order_mark_is_refused(world, capsys):
    """A latin-1 task file re-saved with a UTF-8 byte-order mark scored differently (the mark glued to
    its first word), silently; a UTF-8 file's mark is read as the signature it is."""
    data, model = world
    pos = data / "CR" / "custrev.pos"
    pos.write_bytes(b"\xef\xbb\xbf" + pos.read_bytes())
    assert _eval(data, model) == 2
    assert "starts with a UTF-8 byte-order mark" in _one_line(capsys)


def test_a_result_that_cannot_be_written_leaves_the_old_one(world, tmp_path, capsys, monkeypatch):
    """A full disk while --output is written: one line, the previous result whole, no partial file."""
    data, model = world
    out = tmp_path / "r.json"
    assert _eval(data, model, "--output", str(out)) == 0
    before = out.read_bytes()

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    assert _eval(data, model, "--output", str(out), "--name", "again") == 2
    assert "result file" in (line := _one_line(capsys)) and "No space left on device" in line
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []
