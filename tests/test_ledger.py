"""qt_hard.experiments.ledger: whole-line appends, a torn last line, the setup check, finished keys, claims."""

from __future__ import annotations

import json
from pathlib import Path
import multiprocessing as mp
import socket
import subprocess
import sys

import pytest

from qt_hard.experiments.ledger import Ledger, LedgerError

KEY = ("row", "seed")
SETUP = {"config": "configs/x.yaml", "epochs": 20, "overrides": ["a=1"]}


def test_append_read_done_and_latest(tmp_path):
    led = Ledger(tmp_path / "out", KEY, SETUP)
    assert led.records() == [] and led.done() == set()
    led.append({"row": "uniform", "seed": 0, "acc": 70.0})
    led.append({"row": "hard", "seed": 0, "acc": 71.0})
    led.append({"row": "uniform", "seed": 0, "acc": 72.0})  # the same cell run again
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"ledger": 1, "setup": SETUP} and len(lines) == 4
    again = Ledger(tmp_path / "out", KEY, dict(SETUP))
    assert [r["acc"] for r in again.records()] == [70.0, 71.0, 72.0]
    assert again.done() == {("uniform", 0), ("hard", 0)}
    assert [(r["row"], r["acc"]) for r in again.latest()] == [("uniform", 72.0), ("hard", 71.0)]
    with pytest.raises(LedgerError, match=r"key field\(s\) \['seed'\]"):
        again.append({"row": "x"})


def test_torn_last_line_is_ignored_then_cut(tmp_path):
    led = Ledger(tmp_path, KEY, SETUP)
    led.append({"row": "uniform", "seed": 0})
    with open(led.path, "a") as fh:
        fh.write('{"row": "hard", "se')  # a writer killed mid-line
    assert led.done() == {("uniform", 0)}
    led.append({"row": "hard", "seed": 1})
    assert led.done() == {("uniform", 0), ("hard", 1)}
    assert "se\n" not in led.path.read_text() and led.path.read_text().endswith("\n")
    # a file whose only content is a torn header starts over with a header
    other = Ledger(tmp_path / "b", KEY, SETUP)
    other.folder.mkdir()
    other.path.write_text('{"ledger": 1, "se')
    assert other.records() == []
    other.append({"row": "uniform", "seed": 0})
    assert Ledger(tmp_path / "b", KEY, SETUP).done() == {("uniform", 0)}


def test_a_bad_line_in_the_middle_is_an_error(tmp_path):
    led = Ledger(tmp_path, KEY, SETUP)
    led.append({"row": "uniform", "seed": 0})
    with open(led.path, "a") as fh:
        fh.write("not json\n")
    led.append({"row": "hard", "seed": 0})
    with pytest.raises(LedgerError, match=r"results.jsonl:3: not a JSON record"):
        led.records()
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "results.jsonl").write_text("row,seed\n")
    with pytest.raises(LedgerError, match=r":1 is not a results ledger header"):
        Ledger(tmp_path / "c", KEY, SETUP)


def test_another_setup_is_refused_and_read_only_opens_any(tmp_path):
    Ledger(tmp_path, KEY, SETUP).append({"row": "uniform", "seed": 0})
    with pytest.raises(LedgerError, match=r"another setup \(epochs: 20 there, 50 here\)"):
        Ledger(tmp_path, KEY, {**SETUP, "epochs": 50})
    view = Ledger(tmp_path, KEY)
    assert view.setup == SETUP and view.done() == {("uniform", 0)}
    with pytest.raises(LedgerError, match="read only"):
        view.append({"row": "hard", "seed": 0})
    # a folder another process started with another setup after this one was opened
    late = Ledger(tmp_path / "late", KEY, {**SETUP, "epochs": 1})
    Ledger(tmp_path / "late", KEY, SETUP).append({"row": "uniform", "seed": 0})
    with pytest.raises(LedgerError, match="another setup"):
        late.append({"row": "hard", "seed": 0})


def _append_many(folder: str, worker: int) -> None:
    led = Ledger(folder, KEY, SETUP)
    for i in range(40):
        led.append({"row": f"w{worker}", "seed": i, "pad": "x" * 3000})


