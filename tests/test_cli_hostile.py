"""Hostile inputs the refusal table (tests/refusals.yaml) cannot express as one command line: a
signal during evaluation, a second run into a folder in use, and the entry points under scripts/
(each refuses with status 2 and one line ``error: ...``, writing nothing). In-process, so cheap."""

from __future__ import annotations

import os
import signal
import sys

import pytest
import yaml
from _scripts import load_script

from qt_hard.cli import main as cli_main


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_evaluation_stops_with_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, signum):
    import qt_hard.evaluation.cli as eval_cli

    reached = []

    def fake(args):  # the evaluation, interrupted half way
        reached.append(True)
        os.kill(os.getpid(), signum)
        reached.append("after the signal")

    monkeypatch.setattr(eval_cli, "cmd_compare", fake)
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    status = cli_main(["eval", "compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert reached == [True] and status == 128 + int(signum)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [f"qt-hard: stopped by {signum.name}; no result was written"]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert list(tmp_path.iterdir()) == []


def test_save_results_leaves_no_half_file(tmp_path):
    from qt_hard.evaluation.report import save_results

    save_results(tmp_path / "r.json", {"kind": "x", "results": {}})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_second_run_into_a_folder_in_use_is_refused(tmp_path, capsys):
    from test_training import qt_config

    from qt_hard.training.outdir import run_folder_lock

    tree = qt_config(tmp_path, steps=2)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(tree))
    out = tmp_path / "busy"
    out.mkdir()
    # Another process holds the lock: flock is per open file, so a lock taken through a separate
    # descriptor in a child stands for "another run".
    import subprocess

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        status = cli_main(["train", str(cfg), "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 2 and len(err) == 1 and "is in use by another training run" in err[0], err
        assert list(out.iterdir()) == []
    finally:
        holder.kill()
        holder.wait()
    # Once free, the folder is taken (and held while the block runs).
    with run_folder_lock(out):
        pass


def _script(name, argv, monkeypatch, capsys):
    from qt_hard.script_cli import run_script

    mod = load_script(name)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *argv])
    status = run_script(mod.main) if name in ("qt_table", "qt_heldout") else run_script(mod.main, argv)
    return status, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize(
    "name,argv,expected",
    [
        ("qt_table", ["--out", "{tmp}/o", "--seeds", "a,b", "--rows", "uniform"], "error: --seeds must be"),
        ("qt_table", ["--out", "{tmp}/o", "--rows", "bogus"], "error: unknown row 'bogus'"),
        ("qt_table", ["--out", "{tmp}/o", "--config", "{tmp}/binary.yaml"], "error: config file {tmp}/binary.yaml is"),
        ("qt_table", ["--out", "{tmp}/file.txt"], "error: --out {tmp}/file.txt is a file, not a folder"),
        ("qt_table", ["--out", "{tmp}/o", "--kfold", "x"], "error: qt_table.py: argument --kfold"),
        ("k_vs_n", ["run", "{tmp}/binary.yaml", "--results", "{tmp}/o/r.csv"], "error: grid {tmp}/binary.yaml is"),
        ("k_vs_n", ["run", "configs/k_vs_n_synthetic.yaml", "--seeds", "x"], "error: --seeds must be"),
        ("graph_table", ["--out", "{tmp}/o", "--rows", "bogus"], "error: graph_table.py: unknown rows"),
        ("graph_table", ["--out", "{tmp}/file.txt", "--rows", "infograph"], "error: --out {tmp}/file.txt is a file"),
        ("vision_table", ["--out", "{tmp}/o", "--seeds", "x"], "error: --seeds must be"),
        ("vision_table", ["--out", "{tmp}/o", "--config", "{tmp}/binary.yaml"], "error: config file {tmp}/binary"),
        ("st_finetune", ["--task", "NOPE", "--workdir", "{tmp}/o"], "error: --task NOPE"),
        ("st_finetune", ["--batch-size", "1", "--workdir", "{tmp}/o"], "error: --pairs and --batch-size must be"),
        ("st_finetune", ["--workdir", "{tmp}/file.txt"], "error: --workdir {tmp}/file.txt is a file"),
        (
            "st_compare",
            ["--model", "{tmp}/o", "--out", "{tmp}/r"],
            "error: --model {tmp}/o: not a sentence-transformers",
        ),
        ("st_compare", ["--model", "minilm", "--out", "{tmp}/r", "--rows", "mnrl,bogus"], "error: --rows: unknown row"),
        ("st_compare", ["--out", "{tmp}/file.txt", "--summary-only"], "error: --out {tmp}/file.txt is a file"),
        ("qt_heldout", ["{tmp}/no_model"], "error: no saved encoder at {tmp}/no_model"),
        ("qt_heldout", ["{tmp}/o", "--first", "5", "--last", "2"], "error: need 0 <= --first < --last"),
    ],
)
def test_scripts_refuse_in_one_line_and_write_nothing(name, argv, expected, tmp_path, monkeypatch, capsys):
    (tmp_path / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "file.txt").write_text("a file\n")
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    try:
        status, err = _script(name, argv, monkeypatch, capsys)
    except SystemExit as stop:  # argparse's refusal exits from inside the parser
        status, err = stop.code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(expected.replace("{tmp}", str(tmp_path))), err
    assert "Traceback" not in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before
