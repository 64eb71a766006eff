"""Rewrite retrieval ledgers so that each record keeps its per-query scores packed
(:func:`qt_hard.experiments.report.pack_per_query`: each split's query ids once, each metric's scores as a
list, 4 decimals of the x100 score), as the retrieval grids now write them.

    python scripts/pack_per_query.py results/scifact results/nfcorpus

The tables read both forms; a folder is rewritten only when its comparison table, verdicts included, is
the same text from the packed records as from the records as they were, and not while a grid runs its
cells (:meth:`qt_hard.experiments.ledger.Ledger.rewrite`). One line a folder: records and bytes before and after.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qt_hard.errors import UserError
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.report import pack_per_query
from qt_hard.experiments.specs.scifact import KEY, summarize


def packed(record: dict) -> dict:
    """``record`` with its per-query scores packed (unchanged where it has none or they are packed)."""
    if "per_query" in record:
        record["per_query"] = pack_per_query(record["per_query"])
    return record


def pack_folder(folder: Path, name: str = "results.jsonl") -> str:
    """Pack the per-query scores of ``folder/name`` in place, after checking that the folder's table is
    unchanged by it; the line to print. A ``UserError`` when the table would change."""
    path = folder / name
    if not path.is_file():
        raise UserError(f"{path}: no ledger")
    stored = Ledger(folder, KEY, name=name)
    ledger = Ledger(folder, KEY, setup=stored.setup, name=name)
    before_bytes, records = path.stat().st_size, ledger.latest()
    before = summarize(records, (ledger.setup or {}).get("recipe"))
    after = summarize([packed(dict(r)) for r in records], (ledger.setup or {}).get("recipe"))
    if after != before:
        first = next(i for i, (a, b) in enumerate(zip(before.splitlines(), after.splitlines())) if a != b)
        raise UserError(f"{path}: packing changes line {first + 1} of the table; left as it is")
    n = ledger.rewrite(packed)
    return f"{path}: {n} records, {before_bytes:,} -> {path.stat().st_size:,} bytes, table unchanged"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="results folders of scifact or nfcorpus grids")
    args = parser.parse_args(argv)
    try:
        for folder in args.folders:
            print(pack_folder(folder))
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
