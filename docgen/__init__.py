"""The docs tool: the generated blocks of ``README.md`` and ``docs/``, written from the result files
under ``results/``. It sits beside the library, not in it: ``qt_hard`` returns its tables, and this
package (not installed with ``qt_hard``) puts them, captioned, into the pages.

    python -m docgen --check   # exit 1 naming each stale block (or an unknown NAME)
    python -m docgen --write   # rewrite every block from its files

:mod:`docgen.pages` holds the markers, the registry and the check; each topic module registers the
blocks of its pages when imported, so importing the package fills ``REGISTRY``.
"""

# the topic modules, each registering its blocks
from docgen import (  # noqa: F401
    benchmarks,
    claims,
    decision,
    effects,
    evaluation,
    finetune,
    graphs,
    images,
    kvn,
    retrieval,
    s2v,
    scale,
    text,
)
from docgen.cli import main
from docgen.pages import BLOCK, REGISTRY, Block, UnknownBlock, blocks, body_of, page_files, render, stale

__all__ = ["BLOCK", "REGISTRY", "Block", "UnknownBlock", "blocks", "body_of", "main", "page_files", "render", "stale"]
