"""The experiment contract: what an experiment declares so that one command, ``qt-hard grid run``
(:mod:`qt_hard.experiments.gridrun`), runs any of them the same way.

An experiment is a grid of **cells**. Each cell is claimed by the process that runs it, produces
one or more **records** appended to the experiment's ledger (:class:`~qt_hard.experiments.ledger.Ledger`)
and is skipped once its records are there. The experiment says

* which options it takes beyond the grid's own (:meth:`Experiment.add_arguments`) and checks them
  before anything is written (:meth:`Experiment.check`);
* what every record of one results folder shares (:meth:`Experiment.setup`: a folder never mixes two
  setups), and the form of its ledger (:meth:`Experiment.ledger`);
* its cells, in the order they run (:meth:`Experiment.cells`), and what is built once before them
  (:meth:`Experiment.prepare`);
* how one cell runs (:meth:`Experiment.run`), in this process or in a worker of its own;
* its tables from the records (:meth:`Experiment.tables`), written beside the ledger and read by the
  docs' generated blocks, and its figures (:meth:`Experiment.figures`), drawn beside them.

The grid owns everything else: the loop over cells, the workers side by side, the claims, the
resume, the progress lines and the summary. Rows are named by each experiment (``--rows``) and
checked by :meth:`Experiment.check_row`; seeds are ``--seeds``. The results are a folder (``--out``)
holding the ledger :attr:`Experiment.ledger_name` and the tables beside it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

__all__ = ["Cell", "Context", "Experiment", "Row"]


@dataclass(frozen=True)
class Cell:
    """One unit of work: ``claim`` names it among the processes sharing a folder (and its run
    folder); ``keys`` are the ledger keys it writes (by default the claim alone): the cell is done
    when every one of them has a record."""

    claim: tuple
    keys: tuple[tuple, ...] = field(default=())

    def __post_init__(self):
        if not self.keys:
            object.__setattr__(self, "keys", (tuple(self.claim),))

    def done(self, finished: set) -> bool:
        return all(tuple(k) in finished for k in self.keys)


@dataclass(frozen=True)
class Row:
    """One row of an experiment, the one row type of every spec: its ``name`` (what ``--rows`` picks),
    what it ``changes`` of the experiment's base (a pipeline's config overrides ``section.key=value``; a
    fine-tuning comparison's loss and its keywords; a model to evaluate as it is), the ``label`` its
    tables show, and the ``paper``'s numbers for it (one per column) where a paper reports the row,
    with ``source`` naming where they are printed."""

    name: str
    changes: Any = ()
    label: str = ""
    paper: tuple | None = None
    source: str = ""


@dataclass(frozen=True)
class Context:
    """What one cell runs under, the same for every cell of a command: the command's options
    (``args``), the results folder (``out``) and the setup every record of the folder shares."""

    args: argparse.Namespace
    out: Path
    setup: dict


class Experiment:
    """The base of every experiment (subclass it; see the module docstring).

    Class attributes:
        name: the command's name for it (``qt-hard grid run NAME``).
        help: one line for ``--help``.
        key: the record fields that identify a record in the ledger.
        fields: the fields every record must have besides the key (what the tables read).
        ledger_name: the ledger's file name in the results folder.
        default_out: ``--out`` when none is given.
        rows: the rows run when ``--rows`` is not given (empty: the experiment has no rows).
        row_table: the experiment's rows by name (:class:`Row`), what :meth:`row` reads.
        seeds: the default ``--seeds``.
        table_names: files :meth:`tables` writes whatever the records: in a new results folder, a file
            of one of these names that qt-hard did not write is refused before any cell runs.
    """

    name: str = ""
    help: str = ""
    key: tuple[str, ...] = ("row", "seed")
    fields: tuple[str, ...] = ()
    ledger_name: str = "results.jsonl"
    default_out: str = ""
    rows: Sequence[str] = ()
    row_table: Mapping[str, Row] = {}
    seeds: str = "0,1,2"
    table_names: tuple[str, ...] = ()

    # ---------------------------------------------------------------------------- options
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the experiment's own options (the grid adds --out, --rows, --seeds, --workers,
        --device and --summary-only)."""

    def row(self, name: str) -> Row:
        """The row ``name``: one of :attr:`row_table` (or a bare ``Row(name)`` of :attr:`rows` where the
        experiment keeps no table); an ``ArgumentError`` naming ``--rows`` for any other name (an
        experiment whose row names compose, ``NAME+mined``, reads them itself)."""
        from qt_hard.errors import ArgumentError

        if name in self.row_table:
            return self.row_table[name]
        if not self.row_table and name in self.rows:
            return Row(name)
        known = list(self.row_table) or list(self.rows)
        raise ArgumentError(f"--rows: unknown row {name!r}; rows are {', '.join(known)}")

    def check_row(self, name: str) -> None:
        """Refuse an unknown row with an ``ArgumentError`` naming ``--rows`` (:meth:`row`)."""
        self.row(name)

    def check(self, args: argparse.Namespace) -> None:
        """Refuse bad options in one line, before anything is written (rows are checked already)."""

    # ---------------------------------------------------------------------------- the grid
    def ledger(self, out: Path, name: str, setup: dict | None = None):
        """The ledger ``name`` in ``out``, opened with ``setup`` (None: read only, with the stored
        one): a :class:`~qt_hard.experiments.ledger.Ledger`, whose first line is the setup."""
        from qt_hard.experiments.ledger import Ledger

        return Ledger(out, self.key, setup, name=name, fields=self.fields, check=self.record_problem)

    def record_problem(self, record: dict) -> str | None:
        """What a record of the ledger lacks that the tables read beyond :attr:`fields` (a task of its
        results, say), or None: a record that lacks something is refused naming its file and line."""
        return None

    def setup(self, args: argparse.Namespace, out: Path) -> dict:
        """What every record of the folder shares (JSON); a folder of another setup is refused."""
        raise NotImplementedError

    def made_from(self, args: argparse.Namespace, setup: dict) -> dict:
        """The content of the inputs the setup names by path (:func:`qt_hard.experiments.identity.made_from`:
        the resolved config's sha256, the model's weights), carried by every record: a rerun whose
        inputs changed in place is refused, not served the old records."""
        from qt_hard.experiments.identity import made_from

        return made_from(setup)

    def cells(self, args: argparse.Namespace, rows: list[str], seeds: list[int]) -> list[Cell]:
        """The cells in the order they run: seeds outermost, so every row gets a seed early."""
        return [Cell((row, seed)) for seed in seeds for row in rows]

    def prepare(self, args: argparse.Namespace, out: Path, todo: list[Cell]) -> list[Cell] | None:
        """What the cells to run share, built once before them in this process (data, caches).
        Returns the cells to run now when not all of ``todo`` (a plan runs none), else None."""

    def run(self, cell: Cell, ctx: Context) -> dict | list[dict] | None:
        """Run one cell under ``ctx`` and return its record(s); None when it stopped early (a signal),
        leaving what it can resume from. A record may leave out its key fields where the cell's one
        key gives them (its row and seed) and its provenance: the grid adds them."""
        raise NotImplementedError

    # ---------------------------------------------------------------------------- the report
    def configure(self, args: argparse.Namespace) -> None:
        """Read the options the tables need (called before :meth:`tables` by the command,
        ``--summary-only`` included; the docs tool, ``docgen/``, calls :meth:`tables` without it)."""

    def tables(self, records: list[dict], setup: dict | None, out: Path) -> dict[str, str]:
        """The experiment's tables from its newest records: ``{file name: text}``, written into the
        results folder ``out`` (which an experiment with several ledgers reads too); the first is
        printed. Empty when there is nothing to show yet."""
        return {}

    def figures(self, args: argparse.Namespace, out: Path, records: list[dict], setup: dict | None) -> None:
        """Draw the experiment's figures from its newest records (after the tables; none by default)."""

    def progress(self, record: dict) -> str:
        """The line logged when one of its records is appended."""
        return " ".join(f"{k}={record.get(k)}" for k in self.key)
