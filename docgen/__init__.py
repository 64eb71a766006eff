"""The docs tool: the generated blocks of ``README.md`` and ``docs/``, written from the result files
under ``results/``. It sits beside the library, not in it: ``qt_hard`` returns its tables, and this
package (not installed with ``qt_hard``) puts them, captioned, into the pages.

    python -m docgen --check   # exit 1 naming each stale block (or an unknown NAME)
    python -m docgen --write   # rewrite every block from its files
"""

from docgen.pages import BLOCK, REGISTRY, Block, UnknownBlock, blocks, body_of, main, page_files, render, stale

__all__ = ["BLOCK", "REGISTRY", "Block", "UnknownBlock", "blocks", "body_of", "main", "page_files", "render", "stale"]
