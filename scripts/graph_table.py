"""The graph tables of three papers, reproduced: InfoGraph with uniform, hard (HCL), label-aware hard
(H-SCL) and entropic-OT negatives on TU datasets, SVM accuracy over repeats.

    python scripts/graph_table.py --out runs/graph_table --workers 2
    python scripts/graph_table.py --out runs/graph_table --datasets MUTAG --rows infograph,hard_b1 --epochs 20

Every cell (row x dataset x repeat) is one ``qt-hard train`` run of ``configs/infograph_mutag.yaml``
with the row's overrides, ``train.seed = repeat``, in ``OUT/runs/<row>/<dataset>/r<repeat>/``. The
script is resumable: a finished cell is a record of ``OUT/results.jsonl`` (:class:`qt_hard.ledger.Ledger`;
one folder, one setup: the config, ``--epochs`` and the extra overrides) and is skipped; an
unfinished cell with a checkpoint resumes from it. Parallel workers (``--workers N`` processes, or
several invocations on one folder) claim their cells, so none runs twice at once.
At the end it prints the table (mean ± std over repeats, percent; sample standard deviation, ddof 1)
in the papers' column order beside the papers' numbers, writes ``OUT/results.csv`` (one row per
cell), ``OUT/table.json`` and plots Fig. 3's layout of HCL (accuracy distribution per beta, one panel
per dataset) to ``--plot``. The last line is a one-line headline.

Rows (each with its own paper's settings):
    infograph        uniform, JSD, tau+ 0, lr 1e-3        (H-SCL Table II UCL row, OT Table V)
    infograph_code   uniform, the HCL code's JSD form ('jsd_code'), tau+ 0.5, lr 1e-3
    hard_b{1,2,10}   hard (HCL App. B.2: q ~ exp(beta T) on clipped scores), tau+ 0, lr 1e-3
    hscl_b{1,2,10}   same-label mask + hard (H-SCL), tau+ 0, lr 0.01
    infograph_lr0.01 uniform at H-SCL's and OT's lr 0.01        (learning-rate control)
    hscl_b1_lr1e-3   H-SCL beta 1 at InfoGraph's and HCL's lr 1e-3 (learning-rate control)
    hcl_code_b{1,2,10}  HCL as its released graph code computes it: 'jsd_code', clip 'graph_code' (the
                     code's tilt sign and bound), tau+ 0.5, lr 1e-3
    ot_e0.1          entropic OT, epsilon 0.1, tau+ 0.5, lr 0.01, the HCL code's JSD form (the OT paper
                     ran that code with its negative distribution replaced; the paper form's debiased
                     JSD is unbounded below for tau+ > 0 and diverges)
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import sys
import time
from pathlib import Path

from qt_hard.script_cli import ScriptParser, output_folder, run_script

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable from a checkout without installing the package

from qt_hard.ledger import Ledger, provenance  # noqa: E402

DATASETS = ("MUTAG", "ENZYMES", "PTC_MR", "IMDB-BINARY", "IMDB-MULTI")
SHORT = {"MUTAG": "MUTAG", "ENZYMES": "ENZYMES", "PTC_MR": "PTC", "IMDB-BINARY": "IMDB-B", "IMDB-MULTI": "IMDB-M"}
REPEATS = {"MUTAG": 5, "PTC_MR": 5}  # others: 3

_HARD = ["objective.negatives=hard", "objective.options.clip=rescaled"]
_HSCL = [
    "objective.negatives=label",
    "objective.options.hardening=exp",
    "objective.options.clip=rescaled",
    "train.lr=0.01",
]
_HCL_CODE = [
    "objective.negatives=hard",
    "objective.estimator=jsd_code",
    "objective.options.clip=graph_code",
    "objective.options.tau_plus=0.5",
]
ROWS = {
    "infograph": (["objective.negatives=uniform"], (86.8, 50.4, 55.3, 72.2, 49.6), "H-SCL Tab. II / OT Tab. V"),
    "infograph_code": (
        ["objective.negatives=uniform", "objective.estimator=jsd_code", "objective.options.tau_plus=0.5"],
        None,
        "",
    ),
    "hard_b1": (
        _HARD + ["objective.options.beta=1"],
        (87.2, 50.4, 57.3, 72.8, 49.6),
        "H-SCL Tab. II H-UCL (best beta)",
    ),
    "hard_b2": (_HARD + ["objective.options.beta=2"], None, ""),
    "hard_b10": (_HARD + ["objective.options.beta=10"], None, ""),
    "hscl_b1": (_HSCL + ["objective.options.beta=1"], (87.2, 50.7, 57.7, 73.0, 50.1), "H-SCL Tab. II (best beta)"),
    "hscl_b2": (_HSCL + ["objective.options.beta=2"], None, ""),
    "hscl_b10": (_HSCL + ["objective.options.beta=10"], None, ""),
    # Learning-rate controls: each method at the other rate, so a gain is not the rate's.
    "infograph_lr0.01": (["objective.negatives=uniform", "train.lr=0.01"], None, ""),
    "hscl_b1_lr1e-3": (_HSCL + ["objective.options.beta=1", "train.lr=0.001"], None, ""),
    # HCL's graph numbers as its released code made them (joshr17/HCL gan_losses.py, JSD_hard): the
    # code's JSD form, its tilt (sign, max as written, bound in the graph) and tau+ 0.5, lr 1e-3.
    "hcl_code_b1": (_HCL_CODE + ["objective.options.beta=1"], None, ""),
    "hcl_code_b2": (_HCL_CODE + ["objective.options.beta=2"], None, ""),
    "hcl_code_b10": (_HCL_CODE + ["objective.options.beta=10"], None, ""),
    "ot_e0.1": (
        [
            "objective.negatives=ot",
            "objective.options.epsilon=0.1",
            "objective.options.tau_plus=0.5",
            "objective.estimator=jsd_code",
            "train.lr=0.01",
        ],
        (88.2, 50.6, 56.1, 72.7, 49.8),
        "OT Tab. V",
    ),
}
FIELDS = [
    "row",
    "dataset",
    "repeat",
    "svm_acc",
    "svm_acc_std",
    "epochs",
    "steps",
    "wall_s",
    "final_loss",
    "machine",
    "utc",
    "commit",
]
KEY = ("row", "dataset", "repeat")
CONFIG = "configs/infograph_mutag.yaml"


def cell_dir(out: Path, row: str, ds: str, rep: int) -> Path:
    return out / "runs" / row / ds / f"r{rep}"


def ledger(out: Path, epochs: float | None = None, overrides: list[str] | None = None) -> Ledger:
    """The folder's results; with ``epochs`` (and ``overrides``) for this setup, else read only."""
    setup = None if epochs is None else {"config": CONFIG, "epochs": epochs, "overrides": list(overrides or [])}
    return Ledger(out, KEY, setup)


