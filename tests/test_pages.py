"""docgen (the docs tool): every generated block of README.md and docs/ is what its result files
give today, an unknown block name is an error, the command names each stale block, and no page types
a claims or results table outside a generated block."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import docgen

ROOT = Path(__file__).resolve().parents[1]


def test_every_generated_block_is_its_regeneration():
    """A page whose table drifted from its ledger, CSV or JSONL fails here (fix: --write)."""
    assert docgen.stale(ROOT) == [], "stale blocks; run `python -m docgen --write`"


def test_every_block_on_the_pages_is_registered_and_the_pages_use_them():
    used = {name for page in docgen.page_files(ROOT) for name, _ in docgen.blocks(page.read_text(encoding="utf-8"))}
    assert used <= set(docgen.REGISTRY)
    for page in (
        "docs/which-negatives.md",
        "docs/reproductions/hcl-text.md",
        "docs/reproductions/k-vs-n.md",
        "README.md",
    ):
        assert docgen.blocks((ROOT / page).read_text(encoding="utf-8")), page


def _demo_root(tmp_path: Path, monkeypatch, body: str) -> Path:
    monkeypatch.setitem(docgen.REGISTRY, "demo", docgen.Block(lambda root: (root / "n.txt").read_text()))
    (tmp_path / "n.txt").write_text("| a |\n|---|\n| 1 |\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(f"# Page\n\n<!-- generated: demo -->\n{body}<!-- /generated -->\n")
    return tmp_path


def test_check_names_a_stale_block_and_write_makes_it_current(tmp_path, monkeypatch, capsys):
    root = _demo_root(tmp_path, monkeypatch, "\nold\n\n")
    assert docgen.main(["--check", "--root", str(root)]) == 1
    assert "stale: docs/page.md: demo" in capsys.readouterr().out
    assert docgen.main(["--write", "--root", str(root)]) == 0
    text = (root / "docs" / "page.md").read_text()
    assert "| a |\n|---|\n| 1 |\n\nSpread: " in text and "(comparisons.md#the-verdict)" in text
    assert docgen.main(["--check", "--root", str(root)]) == 0
    (root / "n.txt").write_text("| a |\n|---|\n| 2 |\n")  # the result file changed: the page is stale again
    assert docgen.stale(root) == [(root / "docs" / "page.md", "demo")]


@pytest.mark.parametrize(
    "text", ["<!-- generated: no_such_table -->\n\n<!-- /generated -->\n", "<!-- generated: demo -->\n"]
)
def test_an_unknown_or_unclosed_block_is_an_error(tmp_path, monkeypatch, capsys, text):
    root = _demo_root(tmp_path, monkeypatch, "\n")
    (root / "README.md").write_text(text)
    with pytest.raises(docgen.UnknownBlock):
        docgen.stale(root)
    assert docgen.main(["--check", "--root", str(root)]) == 1
    assert "error: " in capsys.readouterr().err


# A claims or results table: a header naming a claim, verdict or effect, or a cell holding a measured
# result (mean ± spread, a [low, high] interval, a bold verdict). Only generated blocks may hold one.
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
RESULT_HEAD = re.compile(r"\b(claim|verdict|effect)\b", re.I)
RESULT_CELL = re.compile(
    r"\d\s*±\s*\d|\[[+-]\d[\d.]*, [+-]\d[\d.]*\]|\*\*(reproduced|partly|not reproduced|not judged|better|worse|level)\*\*",
    re.I,
)


def hand_typed_result_tables(text: str) -> list[str]:
    """The header line of each Markdown table outside the generated blocks (and code fences) that
    carries a claim or a result."""
    text = FENCE.sub("", docgen.BLOCK.sub("", text))
    found, table = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table and (RESULT_HEAD.search(table[0]) or RESULT_CELL.search("\n".join(table[2:]))):
            found.append(table[0])
        table = []
    return found


def test_no_page_types_a_claims_or_results_table_by_hand():
    typed = {
        str(page.relative_to(ROOT)): found
        for page in docgen.page_files(ROOT)
        if (found := hand_typed_result_tables(page.read_text(encoding="utf-8")))
    }
    assert typed == {}, "results tables typed by hand; generate them (python -m docgen)"


@pytest.mark.parametrize(
    "table",
    [
        "| paper | claim | here |\n|---|---|---|\n| HCL | hard helps | **partly**: +0.4 |\n",
        "| row | MR |\n|---|---:|\n| hard | 70.1 ± 0.2 |\n",
        "| row | kNN |\n|---|---:|\n| ring | -1.38 [-2.90, +0.15] |\n",
    ],
)
def test_a_hand_typed_results_table_is_found_and_a_generated_one_is_not(table):
    assert hand_typed_result_tables(f"# Page\n\n{table}\nText.\n") == [table.splitlines()[0]]
    generated = f"# Page\n\n<!-- generated: demo -->\n\n{table}\n<!-- /generated -->\n"
    assert hand_typed_result_tables(generated) == []
    assert hand_typed_result_tables("| option | meaning |\n|---|---|\n| `k` | 64 negatives |\n") == []
