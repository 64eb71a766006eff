"""``qt-hard data``: an output never lands on its own input, a data root that is a loop of symbolic
links is refused in one line, and a full disk while installing a dataset keeps the old copy."""

from __future__ import annotations

import errno

import pytest
from test_data_wiki import DUMP

from qt_hard.cli import main


def _one_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("qt-hard: error:")]
    assert len(err) == 1, err
    return err[0]


def test_data_wiki_never_deletes_its_source(tmp_path, capsys):
    """The issue's second example: ``data wiki --source DIR/dump.txt --out DIR --overwrite`` deleted
    the dump it was asked to read."""
    folder = tmp_path / "dumps"
    folder.mkdir()
    dump = folder / "dump.txt"
    dump.write_text(DUMP, encoding="utf-8")
    (folder / "other.txt").write_text("someone else's file\n")
    args = ["data", "wiki", "--source", str(dump), "--articles", "2", "--sentences", "3", "--no-progress"]
    assert main([*args, "--out", str(folder), "--overwrite"]) == 2
    assert "holds the source dump" in _one_line(capsys)
    assert dump.read_text(encoding="utf-8") == DUMP and (folder / "other.txt").is_file()
    assert main([*args, "--out", str(folder / "w" / "x")]) == 0  # beside the dump: fine
    # --overwrite replaces only a Wiki-N it wrote, and says so
    assert main([*args, "--out", str(folder / "w" / "x"), "--overwrite"]) == 0
    assert "replaced the Wiki-N" in capsys.readouterr().err
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    assert main([*args, "--out", str(mine), "--overwrite"]) == 2
    assert "no Wiki-N written by qt-hard data wiki" in _one_line(capsys)
    assert (mine / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("how", ["env", "flag"])
def test_a_data_root_that_is_a_link_loop_is_refused(tmp_path, monkeypatch, capsys, how):
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    if how == "env":
        monkeypatch.setenv("QT_HARD_DATA", str(loop))
        args = ["data", "get", "senteval"]
    else:
        args = ["data", "list", "--root", str(loop)]
    assert main(args) == 2
    assert "is a loop of symbolic links" in _one_line(capsys)
    # a dataset folder inside a root that loops is named as such too
    if how == "env":
        root = tmp_path / "root"
        root.mkdir()
        (root / "senteval").symlink_to(root / "senteval")
        monkeypatch.setenv("QT_HARD_DATA", str(root))
        from qt_hard.errors import DataMissingError
        from qt_hard.paths import data_path

        with pytest.raises(DataMissingError, match="loop of symbolic links"):
            data_path("senteval", "CR")


def test_a_full_disk_while_installing_keeps_the_old_copy(tmp_path):
    """``qt-hard data get`` builds a dataset in a temporary folder and renames it into place: a full
    disk mid-build is one line, the installed copy stays, and no temporary folder is left."""
    from qt_hard.data.download import install
    from qt_hard.errors import WriteFailedError

    target = tmp_path / "root" / "senteval"
    target.mkdir(parents=True)
    (target / "old.txt").write_text("installed before\n")

    def build(tmp):
        (tmp / "half.txt").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(WriteFailedError, match="No space left on device"):
        install(target, build)
    assert sorted(p.name for p in target.parent.iterdir()) == ["senteval"]
    assert (target / "old.txt").read_text() == "installed before\n"
