"""A toy experiment of the grid contract for the grid command's tests: each cell sleeps ``--sleep``
seconds, leaves a marker file naming itself and its process (so a test counts how often each cell
ran), and records ``value = 10 * seed + len(row)``: nothing else, the contract adds the row, the seed
and where, when and with what it was measured."""

from __future__ import annotations

import os
import time
from pathlib import Path

from qt_hard.experiments.contract import Cell, Context, Experiment


class Toy(Experiment):
    name = "toy"
    help = "a toy grid for the tests"
    rows = ("a", "bb", "ccc")
    seeds = "0,1"
    table_names = ("table.md",)

    def add_arguments(self, parser) -> None:
        parser.add_argument("--sleep", type=float, default=0.0)
        parser.add_argument("--wait-for", default=None, help="a file each cell waits for (at most a minute)")
        parser.add_argument("--config", default=None, help="a training config the setup names (read by nothing)")
        parser.add_argument("--model", default=None, help="a model folder the setup names (read by nothing)")

    def setup(self, args, out: Path) -> dict:
        named = {"config": args.config, "overrides": []} if args.config else {}
        return {"toy": 1, **named, **({"model": args.model} if args.model else {})}

    def run(self, cell: Cell, ctx: Context):
        args, out = ctx.args, ctx.out
        row, seed = cell.claim
        marks = out / "ran"
        marks.mkdir(exist_ok=True)
        (marks / f"{row}_{seed}_{os.getpid()}_{time.monotonic_ns()}").touch()
        time.sleep(args.sleep)
        deadline = time.monotonic() + 60
        while args.wait_for and not Path(args.wait_for).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return {"value": 10 * seed + len(row)}  # the grid adds the row, the seed and the provenance

    def tables(self, records, setup, out) -> dict[str, str]:
        lines = ["| row | seed | value |", "|---|---:|---:|"]
        lines += [
            f"| {r['row']} | {r['seed']} | {r['value']} |" for r in sorted(records, key=lambda r: (r["row"], r["seed"]))
        ]
        return {"table.md": "\n".join(lines)}


EXPERIMENTS = (Toy(),)