def test_parallel_appends_stay_whole(tmp_path):
    procs = [mp.get_context("spawn").Process(target=_append_many, args=(str(tmp_path), w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    led = Ledger(tmp_path, KEY, SETUP)
    assert len(led.records()) == 120 and len(led.done()) == 120
    assert led.path.read_text().count('"ledger"') == 1  # one header


def test_claims_exclude_live_holders_and_take_over_dead_ones(tmp_path):
    led = Ledger(tmp_path, KEY, SETUP)
    with led.claim(("uniform", 0)) as got:
        assert got
        with led.claim(("uniform", 0)) as again:  # held by a live process (this one)
            assert not again
        with led.claim(("uniform", 1)) as other:
            assert other
    with led.claim(("uniform", 0)) as got:  # released on leaving the block
        assert got
    claims = tmp_path / "claims"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (claims / "hard__0").write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead)}))
    with led.claim(("hard", 0)) as got:
        assert got  # its process is gone
    (claims / "hard__1").write_text(json.dumps({"host": "another-machine", "pid": int(dead)}))
    with led.claim(("hard", 1)) as got:
        assert not got  # another machine's process cannot be checked: left alone
    assert sorted(p.name for p in claims.iterdir()) == ["hard__1"]


def test_provenance_names_machine_time_commit_and_library_versions(tmp_path, monkeypatch):
    from qt_hard.experiments.ledger import git_commit, provenance

    here = Path(__file__).resolve().parent
    p = provenance(here)
    assert set(p) == {"machine", "utc", "commit", "versions"} and p["utc"].endswith("Z")
    import numpy
    import sentence_transformers
    import torch
    import transformers

    assert p["versions"] == {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence-transformers": sentence_transformers.__version__,
        "numpy": numpy.__version__,
    }
    assert git_commit(tmp_path) == "unknown"  # no checkout there
    monkeypatch.setenv("QT_HARD_GIT_COMMIT", "abc1234")
    assert git_commit(tmp_path) == "abc1234"


def test_commit_is_dirty_for_code_changes_but_not_for_result_files(tmp_path):
    import subprocess

    from qt_hard.experiments.ledger import git_commit

    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True, capture_output=True
        )

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "ledger.jsonl").write_text("{}\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "c")
    clean = git_commit(tmp_path / "results")
    assert clean != "unknown" and not clean.endswith("+dirty")
    (tmp_path / "results" / "ledger.jsonl").write_text("{}\n{}\n")  # a grid appending to its ledger
    assert git_commit(tmp_path / "results") == clean
    (tmp_path / "code.py").write_text("x = 2\n")
    assert git_commit(tmp_path / "results") == clean + "+dirty"


def test_measurement_stamp_adds_torch_threads_load_and_the_command():
    import torch

    from qt_hard.experiments.ledger import measurement_stamp

    s = measurement_stamp(Path(__file__).resolve().parent, ["scripts/bench_x.py", "--out", "a b.jsonl"])
    assert {"machine", "utc", "commit"} <= set(s)
    assert s["torch"] == torch.__version__ and s["threads"] == torch.get_num_threads()
    assert isinstance(s["load_average_1min"], float) and s["load_average_1min"] >= 0
    assert s["command"] == "python scripts/bench_x.py --out 'a b.jsonl'"


def test_invalid_bytes_and_a_record_missing_a_field_are_named(tmp_path):
    """A ledger with bytes that are not UTF-8 raised UnicodeDecodeError (a traceback); a record
    without a key field or a field the tables read surfaced later as a KeyError."""
    led = Ledger(tmp_path, KEY, SETUP, fields=("acc",))
    led.append({"row": "uniform", "seed": 0, "acc": 70.0})
    path = tmp_path / "results.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + b'{"row": "hard", "seed": 1, "acc": 7\xff}\n')
    with pytest.raises(LedgerError, match=r"results\.jsonl:3: not UTF-8 text"):
        Ledger(tmp_path, KEY).records()
    path.write_bytes(good + b'{"row": "hard", "acc": 71.0}\n')
    with pytest.raises(LedgerError, match=r"results\.jsonl:3: the record lacks the field\(s\) \['seed'\]"):
        Ledger(tmp_path, KEY).done()
    path.write_bytes(good + b'{"row": "hard", "seed": 1}\n')
    with pytest.raises(LedgerError, match=r"results\.jsonl:3: the record lacks the field\(s\) \['acc'\]"):
        Ledger(tmp_path, KEY, fields=("acc",)).latest()
    with pytest.raises(LedgerError, match="lacks the field"):
        led.append({"row": "hard", "seed": 2})


def test_a_failed_append_leaves_the_ledger_as_it_was(tmp_path, monkeypatch):
    """A full disk during an append: a one-line LedgerError, and no part of the record stays (a short
    write continues; a failing one is cut back)."""
    import errno
    import os

    led = Ledger(tmp_path, KEY, SETUP)
    led.append({"row": "uniform", "seed": 0, "acc": 70.0})
    before = (tmp_path / "results.jsonl").read_bytes()
    real_write = os.write
    calls = []

    def half_then_full(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))  # a short write
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(LedgerError, match="could not be appended .No space left on device"):
        led.append({"row": "hard", "seed": 0, "acc": 71.0})
    monkeypatch.setattr(os, "write", real_write)
    assert (tmp_path / "results.jsonl").read_bytes() == before
    calls.clear()
    monkeypatch.setattr(os, "write", lambda fd, data: (calls.append(1), real_write(fd, bytes(data[:7])))[1])
    led.append({"row": "hard", "seed": 0, "acc": 71.0})  # short writes only: continued to the end
    monkeypatch.setattr(os, "write", real_write)
    assert len(calls) > 1 and [r["row"] for r in Ledger(tmp_path, KEY).records()] == ["uniform", "hard"]


