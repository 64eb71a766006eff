"""``qt-hard grid run s2v-controls | s2v-precision | s2v-curve``: the precision check (which can fail)
and the choice it makes, the held-out books the curve reads from the config, a toy curve of two points
through the grid command (its ledger, CSV, table and figure, resumed without training again), the
committed curve's CSV as the curve's table writes it from its rows, and the refusals. The three
commands run on a toy model in the dry run of scripts/device_s2v.sh (the commands marker)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from qt_hard.cli import main
from qt_hard.errors import ArgumentError
from qt_hard.experiments.specs import s2v_curve as S

ROOT = Path(__file__).resolve().parents[1]


def row(name, mean_loss, losses, rate=100.0):
    return {"precision": name, "mean_loss": mean_loss, "losses": losses, "sentences_per_s": rate, "batch_size": 400}


def test_a_precision_passes_only_within_the_tolerance_of_float32_and_the_fastest_passing_is_chosen():
    rows = S.compare_precisions(
        [row("fp32", 5.0, [6.0, 4.0]), row("tf32", 5.04, [6.05, 4.03], 150.0), row("bf16", 5.2, [6.0, 4.4], 300.0)],
        0.01,
    )
    by = {r["precision"]: r for r in rows}
    assert by["fp32"]["passed"] and by["fp32"]["rel_diff_mean_loss"] == 0
    assert by["tf32"]["passed"] and by["tf32"]["rel_diff_mean_loss"] == pytest.approx(0.008)
    assert not by["bf16"]["passed"] and by["bf16"]["rel_diff_mean_loss"] == pytest.approx(0.04)
    assert by["bf16"]["max_rel_diff_window"] == pytest.approx(0.1)
    picked = S.choice(rows, budget_s=100.0, points=3, tolerance=0.01)
    assert picked == {
        "precision": "tf32",
        "sentences_per_s": 150.0,
        "batch_size": 400,
        "budget_s": 100.0,
        "steps": 36,  # 150 * 100 / 400 = 37 steps, cut to a multiple of 3
        "tolerance": 0.01,
    }
    # Without float32 nothing can be compared, so nothing passes and nothing is chosen.
    alone = S.compare_precisions([row("bf16", 5.0, [5.0])], 0.01)
    assert not alone[0]["passed"] and S.choice(alone, 100.0, 3, 0.01) is None


def test_held_out_books_come_from_the_config():
    cfg = SimpleNamespace(data=SimpleNamespace(exclude_books=[8, 9, 10]))
    assert S.held_out_range(cfg, None) == (8, 11)
    assert S.held_out_range(cfg, "2,3") == (2, 3)
    with pytest.raises(ArgumentError, match="--heldout 3,2: need 0 <= FIRST < LAST"):
        S.held_out_range(cfg, "3,2")
    cfg.data.exclude_books = [1, 5]
    with pytest.raises(ArgumentError, match="--heldout FIRST,LAST is needed"):
        S.held_out_range(cfg, None)


def test_the_committed_curve_is_the_csv_the_curve_writes_from_its_rows():
    """results/s2v_curve_gpu/curve.csv predates the ledger: its rows, read back as the records a run of
    s2v-curve appends (numbers, booleans), give the same bytes through the curve's table."""

    def value(v: str):
        for cast in (int, float, {"True": True, "False": False}.__getitem__):
            try:
                return cast(v)
            except (ValueError, KeyError):
                pass
        return v

    path = ROOT / "results" / "s2v_curve_gpu" / "curve.csv"
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == S.CURVE_COLUMNS
    records = [{k: v if k == "commit" else value(v) for k, v in r.items()} for r in reversed(rows)]
    assert S.curve_csv(records).encode() == path.read_bytes()


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A toy config (a 16-unit GRU pair on three small books, book 2 left out) and SentEval files."""
    import yaml
    from test_eval_senteval import fixture_lines, write_senteval
    from test_training import qt_config, write_books

    from qt_hard.data.sources import senteval as senteval_source

    monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines())
    tree = qt_config(tmp_path)
    write_books(tmp_path / "books", n_books=3)
    tree["data"]["exclude_books"] = [2]
    tree["objective"] = {"negatives": "uniform", "temperature": 1.0, "normalize": False, "context": 1}
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump(tree))
    return tmp_path / "toy.yaml", write_senteval(tmp_path / "senteval")


def test_a_toy_curve_through_the_grid_command(toy, tmp_path, monkeypatch, capsys):
    config, data = toy
    controls = tmp_path / "s2v_controls.json"
    controls.write_text(json.dumps({"tokenizer_sha1": "x", "rows": {"untrained": {"six_task_mean": 60.0}}}))
    out = tmp_path / "curve"
    grid = ["grid", "run", "s2v-curve", "--out", str(out), "--config", str(config), "--data", str(data)]
    grid += ["--tasks", "CR", "--kfold", "2", "--steps", "4", "--points", "2", "--controls", str(controls)]
    assert main(grid) == 0
    lines = (out / "curve.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["setup"]["heldout"] == [2, 3]  # the config's left-out book
    records = [json.loads(x) for x in lines[1:]]
    assert [r["step"] for r in records] == [2, 4] and records[1]["train_s"] >= records[0]["train_s"]
    assert records[0]["CR"] > 0 and records[0]["MR"] == "" and records[0]["six_task_mean"] == ""
    assert records[0]["control_untrained_mean"] == 60.0 and records[0]["control_bow2400_mean"] == ""
    assert records[0]["controls_same_tokenizer"] is False and 0 <= records[0]["heldout_next_top1"] <= 1
    with (out / "curve.csv").open(newline="") as fh:
        assert [r["step"] for r in csv.DictReader(fh)] == ["2", "4"]
    assert (
        out / "curve.png"
    ).stat().st_size > 1000 and "controls: untrained 60.0, bow2400 -" in capsys.readouterr().out
    import qt_hard.training.loop as loop

    monkeypatch.setattr(loop, "train", lambda *a, **k: (_ for _ in ()).throw(AssertionError("trained again")))
    (out / "curve.csv").unlink()
    assert main(grid) == 0 and (out / "curve.csv").is_file()  # both points done: the tables alone
    assert main([*grid[:5], "--summary-only"]) == 0


@pytest.mark.parametrize(
    "name, argv, says",
    [
        ("s2v-controls", ["--rows", "untrained,nope"], "--rows: unknown row 'nope'; rows are untrained, bow2400"),
        ("s2v-precision", ["--rows", "fp64"], "--rows: unknown row 'fp64'; rows are fp32, tf32, bf16"),
        ("s2v-precision", ["--workers", "2", "--allow-cpu"], "the precisions are timed one at a time"),
        ("s2v-curve", [], "--steps None --points 3: give at least as many steps as points"),
        ("s2v-curve", ["--steps", "6", "--workers", "2"], "the points are one run, each resuming the last"),
        ("s2v-curve", ["--steps", "6", "--tasks", "MR,XX"], "--tasks: unknown task(s) ['XX']"),
        ("s2v-curve", ["--steps", "6", "--heldout", "a,b"], "--heldout a,b: give FIRST,LAST"),
        ("s2v-curve", ["--steps", "6", "--seeds", "0"], "unrecognized arguments: --seeds 0"),  # one run: no seeds
    ],
)
def test_refusals_are_one_line_and_write_nothing(toy, tmp_path, capsys, name, argv, says):
    config, _ = toy
    out = tmp_path / "o"
    try:
        status = main(["grid", "run", name, "--out", str(out), "--config", str(config), *argv])
    except SystemExit as stop:  # argparse's own refusal
        status = stop.code
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and says in err, err
    assert not out.exists()


def test_a_toy_precision_runs_in_a_process_of_its_own(toy, tmp_path):
    config, _ = toy
    out = tmp_path / "precision"
    grid = ["grid", "run", "s2v-precision", "--out", str(out), "--config", str(config), "--rows", "fp32"]
    assert main([*grid, "--allow-cpu", "--steps", "4", "--warmup", "1", "--points", "2"]) == 0
    (rec,) = [json.loads(x) for x in (out / "precision_runs.jsonl").read_text().splitlines()[1:]]
    assert rec["precision"] == "fp32" and rec["steps"] == 4 and rec["sentences_per_s"] > 0 and "threads" not in rec
    assert json.loads((out / "precision_choice.json").read_text())["precision"] == "fp32"
