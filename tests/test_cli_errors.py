"""User errors reach the user as one line and exit status 2; bugs keep their traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qt_hard.cli import main
from qt_hard.errors import UserError

REPO = Path(__file__).resolve().parent.parent
SMOKE = str(REPO / "configs" / "qt_books_smoke.yaml")


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("qt-hard: error: ")
    return lines[0]


def test_config_key_typo(capsys, tmp_path):
    assert main(["train", SMOKE, "--out", str(tmp_path / "r"), "train.lrr=0.1"]) == 2
    line = _one_line_error(capsys)
    assert "unknown config key 'train.lrr' in section 'train'" in line and "'lr'" in line


def test_missing_data_folder_names_the_get_command(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("QT_HARD_DATA", str(tmp_path / "empty_root"))
    (tmp_path / "empty_root").mkdir()
    assert main(["train", SMOKE, "--out", str(tmp_path / "r"), "train.progress=false"]) == 2
    line = _one_line_error(capsys)
    assert "books does not exist" in line and "`qt-hard data get books`" in line


def test_wrong_model_path(capsys, tmp_path, monkeypatch):
    from qt_hard.data.sources import senteval as senteval_source
    from test_eval_senteval import fixture_lines, write_senteval

    # The task files are checked before the model is loaded: give it intact (tiny) ones.
    data = write_senteval(tmp_path / "se")
    monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines())
    assert (
        main(["eval", "senteval", "--model", str(tmp_path / "no_such_model"), "--data", str(data), "--tasks", "CR"])
        == 2
    )
    line = _one_line_error(capsys)
    assert "no_such_model' not found" in line


def test_k_larger_than_candidates(capsys, tmp_path):
    # synthetic data, batch 8: each anchor has 2*8-2 = 14 candidates, k=50 is too many
    args = [
        "train",
        str(REPO / "configs" / "bow_wiki_smoke.yaml"),
        "--out",
        str(tmp_path / "r"),
        "data.kind=synthetic",
        "data.min_count=1",
        "train.batch_size=8",
        "train.steps=2",
        "objective.k=50",
        "train.progress=false",
        "train.trackers=[]",
        "train.checkpoint_every=0",
    ]
    assert main(args) == 2
    line = _one_line_error(capsys)
    assert "k=50 negatives requested" in line and "lower k or enlarge the batch" in line
    # --debug (anywhere on the line) or QT_HARD_DEBUG=1 shows the traceback instead
    with pytest.raises(UserError, match="k=50"):
        main(args + ["--debug"])


def test_debug_env_and_unexpected_errors_keep_traceback(monkeypatch, tmp_path):
    monkeypatch.setenv("QT_HARD_DEBUG", "1")
    with pytest.raises(UserError, match="train.lrr"):
        main(["train", SMOKE, "--out", str(tmp_path / "r"), "train.lrr=0.1"])
    monkeypatch.delenv("QT_HARD_DEBUG")

    import qt_hard.training.cli as tcli

    def boom(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(tcli, "run_train", boom)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["train", SMOKE])


def test_exit_status_from_the_installed_entry_point(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("QT_HARD_DEBUG", None)
    r = subprocess.run(
        [sys.executable, "-m", "qt_hard.cli", "train", SMOKE, "train.lrr=1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qt-hard: error: unknown config key 'train.lrr'"), r.stderr


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the error without a GPU")
def test_eval_device_cuda_without_a_gpu_is_one_line(capsys):
    assert main(["eval", "senteval", "--model", "random:bow", "--tasks", "CR", "--device", "cuda"]) == 2
    line = _one_line_error(capsys)
    assert "--device cuda" in line and "no CUDA device" in line


def test_objective_is_checked_before_any_book_is_read(capsys, tmp_path, monkeypatch):
    """The full books config with a bad objective and an empty data root: the objective's error,
    not the missing books', so the config was refused before the data was looked at."""
    monkeypatch.setenv("QT_HARD_DATA", str(tmp_path / "empty_root"))
    (tmp_path / "empty_root").mkdir()
    full = str(REPO / "configs" / "qt_books.yaml")
    assert main(["train", full, "--out", str(tmp_path / "r"), "objective.negatives=nonsense"]) == 2
    line = _one_line_error(capsys)
    assert "objective.negatives: unknown strategy 'nonsense'" in line and "does not exist" not in line
    assert not (tmp_path / "r").exists()
    # with a good objective the same command reaches the data check, still before any work
    assert main(["train", full, "--out", str(tmp_path / "r")]) == 2
    assert "books does not exist" in _one_line_error(capsys)
    assert not (tmp_path / "r").exists()


def test_graph_objective_options_are_checked_before_any_graph_is_read(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("QT_HARD_DATA", str(tmp_path / "empty_root"))
    (tmp_path / "empty_root").mkdir()
    cfg = str(REPO / "configs" / "infograph_mutag.yaml")
    assert main(["train", cfg, "--out", str(tmp_path / "r"), "objective.options.bogus=1"]) == 2
    line = _one_line_error(capsys)
    assert line.startswith("qt-hard: error: objective.options.bogus: not an option of negatives='uniform'"), line
    assert not (tmp_path / "r").exists()


def test_an_allocation_the_memory_refuses_is_one_line(capsys, monkeypatch):
    """What no size check foresaw: the allocator's refusal (Python's MemoryError, torch's "can't
    allocate memory") is one line and status 2; any other RuntimeError keeps its traceback."""
    from qt_hard.evaluation import cli as evaluation_cli

    def oom(args):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes")

    monkeypatch.setattr(evaluation_cli, "cmd_compare", oom)
    assert main(["eval", "compare", "a.json", "b.json"]) == 2
    assert "out of memory" in _one_line_error(capsys)

    def bug(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(evaluation_cli, "cmd_compare", bug)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["eval", "compare", "a.json", "b.json"])
