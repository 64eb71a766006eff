"""``qt-hard grid run NAME``: any experiment of the contract (:mod:`qt_hard.experiments.contract`) run
the one way, and ``qt-hard grid list``.

    qt-hard grid run scifact --out results/scifact --seeds 0,1,2 --workers 2
    qt-hard grid run scifact --out results/scifact --summary-only

The command checks every option before anything is written, opens the ledger with the experiment's
setup (another setup in the folder is refused), lists the cells still to run, builds what they share
once, then runs them (``--workers N``: N at once, each in a process of its own, on ``--device``),
each claimed so that several commands on one folder never run the same cell, each record appended
whole as its cell ends. A rerun skips what is done; a signal stops it with the finished cells kept.
The experiment's tables are then written beside the ledger (``--summary-only``: only that).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
from pathlib import Path

from qt_hard import logs
from qt_hard.errors import ArgumentError, UserError
from qt_hard.experiments.contract import Cell, Context, Experiment

__all__ = ["experiment", "register", "registered", "run_cell", "run_grid", "write_tables"]

log = logging.getLogger(__name__)


def registered() -> dict[str, str]:
    """Every experiment name -> its module: those of every module of :mod:`qt_hard.experiments.specs`
    with an ``EXPERIMENTS`` sequence (discovered, as the negatives' parts are: a new spec module is
    one file, listed nowhere else), and those of the modules listed in ``$QT_HARD_EXPERIMENTS``
    (comma-separated module names): an experiment of one's own runs through the same command without
    editing the library. Two experiments of one name are refused."""
    import pkgutil

    from qt_hard.experiments import specs

    modules = [f"{specs.__name__}.{m.name}" for m in pkgutil.iter_modules(specs.__path__) if not m.name.startswith("_")]
    names: dict[str, str] = {}
    for module in modules:
        for e in getattr(importlib.import_module(module), "EXPERIMENTS", ()):
            _add(names, e.name, module)
    for module in filter(None, os.environ.get("QT_HARD_EXPERIMENTS", "").split(",")):
        try:
            found = importlib.import_module(module.strip()).EXPERIMENTS
        except (ImportError, AttributeError) as err:
            raise UserError(f"QT_HARD_EXPERIMENTS: {module}: {err}") from None
        for e in found:
            _add(names, e.name, module.strip())
    return names


def _add(names: dict[str, str], name: str, module: str) -> None:
    if names.get(name, module) != module:
        raise UserError(f"two experiments are named {name!r}: in {names[name]} and in {module}")
    names[name] = module


def experiment(name: str, module: str | None = None) -> Experiment:
    """The registered experiment ``name`` (from ``module`` when given); an ``ArgumentError`` listing
    the names otherwise."""
    if module is None:
        names = registered()
        if name not in names:
            raise ArgumentError(f"unknown experiment {name!r}; experiments are {', '.join(sorted(names))}")
        module = names[name]
    return next(e for e in importlib.import_module(module).EXPERIMENTS if e.name == name)


# ------------------------------------------------------------------------------------------ the loop
def run_grid(exp: Experiment, args: argparse.Namespace) -> int:
    """Check, plan, prepare, run the cells to run, write the tables (see the module docstring).
    Every record names the commit of the code this command started with (``QT_HARD_GIT_COMMIT``
    for its workers too), not the checkout's at the moment the record is appended: a long grid
    keeps running the code it loaded while the checkout moves on."""
    from qt_hard.experiments.ledger import git_commit

    started = os.environ.get("QT_HARD_GIT_COMMIT")
    os.environ["QT_HARD_GIT_COMMIT"] = started or git_commit(Path(__file__).resolve().parent)
    try:
        return _run_grid(exp, args)
    finally:
        if started is None:
            os.environ.pop("QT_HARD_GIT_COMMIT", None)


def _run_grid(exp: Experiment, args: argparse.Namespace) -> int:
    from qt_hard.experiments.identity import check_made_from
    from qt_hard.experiments.runner import check_device, in_processes
    from qt_hard.paths import output_folder

    out = output_folder(args.out)
    if args.summary_only:  # reads the ledger alone: the other options are not needed
        if not (out / exp.ledger_name).is_file():
            raise ArgumentError(f"--out {args.out}: no {exp.ledger_name} to summarize")
        return write_tables(exp, out, args)
    rows, seeds = _rows_and_seeds(exp, args)
    if args.workers < 1:
        raise ArgumentError(f"--workers {args.workers}: give at least 1")
    exp.check(args)
    check_device(args.device)
    setup = exp.setup(args, out)
    ledger = exp.ledger(out, exp.ledger_name, setup)
    made = exp.made_from(args, setup)
    check_made_from(ledger, made, args.redo)
    # The tables known before the cells run: a file in their place that qt-hard did not write is
    # refused now, not after hours of cells (a folder holding records wrote its tables before).
    if ledger.records():
        exp.configure(args)
        known = exp.tables(ledger.latest(), setup, out)
    else:
        known = dict.fromkeys(exp.table_names)
    guard_tables(out, args, ledger.path, known)
    cells = exp.cells(args, rows, seeds)
    # --redo runs the asked cells again: their new records supersede the old ones in the tables
    # (the ledger keeps both); only what another command reran meanwhile is skipped.
    since = len(ledger.records()) if args.redo else None
    finished = ledger.done()  # read once, not once a cell
    todo = [c for c in cells if args.redo or not c.done(finished)]
    done = sum(c.done(finished) for c in cells)
    again = " again (--redo)" if args.redo else ""
    log.info("%s: %d cells, %d done, %d to run%s (%s)", exp.name, len(cells), done, len(todo), again, out)
    picked = exp.prepare(args, out, todo) if todo else None
    todo = todo if picked is None else picked
    picklable = argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "func"})  # for the workers
    jobs = [(type(exp).__module__, exp.name, picklable, str(out), setup, cell, since, made) for cell in todo]
    for records in in_processes(run_cell, jobs, args.workers, fresh=args.workers > 1, device=args.device):
        for rec in records or []:
            log.info("%s: %s", exp.name, exp.progress(rec))
    return write_tables(exp, out, args)


def run_cell(
    module: str,
    name: str,
    args: argparse.Namespace,
    out: str,
    setup: dict,
    cell: Cell,
    since: int | None = None,
    made: dict | None = None,
) -> list[dict] | None:
    """One cell under its claim (in this process or a worker's): skipped when another process holds
    it or its records appeared meanwhile (after the ledger's first ``since`` records, for a cell run
    again); its records appended as it ends, each with what it was ``made`` from
    (:mod:`qt_hard.experiments.identity`). Returns them."""
    from qt_hard.experiments.runner import run_claimed

    exp = experiment(name, module)
    ledger = exp.ledger(Path(out), exp.ledger_name, setup)
    return run_claimed(
        ledger,
        cell.claim,
        lambda: _stamped(exp, cell, exp.run(cell, Context(args, Path(out), setup)), made),
        cell.keys,
        since,
    )


def _stamped(exp: Experiment, cell: Cell, records, made: dict | None):
    """``records`` (one, a list, or None) as the ledger keeps them, whatever the experiment put in them:
    the key fields of a one-record cell taken from the cell where the record lacks them (its row, its
    seed), the provenance (:func:`~qt_hard.experiments.ledger.provenance`: machine, time, commit, library
    versions) where the record gives none of its own, and ``made_from``: ``made``."""
    from qt_hard.experiments.identity import MADE_FROM
    from qt_hard.experiments.ledger import provenance

    if records is None:
        return None
    one = not isinstance(records, list)
    keys = dict(zip(exp.key, cell.keys[0])) if len(cell.keys) == 1 else {}
    stamp = provenance(Path(__file__).resolve().parent)
    out = [
        {**keys, **r, **{k: v for k, v in stamp.items() if k not in r}, **({MADE_FROM: made} if made else {})}
        for r in ([records] if one else records)
    ]
    return out[0] if one else out


def write_tables(exp: Experiment, out: Path, args: argparse.Namespace | None = None) -> int:
    """The experiment's tables from the newest records of its ledger in ``out``
    (:attr:`~qt_hard.experiments.contract.Experiment.ledger_name`), written into ``out`` (the
    Markdown ones printed), then its figures; ``args``, the command's options, reach
    :meth:`Experiment.configure` and :meth:`Experiment.figures`."""
    from qt_hard.files import write_text
    from qt_hard.paths import note_written

    if args is not None:
        exp.configure(args)
    ledger = exp.ledger(out, exp.ledger_name)
    records = ledger.latest()
    tables = {name: text.rstrip("\n") + "\n" for name, text in exp.tables(records, ledger.setup, out).items()}
    guard_tables(out, args, ledger.path, tables)  # every one, before any is written
    for name, text in tables.items():
        write_text(out / name, text, "table")
    note_written(out, tables)
    print("\n\n".join(text.rstrip("\n") for name, text in tables.items() if name.endswith(".md")))
    if args is not None:
        exp.figures(args, out, records, ledger.setup)
    return 0


def guard_tables(out: Path, args, ledger: Path, tables: dict[str, str | None]) -> None:
    """Refuse, naming the file, a table (``{name: text}``; None: not known yet) that would replace a
    file qt-hard did not write there (:func:`~qt_hard.paths.made_here`: a user's ``results.csv`` in
    ``--out``) or one the command reads (the ledger, a file an option names): the one output guard of
    the commands' files (:func:`~qt_hard.paths.guard_output`)."""
    from qt_hard.paths import guard_output, made_here

    read = {f"the --{k.replace('_', '-')} file": v for k, v in vars(args or argparse.Namespace()).items()}
    inputs = {"the ledger": ledger, **{k: v for k, v in read.items() if _a_file(v)}}
    for name, text in tables.items():
        guard_output(out / name, "--out", inputs=inputs, replaceable=made_here(text), kind="table", owners=False)


def _a_file(value) -> bool:
    return isinstance(value, str) and value != "" and Path(value).is_file()


def _rows_and_seeds(exp: Experiment, args) -> tuple[list[str], list[int]]:
    from qt_hard.experiments.grid import comma_list
    from qt_hard.experiments.grid import seed_list

    rows = comma_list(args.rows) if exp.rows else []
    if exp.rows and not rows:
        raise ArgumentError("--rows: give at least one row")
    for r in rows:
        exp.check_row(r)
    return rows, (seed_list(args.seeds) if exp.seeds else [])


# ------------------------------------------------------------------------------------------ the command
def register(sub) -> None:
    """``qt-hard grid run NAME ...`` (one subcommand an experiment, with its own options) and
    ``qt-hard grid list``."""
    from qt_hard.experiments.runner import DEVICES

    grid = sub.add_parser("grid", help="run an experiment's grid of cells (resumable), or list the experiments")
    grid_sub = grid.add_subparsers(dest="grid_command", metavar="ACTION")
    lister = grid_sub.add_parser("list", help="the experiments and what each measures")
    lister.set_defaults(func=_list)
    runner = grid_sub.add_parser("run", help="run (or resume) an experiment's cells and write its tables")
    specs = runner.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    try:
        names = registered()
    except UserError as err:  # reported by the grid's commands, not by every other command
        names = {}
        lister.set_defaults(func=lambda args, err=err: _raise(err))
        runner.set_defaults(func=lambda args, err=err: _raise(err))
    for name in names:
        exp = experiment(name)
        p = specs.add_parser(name, help=exp.help, description=exp.help)
        p.add_argument("--out", default=exp.default_out or f"runs/{name}", help="results folder (the ledger)")
        if exp.rows:
            p.add_argument("--rows", default=",".join(exp.rows), help="rows to run, comma-separated")
        if exp.seeds:
            p.add_argument("--seeds", default=exp.seeds, help="seeds, comma-separated")
        p.add_argument("--workers", type=int, default=1, help="cells run at once, each in a process of its own")
        p.add_argument("--device", default="auto", help=f"where the cells run: {' | '.join(DEVICES)}")
        p.add_argument("--summary-only", action="store_true", help="only write the tables of what is there")
        p.add_argument(
            "--redo",
            action="store_true",
            help="run the cells of --rows and --seeds again where they have records; the tables read the newest",
        )
        exp.add_arguments(p)
        p.set_defaults(func=lambda args, exp=exp: _run(exp, args))
    grid.set_defaults(func=lambda args: grid.print_help() or 2)
    if names:
        runner.set_defaults(func=lambda args: runner.print_help() or 2)


def _raise(err: Exception):
    raise err


def _run(exp: Experiment, args) -> int:
    logs.configure(timestamps=True)
    try:
        return run_grid(exp, args)
    except SystemExit as stop:  # a spec's own refusal, raised as SystemExit("message")
        if isinstance(stop.code, str):
            raise UserError(stop.code) from None
        raise


def _list(args) -> int:
    names = registered()
    width = max(map(len, names), default=0)
    for name in names:
        print(f"{name:{width}s}  {experiment(name).help}")
    return 0
