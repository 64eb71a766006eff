"""The results tables of the docs pages, written from the result files they cite.

``python -m docgen --check`` names each stale block (exit 1 when there is one, or for an unknown
NAME); ``--write`` rewrites every block from its files; ``--root`` names the checkout.
``--table-widths`` lists every table of the built site wider than its column (:mod:`docgen.table_widths`;
the options after it are that check's).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from docgen import table_widths
from docgen.pages import ROOT, UnknownBlock, blocks, page_files, render, stale


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m docgen", description=__doc__.splitlines()[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="exit 1 naming each stale block")
    what.add_argument("--write", action="store_true", help="rewrite every block from its files")
    what.add_argument(
        "--table-widths", action="store_true", help="list the built site's tables wider than their column"
    )
    p.add_argument("--root", default=str(ROOT), help="the checkout (default: this one)")
    args, rest = p.parse_known_args(argv)
    root = Path(args.root).resolve()
    if args.table_widths:
        return table_widths.main(rest, root)
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        if args.check:
            found = stale(root)
            for page, name in found:
                print(f"stale: {page.relative_to(root)}: {name}")
            n = sum(len(blocks(pg.read_text(encoding="utf-8"))) for pg in page_files(root))
            print(f"{n} generated blocks, {len(found)} stale" + ("; run with --write" if found else ""))
            return 1 if found else 0
        cache: dict = {}
        for page in page_files(root):
            text = page.read_text(encoding="utf-8")
            new = render(text, root, page, cache)
            if new != text:
                page.write_text(new, encoding="utf-8")
                print(f"wrote {page.relative_to(root)}")
        return 0
    except UnknownBlock as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
