"""The decision page (docs/which-negatives.md) answers every setting on its first screen: in headless
Chromium at 1280 x 900, each answer's row of the answers table, its setting in bold, ends above 900 px.
The site is built here (mkdocs build); without Chromium the test skips."""

from __future__ import annotations

import shutil

import pytest

from docgen import table_widths as check

SETTINGS = (
    "Text, trained from scratch",
    "Similarity, fine-tuning a pretrained transformer",
    "Similarity, from a weak start",
    "Retrieval, fine-tuning a pretrained transformer",
    "Graphs",
    "Images",
    "Choosing k",
)


@pytest.mark.skipif(
    not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")), reason="no chromium"
)
def test_every_answer_is_on_the_decision_pages_first_screen(tmp_path):
    site = check.build_site(tmp_path / "site")
    args = check.chromium_args(check.find_chromium(), 1280, 900)
    page = site / "which-negatives" / "index.html"
    heads = check.positions(page, ".qt-answers tbody tr td:first-child strong", args)
    rows = check.positions(page, ".qt-answers tbody tr", args)
    assert [h["text"] for h in heads] == list(SETTINGS)
    below = [(h["text"], round(r["bottom"])) for h, r in zip(heads, rows) if r["bottom"] > 900]
    assert below == [], f"answers below the first screen (1280 x 900): {below}"
