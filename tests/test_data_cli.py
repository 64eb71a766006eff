"""``qt-hard data wiki`` / ``qt-hard data books``."""

import json

from qt_hard.cli import main


def wiki_args(dump, articles: int, out) -> list[str]:
    """``qt-hard data wiki`` of ``articles`` articles of at least 4 sentences from ``dump`` into ``out``."""
    return [
        "data",
        "wiki",
        "--source",
        str(dump),
        "--articles",
        str(articles),
        "--sentences",
        "4",
        "--out",
        str(out),
    ] + ["--no-progress"]


def test_data_wiki_cli(tmp_path, capsys):
    dump = tmp_path / "dump.txt"
    dump.write_text(
        "".join(
            f'<doc id="{i}" url="u{i}" title="T{i}">\nT{i}\n\n'
            + " ".join(f"Sentence {j} of article {i} is here." for j in range(3 + i))
            + "\n</doc>\n"
            for i in range(3)
        )
    )
    out = tmp_path / "w"
    assert main(wiki_args(dump, 2, out)) == 0
    assert "wrote 2 articles (8 sentences)" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["0000.txt", "0001.txt", "index.tsv"]
    # errors are one line naming the problem, exit status 2 (as every qt-hard refusal)
    assert main(wiki_args(dump, 5, tmp_path / "w2")) == 2
    assert "qt-hard: error: " in (err := capsys.readouterr().err) and "only 2 of 3 articles have >= 4 sentences" in err
    assert (
        main(["data", "wiki", "--source", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "w3"), "--no-progress"])
        == 2
    )
    assert "no such WikiExtractor dump" in capsys.readouterr().err


def test_data_books_cli(tmp_path, capsys):
    d = tmp_path / "books"
    d.mkdir()
    (d / "a.txt").write_text("One sentence. Two sentences.\n\nThree.\n")
    assert main(["data", "books", str(d), "--cache-dir", str(tmp_path / "c")]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["books"] == 1 and report["sentences"] == 3 and report["skipped"] == []
    assert main(["data", "books", str(tmp_path / "missing")]) == 2


def test_data_get_help_names_every_dataset(capsys):
    """``qt-hard data get --help`` lists every dataset the catalog fetches."""
    import pytest

    from qt_hard.data.catalog import DATASETS

    with pytest.raises(SystemExit):
        main(["data", "get", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert [n for n in DATASETS if n not in text] == []
