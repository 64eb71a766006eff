"""``python -m docgen --table-widths`` (docgen/table_widths.py): a table or code block wider than its
column is reported by page and header (or first line), one that fits is not, the first screen is saved, and a missing
Chromium or a bad argument is one line and exit status 2. The measurement needs Debian's ``chromium``; without it those tests skip."""

from __future__ import annotations

import shutil

import pytest

from docgen import table_widths as check
from docgen.cli import main as docgen_main

needs_chromium = pytest.mark.skipif(
    not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")), reason="no chromium"
)


def _page(folder, tables: str):
    folder.mkdir(parents=True)
    (folder / "index.html").write_text(
        f'<!doctype html><html><body><article style="width: 400px">{tables}</article></body></html>'
    )


NARROW = "<table><tr><th>row</th><th>value</th></tr><tr><td>a</td><td>1</td></tr></table>"
WIDE = (
    '<table style="white-space: nowrap"><tr><th>setting</th><th>effect</th></tr>'
    f"<tr><td>{'a long cell that cannot wrap ' * 4}</td><td>+0.42 [+0.18, +0.66]</td></tr></table>"
)


@needs_chromium
def test_a_wide_table_is_reported_and_a_narrow_one_is_not(tmp_path, capsys):
    site = tmp_path / "site"
    _page(site / "wide", NARROW + WIDE)
    _page(site / "fits", NARROW)
    png = tmp_path / "first.png"
    assert check.main(["--site", str(site), "--screenshot", f"wide/index.html={png}"]) == 1
    out = capsys.readouterr().out
    assert "wide/index.html: table 2 (setting | effect): " in out and "px in 400 px" in out
    assert "table 1" not in out and "fits/" not in out
    assert out.strip().endswith("1 table(s) or code block(s) wider than their container at 1280 px (2 pages)")
    assert png.stat().st_size > 1000
    (site / "wide" / "index.html").unlink()
    (site / "wide").rmdir()
    assert check.main(["--site", str(site)]) == 0


LONG = "qt-hard train configs/qt_books_smoke.yaml --out runs/qt_smoke " * 3
WIDE_PRE = f"<pre><code>{LONG}</code></pre>"
WRAPPED_PRE = f'<pre><code style="white-space: pre-wrap; overflow-wrap: anywhere">{LONG}</code></pre>'


@needs_chromium
def test_a_code_block_wider_than_its_column_is_reported_and_a_wrapped_one_is_not(tmp_path, capsys):
    site = tmp_path / "site"
    _page(site / "code", WRAPPED_PRE + WIDE_PRE)
    assert check.main(["--site", str(site)]) == 1
    out = capsys.readouterr().out
    assert "code/index.html: code block 2 (qt-hard train configs/qt_books_smoke.yaml --out runs/qt_smok" in out
    assert "code block 1" not in out
    assert out.strip().endswith("1 table(s) or code block(s) wider than their container at 1280 px (1 pages)")


def test_no_chromium_or_a_bad_argument_is_one_line_and_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(check.shutil, "which", lambda name: None)
    assert check.main(["--site", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        "table widths: error: no chromium on PATH (Debian: apt-get install -y chromium)"
    )
    assert check.main(["--screenshot", "page.html"]) == 2
    assert "--screenshot page.html: give PAGE=PNG" in capsys.readouterr().err
    # the docs tool hands the options after --table-widths to the check, and refuses them elsewhere
    assert docgen_main(["--table-widths", "--screenshot", "page.html"]) == 2
    assert "give PAGE=PNG" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        docgen_main(["--check", "--site", str(tmp_path)])
