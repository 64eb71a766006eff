"""``qt-hard grid run wiki-smoke``: its rows' commands, the records a run appends to the ledger after its
setup line (no training here: the commands are replaced by a stand-in that writes what ``qt-hard eval
wiki --output`` writes), the committed ledger opening with the setup its records carry, its refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from qt_hard.cli import main
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.specs import wiki_smoke

ROOT = Path(__file__).resolve().parents[1]


def test_rows_read_the_wiki50_that_data_wiki_builds(tmp_path):
    build = wiki_smoke.data_command(tmp_path)
    assert build[3:] == ["data", "wiki", "--articles", "50", "--out", str(tmp_path / "wiki50")]
    argvs, result = wiki_smoke.commands("hf_trained", tmp_path)
    assert [a[3] for a in argvs] == ["train", "eval"]
    assert argvs[0][4] == "configs/hf_wiki_smoke.yaml" and str(tmp_path / "hf") in argvs[0]
    assert argvs[1][argvs[1].index("--data") + 1] == str(tmp_path / "wiki50") and argvs[1][-1] == str(result)
    (control,), _ = wiki_smoke.commands("minilm", tmp_path)
    assert control[control.index("--model") + 1] == "minilm" and "--split-seed" in control
    assert control[control.index("--data") + 1] == str(tmp_path / "wiki50")
    assert not any(
        "cache" in part for row in wiki_smoke.ROWS for a in wiki_smoke.commands(row, tmp_path)[0] for part in a
    )


def test_each_row_appends_a_line_of_its_accuracies_commands_and_context(tmp_path, monkeypatch, capsys):
    def fake_run(argv):
        if "--output" in argv:
            res = {"mean_classifier": {"acc": 50.0}, "linear": {"acc": 60.0 + len(argv)}}
            (tmp_path / argv[argv.index("--output") + 1]).write_text(json.dumps({"results": res}))
        return 1.5

    ran = []
    monkeypatch.setattr(wiki_smoke, "_run", lambda argv: ran.append(argv[3:5]) or fake_run(argv))
    monkeypatch.chdir(tmp_path)
    grid = ["grid", "run", "wiki-smoke", "--out", "res", "--runs", "r"]
    assert main([*grid, "--rows", "bow_untrained,bow_trained"]) == 0
    head, *rows = [json.loads(line) for line in (tmp_path / "res" / "wiki_smoke.jsonl").read_text().splitlines()]
    assert head == {"ledger": 1, "setup": {"data_command": "qt-hard data wiki --articles 50 --out r/wiki50"}}
    assert [r["row"] for r in rows] == ["bow_trained", "bow_untrained"]  # the rows' own order
    assert {"row", "mean_classifier_acc", "linear_acc", "commands", "wall_seconds", "data_seconds"} <= set(rows[0])
    assert ran[0] == ["data", "wiki"] and sum(a == ["data", "wiki"] for a in ran) == 1  # Wiki-50 built once, first
    assert (
        rows[0]["data_command"] == "qt-hard data wiki --articles 50 --out r/wiki50" and rows[0]["data_seconds"] == 1.5
    )
    assert rows[0]["wall_seconds"] == [1.5, 1.5] and rows[0]["commands"][0].startswith("qt-hard train ")
    assert rows[1]["linear_acc"] != rows[0]["linear_acc"] and rows[1]["mean_classifier_acc"] == 50.0
    assert {"commit", "utc", "machine", "torch", "threads", "load_average_1min", "command"} <= set(rows[0])
    table = (tmp_path / "res" / "wiki_smoke.md").read_text()
    assert (
        "written by `qt-hard grid run wiki-smoke --out res --runs r`" in table
        and table in capsys.readouterr().out + "\n"
    )
    (tmp_path / "r" / "wiki50").mkdir()  # built: the next rows reuse it
    assert main([*grid, "--rows", "minilm,bow_trained"]) == 0  # bow_trained is done: minilm alone runs
    rows = Ledger(tmp_path / "res", ("row",), name="wiki_smoke.jsonl").records()
    assert [r["row"] for r in rows] == ["bow_trained", "bow_untrained", "minilm"] and rows[-1]["data_seconds"] is None


def test_the_committed_ledger_opens_with_the_setup_its_records_carry(tmp_path, capsys):
    shutil.copy(ROOT / "results" / "wiki_smoke.jsonl", tmp_path / "wiki_smoke.jsonl")
    led = Ledger(tmp_path, ("row",), name="wiki_smoke.jsonl")
    assert led.setup == {"data_command": "qt-hard data wiki --articles 50 --out runs/wiki_smoke/wiki50"}
    assert led.done() == {(r,) for r in wiki_smoke.ROWS} and len(led.records()) == 8  # reruns of each row, kept
    assert main(["grid", "run", "wiki-smoke", "--out", str(tmp_path)]) == 0  # every row done: nothing runs
    assert main(["grid", "run", "wiki-smoke", "--out", str(tmp_path), "--runs", str(tmp_path / "r")]) == 2
    assert "holds results of another setup (data_command:" in capsys.readouterr().err
    assert (tmp_path / "wiki_smoke.jsonl").read_bytes() == (ROOT / "results" / "wiki_smoke.jsonl").read_bytes()


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--rows", "bow_trained,nope"], "--rows: unknown row 'nope'; rows are bow_trained, bow_untrained"),
        (["--rows", ","], "--rows: give at least one row"),
        (["--seeds", "0"], "unrecognized arguments: --seeds 0"),  # one run a row: no seeds
    ],
)
def test_refusals_are_one_line_and_write_nothing(tmp_path, capsys, argv, says):
    out = tmp_path / "o"
    try:
        status = main(["grid", "run", "wiki-smoke", "--out", str(out), "--runs", str(tmp_path / "runs"), *argv])
    except SystemExit as stop:  # argparse's own refusal
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err
    assert not out.exists() and not (tmp_path / "runs").exists()
