"""Hostile inputs the refusal table (tests/refusals.yaml) does not express as one command line: a
signal during evaluation or data preparation, a second run into a folder in use, damaged
Wiki-N folders and models for ``eval wiki``, and the grid's experiments (each refuses with status 2
and one line ``qt-hard: error: ...``, writing nothing). In-process, so cheap."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from contextlib import contextmanager

import pytest
import yaml

from qt_hard.cli import main as cli_main
from qt_hard.cli import stop_signals_handled_by


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


@contextmanager
def another_process_holds(folder):
    """The folder's run lock held by a child process: flock is per open file, so a lock taken through a
    separate descriptor in a child stands for "another run"."""
    import subprocess

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(folder),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_a_second_run_into_a_folder_in_use_is_refused(tmp_path, capsys):
    from test_training import qt_config

    from qt_hard.training.outdir import run_folder_lock

    tree = qt_config(tmp_path, steps=2)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(tree))
    out = tmp_path / "busy"
    out.mkdir()
    with another_process_holds(out):
        status = cli_main(["train", str(cfg), "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 2 and len(err) == 1 and "is in use by another training run" in err[0], err
        assert list(out.iterdir()) == []
    # Once free, the folder is taken (and held while the block runs).
    with run_folder_lock(out):
        pass


def test_the_processes_of_one_launched_run_share_its_folder(tmp_path, monkeypatch):
    """Under a launcher (``RANK`` set) the main process holds the folder's lock; a process of a higher
    rank belongs to that run and is not refused, while a rank-0 process of another run is."""
    from qt_hard.training.outdir import run_folder_lock

    out = tmp_path / "launched"
    out.mkdir()
    with another_process_holds(out):
        monkeypatch.setenv("RANK", "1")
        with run_folder_lock(out):
            pass
        monkeypatch.setenv("RANK", "0")
        with pytest.raises(Exception, match="is in use by another training run"):
            with run_folder_lock(out):
                pass


def _script(name, argv, monkeypatch, capsys):
    """``qt-hard grid run EXPERIMENT ARGV`` (``name`` is ``grid:EXPERIMENT``): its status and stderr lines."""
    status = cli_main(["grid", "run", name[len("grid:") :], *argv])
    return status, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


# `qt-hard grid run EXPERIMENT ARGS` -> how its one stderr line begins after "qt-hard: error: ". ARGS split as
# a shell would; {tmp} is the test's folder, {root} its empty data root.
GRID_REFUSALS = {
    "qt-table": [
        ("--out {tmp}/o --seeds a,b --rows uniform", "--seeds must be"),
        ("--out {tmp}/o --rows bogus", "unknown row 'bogus'"),
        ("--out {tmp}/o --config {tmp}/binary.yaml", "config file {tmp}/binary.yaml is"),
        ("--out {tmp}/o --config {tmp}/nope.yaml", "config file {tmp}/nope.yaml does not"),
        ("--out {tmp}/o --config {tmp}/not.yaml", "config file {tmp}/not.yaml is not val"),
        ("--out {tmp}/file.txt", "--out {tmp}/file.txt is a file, not a folder"),
        ("--out /proc/qt_hard.out", "--out /proc/qt_hard.out cannot be created"),
        ("--out {tmp}/o --kfold x", "qt-hard grid run qt-table: argument --kfold"),
        ("--out {tmp}/o --protocol bogus", "--protocol bogus: no such protocol"),
        ("--out {tmp}/o --rows uniform --eval-device bogus", "--eval-device 'bogus'"),
        ("--out {tmp}/o --rows uniform --set train.lr=abc", "train.lr: expected a number, got 'abc'"),
        (
            "--out {tmp}/o --rows uniform --data {tmp}/no_senteval",
            "--data {tmp}/no_senteval: no SentEval task folders in it",
        ),
    ],
    "k-vs-n": [
        ("{tmp}/binary.yaml --out {tmp}/o", "grid {tmp}/binary.yaml is"),
        ("{tmp}/nope.yaml --out {tmp}/o", "grid {tmp}/nope.yaml does not exist"),
        ("{tmp}/not.yaml --out {tmp}/o", "grid {tmp}/not.yaml is not valid YAML"),
        ("configs/k_vs_n_synthetic.yaml --out {tmp}/o --seeds x", "--seeds must be"),
        ("configs/k_vs_n_synthetic.yaml --out {tmp}/file.txt/o", "--out {tmp}/file.txt/o cannot be created"),
        (
            "configs/k_vs_n_synthetic.yaml --out {tmp}/file.txt --no-estimate --max-cells 0",
            "--out {tmp}/file.txt is a file, not a folder",
        ),
        ("--out {tmp}/o --summary-only", "--out {tmp}/o: no results.jsonl to summarize"),
        ("configs/k_vs_n_synthetic.yaml --out {tmp}/o --max-cells -1", "--max-cells -1: give at least 0"),
        (
            "configs/k_vs_n_small.yaml --out {tmp}/o --cache {tmp}/cache --no-estimate --plan",
            "{root}/wikipedia does not exist",
        ),
    ],
    "st-compare": [
        ("--model {tmp}/o --out {tmp}/r", "--model {tmp}/o: not a sentence-transformers"),
        ("--model minilm --out {tmp}/r --rows mnrl,bogus", "--rows: unknown row"),
        ("--out {tmp}/file.txt --summary-only", "--out {tmp}/file.txt is a"),
    ],
}
REFUSALS = [
    (f"grid:{name}", args, f"qt-hard: error: {error}") for name, rows in GRID_REFUSALS.items() for args, error in rows
]


@pytest.mark.parametrize("name,args,expected", REFUSALS)
def test_scripts_refuse_in_one_line_and_write_nothing(name, args, expected, tmp_path, monkeypatch, capsys):
    (tmp_path / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "not.yaml").write_text("{oops: [\n")
    (tmp_path / "file.txt").write_text("a file\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "model").mkdir()  # a model folder without its encoder.json
    (tmp_path / "model" / "model.safetensors").write_bytes(b"weights")
    # An empty data root (a dataset the script needs is missing) and a cache folder inside tmp_path,
    # so that a cache or ledger written before the refusal shows up in the listing.
    root = tmp_path / "dataroot"
    root.mkdir()
    monkeypatch.setenv("QT_HARD_DATA", str(root))
    monkeypatch.setenv("QT_HARD_CACHE", str(tmp_path / "qt_cache"))
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    before = _listing(tmp_path)

    def fill(text):
        return text.replace("{root}", str(root)).replace("{tmp}", str(tmp_path))

    argv = [fill(a) for a in shlex.split(args)]
    try:
        status, err = _script(name, argv, monkeypatch, capsys)
    except SystemExit as stop:  # argparse's refusal exits from inside the parser
        status, err = stop.code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(fill(expected)), err
    assert "Traceback" not in err[0]
    assert _listing(tmp_path) == before


def _listing(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


class _NoHandler(Exception):
    """The signal reached the test's own handler: the command had not installed its handler."""


