"""qt_hard.experiments.pages: every generated block of README.md and docs/ is what its result files
give today, an unknown block name is an error, and the command names each stale block."""

from __future__ import annotations

from pathlib import Path

import pytest

from qt_hard.experiments import pages

ROOT = Path(__file__).resolve().parents[1]


def test_every_generated_block_is_its_regeneration():
    """A page whose table drifted from its ledger, CSV or JSONL fails here (fix: --write)."""
    assert pages.stale(ROOT) == [], "stale blocks; run `python -m qt_hard.experiments.pages --write`"


def test_every_block_on_the_pages_is_registered_and_the_pages_use_them():
    used = {name for page in pages.page_files(ROOT) for name, _ in pages.blocks(page.read_text(encoding="utf-8"))}
    assert used <= set(pages.REGISTRY)
    for page in (
        "docs/which-negatives.md",
        "docs/reproductions/hcl-text.md",
        "docs/reproductions/k-vs-n.md",
        "README.md",
    ):
        assert pages.blocks((ROOT / page).read_text(encoding="utf-8")), page


def _demo_root(tmp_path: Path, monkeypatch, body: str) -> Path:
    monkeypatch.setitem(pages.REGISTRY, "demo", pages.Block(lambda root: (root / "n.txt").read_text()))
    (tmp_path / "n.txt").write_text("| a |\n|---|\n| 1 |\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(f"# Page\n\n<!-- generated: demo -->\n{body}<!-- /generated -->\n")
    return tmp_path


def test_check_names_a_stale_block_and_write_makes_it_current(tmp_path, monkeypatch, capsys):
    root = _demo_root(tmp_path, monkeypatch, "\nold\n\n")
    assert pages.main(["--check", "--root", str(root)]) == 1
    assert "stale: docs/page.md: demo" in capsys.readouterr().out
    assert pages.main(["--write", "--root", str(root)]) == 0
    text = (root / "docs" / "page.md").read_text()
    assert "| a |\n|---|\n| 1 |\n\nSpread: " in text and "(comparisons.md#the-verdict)" in text
    assert pages.main(["--check", "--root", str(root)]) == 0
    (root / "n.txt").write_text("| a |\n|---|\n| 2 |\n")  # the result file changed: the page is stale again
    assert pages.stale(root) == [(root / "docs" / "page.md", "demo")]


@pytest.mark.parametrize(
    "text", ["<!-- generated: no_such_table -->\n\n<!-- /generated -->\n", "<!-- generated: demo -->\n"]
)
def test_an_unknown_or_unclosed_block_is_an_error(tmp_path, monkeypatch, capsys, text):
    root = _demo_root(tmp_path, monkeypatch, "\n")
    (root / "README.md").write_text(text)
    with pytest.raises(pages.UnknownBlock):
        pages.stale(root)
    assert pages.main(["--check", "--root", str(root)]) == 1
    assert "error: " in capsys.readouterr().err
