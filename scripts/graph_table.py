"""The graph tables of three papers, reproduced: InfoGraph with uniform, hard (HCL), label-aware hard
(H-SCL) and entropic-OT negatives on TU datasets, SVM accuracy over repeats.

    python scripts/graph_table.py --out runs/graph_table --workers 2
    python scripts/graph_table.py --out runs/graph_table --datasets MUTAG --rows infograph,hard_b1 --epochs 20

Every cell (row x dataset x repeat) is one ``qt-hard train`` run of ``configs/infograph_mutag.yaml``
with the row's overrides, ``train.seed = repeat``, in ``OUT/runs/<row>/<dataset>/r<repeat>/``. The
script is resumable: a finished cell is a record of ``OUT/results.jsonl`` (:class:`qt_hard.experiments.ledger.Ledger`;
one folder, one setup: the config, ``--epochs`` and the extra overrides) and is skipped; an
unfinished cell with a checkpoint resumes from it. Parallel workers (``--workers N`` processes, or
several invocations on one folder) claim their cells, so none runs twice at once.
At the end it prints the table (mean ± std over repeats, percent; sample standard deviation, ddof 1)
in the papers' column order beside the papers' numbers, writes ``OUT/results.csv`` (one row per
cell), ``OUT/table.json``, ``OUT/table.md`` (the table and the headline) and plots Fig. 3's layout of
HCL (accuracy distribution per beta, one panel per dataset) to ``--plot``. The last line is a
one-line headline.

The rows, each with its own paper's settings, are ``ROWS`` of ``qt_hard/experiments/specs/graph_table.py``:
``infograph`` (uniform, JSD, lr 1e-3), ``infograph_code`` (the HCL code's JSD form, tau+ 0.5),
``hard_b{1,2,10}`` (HCL), ``hscl_b{1,2,10}`` (H-SCL, lr 0.01), the learning-rate controls
``infograph_lr0.01`` and ``hscl_b1_lr1e-3``, ``hcl_code_b{1,2,10}`` (HCL as its released graph code
computes it) and ``ot_e0.1`` (entropic OT, epsilon 0.1, the HCL code's JSD form).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable from a checkout without installing

from qt_hard.experiments.grid import cells, comma_list  # noqa: E402
from qt_hard.experiments.runner import in_processes  # noqa: E402
from qt_hard.experiments.specs import graph_table as spec  # noqa: E402
from qt_hard.script_cli import ScriptParser, run_script  # noqa: E402
from qt_hard.paths import output_folder  # noqa: E402


def main(argv=None) -> int:
    p = ScriptParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/graph_table", help="cells, results.jsonl, results.csv, table.json")
    p.add_argument("--rows", default=",".join(spec.ROWS), help=f"comma list of {', '.join(spec.ROWS)}")
    p.add_argument("--datasets", default=",".join(spec.DATASETS))
    p.add_argument("--repeats", type=int, default=None, help="repeats per dataset (default 5 MUTAG/PTC_MR, 3 others)")
    p.add_argument("--epochs", type=float, default=200, help="training epochs (papers: 200)")
    p.add_argument("--workers", type=int, default=1, help="parallel cells (processes, one thread each)")
    p.add_argument("--gpu", action="store_true", help="let accelerate use a GPU (default: CPU workers)")
    p.add_argument("--plot", default=None, help="PNG of Fig. 3's layout (default OUT/graph_fig3.png)")
    p.add_argument("--no-run", action="store_true", help="only print/plot what results.jsonl holds")
    p.add_argument("overrides", nargs="*", help="extra config overrides for every cell, e.g. eval.folds=5")
    a = p.parse_args(argv)
    rows, datasets = comma_list(a.rows), comma_list(a.datasets)
    bad = [r for r in rows if r not in spec.ROWS] + [d for d in datasets if d not in spec.DATASETS]
    if bad:
        p.error(f"unknown rows/datasets: {bad}")
    out = output_folder(a.out)
    if not a.no_run:
        spec.check_cells(rows, datasets, list(a.overrides))  # before the ledger is written
    out.mkdir(parents=True, exist_ok=True)
    led = spec.ledger(out) if a.no_run else spec.ledger(out, a.epochs, list(a.overrides))
    done = led.done()
    todo = [
        (str(out), row, ds, rep, a.epochs, list(a.overrides), a.gpu)
        for ds in datasets
        for rep, row in cells(range(a.repeats or spec.REPEATS.get(ds, 3)), rows)
        if (row, ds, rep) not in done
    ]
    t0 = time.perf_counter()
    if todo and not a.no_run:
        print(f"{len(todo)} cells to run ({len(done)} done) with {a.workers} worker(s)", flush=True)
        for line in in_processes(spec.run_cell, todo, a.workers, fresh=True):
            if line is not None:
                print(json.dumps(line), flush=True)
    results, headline = spec.write_report(out, rows, datasets, Path(a.plot) if a.plot else None)
    walls = [float(r["wall_s"]) for r in results]
    mean_wall = round(statistics.mean(walls), 1) if walls else None
    timing = {
        "cells": len(results),
        "cell_wall_s_mean": mean_wall,
        "this_call_wall_s": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(timing))
    print(headline)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
