"""Faults across the surfaces (retrieval, grid, config, plugin), each refused in one line or handled:
results compared on different data, grids whose inputs changed under their ledger, a user's file
where a table goes, a duplicated config key, a seed numpy cannot take, a batch larger than the data,
a damaged ledger record, an argument that would be ignored, a batch with an anchor without a
negative, a disk that fills while a grid claims a cell."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest


from qt_hard.cli import main


def _one_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) >= 1 and lines[-1].startswith("qt-hard: error: "), lines
    assert not any("Traceback" in x for x in lines)
    return lines[-1]


def _retrieval(path: Path, split: str, ndcg: float, data: str = "beir/scifact") -> str:
    protocol = {"data": data, "split": split}
    path.write_text(
        json.dumps({"kind": "retrieval", "name": path.stem, "protocol": protocol, "results": {"ndcg@10": ndcg}})
    )
    return str(path)


# ------------------------------------------------------------------------------------------ retrieval
def test_compare_refuses_results_of_two_splits(tmp_path, capsys):
    a, b = _retrieval(tmp_path / "a.json", "dev", 60.0), _retrieval(tmp_path / "b.json", "test", 62.0)
    assert main(["eval", "compare", a, b]) == 2
    assert "split 'dev' in" in _one_line(capsys)


def test_compare_names_the_dataset_split_and_metric(tmp_path, capsys):
    a, b = _retrieval(tmp_path / "a.json", "test", 60.0), _retrieval(tmp_path / "b.json", "test", 62.5)
    assert main(["eval", "compare", a, b]) == 0
    out = capsys.readouterr().out
    assert out.startswith("retrieval results on dataset scifact, split test; each row one metric")
    assert "| ndcg@10 | 60.00 | 62.50 | +2.50 |" in out
    c = _retrieval(tmp_path / "c.json", "test", 61.0, data="beir/nfcorpus")
    assert main(["eval", "compare", a, c]) == 2
    assert "dataset 'scifact' in" in _one_line(capsys)


# ------------------------------------------------------------------------------------------ grid
@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setenv("QT_HARD_EXPERIMENTS", "_toy_experiment")


def test_a_full_disk_when_a_cell_is_claimed_stops_in_one_line_leaving_no_file(tmp_path, monkeypatch, capsys, toy):
    real = Path.write_text

    def full_disk(self, *args, **kwargs):
        if self.parent.name == "claims":  # the file is created, then the disk fills mid-write
            self.touch()
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    out = tmp_path / "out"
    assert main(["grid", "run", "toy", "--out", str(out), "--rows", "a", "--seeds", "0"]) == 2
    line = _one_line(capsys)
    assert "claim of the cell" in line and "No space left on device" in line
    assert list((out / "claims").iterdir()) == []


@pytest.mark.parametrize("seeds", ["-1", str(2**32)])
def test_a_seed_numpy_cannot_take_is_refused_before_any_cell(tmp_path, capsys, toy, seeds):
    out = tmp_path / "out"
    assert main(["grid", "run", "toy", "--out", str(out), "--rows", "a", f"--seeds={seeds}"]) == 2
    assert f"--seeds must be an integer in [0, 4294967295] (numpy's seeds), got {seeds}" in _one_line(capsys)
    assert not out.exists()


# ------------------------------------------------------------------------------------------ config
SMOKE = str(Path(__file__).resolve().parent.parent / "configs" / "qt_books_smoke.yaml")


def test_a_config_with_a_key_twice_is_refused_naming_file_and_line(tmp_path):
    from qt_hard.errors import ConfigError
    from qt_hard.training.config import load_config

    cfg = tmp_path / "twice.yaml"
    cfg.write_text("train:\n  lr: 0.1\n  steps: 5\ntrain:\n  lr: 0.2\n")
    with pytest.raises(ConfigError, match=r"twice.yaml:4: key 'train' is given twice \(first on line 1\)"):
        load_config(cfg)
    cfg.write_text("train:\n  lr: 0.1\n  lr: 0.2\n")
    with pytest.raises(ConfigError, match=r"twice.yaml:3: key 'lr' is given twice"):
        load_config(cfg)


def test_a_negative_train_seed_is_refused_with_the_config(tmp_path, capsys):
    from qt_hard.errors import ConfigError
    from qt_hard.training.config import load_config

    with pytest.raises(ConfigError, match=r"train.seed must be an integer in \[0, 4294967295\]"):
        load_config(SMOKE, ["train.seed=-1"])
    with pytest.raises(SystemExit) as stop:  # argparse's own one-line refusal
        main(["eval", "retrieval", "--model", "random:bow", "--seed=-3"])
    assert stop.value.code == 2
    assert "the seed must be an integer in [0, 4294967295]" in _one_line(capsys)


def test_a_batch_larger_than_the_data_is_a_user_error():
    """``qt-hard train configs/qt_books_smoke.yaml data.max_books=1 train.batch_size=8000`` ended in
    the ValueError's traceback once the corpus was read; each pipeline's task refuses it as the
    config error it is (one line, before a step is trained)."""
    from types import SimpleNamespace

    import numpy as np
    import torch

    from qt_hard.errors import UserError
    from qt_hard.graph.pipeline import GraphTask
    from qt_hard.text.batches import ContextTask
    from qt_hard.vision.batches import ImageTask

    with pytest.raises(UserError, match="corpus has 3 sentences, fewer than two batches of 8"):
        ContextTask(SimpleNamespace(lengths=np.ones(3)), np.zeros(3), batch_size=8, seed=0)
    with pytest.raises(UserError, match="2 graphs, fewer than train.batch_size=4"):
        GraphTask([object(), object()], batch_size=4, seed=0)
    with pytest.raises(UserError, match="2 training images, fewer than train.batch_size=4"):
        ImageTask(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), [0, 1], None, batch_size=4, seed=0)


def test_a_ledger_record_missing_a_task_is_refused_naming_file_and_line(tmp_path, capsys):
    out = tmp_path / "qt"
    out.mkdir()
    head = {"ledger": 1, "setup": {"config": "c.yaml", "overrides": []}}
    rec = {"row": "uniform", "seed": 0, "protocol": "senteval", "acc": {"MR": 70.0, "CR": 80.0}}
    (out / "results.jsonl").write_text(json.dumps(head) + "\n" + json.dumps(rec) + "\n")
    assert main(["grid", "run", "qt-table", "--out", str(out), "--summary-only"]) == 2
    line = _one_line(capsys)
    assert f"{out / 'results.jsonl'}:2: the record's acc lacks the task(s) SUBJ, MPQA, TREC, MRPC" in line


# ------------------------------------------------------------------------------------------ plugin
def test_the_plugin_refuses_a_guard_margin_without_a_guard():
    """``HardNegativesLoss(model, guard_margin=0.1)`` trained without any guard: the margin was dropped."""
    import torch

    from qt_hard.integrations.sentence_transformers import HardNegativesLoss

    with pytest.raises(ValueError, match=r"guard_margin=0.1 is read by the guard only"):
        HardNegativesLoss(torch.nn.Linear(2, 2), negatives="hard", guard_margin=0.1)
    assert HardNegativesLoss(torch.nn.Linear(2, 2), negatives="hard", guard="absolute", guard_margin=0.1).guard_margin
    with pytest.raises(ValueError, match=r"beta_units='cosine' is read with beta= only"):  # was dropped too
        HardNegativesLoss(torch.nn.Linear(2, 2), negatives="hard", beta_units="cosine")


# ------------------------------------------------------------------------------------------ negatives
@pytest.mark.parametrize("negatives, options", [("label", {}), ("hard", {"collision_free": True}), ("uniform", {})])
def test_an_anchor_without_a_negative_is_refused_by_every_strategy_unless_skipped(negatives, options):
    """The label-aware strategy returned 0.0 for a batch of one class (a batch of one pair raised)."""
    import dataclasses

    import torch

    from qt_hard.errors import NotEnoughCandidatesError
    from qt_hard.negatives import make_strategy
    from qt_hard.negatives.scores import two_view_scores

    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(4, 8, generator=g), torch.randn(4, 8, generator=g)
    one_class = two_view_scores(z1, z2, labels=torch.zeros(4, dtype=torch.long))
    if negatives != "uniform":
        with pytest.raises(NotEnoughCandidatesError, match="the batch has no negative"):
            make_strategy(negatives, **options)(one_class)
        skipped = make_strategy(negatives, skip_anchors_without_negatives=True, **options)(one_class)
        assert float(skipped) == 0.0  # asked for: every anchor left out
    scores = two_view_scores(z1, z2, labels=torch.arange(4))
    lone = dataclasses.replace(scores, neg_valid=scores.neg_valid.clone().index_fill_(0, torch.tensor([0]), False))
    with pytest.raises(NotEnoughCandidatesError, match="1 of the batch's 8 anchors have no negative"):
        make_strategy(negatives, **options)(lone)
    per_anchor, counted = make_strategy(negatives, skip_anchors_without_negatives=True, **options).per_anchor(lone)
    assert counted.tolist() == [False] + [True] * 7
    loss = make_strategy(negatives, skip_anchors_without_negatives=True, **options)(lone)
    assert torch.allclose(loss, per_anchor[1:].mean())


def test_a_users_file_where_a_table_goes_is_refused_before_any_cell(tmp_path, capsys, toy):
    out = tmp_path / "out"
    out.mkdir()
    (out / "table.md").write_text("my notes\n")
    assert main(["grid", "run", "toy", "--out", str(out), "--rows", "a", "--seeds", "0"]) == 2
    assert "table.md exists and is not a table qt-hard wrote" in _one_line(capsys)
    assert (out / "table.md").read_text() == "my notes\n" and not (out / "ran").exists()


def test_qt_tables_never_replace_a_users_results_csv(tmp_path, capsys):
    out = tmp_path / "qt"
    out.mkdir()
    (out / "results.jsonl").write_text(json.dumps({"ledger": 1, "setup": {"config": "c.yaml", "overrides": []}}) + "\n")
    (out / "results.csv").write_text("name,score\nmine,1\n")
    assert main(["grid", "run", "qt-table", "--out", str(out), "--summary-only"]) == 2
    assert "results.csv exists and is not a table qt-hard wrote" in _one_line(capsys)
    assert (out / "results.csv").read_text() == "name,score\nmine,1\n"


def test_a_table_is_never_written_over_an_input_and_its_own_are_replaced(tmp_path, capsys, toy):
    out = tmp_path / "out"
    assert main(["grid", "run", "toy", "--out", str(out), "--rows", "a", "--seeds", "0"]) == 0
    assert main(["grid", "run", "toy", "--out", str(out), "--rows", "a,bb", "--seeds", "0"]) == 0  # its own table
    assert "| bb | 0 | 2 |" in (out / "table.md").read_text()
    capsys.readouterr()
    table = str(out / "table.md")
    assert main(["grid", "run", "toy", "--out", str(out), "--summary-only", "--wait-for", table]) == 2
    assert "is the --wait-for file" in _one_line(capsys)


def test_a_config_edited_in_place_is_not_served_the_old_records(tmp_path, capsys, toy):
    cfg, out = tmp_path / "c.yaml", tmp_path / "out"
    cfg.write_text("train:\n  lr: 0.1\n  steps: 5\n")
    run = ["grid", "run", "toy", "--out", str(out), "--rows", "a", "--seeds", "0", "--config", str(cfg)]
    assert main(run) == 0
    cfg.write_text("train:\n  lr: 0.2\n  steps: 7\n")  # another lr and steps, the same path
    assert main(run) == 2
    line = _one_line(capsys)
    assert "1 record(s) were made from another config" in line and f"config {cfg}:" in line and "--redo" in line
    assert main([*run, "--redo"]) == 0  # recorded apart: the new record carries the new config's hash
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()[1:]]
    assert len(recs) == 2 and recs[0]["made_from"]["config"] != recs[1]["made_from"]["config"]
    assert main(run) == 0  # the newest record is this config's now


def test_a_model_folder_replaced_is_not_served_the_old_records(tmp_path, capsys, toy):
    import shutil

    model, out = tmp_path / "model", tmp_path / "out"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"old weights")
    run = ["grid", "run", "toy", "--out", str(out), "--rows", "a", "--seeds", "0", "--model", str(model)]
    assert main(run) == 0
    shutil.rmtree(model)
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"new weights, longer")
    assert main(run) == 2
    assert "were made from another model" in _one_line(capsys)


def test_weights_replaced_under_the_same_size_and_time_are_another_model(tmp_path, capsys, toy):
    import os

    model, out = tmp_path / "model", tmp_path / "out"
    model.mkdir()
    weights = model / "model.safetensors"
    weights.write_bytes(b"old weights")
    run = ["grid", "run", "toy", "--out", str(out), "--rows", "a", "--seeds", "0", "--model", str(model)]
    assert main(run) == 0
    stat = weights.stat()
    weights.write_bytes(b"new weights")  # the same length
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert main(run) == 2
    assert "were made from another model" in _one_line(capsys)


def test_the_data_a_config_reads_is_part_of_what_made_a_record(tmp_path):
    from qt_hard.experiments.identity import made_from

    books = tmp_path / "books"
    books.mkdir()
    (books / "a.txt").write_text("One sentence. Another one.\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"data:\n  kind: books\n  path: {books}\n")
    before = made_from({"config": str(cfg), "overrides": []})
    (books / "b.txt").write_text("A book added to the folder.\n")
    after = made_from({"config": str(cfg), "overrides": []})
    assert before["config"] == after["config"] and before["data"] != after["data"]


def test_a_full_disk_where_the_ledger_is_created_stops_in_one_line(tmp_path, monkeypatch, capsys, toy):
    import qt_hard.experiments.ledger as ledger_module

    real = os.open

    def full_disk(path, flags, *args):
        if str(path).endswith("results.jsonl") and flags & os.O_CREAT:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, flags, *args)

    monkeypatch.setattr(ledger_module.os, "open", full_disk)
    out = tmp_path / "out"
    assert main(["grid", "run", "toy", "--out", str(out), "--rows", "a", "--seeds", "0"]) == 2
    assert "results.jsonl: the record could not be appended (No space left on device)" in _one_line(capsys)
    assert sorted(p.name for p in out.iterdir()) == ["claims", "ran"] and not list((out / "claims").iterdir())


def test_a_finished_run_of_another_config_is_never_taken_for_this_ones(tmp_path):
    """A grid cell found its run folder finished and took its result, whatever config trained it."""
    from qt_hard.errors import UserError
    from qt_hard.experiments.runner import train_run
    from qt_hard.training.config import load_config, save_config

    run = tmp_path / "run"
    trained = load_config(SMOKE, [f"out_dir={run}", "train.lr=0.1", "train.steps=5"], check_pipeline=False)
    run.mkdir()
    save_config(trained, run / "config.yaml")
    (run / "eval.json").write_text("{}")
    assert train_run(trained) == run  # its own config: found finished, not trained again
    edited = load_config(SMOKE, [f"out_dir={run}", "train.lr=0.2", "train.steps=7"], check_pipeline=False)
    with pytest.raises(UserError, match=r"holds a finished run of another config \(train.lr: 0.1 -> 0.2; train.steps"):
        train_run(edited)


def test_a_full_disk_while_the_mined_triplets_are_written_leaves_no_file(tmp_path, monkeypatch):
    """The retrieval grids' mined triplets: a full disk at their write is one WriteFailedError naming
    them, and the folder holds neither a half file nor the build's lock afterwards."""
    import errno
    from pathlib import Path
    from types import SimpleNamespace

    from qt_hard.errors import UserError
    from qt_hard.experiments.specs import retrieval_data, scifact, st_finetuning

    sf = SimpleNamespace(pairs=[("q1", "d1")])
    monkeypatch.setattr(retrieval_data, "mine_per_pair", lambda *a, **k: [("q1", "d1", "d2")])
    monkeypatch.setattr(st_finetuning, "load_start", lambda *a, **k: None)
    real = Path.write_text

    def full(self, *a, **k):
        if "mined" in self.name:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", full)
    out = tmp_path / "out"
    with pytest.raises(UserError, match="mined triplets") as err:
        scifact.mine(sf, out / "mined.jsonl")
    assert "No space left on device" in str(err.value) and "\n" not in str(err.value)
    assert not out.exists() or list(out.iterdir()) == []
    monkeypatch.setattr(Path, "write_text", real)
    assert scifact.mine(sf, out / "mined.jsonl") == [("q1", "d1", "d2")]


def test_a_table_of_the_same_kind_over_other_rows_or_columns_is_replaced_and_a_users_file_is_not(tmp_path):
    """A results folder copied elsewhere (no list of written files) and summarized over fewer datasets:
    its Markdown table (same first heading, other columns) and JSON table (shared keys) are qt-hard's to
    replace; a user's notes, a CSV with another header and a JSON without a shared key are not."""
    from qt_hard.paths import made_here

    new_md = "| row | MUTAG |\n|---|---|\n| a | 1 |\n"
    cases = [
        ("table.md", "| row | MUTAG | PTC |\n|---|---|---|\n| a | 1 | 2 |\n", new_md, True),
        ("table.md", "my notes\n| item | cost |\n", new_md, False),
        ("notes.md", "# my notes\n", new_md, False),
        ("table.json", '{"a": {"MUTAG": 1, "PTC": 2}, "b": {}}', '{"a": {"MUTAG": 1}}', True),
        ("table.json", '{"mine": 1}', '{"a": {"MUTAG": 1}}', False),
        ("results.csv", "lr,acc\n", "row,seed,acc\n", False),
    ]
    for name, old, new, replaceable in cases:
        path = tmp_path / name
        path.write_text(old)
        assert made_here(new)(path) is replaceable, (name, old)