def write_csv(path: Path, results: list[dict]) -> None:
    """One row per cell (``FIELDS``), written whole: a temporary file renamed into place."""
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(results)
    os.replace(tmp, path)


def run_cell(args: tuple) -> dict | None:
    """Train one cell (in a fresh worker process) and append its record; None when another
    process holds the cell."""
    out, row, ds, rep, epochs, extra, use_gpu = args
    led = ledger(Path(out), epochs, extra)
    with led.claim((row, ds, rep)) as got:
        if not got or (row, ds, rep) in led.done():
            return None
        line = {**_train_cell(out, row, ds, rep, epochs, extra, use_gpu), **provenance(ROOT)}
        led.append(line)
    return line


def _train_cell(out, row, ds, rep, epochs, extra, use_gpu) -> dict:
    if not use_gpu:
        os.environ["ACCELERATE_USE_CPU"] = "true"  # tiny GINs: one CPU core per worker beats sharing a GPU
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import shutil

    import torch

    from qt_hard.training.config import load_config
    from qt_hard.training.loop import list_checkpoints, train

    torch.set_num_threads(1)
    folder = cell_dir(Path(out), row, ds, rep)
    overrides = ROWS[row][0] + [
        f"data.name={ds}",
        f"train.seed={rep}",
        f"out_dir={folder}",
        f"train.epochs={epochs}",
        "train.progress=false",
        "train.checkpoint_every=100",
        "train.keep_checkpoints=1",
        "train.trackers=[csv]",
        *extra,
    ]
    cfg = load_config(ROOT / CONFIG, overrides)
    resume = bool(list_checkpoints(folder))
    if not resume and folder.exists():
        shutil.rmtree(folder)  # a run that died before its first checkpoint: start over
    t0 = time.perf_counter()
    train(cfg, resume=resume)
    res = json.loads((folder / "eval.json").read_text())
    with (folder / "metrics.csv").open() as fh:
        last = list(csv.DictReader(fh))[-1]
    return {
        "row": row,
        "dataset": ds,
        "repeat": rep,
        "svm_acc": round(res["svm_acc"], 6),
        "svm_acc_std": round(res["svm_acc_std"], 6),
        "epochs": epochs,
        "steps": res["step"],
        "wall_s": round(time.perf_counter() - t0, 1),
        "final_loss": float(last["loss"]),
    }


