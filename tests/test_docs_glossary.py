"""Every glossary term's first use on a reader's page (README.md, docs/index.md, the decision page and
the guides) links docs/glossary.md: code blocks and headings are skipped, and a first use inside a
generated block fails (the page then links the term in its prose before the block)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_WORD = r"(?<![\w/.-]){}(?![\w/-])"
TERMS = {
    "clamp": _WORD.format("clamp"),
    "rescaled": _WORD.format("rescaled"),
    "readings": _WORD.format("readings"),
    "S2V": _WORD.format("S2V"),
    "MNRL": _WORD.format("MNRL"),
    "control rows": r"(?i)\bcontrol rows?\b",
    "random:bow": r"random:bow",
    "collision_free": r"(?i)\bcollision[-_ ]free\b",
}
FENCE = re.compile(r"(?ms)^(```|~~~).*?^\1[^\n]*$")
LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)]*)\)")
PAGES = [
    ROOT / "README.md",
    ROOT / "docs" / "index.md",
    ROOT / "docs" / "which-negatives.md",
    *sorted((ROOT / "docs" / "guides").glob("*.md")),
]


def _blank(m: re.Match) -> str:
    return " " * len(m.group(0))


def prose(text: str) -> str:
    """``text`` with fenced and indented code and headings blanked (offsets kept)."""
    text = FENCE.sub(_blank, text)
    text = re.sub(r"(?m)^#{1,6} .*$", _blank, text)
    return re.sub(r"(?m)^    .*$", _blank, text)


def unlinked_first_uses(text: str) -> list[str]:
    """The terms whose first use in ``text``'s prose is not the text of a link to the glossary."""
    t = prose(text)
    links = [(m.start(1), m.end(1), m.group(2)) for m in LINK.finditer(t)]
    out = []
    for term, pattern in TERMS.items():
        m = re.search(pattern, t)
        if m and not any(a <= m.start() < b and "glossary.md" in href for a, b, href in links):
            out.append(term)
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_terms_first_use_links_the_glossary(page):
    assert unlinked_first_uses(page.read_text(encoding="utf-8")) == []


def test_the_check_finds_an_unlinked_first_use_and_skips_code():
    text = (
        "```bash\nqt-hard eval --model random:bow\n```\n\nWith [MNRL](glossary.md#mnrl), then `random:bow` and MNRL.\n"
    )
    assert unlinked_first_uses(text) == ["random:bow"]
    assert unlinked_first_uses("See `hard1-rescaled-anneal` and [`rescaled`](glossary.md#rescaled).") == []
