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


def test_the_retrieval_answer_waits_for_its_ledger_then_reads_the_choice_from_dev(tmp_path):
    from qt_hard.experiments.ledger import Ledger

    make = docgen.REGISTRY["scifact-answer"].make
    assert make(tmp_path).startswith("Not measured yet: `results/scifact/results.jsonl` does not exist")
    led = Ledger(tmp_path / "results" / "scifact", ("row", "seed"), setup={"recipe": {}})
    led.append({"row": "mnrl", "seed": 9, "dev_ndcg@10": 70.0, "test_ndcg@10": 70.0})
    assert make(tmp_path).startswith("Not judged yet: no row has 3 seeds paired with its baseline")
    for s in range(3):  # hard beta 1 on mined triplets: +1 on dev against MNRL on them, level on test
        led.append({"row": "mnrl", "seed": s, "dev_ndcg@10": 60.0 + s, "test_ndcg@10": 60.0 + s})
        led.append({"row": "mnrl+mined", "seed": s, "dev_ndcg@10": 61.0 + s, "test_ndcg@10": 61.0 + s})
        d = (0.5, -0.5, 0.0)[s]
        led.append({"row": "hard_b1+mined", "seed": s, "dev_ndcg@10": 62.0 + s, "test_ndcg@10": 61.0 + s + d})
    text = make(tmp_path)
    assert "`hard_b1+mined`: against `mnrl+mined` on dev +1.00 [+1.00, +1.00], **better**" in text
    assert "on test nDCG@10 +0.00 [-1.24, +1.24], **level**" in text
    # The mining's own effect, paired by seed (seed 9 has no mined partner), and no guard yet.
    mining = "(`mnrl+mined` against `mnrl`, 3 seeds): dev +1.00 [+1.00, +1.00], **better**; test +1.00"
    assert mining in text and "guards acted" not in text
    # A guarded row's shares are averaged over its seeds; an unguarded row's zero is not a guard.
    for s, (frac, tp) in enumerate([(0.002, 0.1), (0.004, 0.3)]):
        rec = {"dev_ndcg@10": 60.0, "test_ndcg@10": 60.0, "guard_removed_frac": frac, "guard_removed_tp_frac": tp}
        led.append({"row": "hard_b1_guard_rel+mined", "seed": s, **rec})
        led.append({"row": "hard_b0.5+mined", "seed": s, **rec, "guard_removed_frac": 0.0})
    text = make(tmp_path)
    assert "guards acted: the audited guarded row removed 0.30% of the candidates on average (20% of them cited" in text
    assert "GISTEmbedLoss" not in text
    # GISTEmbedLoss's own filter is named as the one guard the audit does not read.
    led.append({"row": "gist+mined", "seed": 0, "dev_ndcg@10": 60.0, "test_ndcg@10": 60.0})
    assert "; `gist+mined` filters inside GISTEmbedLoss, which the audit does not read" in make(tmp_path)