def summarize(results: list[dict], rows: list[str], datasets: list[str]) -> dict:
    table = {}
    for row in rows:
        for ds in datasets:
            accs = [100 * float(r["svm_acc"]) for r in results if r["row"] == row and r["dataset"] == ds]
            if accs:
                table[f"{row}/{ds}"] = {
                    "mean": statistics.mean(accs),
                    "std": statistics.stdev(accs) if len(accs) > 1 else 0.0,
                    "n": len(accs),
                    "accs": accs,
                }
    return table


def print_table(table: dict, rows: list[str], datasets: list[str]) -> None:
    head = (
        "| row | "
        + " | ".join(SHORT[d] for d in datasets)
        + " | papers ("
        + " / ".join(SHORT[d] for d in datasets)
        + ") |"
    )
    print(head)
    print("|" + "---|" * (len(datasets) + 2))
    for row in rows:
        cells = []
        for ds in datasets:
            c = table.get(f"{row}/{ds}")
            cells.append(f"{c['mean']:.1f} ± {c['std']:.1f} (n={c['n']})" if c else "-")
        paper = ROWS[row][1]
        ref = " / ".join(f"{paper[DATASETS.index(d)]:.1f}" for d in datasets) + f" ({ROWS[row][2]})" if paper else "-"
        print(f"| {row} | " + " | ".join(cells) + f" | {ref} |")


