"""The documentation site's generated parts stay true to the code.

``docs/cli.md`` is written by hand around generated blocks: between ``<!-- help: qt-hard CMD -->``
and ``<!-- /help -->`` stands what ``qt-hard CMD --help`` prints. ``python tests/test_docs.py``
rewrites those blocks from the installed parser; the tests here check that they match it, that every
command and subcommand of the parser has one, and that every command that runs has an example (a
``console`` block, run by the commands marker, ``tests/test_readme.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI_PAGE = ROOT / "docs" / "cli.md"
HELP_BLOCK = re.compile(r"<!-- help: (qt-hard[^>]*?) -->\n.*?<!-- /help -->", re.S)


def commands() -> list[tuple[str, bool]]:
    """(``qt-hard ...``, whether it runs something) for the parser and each of its subcommands, in
    the parser's order; a command with subcommands of its own only prints its help."""
    from qt_hard.cli import build_parser

    def walk(parser, words):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        yield " ".join(["qt-hard", *words]), not subs
        for action in subs:
            for name, child in action.choices.items():
                yield from walk(child, [*words, name])

    return list(walk(build_parser(), []))


def help_text(command: str) -> str:
    """What ``qt-hard COMMAND --help`` prints, at a fixed width of 100 columns."""
    from qt_hard.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps at $COLUMNS
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            build_parser().parse_args([*command.split()[1:], "--help"])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue()


def cli_page(text: str) -> str:
    """``text`` with every help block rewritten from the parser."""

    def block(match: re.Match) -> str:
        command = match.group(1)
        return f"<!-- help: {command} -->\n```text\n{help_text(command)}```\n<!-- /help -->"

    return HELP_BLOCK.sub(block, text)


def sections(text: str) -> dict[str, str]:
    """The page's ``## qt-hard ...`` sections by title."""
    parts = re.split(r"(?m)^## (qt-hard.*)$", text)
    return dict(zip(parts[1::2], parts[2::2]))


def test_cli_page_matches_the_parser():
    text = CLI_PAGE.read_text(encoding="utf-8")
    assert text == cli_page(text), (
        "docs/cli.md differs from `qt-hard ... --help`: rewrite it with `python tests/test_docs.py`"
    )


def test_cli_page_has_every_command_with_an_example():
    """One section and one help block per command of the parser, no other; each command that runs
    shows an example (``$ qt-hard CMD ...`` in a console block) in its own section."""
    text = CLI_PAGE.read_text(encoding="utf-8")
    names = [c for c, _ in commands()]
    assert HELP_BLOCK.findall(text) == names
    found = sections(text)
    assert list(found) == names
    for command, runs in commands():
        if runs:
            assert re.search(rf"```console\n\$ {re.escape(command)}( |\n)", found[command]), f"{command}: no example"


def test_no_help_text_carries_rst_markup_and_the_top_level_names_every_pipeline():
    """``--help`` is read in a terminal: no ``double backticks`` from docstrings."""
    texts = {command: help_text(command) for command, _ in commands()}
    assert [c for c, t in texts.items() if "``" in t] == []
    assert "text, graph and image" in texts["qt-hard"]
    assert "train a model (text, graph or image pipeline)" in texts["qt-hard"]


def test_a_stale_help_block_is_rewritten():
    stale = "<!-- help: qt-hard data list -->\n```text\nold\n```\n<!-- /help -->"
    new = cli_page(f"intro\n\n{stale}\n")
    assert "old" not in new and "usage: qt-hard data list" in new and new.startswith("intro\n\n<!-- help:")


def test_every_page_is_in_the_site_navigation():
    """A page under docs/ that mkdocs.yml's nav does not list would be built but unreachable."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from pages(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from pages(value)

    listed = set(pages(nav))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == listed, {"not in nav": sorted(on_disk - listed), "missing": sorted(listed - on_disk)}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    CLI_PAGE.write_text(cli_page(CLI_PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {CLI_PAGE}")
