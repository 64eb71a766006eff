"""The documentation site's generated parts stay true to the code.

``docs/cli.md`` holds the ``--help`` text of every ``qt-hard`` command; it is written by
``python tests/test_docs.py`` and compared here with what the installed parser prints.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI_PAGE = ROOT / "docs" / "cli.md"
COMMANDS = [
    "",
    "train",
    "eval senteval",
    "eval wiki",
    "eval compare",
    "data get",
    "data list",
    "data wiki",
    "data books",
]
HEADER = """# CLI reference

One command, `qt-hard`, with three areas: `train`, `eval` and `data`. Errors you can fix print one
line, `qt-hard: error: ...`, and exit with status 2; `qt-hard --debug ...` or `QT_HARD_DEBUG=1`
shows the traceback. The help texts below are those of `qt-hard ... --help`
(`tests/test_docs.py` checks that they match the installed command).
"""


def help_text(command: str) -> str:
    """What ``qt-hard COMMAND --help`` prints, at a fixed width of 100 columns."""
    from qt_hard.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps at $COLUMNS
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            build_parser().parse_args([*command.split(), "--help"])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue()


def cli_page() -> str:
    parts = [HEADER]
    for command in COMMANDS:
        title = f"qt-hard {command}".rstrip()
        parts.append(f"\n## {title}\n\n```text\n{help_text(command)}```\n")
    return "".join(parts)


def test_cli_page_matches_the_parser():
    assert CLI_PAGE.read_text(encoding="utf-8") == cli_page(), (
        "docs/cli.md differs from `qt-hard ... --help`: rewrite it with `python tests/test_docs.py`"
    )


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
    CLI_PAGE.write_text(cli_page(), encoding="utf-8")
    print(f"wrote {CLI_PAGE}")
