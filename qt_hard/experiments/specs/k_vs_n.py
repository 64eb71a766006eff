"""The k-versus-N ablation (``qt-hard grid run k-vs-n GRID.yaml``): Ash, Goel, Krishnamurthy, Misra
(AISTATS 2022), section 5, Fig. 3; App. D.1, Figs. 5-7. The grid, its cells, results, figures and
processes are described in docs/reproductions/k-vs-n.md and docs/cli.md.

The module is the experiment and its plan; what it runs lives by what it does: the grid and its cells
(:mod:`.k_vs_n_grid`), the results and figures (:mod:`.k_vs_n_tables`); the sampling measurement
(:mod:`.k_vs_n_sampling`) has its own command, ``scripts/k_vs_n_sampling.py``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import numpy as np

from qt_hard.errors import ArgumentError
from qt_hard.experiments.contract import Cell, Context
from qt_hard.experiments.contract import Experiment
from qt_hard.experiments.grid import seed_list
from qt_hard.experiments.ledger import git_commit
from qt_hard.experiments.runner import estimate_line, step_seconds

from .k_vs_n_grid import Point, Grid, cell_id, cell_tree, expand, load_grid, prepare, prepared_marker, run_cell
from .k_vs_n_grid import wiki_dir
from .k_vs_n_tables import KEY, TABLE_NAMES, diagnose, plot, record_of, results_files, setup_of, summarize

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# plan and time estimate


def estimate(grid: Grid, cells: list[Point], cache: Path, device, probe_steps: int = 3) -> dict:
    """Seconds per cell from a few timed steps of the library's loop per (N, B)
    (:func:`qt_hard.experiments.runner.step_seconds`) and one linear-classifier epoch per N, scaled
    to the cell's epochs, on the worker's ``device`` (:func:`worker_device`)."""
    import shutil
    import tempfile

    import torch

    from qt_hard.evaluation.wiki import linear_classifier
    from qt_hard.text.build import build_run
    from qt_hard.training.config import config_from_dict

    step_s, lin_s, steps_per_epoch = {}, {}, {}
    tmp = Path(tempfile.mkdtemp(prefix="k_vs_n_probe_"))
    try:
        for N in sorted({c.N for c in cells}):
            for B in sorted({c.B for c in cells if c.N == N}):
                tree = cell_tree(grid, Point(N, None, B, False, 0), cache, tmp / f"N{N}_B{B}", torch.get_num_threads())
                tree["train"].update(steps=probe_steps + 2, epochs=1.0)
                tree["eval"]["readouts"] = False
                step_s[(N, B)], steps_per_epoch[(N, B)] = step_seconds(config_from_dict(tree))
            tree["eval"]["readouts"] = True
            split = build_run(config_from_dict(tree), tmp / f"N{N}").split
            labels = split.train_labels
            n = min(len(labels), 20_000)
            x = np.random.default_rng(0).standard_normal((n, grid.train.dim)).astype(np.float32)
            t0 = time.perf_counter()
            linear_classifier(
                x,
                labels[:n],
                x[:10],
                labels[:10],
                split.num_classes,
                epochs=1,
                batch_size=grid.train.linear_batch,
                device=device,
                threads=torch.get_num_threads(),
            )
            lin_s[N] = (time.perf_counter() - t0) * len(labels) / n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_cell = []
    for c in cells:
        s = step_s[(c.N, c.B)] * steps_per_epoch[(c.N, c.B)] * grid.train.epochs
        per_cell.append(s + lin_s[c.N] * grid.train.linear_epochs)
    return {
        "per_cell_s": per_cell,
        "step_s": {f"N={n},B={b}": round(v, 4) for (n, b), v in step_s.items()},
        "linear_epoch_s": {f"N={n}": round(v, 3) for n, v in lin_s.items()},
    }


def print_plan(
    grid: Grid, cells: list[Point], notes: list[str], left: set[str], est: dict | None, workers: int
) -> None:
    """The plan: the grid's cells, how many of them are ``left`` to run (their ids), its blocks, the
    cells left out and the estimate (:func:`estimate`) of the cells left."""
    ids = [cell_id(grid, c) for c in cells]
    todo = [i for i in ids if i in left]
    log.info(
        f"grid: {len(cells)} cells ({len(cells) - len(todo)} already finished, {len(todo)} to run); "
        f"epochs {grid.train.epochs} NCE + {grid.train.linear_epochs} linear, optimizer {grid.train.optimizer}, "
        f"seeds {grid.seeds}, data {grid.data.kind} (min count {grid.data.min_count})"
    )
    for name, b in grid.blocks.items():
        log.info(
            f"  block {name}: N={b['N']} k={b['k']} B={b.get('B', [1000])} "
            f"collision_free={b.get('collision_free', [False])}"
        )
    for n in notes:
        log.info(f"  note: {n}")
    if est is not None:
        log.info(f"  probe: seconds per step {est['step_s']}; per linear epoch {est['linear_epoch_s']}")
        log.info(estimate_line([s for s, i in zip(est["per_cell_s"], ids) if i in left], workers))


def worker_device(name: str | None):
    """The torch device ``name`` (``--device``; ``cuda`` under ``accelerate launch``: the GPU of the
    process's ``LOCAL_RANK``), on which this worker then trains its cells alone: the process group's
    variables are dropped (a cell is far too small for data parallelism) and the Accelerator is
    pointed at the device."""
    import torch

    if name in (None, "auto"):
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and "LOCAL_RANK" in os.environ:
        name = f"cuda:{int(os.environ['LOCAL_RANK']) % max(torch.cuda.device_count(), 1)}"
    dev = torch.device(name)
    for var in (
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "ROLE_RANK",
        "ROLE_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TORCHELASTIC_RUN_ID",
    ):
        os.environ.pop(var, None)
    if dev.type == "cpu":
        os.environ["ACCELERATE_USE_CPU"] = "true"
    elif dev.type == "cuda" and dev.index is not None:  # a bare "cuda" is the current device already
        torch.cuda.set_device(dev)
    return dev


# --------------------------------------------------------------------------------------------
# the experiment: `qt-hard grid run k-vs-n GRID.yaml`


def grid_of(args) -> Grid:
    """The grid YAML of the command with its overrides (``--epochs``, ``--linear-epochs``,
    ``--optimizer``, ``--seeds``)."""
    seeds = seed_list(args.seeds) if args.seeds is not None else None
    return load_grid(args.grid, args.epochs, args.linear_epochs, args.optimizer, seeds)


def _threads(args) -> int:
    """Torch threads per worker: ``--threads``, else the CPU cores shared by the workers."""
    return args.threads or max(1, (os.cpu_count() or 1) // max(1, args.workers))


def _add_options(parser) -> None:
    parser.add_argument("grid", nargs="?", help="grid YAML (configs/k_vs_n*.yaml); not needed with --summary-only")
    parser.add_argument("--cache", default="runs/k_vs_n/cache", help="Wiki-N token caches (built before the cells)")
    parser.add_argument("--epochs", type=int, help="NCE epochs, replacing the grid's (D.1: 50)")
    parser.add_argument("--linear-epochs", type=int, help="linear-classifier epochs, replacing the grid's (D.1: 50)")
    parser.add_argument("--optimizer", choices=["adam", "sparse_adam"], help="replacing the grid's")
    parser.add_argument("--seeds", help="comma-separated seeds, replacing the grid's")
    parser.add_argument("--threads", type=int, help="torch threads per worker (default: CPU cores / workers)")
    parser.add_argument(
        "--plan", action="store_true", help="build the caches, print the cells and the estimate, run none"
    )
    parser.add_argument("--no-estimate", action="store_true", help="skip the timing probe of the plan")
    parser.add_argument("--max-cells", type=int, help="stop after this many cells")
    parser.add_argument("--no-prepare", action="store_true", help="fail instead of building missing caches")
    parser.add_argument(
        "--checkpoint-every", type=int, default=0, help="steps between a cell's checkpoints (0: only on a signal)"
    )
    parser.add_argument(
        "--diagnose", action="store_true", help="also the table of the cells' diagnostics, results.diagnostics.md"
    )
    parser.add_argument("--figures", help="folder of the figures and k_vs_n_summary.json (default: none drawn)")


class KversusN(Experiment):
    """Every cell one bag-of-words NCE training on Wiki-N with App. D.1's settings (768-d,
    temperature 1, unnormalized, no positive in the denominator, Adam lr 0.01, gradient clip 2.5,
    tokens seen fewer than 50 times -> UNK, 80/20 split per article), ``k`` negatives per anchor
    out of the 2(B-1) candidates of a batch of B pairs (optionally collision-free), then both
    readouts. The ledger's setup is the grid's data and train settings (after the overrides): a
    grid grown by a seed or a block goes on in the same file, another budget is refused."""

    name = "k-vs-n"
    help = "Ash et al.'s k versus N: bag-of-words NCE on Wiki-N over N, k, B and collision-free sampling"
    key = KEY
    seeds = ""  # the grid YAML's, or --seeds
    default_out = "runs/k_vs_n/main"
    table_names = TABLE_NAMES
    with_diagnostics = False  # --diagnose (:meth:`configure`)

    def add_arguments(self, parser) -> None:
        _add_options(parser)

    def check(self, args) -> None:
        if args.grid is None:
            raise ArgumentError("give the grid YAML (only --summary-only reads the results alone)")
        for flag, value, least in (("--threads", args.threads, 1), ("--max-cells", args.max_cells, 0)):
            if value is not None and value < least:
                raise ArgumentError(f"{flag} {value}: give at least {least}")
        if args.checkpoint_every < 0:
            raise ArgumentError(f"--checkpoint-every {args.checkpoint_every}: give at least 0")
        grid = grid_of(args)
        expand(grid)
        cache = Path(args.cache)
        if grid.data.kind == "wiki" and not grid.data.source and not prepared_marker(cache, grid.data).exists():
            if not wiki_dir(cache, grid.data).exists():
                from qt_hard.paths import data_path

                data_path("wikipedia")  # the dump the caches are built from

    def setup(self, args, out: Path) -> dict:
        return setup_of(grid_of(args))

    def cells(self, args, rows, seeds) -> list[Cell]:
        grid = grid_of(args)
        return [Cell((cell_id(grid, c),)) for c in expand(grid)[0]]

    def prepare(self, args, out: Path, todo: list[Cell]) -> list[Cell] | None:
        """The caches, then the plan (rank 0): the cells, what is done, the estimate."""
        import torch

        grid = grid_of(args)
        cells, notes = expand(grid)
        prepare(grid.data, [c.N for c in cells], Path(args.cache), args.no_prepare)
        torch.set_num_threads(_threads(args))
        if int(os.environ.get("RANK", "0")) == 0:
            est = None if args.no_estimate else estimate(grid, cells, Path(args.cache), worker_device(args.device))
            print_plan(grid, cells, notes, {c.keys[0][0] for c in todo}, est, args.workers)
        if args.plan:
            return []
        return None if args.max_cells is None else todo[: args.max_cells]

    def run(self, cell: Point, ctx: Context) -> dict:
        args = ctx.args
        import shutil

        import torch

        grid, cid = grid_of(args), cell.keys[0][0]
        which = next(c for c in expand(grid)[0] if cell_id(grid, c) == cid)
        threads, dev = _threads(args), worker_device(args.device)
        torch.set_num_threads(threads)
        folder = ctx.out / "cells" / cid
        t0 = time.perf_counter()
        metrics = run_cell(cell_tree(grid, which, Path(args.cache), folder, threads, args.checkpoint_every))
        if metrics is None:
            raise SystemExit(f"stopped by a signal in cell {cid}; run the same command again to resume it")
        for part in ("checkpoints", "final"):  # the table of a 768-d bag of words: not kept per cell
            shutil.rmtree(folder / part, ignore_errors=True)
        commit = git_commit(Path(__file__).resolve().parent)
        return record_of(grid, which, cid, metrics, time.perf_counter() - t0, dev, threads, commit)

    def configure(self, args) -> None:
        self.with_diagnostics = args.diagnose

    def tables(self, records, setup, out: Path) -> dict[str, str]:
        if not records:  # a CSV without records would stand without its ledger (a plan writes none)
            return {}
        files = results_files(records)
        if self.with_diagnostics:
            files["results.diagnostics.md"] = diagnose(records)
        return files

    def figures(self, args, out: Path, records, setup) -> None:
        if args.figures:
            for path in plot(records, Path(args.figures)):
                print(path)
            print(json.dumps(summarize(records), default=str))

    def progress(self, record: dict) -> str:
        r = record
        return (
            f"N={r['N']} k={r['k']} B={r['B']} cf={r['collision_free']} seed={r['seed']}: "
            f"mean {r['mean_acc']:.2f} linear {r['linear_acc']:.2f} "
            f"({r['wall_s']:.1f}s, {r['sentences_per_s']:.0f} sent/s)"
        )


EXPERIMENTS = (KversusN(),)
