"""qt_hard.files: a file or folder is written whole or not at all, and a failed write (a full disk,
injected here as a failing ``fsync``) is one ``WriteFailedError`` that leaves the previous version
and no temporary file behind."""

from __future__ import annotations

import errno
import os

import pytest

from qt_hard.errors import UserError, WriteFailedError
from qt_hard.files import atomic_folder, atomic_path, file_key, write_text


@pytest.fixture
def full_disk(monkeypatch):
    """``os.fsync`` fails with ENOSPC, as a full disk reports a write it could not complete."""

    def fail(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_write_text_replaces_whole(tmp_path):
    path = tmp_path / "sub" / "r.json"
    write_text(path, "one\n")
    write_text(path, "two\n")
    assert path.read_text() == "two\n" and _listing(path.parent) == ["r.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path, full_disk):
    path = tmp_path / "r.json"
    path.write_text("before\n")
    with pytest.raises(WriteFailedError, match=r"result file .*r\.json could not be written \(No space left"):
        write_text(path, "after\n", "result file")
    assert path.read_text() == "before\n" and _listing(tmp_path) == ["r.json"]
    assert issubclass(WriteFailedError, UserError)


def test_a_writer_that_raises_leaves_nothing(tmp_path):
    path = tmp_path / "emb.npz"
    with pytest.raises(RuntimeError):
        with atomic_path(path) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("killed mid-write")
    assert _listing(tmp_path) == []


def test_a_folder_is_replaced_whole_or_kept(tmp_path, monkeypatch):
    target = tmp_path / "cache"
    with atomic_folder(target) as tmp:
        (tmp / "a").write_text("1")
    with atomic_folder(target, replace=False) as tmp:  # a cache that exists is kept
        (tmp / "a").write_text("2")
    assert (target / "a").read_text() == "1"

    def fail(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(WriteFailedError, match="No space left"):
        with atomic_folder(target, "token cache") as tmp:
            (tmp / "a").write_text("3")
    assert (target / "a").read_text() == "1" and _listing(tmp_path) == ["cache"]


def test_result_files_and_run_configs_use_it(tmp_path, full_disk):
    """The writers of results (``eval --output``) and of a run's config.yaml."""
    from qt_hard.evaluation.report import save_results
    from qt_hard.training.config import config_from_dict, save_config

    (tmp_path / "r.json").write_text('{"kind": "senteval", "results": {}}\n')
    with pytest.raises(WriteFailedError, match="result file"):
        save_results(tmp_path / "r.json", {"kind": "senteval", "results": {"CR": {"acc": 1.0}}})
    with pytest.raises(WriteFailedError, match="run config"):
        save_config(config_from_dict({}, check_pipeline=False), tmp_path / "config.yaml")
    assert _listing(tmp_path) == ["r.json"] and "CR" not in (tmp_path / "r.json").read_text()


def test_file_key_changes_with_the_file(tmp_path):
    path = tmp_path / "dump.txt"
    path.write_text("a")
    first = file_key(path)
    assert file_key(path) == first
    path.write_text("ab")
    assert file_key(path) != first