def test_rewrite_changes_the_form_keeps_header_and_keys_and_waits_for_no_running_cell(tmp_path):
    led = Ledger(tmp_path, KEY, SETUP)
    for s in range(3):
        led.append({"row": "uniform", "seed": s, "acc": [70.123456789 + s]})
    head = led.path.read_text().splitlines()[0]
    assert led.rewrite(lambda r: {**r, "acc": round(r["acc"][0], 2)}) == 3
    lines = led.path.read_text().splitlines()
    assert lines[0] == head and [r["acc"] for r in led.records()] == [70.12, 71.12, 72.12]
    assert not list(tmp_path.glob(".*rewrite"))  # no temporary left beside it
    with pytest.raises(LedgerError, match="changed a record's key"):
        led.rewrite(lambda r: {**r, "seed": 9})
    assert [r["seed"] for r in led.records()] == [0, 1, 2]  # a refused rewrite leaves the file
    with led.claim(("hard", 0)) as got:
        assert got
        with pytest.raises(LedgerError, match="cells are being run"):
            led.rewrite(lambda r: r)
    with pytest.raises(LedgerError, match="read only"):
        Ledger(tmp_path, KEY).rewrite(lambda r: r)


def test_an_append_that_waited_while_the_file_was_rewritten_lands_in_the_new_file(tmp_path, monkeypatch):
    """The appender opened the ledger, then a rewrite replaced it before the appender got the lock: its
    record must go to the file at the path, not to the replaced one no reader opens again."""
    import fcntl

    from qt_hard.experiments import ledger as ledger_mod

    led = Ledger(tmp_path, KEY, SETUP)
    led.append({"row": "uniform", "seed": 0, "acc": 1.0})
    real, calls = fcntl.flock, []

    def flock(fd, op):
        if op == fcntl.LOCK_EX and not calls:
            calls.append(fd)
            Ledger(tmp_path, KEY, SETUP).rewrite(lambda r: {**r, "acc": 2.0})
        return real(fd, op)

    monkeypatch.setattr(ledger_mod.fcntl, "flock", flock)
    led.append({"row": "hard", "seed": 0, "acc": 3.0})
    assert [(r["row"], r["acc"]) for r in Ledger(tmp_path, KEY).records()] == [("uniform", 2.0), ("hard", 3.0)]
