"""The pages' generated blocks: their markers, the registry of block names, and the functions
that check or rewrite them.

A page (Markdown under ``docs/``, and ``README.md``) holds blocks::

    <!-- generated: NAME -->

    ...the table...

    <!-- /generated -->

and ``REGISTRY`` maps each NAME (registered with :func:`table` by the topic modules of ``docgen``) to
a function of the checkout's root that returns the block's Markdown, computed by the specs' own table
code (``qt_hard.experiments.report``, ``qt_hard.experiments.specs``) from the ledgers, CSVs and
benchmark JSONL under ``results/``. Every block that compares runs ends with a link to the
definitions of the spread and the verdict (``docs/comparisons.md``): ``report.spread`` and
``report.paired_verdict``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^<!-- generated: (?P<name>[^\s>]+) -->\n(?P<body>.*?)^<!-- /generated -->", re.S | re.M)
OPENING = re.compile(r"^<!-- generated:", re.M)
SPREAD_PAGE = "docs/comparisons.md"
SPREAD_ANCHOR = "#the-verdict"


class UnknownBlock(ValueError):
    """A page names a block that ``REGISTRY`` does not have."""


@dataclass(frozen=True)
class Block:
    """One registered table: ``make(root)`` is its Markdown; ``spread``: it compares runs, so its
    block ends with the link to the spread's definition; ``root_links``: its links are written from
    the checkout's root (``docs/...``) and each page gets them relative to itself."""

    make: Callable[[Path], str]
    spread: bool = True
    root_links: bool = False


REGISTRY: dict[str, Block] = {}
ROOT_LINK = re.compile(r"\]\((?P<path>(?:docs|results)/[^)#\s]*)(?P<anchor>#[^)\s]*)?\)")


def table(name: str, spread: bool = True, root_links: bool = False):
    """Register ``fn(root) -> markdown`` under ``name``."""

    def put(fn):
        if name in REGISTRY:
            raise ValueError(f"block {name} registered twice")
        REGISTRY[name] = Block(fn, spread, root_links)
        return fn

    return put


def _relink(text: str, root: Path, page: Path) -> str:
    """``text``'s root-relative links (``](docs/x.md#a)``) made relative to ``page``'s folder."""

    def sub(m):
        rel = os.path.relpath(root / m.group("path"), page.parent).replace(os.sep, "/")
        return f"]({rel}{m.group('anchor') or ''})"

    return ROOT_LINK.sub(sub, text)


def page_files(root: Path) -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [p for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))] if p.is_file()]


def blocks(text: str) -> list[tuple[str, str]]:
    """(NAME, body) of each generated block of a page, in order; UnknownBlock for an opening marker
    without its closing one."""
    found = [(m.group("name"), m.group("body")) for m in BLOCK.finditer(text)]
    if len(OPENING.findall(text)) != len(found):
        raise UnknownBlock("a '<!-- generated: NAME -->' marker has no '<!-- /generated -->' after it")
    return found


def _spread_link(root: Path, page: Path) -> str:
    rel = os.path.relpath(root / SPREAD_PAGE, page.parent).replace(os.sep, "/")
    return (
        "Spread: the sample std (ddof 1) over seeds; verdict: the 95% t-interval of the paired differences, "
        f"better or worse only when it excludes 0 ([how the tables compare runs]({rel}{SPREAD_ANCHOR}))."
    )


def body_of(name: str, root: Path, page: Path, cache: dict | None = None) -> str:
    """The text a block NAME of ``page`` holds: a blank line, the table, (the spread's link,) a blank line."""
    if name not in REGISTRY:
        raise UnknownBlock(f"{page}: unknown generated block {name!r}; known: {', '.join(sorted(REGISTRY))}")
    cache = {} if cache is None else cache
    if name not in cache:
        cache[name] = REGISTRY[name].make(root).rstrip("\n")
    text = cache[name]
    if REGISTRY[name].root_links:
        text = _relink(text, root, page)
    if REGISTRY[name].spread:
        text += "\n\n" + _spread_link(root, page)
    return f"\n{text}\n\n"


def render(text: str, root: Path, page: Path, cache: dict | None = None) -> str:
    """``text`` with every generated block rewritten from its files (UnknownBlock for an unknown NAME)."""
    cache = {} if cache is None else cache

    def sub(m):
        name = m.group("name")
        return f"<!-- generated: {name} -->\n{body_of(name, root, page, cache)}<!-- /generated -->"

    return BLOCK.sub(sub, text)


def stale(root: Path = ROOT) -> list[tuple[Path, str]]:
    """(page, NAME) of every block whose text differs from its regeneration."""
    cache: dict = {}
    out = []
    for page in page_files(root):
        try:
            found = blocks(page.read_text(encoding="utf-8"))
        except UnknownBlock as err:
            raise UnknownBlock(f"{page}: {err}") from None
        for name, body in found:
            if body != body_of(name, root, page, cache):
                out.append((page, name))
    return out