@contextmanager
def _signals_fail_the_test():
    """While the block runs, a SIGINT or SIGTERM the command under test does not handle fails the
    test (rather than ending or interrupting pytest); the previous handlers come back afterwards."""

    def unhandled(signum, frame):
        raise _NoHandler(f"{signal.Signals(signum).name} was not handled by the command")

    with stop_signals_handled_by(unhandled):
        yield


def _wiki(folder, articles=3, sentences=12):
    folder.mkdir()
    for a in range(articles):
        lines = [f"article {a} sentence number {i} is here ." for i in range(sentences)]
        (folder / f"{a:04d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _model_without_weights(folder):
    """A qt-hard model folder whose encoder.json names a bag of words, its other files gone."""
    from qt_hard.encoders.text import FORMAT, VERSION

    folder.mkdir()
    meta = {"format": FORMAT, "version": VERSION, "layout": "sentence-transformers", "model": {"kind": "bow"}}
    (folder / "encoder.json").write_text(json.dumps(meta))
    return folder


WIKI_CASES = [
    ("no run config", ["--classes", "3"], "cannot tell which Wiki-N 80/20 split"),
    ("data absent", ["--data", "{tmp}/none"], "no such Wiki-N folder: {tmp}/none"),
    ("data empty", ["--data", "{tmp}/empty"], "{tmp}/empty: no article files"),
    ("article empty", [], "{tmp}/wiki/0001.txt: an article needs at least 2 sentences, found 0"),
    ("article binary", [], "{tmp}/wiki/0001.txt: not valid UTF-8"),
    ("article of one sentence", [], "{tmp}/wiki/0001.txt: an article needs at least 2 sentences, found 1"),
    ("classes 0", ["--classes", "0"], "classes must be >= 1, got 0"),
    ("more classes than articles", ["--classes", "9"], "{tmp}/wiki has 3 articles; 9 classes were asked for"),
    ("output a folder", ["--output", "{tmp}/empty"], "--output {tmp}/empty is a folder; give a file name"),
    ("model folder missing files", ["--model", "{tmp}/model"], "incomplete model folder {tmp}/model: "),
]


@pytest.mark.parametrize("case,args,expected", WIKI_CASES, ids=[c[0].replace(" ", "-") for c in WIKI_CASES])
def test_eval_wiki_refuses_in_one_line_and_writes_nothing(case, args, expected, tmp_path, monkeypatch, capsys):
    _wiki(tmp_path / "wiki")
    (tmp_path / "empty").mkdir()
    _model_without_weights(tmp_path / "model")
    article = tmp_path / "wiki" / "0001.txt"
    if case == "article empty":
        article.write_text("")
    elif case == "article binary":
        article.write_bytes(bytes(range(128, 256)) * 4)
    elif case == "article of one sentence":
        article.write_text("only one sentence is here .\n")
    # The tokenization cache of a folder that was read lives outside the watched folder.
    monkeypatch.setenv("QT_HARD_CACHE", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    before = _listing(tmp_path)
    given = dict(zip(args[::2], args[1::2]))
    argv = ["eval", "wiki", "--model", "random:bow", "--data", "{tmp}/wiki", "--classes", "3", "--epochs", "1"]
    argv += ["--split-seed", "0", "--output", "{tmp}/out/r.json"]
    for flag, value in given.items():
        argv[argv.index(flag) + 1] = value
    if case == "no run config":
        i = argv.index("--split-seed")
        del argv[i : i + 2]
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    status = cli_main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith("qt-hard: error: " + expected.replace("{tmp}", str(tmp_path))), err
    assert _listing(tmp_path) == before


def test_a_signal_during_wiki_evaluation_stops_with_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    import qt_hard.evaluation.wiki as wiki_eval
    from test_eval_wiki import WordHashEncoder

    from qt_hard.evaluation import models as eval_models

    _wiki(tmp_path / "wiki")
    monkeypatch.setenv("QT_HARD_CACHE", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    monkeypatch.setattr(eval_models, "load_model", lambda spec, sentences=None: WordHashEncoder())

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("the signal did not stop the evaluation")

    monkeypatch.setattr(wiki_eval, "run_wiki", interrupted)
    before = _listing(tmp_path)
    argv = ["eval", "wiki", "--model", "hash", "--data", str(tmp_path / "wiki"), "--classes", "3"]
    with _signals_fail_the_test():
        status = cli_main(argv + ["--split-seed", "0", "--output", str(tmp_path / "out" / "r.json")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 130
    # The progress line (split seed) comes before the evaluation starts; the stop line ends it.
    assert err[-1] == "qt-hard: stopped by SIGINT; no result was written" and len(err) <= 2, err
    assert not any("Traceback" in line for line in err)
    assert _listing(tmp_path) == before


def test_eval_senteval_refuses_an_output_the_file_system_refuses(tmp_path, capsys):
    out = "/proc/qt_hard.results.json"
    argv = ["eval", "senteval", "--model", "random:bow", "--tasks", "CR", "--data", str(tmp_path), "--output", out]
    status = cli_main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1 and err[0].startswith(f"qt-hard: error: --output {out} cannot be written")
    assert list(tmp_path.iterdir()) == []


def test_eval_senteval_refuses_a_model_spec_that_is_a_file(tmp_path, monkeypatch, capsys):
    from test_eval_senteval import fixture_lines, write_senteval

    from qt_hard.data.sources import senteval as senteval_source

    data = write_senteval(tmp_path / "se", n=40)
    monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines(40))
    model = tmp_path / "model.safetensors"
    model.write_bytes(b"not a folder")
    before = _listing(tmp_path)
    out = tmp_path / "r.json"
    status = cli_main(
        ["eval", "senteval", "--model", str(model), "--tasks", "CR", "--data", str(data), "--output", str(out)]
    )
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"qt-hard: error: model {str(model)!r} is a file; a model is a folder"), err
    assert _listing(tmp_path) == before


def test_data_list_on_an_absent_root_says_so_and_creates_nothing(tmp_path, capsys):
    root = tmp_path / "none"
    assert cli_main(["data", "list", "--root", str(root)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"data root: {root} (does not exist)", printed[:2]
    assert list(tmp_path.iterdir()) == []


def test_a_signal_during_data_preparation_stops_training_with_one_line(tmp_path, monkeypatch, capsys):
    """Before the loop's own handler is installed (books read, tokenized), SIGTERM is the command's:
    status 143 and one line, the run folder's lock released."""
    from test_training import qt_config

    from qt_hard.text.pipeline import PIPELINE
    from qt_hard.training.outdir import run_folder_lock

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("the signal did not stop the data preparation")

    monkeypatch.setattr(type(PIPELINE), "build", interrupted)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(qt_config(tmp_path, steps=2)))
    out = tmp_path / "run"
    with _signals_fail_the_test():
        status = cli_main(["train", str(cfg), "--out", str(out)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 143 and err == ["qt-hard: stopped by SIGTERM; no result was written"], err
    assert not list(out.rglob("*.safetensors")) and not (out / "checkpoints").exists()
    with run_folder_lock(out):  # released
        pass


def test_a_zero_byte_book_among_many_stops_training_with_one_line(tmp_path, monkeypatch, capfd):
    """Enough books for the splitting pool, one of them empty: the command refuses with its one line,
    and the pool's workers, ended when the parent leaves the pool, print nothing (they leave SIGINT
    and SIGTERM to the parent instead of inheriting the command's handlers). Three runs, since a
    worker's traceback depends on where it was when the pool was terminated."""
    from test_training import qt_config

    import qt_hard.data.books as B

    monkeypatch.setattr(B, "default_num_proc", lambda: 2)  # a pool even on a 1-CPU machine
    books = tmp_path / "library"
    books.mkdir()
    for i in range(B._POOL_MIN_BOOKS + 2):
        (books / f"book_{i:02d}.txt").write_text(f"Book {i} begins. It goes on. It ends.\n", encoding="utf-8")
    (books / "book_05.txt").write_bytes(b"")
    tree = qt_config(tmp_path, steps=2)
    tree["data"]["path"] = str(books)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(tree))
    for attempt in range(3):
        status = cli_main(["train", str(cfg), "--out", str(tmp_path / f"run{attempt}")])
        err = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
        assert status == 2 and err == [f"qt-hard: error: {books / 'book_05.txt'}: the book is empty"], err
