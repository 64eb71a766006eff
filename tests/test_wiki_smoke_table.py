"""scripts/wiki_smoke_table.py: its rows' commands, the rows it appends, its refusals (no training here:
the commands are replaced by a stand-in that writes what ``qt-hard eval wiki --output`` writes)."""

from __future__ import annotations

import json

import pytest
from _scripts import load_script


@pytest.fixture
def script():
    return load_script("wiki_smoke_table")


def test_rows_read_the_wiki50_that_data_wiki_builds(script, tmp_path):
    build = script.data_command(tmp_path)
    assert build[3:] == ["data", "wiki", "--articles", "50", "--out", str(tmp_path / "wiki50")]
    argvs, result = script.commands("hf_trained", tmp_path)
    assert [a[3] for a in argvs] == ["train", "eval"]
    assert argvs[0][4] == "configs/hf_wiki_smoke.yaml" and str(tmp_path / "hf") in argvs[0]
    assert argvs[1][argvs[1].index("--data") + 1] == str(tmp_path / "wiki50") and argvs[1][-1] == str(result)
    (control,), _ = script.commands("minilm", tmp_path)
    assert control[control.index("--model") + 1] == "minilm" and "--split-seed" in control
    assert control[control.index("--data") + 1] == str(tmp_path / "wiki50")
    assert not any("cache" in part for row in script.ROWS for a in script.commands(row, tmp_path)[0] for part in a)


def test_each_row_appends_its_accuracies_commands_and_context(script, tmp_path, monkeypatch):
    def fake_run(argv):
        if "--output" in argv:
            res = {"mean_classifier": {"acc": 50.0}, "linear": {"acc": 60.0 + len(argv)}}
            (tmp_path / argv[argv.index("--output") + 1]).write_text(json.dumps({"results": res}))
        return 1.5

    ran = []
    monkeypatch.setattr(script, "_run", lambda argv: ran.append(argv[3:5]) or fake_run(argv))
    monkeypatch.chdir(tmp_path)
    assert script.main(["--out", "rows.jsonl", "--runs", "r", "--rows", "bow_trained,bow_untrained"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [r["row"] for r in rows] == ["bow_trained", "bow_untrained"]
    assert ran[0] == ["data", "wiki"] and sum(a == ["data", "wiki"] for a in ran) == 1  # Wiki-50 built once, first
    assert (
        rows[0]["data_command"] == "qt-hard data wiki --articles 50 --out r/wiki50" and rows[0]["data_seconds"] == 1.5
    )
    assert rows[0]["wall_seconds"] == [1.5, 1.5] and rows[0]["commands"][0].startswith("qt-hard train ")
    assert rows[1]["linear_acc"] != rows[0]["linear_acc"] and rows[1]["mean_classifier_acc"] == 50.0
    assert {"commit", "utc", "machine", "torch", "threads", "load_average_1min", "command"} <= set(rows[0])


@pytest.mark.parametrize(
    "argv, says",
    [(["--rows", "bow_trained,nope"], "unknown nope"), (["--rows", ","], "at least one row")],
)
def test_refusals_are_one_line_and_write_nothing(script, tmp_path, capsys, argv, says):
    out = tmp_path / "rows.jsonl"
    with pytest.raises(SystemExit) as stop:
        script.main(["--out", str(out), "--runs", str(tmp_path / "runs"), *argv])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and says in err
    assert not out.exists() and not (tmp_path / "runs").exists()