def plot(table: dict, datasets: list[str], path: Path) -> None:
    """HCL Fig. 3's layout: per dataset, the accuracy distribution of the runs per beta
    (beta = 0 is InfoGraph's uniform row), HCL and H-SCL side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    betas = [
        (0, "infograph", "infograph"),
        (1, "hard_b1", "hscl_b1"),
        (2, "hard_b2", "hscl_b2"),
        (10, "hard_b10", "hscl_b10"),
    ]
    fig, axes = plt.subplots(1, len(datasets), figsize=(2.6 * len(datasets), 2.6), squeeze=False)
    for ax, ds in zip(axes[0], datasets):
        for k, (beta, hard, hscl) in enumerate(betas):
            for off, row, color in ((-0.15, hard, "tab:blue"), (0.15, hscl, "tab:orange")):
                c = table.get(f"{row}/{ds}")
                if not c or (beta == 0 and off > 0):
                    continue
                ax.boxplot(
                    [c["accs"]],
                    positions=[k + (0 if beta == 0 else off)],
                    widths=0.25,
                    patch_artist=True,
                    boxprops={"facecolor": color, "alpha": 0.5},
                    showfliers=False,
                )
                ax.scatter([k + (0 if beta == 0 else off)] * len(c["accs"]), c["accs"], s=6, color=color, zorder=3)
        ax.set_xticks(range(len(betas)), [str(b) for b, _, _ in betas])
        ax.set_title(SHORT[ds], fontsize=9)
        ax.set_xlabel("beta", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("SVM accuracy (%)", fontsize=8)
    axes[0][-1].legend(
        handles=[
            plt.Line2D([], [], color="tab:blue", marker="s", ls="", label="hard (HCL)"),
            plt.Line2D([], [], color="tab:orange", marker="s", ls="", label="H-SCL"),
        ],
        fontsize=7,
        loc="lower right",
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)


def main(argv=None) -> int:
    p = ScriptParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/graph_table", help="cells, results.jsonl, results.csv, table.json")
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma list of {', '.join(ROWS)}")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--repeats", type=int, default=None, help="repeats per dataset (default 5 MUTAG/PTC_MR, 3 others)")
    p.add_argument("--epochs", type=float, default=200, help="training epochs (papers: 200)")
    p.add_argument("--workers", type=int, default=1, help="parallel cells (processes, one thread each)")
    p.add_argument("--gpu", action="store_true", help="let accelerate use a GPU (default: CPU workers)")
    p.add_argument("--plot", default=None, help="PNG of Fig. 3's layout (default OUT/graph_fig3.png)")
    p.add_argument("--no-run", action="store_true", help="only print/plot what results.jsonl holds")
    p.add_argument("overrides", nargs="*", help="extra config overrides for every cell, e.g. eval.folds=5")
    a = p.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    datasets = [d for d in a.datasets.split(",") if d]
    bad = [r for r in rows if r not in ROWS] + [d for d in datasets if d not in DATASETS]
    if bad:
        p.error(f"unknown rows/datasets: {bad}")
    out = output_folder(a.out)
    if not a.no_run:
        from qt_hard.paths import data_path
        from qt_hard.training.config import load_config

        data_path("tu")  # the dataset folder, before the ledger is written
        for ds in datasets:  # the overrides and each dataset's files, before anything is written
            load_config(ROOT / CONFIG, ROWS[rows[0]][0] + [f"data.name={ds}", *a.overrides])
    out.mkdir(parents=True, exist_ok=True)
    led = ledger(out) if a.no_run else ledger(out, a.epochs, list(a.overrides))
    done = led.done()
    todo = [
        (str(out), row, ds, rep, a.epochs, list(a.overrides), a.gpu)
        for ds in datasets
        for rep in range(a.repeats or REPEATS.get(ds, 3))
        for row in rows
        if (row, ds, rep) not in done
    ]
    t0 = time.perf_counter()
    if todo and not a.no_run:
        print(f"{len(todo)} cells to run ({len(done)} done) with {a.workers} worker(s)", flush=True)
        if a.workers <= 1:
            for cell in todo:
                line = run_cell(cell)
                if line is not None:
                    print(json.dumps(line), flush=True)
        else:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor, as_completed

            # A fresh process per cell: accelerate's process-wide state never leaks between runs.
            with ProcessPoolExecutor(a.workers, mp_context=mp.get_context("spawn"), max_tasks_per_child=1) as ex:
                for fut in as_completed([ex.submit(run_cell, c) for c in todo]):
                    if fut.result() is not None:
                        print(json.dumps(fut.result()), flush=True)
    results = led.latest()
    write_csv(out / "results.csv", results)
    table = summarize(results, rows, datasets)
    print_table(table, rows, datasets)
    (out / "table.json").write_text(json.dumps(table, indent=1) + "\n")
    plot(table, datasets, Path(a.plot) if a.plot else out / "graph_fig3.png")
    walls = [float(r["wall_s"]) for r in results]
    print(
        json.dumps(
            {
                "cells": len(results),
                "cell_wall_s_mean": round(statistics.mean(walls), 1) if walls else None,
                "this_call_wall_s": round(time.perf_counter() - t0, 1),
            }
        )
    )
    first = table.get(f"{rows[0]}/{datasets[0]}")
    print(
        f"graph table: {len(results)} cells; {rows[0]} on {datasets[0]}: "
        + (f"{first['mean']:.1f} ± {first['std']:.1f} % SVM accuracy (n={first['n']})" if first else "no result")
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
