"""``qt-hard grid run``: one loop for every experiment of the contract, shown on a toy experiment
(tests/_toy_experiment.py): every cell once, resumed without rerunning a finished cell, two commands
on one folder never running the same cell, a SIGKILL at any moment leaving only whole records, a
failed write stopping in one line with every finished record kept."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from qt_hard.cli import main
from qt_hard.experiments.ledger import Ledger

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.fixture(autouse=True)
def toy(monkeypatch):
    monkeypatch.setenv("QT_HARD_EXPERIMENTS", "_toy_experiment")


def ran(out: Path) -> Counter:
    """How often each (row, seed) cell ran, from the markers the toy leaves."""
    marks = (out / "ran").iterdir() if (out / "ran").is_dir() else []
    return Counter("_".join(p.name.split("_")[:2]) for p in marks)


def records(out: Path) -> list[dict]:
    """Every whole record of the ledger (a torn last line is not one)."""
    text = (out / "results.jsonl").read_text()
    return [json.loads(x) for x in text[: text.rfind("\n") + 1].splitlines()[1:]]


def command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "qt_hard.cli", "grid", "run", "toy", "--out", str(out), *extra]


def environment() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)]),
        "QT_HARD_EXPERIMENTS": "_toy_experiment",
    }


def test_every_cell_once_then_a_rerun_runs_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["grid", "run", "toy", "--out", str(out)]) == 0
    assert [(r["row"], r["seed"]) for r in records(out)] == [(r, s) for s in (0, 1) for r in ("a", "bb", "ccc")]
    assert all({"commit", "machine", "utc", "versions"} <= set(r) for r in records(out))  # the contract's
    assert set(ran(out).values()) == {1}
    table = (out / "table.md").read_text()
    assert "| ccc | 1 | 13 |" in table and table.rstrip("\n") in capsys.readouterr().out
    assert main(["grid", "run", "toy", "--out", str(out), "--seeds", "0,1,2"]) == 0  # only seed 2 runs
    assert set(ran(out).values()) == {1} and len(records(out)) == 9
    before = (out / "table.md").read_bytes()
    (out / "table.md").unlink()
    assert main(["grid", "run", "toy", "--out", str(out), "--summary-only"]) == 0
    assert (out / "table.md").read_bytes() == before  # the table regenerates byte for byte


def test_redo_runs_the_asked_cells_again_and_the_tables_read_the_newest(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["grid", "run", "toy", "--out", str(out)]) == 0
    before = (out / "table.md").read_bytes()
    assert main(["grid", "run", "toy", "--out", str(out), "--rows", "a,bb", "--seeds", "0", "--redo"]) == 0
    assert ran(out) == Counter({"a_0": 2, "bb_0": 2, "ccc_0": 1, "a_1": 1, "bb_1": 1, "ccc_1": 1})
    assert [(r["row"], r["seed"]) for r in records(out)][-2:] == [("a", 0), ("bb", 0)]  # the old records stay
    assert (out / "table.md").read_bytes() == before  # one row a cell, the newest record's
    assert len(Ledger(out, ("row", "seed")).latest()) == 6
    assert "2 cells, 2 done, 2 to run again (--redo)" in capsys.readouterr().err


def test_a_cell_run_again_skips_only_what_another_command_reran(tmp_path):
    from qt_hard.experiments.runner import run_claimed

    ledger = Ledger(tmp_path, ("row", "seed"), {"toy": 1})
    ledger.append({"row": "a", "seed": 0, "value": 1})
    since = len(ledger.records())
    work = lambda: {"row": "a", "seed": 0, "value": 2}  # noqa: E731
    assert run_claimed(ledger, ("a", 0), work, [("a", 0)]) is None  # done: skipped without --redo
    assert run_claimed(ledger, ("a", 0), work, [("a", 0)], since) == [work()]  # run again
    assert run_claimed(ledger, ("a", 0), work, [("a", 0)], since) is None  # another command reran it
    assert [r["value"] for r in ledger.records()] == [1, 2]


def test_workers_run_every_cell_once_each_in_a_process_of_its_own(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["grid", "run", "toy", "--out", str(out), "--workers", "2"]) == 0  # the options reach the workers
    cells = sorted((r, s) for s in (0, 1) for r in ("a", "bb", "ccc"))
    assert sorted((r["row"], r["seed"]) for r in records(out)) == cells
    pids = {int(p.name.split("_")[2]) for p in (out / "ran").iterdir()}
    assert set(ran(out).values()) == {1} and os.getpid() not in pids


def test_refusals_are_one_line_and_write_nothing(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["grid", "run", "toy", "--out", str(out), "--rows", "zz"]) == 2
    assert capsys.readouterr().err == "qt-hard: error: --rows: unknown row 'zz'; rows are a, bb, ccc\n"
    assert main(["grid", "run", "toy", "--out", str(out), "--workers", "0"]) == 2
    assert "--workers 0: give at least 1" in capsys.readouterr().err
    assert main(["grid", "run", "toy", "--out", str(out), "--summary-only"]) == 2
    assert "no results.jsonl to summarize" in capsys.readouterr().err
    assert not out.exists()
    assert main(["grid", "list"]) == 0 and "toy" in capsys.readouterr().out


def test_two_commands_on_one_folder_never_run_the_same_cell(tmp_path):
    out, go = tmp_path / "out", tmp_path / "go"
    cmd = command(out, "--seeds", "0,1,2", "--wait-for", str(go))
    env = environment()
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(2)]
    deadline = time.monotonic() + 120
    # Each holds a cell of its own before any cell ends: both are running, on different cells.
    while len(list((out / "claims").glob("[!.]*"))) < 2 if (out / "claims").is_dir() else True:
        assert time.monotonic() < deadline, "the two commands never held a cell each"
        assert all(p.poll() is None for p in procs), [p.stderr.read().decode() for p in procs if p.poll() is not None]
        time.sleep(0.05)
    go.touch()
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    keys = [(r["row"], r["seed"]) for r in records(out)]
    assert len(keys) == 9 and len(set(keys)) == 9
    assert set(ran(out).values()) == {1}  # each cell ran in one process only
    assert len({p.name.split("_")[2] for p in (out / "ran").iterdir()}) == 2  # and both processes worked


def test_a_signal_stops_a_grid_of_workers_without_waiting_for_its_cells(tmp_path):
    """SIGTERM to a grid of two workers, each in a cell that would take a minute: the command ends
    in seconds with one line, the workers with it, no record of an unfinished cell; a rerun runs them."""
    out = tmp_path / "out"
    cmd = command(out, "--seeds", "0", "--workers", "2", "--sleep", "60")
    p = subprocess.Popen(cmd, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(list((out / "ran").glob("*"))) < 2 if (out / "ran").is_dir() else True:
        assert time.monotonic() < deadline and p.poll() is None, "the two workers never started a cell"
        time.sleep(0.05)
    workers = {int(m.name.split("_")[2]) for m in (out / "ran").iterdir()}
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 128 + signal.SIGTERM
    assert time.monotonic() - t0 < 20
    assert [line for line in p.stderr.read().splitlines() if "stopped by SIGTERM" in line]
    time.sleep(0.5)
    for pid in workers:  # the workers are gone too
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not (out / "results.jsonl").is_file() or records(out) == []


def test_sigkill_at_any_moment_leaves_whole_records_and_a_resume_reruns_only_unfinished_cells(tmp_path):
    out = tmp_path / "out"
    cmd = command(out, "--seeds", ",".join(map(str, range(12))), "--sleep", "0.1")
    for delay in (0.8, 1.2, 1.6, 2.0):
        p = subprocess.Popen(cmd, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if not (out / "results.jsonl").is_file():
            continue
        records(out)  # every complete line is a whole record
        done = {(r["row"], r["seed"]) for r in Ledger(out, ("row", "seed")).latest()}
        runs_before = ran(out)
        with (out / "results.jsonl").open("a") as fh:
            fh.write('{"row": "a", "seed": 99, "val')  # what a kill in the middle of a write leaves
        assert (("a", 99)) not in Ledger(out, ("row", "seed")).done()  # a torn line is never read as a record
        subprocess.run(command(out, "--seeds", "0"), env=environment(), check=True, capture_output=True)
        after = ran(out)
        assert all(after[f"{r}_{s}"] == runs_before[f"{r}_{s}"] for r, s in done)  # finished: never rerun
    subprocess.run(cmd, env=environment(), check=True, capture_output=True)
    keys = [(r["row"], r["seed"]) for r in records(out)]
    assert len(keys) == 36 and len(set(keys)) == 36


def test_a_failed_write_stops_in_one_line_and_keeps_every_finished_record(tmp_path, monkeypatch, capsys):
    import qt_hard.experiments.ledger as ledger_module

    out = tmp_path / "out"
    writes = {"n": 0}
    real = os.write

    def full_disk(fd, data):
        writes["n"] += 1
        if writes["n"] == 3:  # the third record: the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(ledger_module.os, "write", full_disk)
    assert main(["grid", "run", "toy", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    last = err.splitlines()[-1]  # after the progress lines: one line, no traceback
    assert last.startswith("qt-hard: error:") and "results.jsonl" in last and "Traceback" not in err
    assert [(r["row"], r["seed"]) for r in records(out)] == [("a", 0), ("bb", 0)]  # nothing torn, nothing lost
    monkeypatch.setattr(ledger_module.os, "write", real)
    assert main(["grid", "run", "toy", "--out", str(out)]) == 0
    assert len(records(out)) == 6 and ran(out)["a_0"] == 1 and ran(out)["ccc_0"] == 2  # only the lost cell again


def test_a_folder_another_command_creates_meanwhile_is_not_refused(tmp_path):
    """Two commands started together on one new --out: the one whose trial folder finds the other's
    real folder there goes on, and a trial never removes a folder another process has begun to fill."""
    from qt_hard.paths import creation_refused

    out = tmp_path / "new" / "deeper"
    (tmp_path / "new").mkdir()  # made by the other command between this one's check and its trial
    assert creation_refused(out, tmp_path) is None and (tmp_path / "new").is_dir()
    (tmp_path / "file").write_text("x")
    assert creation_refused(tmp_path / "file" / "o", tmp_path) == f"{tmp_path / 'file'}: a file appeared there"


def test_every_record_names_the_commit_the_command_started_with(tmp_path, monkeypatch):
    """The checkout may move on while a grid runs (a merge, a commit of records): the records keep
    the commit of the code the command loaded."""
    import qt_hard.experiments.ledger as ledger_module

    out = tmp_path / "out"
    later = iter(["abc1234", "def5678", "def5678", "def5678"])  # the checkout's commit at each call

    def git_commit(where):  # as the real one: the variable first
        return os.environ.get("QT_HARD_GIT_COMMIT") or next(later)

    monkeypatch.setattr(ledger_module, "git_commit", git_commit)
    monkeypatch.delenv("QT_HARD_GIT_COMMIT", raising=False)
    assert main(["grid", "run", "toy", "--out", str(out), "--seeds", "0"]) == 0
    assert {r["commit"] for r in records(out)} == {"abc1234"}
    assert "QT_HARD_GIT_COMMIT" not in os.environ  # restored after the command


def test_experiments_are_discovered_and_a_name_given_twice_is_refused(tmp_path, monkeypatch):
    """Every module of qt_hard.experiments.specs with EXPERIMENTS is found without a list naming it; a
    module of one's own joins them; two experiments of one name are refused in one line."""
    import pkgutil

    from qt_hard.errors import UserError
    from qt_hard.experiments import specs
    from qt_hard.experiments.gridrun import registered

    names = registered()
    modules = {f"{specs.__name__}.{m.name}" for m in pkgutil.iter_modules(specs.__path__)}
    assert {"scifact", "nfcorpus-recipe", "k-vs-n", "qt-table", "toy"} <= set(names)
    assert set(names.values()) - {"_toy_experiment"} <= modules
    (tmp_path / "_twice.py").write_text(
        "from qt_hard.experiments.specs.scifact import Comparison\nEXPERIMENTS = (Comparison(),)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("QT_HARD_EXPERIMENTS", "_twice")
    with pytest.raises(UserError, match="two experiments are named 'scifact'"):
        registered()


def test_every_experiment_has_one_row_type_and_one_run_signature():
    """Each experiment the command finds runs a cell as ``run(cell, ctx)`` and names its rows with the
    contract's one :class:`Row` type (each default row resolves to one), the spec modules define no
    row type of their own, and an unknown row is refused naming ``--rows`` or the rows."""
    import ast
    import inspect

    from qt_hard.errors import UserError
    from qt_hard.experiments import specs
    from qt_hard.experiments.contract import Row
    from qt_hard.experiments.gridrun import experiment, registered

    for name in registered():
        exp = experiment(name)
        assert list(inspect.signature(exp.run).parameters) == ["cell", "ctx"], name
        for row in exp.rows:
            assert isinstance(exp.row(row), Row) and exp.row(row).name == row, (name, row)
        if exp.rows:
            with pytest.raises(UserError, match="unknown row"):
                exp.check_row("no-such-row")
    for path in Path(specs.__file__).parent.glob("*.py"):
        classes = [n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)]
        assert not [c for c in classes if c.endswith("Row") or c in ("Control", "Cell")], path.name
