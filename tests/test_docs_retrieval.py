"""The retrieval page's NFCorpus blocks: "being measured" while ``results/nfcorpus/`` holds no records,
the comparison's tables once its ledgers do (here SciFact's ledgers copied in its place)."""

from __future__ import annotations

import shutil
from pathlib import Path

from docgen.pages import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


def test_nfcorpus_blocks_say_being_measured_without_records(tmp_path):
    (tmp_path / "results").mkdir()
    for name in ("nfcorpus", "nfcorpus-recipe"):
        text = REGISTRY[name].make(tmp_path)
        assert text.startswith("Being measured:") and "|" not in text


def test_nfcorpus_blocks_fill_from_the_ledgers(tmp_path):
    shutil.copytree(ROOT / "results" / "scifact", tmp_path / "results" / "nfcorpus")
    table = REGISTRY["nfcorpus"].make(tmp_path)
    recipe = REGISTRY["nfcorpus-recipe"].make(tmp_path)
    assert "| row | seeds | dev nDCG@10 |" in table and "`results/nfcorpus/results.jsonl`:" in table
    assert "| lr | steps | dev nDCG@10 |" in recipe and "`results/nfcorpus/recipe.jsonl`:" in recipe


def test_the_retrieval_page_holds_both_data_sets():
    text = (ROOT / "docs" / "guides" / "retrieval.md").read_text(encoding="utf-8")
    for name in ("retrieval-answer", "in-batch-relevance", "scifact-recipe", "scifact", "nfcorpus-recipe", "nfcorpus"):
        assert f"<!-- generated: {name} -->" in text
