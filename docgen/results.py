"""Reading the result files under ``results/``: CSVs, JSONL rows, the latest records of a ledger,
and the tables an experiment writes from its ledger."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from qt_hard.experiments.gridrun import experiment
from qt_hard.experiments.ledger import Ledger


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def latest_records(folder: Path, key, name: str = "results.jsonl") -> list[dict]:
    if not (folder / name).is_file():
        return []
    return Ledger(folder, key, name=name).latest()


def json_lines(path: Path) -> list[str]:
    """The lines of a captured stdout that are JSON objects (the rest are the loop's messages and the
    script's headline)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("{")]


def grid_tables(root: Path, name: str, folder: str) -> tuple[dict[str, str], list[dict]]:
    """The tables experiment ``name`` writes from its ledger in ``root/folder`` (``qt-hard grid run
    NAME --summary-only`` writes the same), and the records they read; empty without the ledger."""
    exp = experiment(name)
    path = root / folder
    if not (path / exp.ledger_name).is_file():
        return {}, []
    ledger = exp.ledger(path, exp.ledger_name)  # opened as the experiment opens it (a plain list for some)
    records = ledger.latest()
    return (exp.tables(records, ledger.setup, path) if records else {}), records
