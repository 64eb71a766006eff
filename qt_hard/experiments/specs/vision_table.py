"""The image table (``qt-hard grid run vision-table``): SimCLR (or MoCo-v2, with a MoCo config such as
``configs/moco_cifar10_cpu.yaml``) with uniform, debiased, hard, ring and OT negatives at one budget
and several seeds. With MoCo, uniform is plain MoCo-v2 and ring is MoCoRing (the band of percentiles
taken over the queue).

    qt-hard grid run vision-table --out runs/vision_table [--config configs/simclr_cifar10.yaml]
        [--rows uniform,debiased,hard,ring,ot] [--seeds 0,1] [--set train.epochs=50 ...]

Base config: ``--config`` with its ``--set`` overrides (the ledger's setup); a cell is (strategy,
seed), one ``qt-hard train`` run in ``OUT/<strategy>_s<seed>`` (a run folder with its ``eval.json`` is
read back, an interrupted one continues from its newest checkpoint; ``--report-only`` trains nothing
and records only the finished run folders, e.g. copied back from a GPU machine). Its readout is
``eval.json``'s kNN and linear-readout accuracy, the images per second of ``metrics.csv``, and per seed
the kNN accuracy of the randomly initialised encoder (the same initial weights as the runs), the
baseline the runs must beat. The tables: ``OUT/table.md`` (the title, kNN and linear readout mean ±
sample std per strategy, and the command) and ``OUT/results.csv`` (every cell); the figure:
``OUT/knn_curves.png`` (kNN accuracy vs epoch, mean over seeds with each seed thin).

``STRATEGIES`` are HCL's settings (debiased and hard with tau+ 0.1, hard beta 1; Robinson et al. 2021
sec. 5.1), Ring's annealing (Wu et al. 2021, sec. 4 and appendix: the lower percentile rises linearly
over the first half of training, the closest 5% excluded) and OT's epsilon 0.5 (Jiang et al., Table
II's best for the NCE loss on CIFAR-10)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import textwrap
import time
from pathlib import Path

from qt_hard.files import write_text
from qt_hard.experiments import report
from qt_hard.experiments.contract import Cell, Context, Experiment
from qt_hard.experiments.grid import Row, by_name, comma_list, seed_list
from qt_hard.experiments.runner import finished_run, read_eval, read_metrics, train_run

ROOT = Path(__file__).resolve().parents[3]
STRATEGIES = by_name(
    Row("uniform", ("objective.negatives=uniform", "objective.options={}")),
    Row("debiased", ("objective.negatives=debiased", "objective.options={tau_plus: 0.1}")),
    Row("hard", ("objective.negatives=hard", "objective.options={beta: 1.0, tau_plus: 0.1}")),
    Row(
        "ring",
        (
            "objective.negatives=ring",
            "objective.options={lower: {schedule: linear, start: 0.0, end: 85.0, until: 0.5}, upper: 95.0}",
        ),
    ),
    Row("ot", ("objective.negatives=ot", "objective.options={epsilon: 0.5}")),
)
KEY = ("strategy", "seed")
FIELDS = [*KEY, "knn_acc", "linear_acc", "knn_init", "epochs", "steps", "arch", "width", "batch_size"]
FIELDS += ["train_images", "test_images", "wall_s", "images_per_s", "device", "machine"]


def device_name() -> str:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"CPU ({os.cpu_count()} cores, {torch.get_num_threads()} torch threads)"


def method_name(model) -> str:
    """The pretraining method of a vision config's ``model`` section, as the table's title names it."""
    if model.method == "moco":
        return f"MoCo-v2 (queue {model.queue_size}, momentum {model.momentum})"
    return {"simclr": "SimCLR"}.get(model.method, model.method)


def check_setup(config: str, overrides: list[str]) -> None:
    """Refuse, before anything is written, a config or overrides the loop would not take, and a
    missing CIFAR-10 folder."""
    from qt_hard.paths import data_path
    from qt_hard.training.config import load_config

    load_config(config, list(overrides))
    data_path("cifar10")


def random_init_knn(cfg) -> float:
    """kNN accuracy of the encoder as the loop initialises it for ``cfg.train.seed`` (no training)."""
    import torch

    from qt_hard.vision.pipeline import KNNMonitor, build_encoder, load_split

    torch.manual_seed(cfg.train.seed)  # the loop's set_seed before building the module
    module = build_encoder(cfg.model)
    if torch.cuda.is_available():
        module = module.cuda()
    split = "train" if "unlabeled" in cfg.data.train_split else cfg.data.train_split
    train_set = load_split(cfg.data, split, cfg.data.max_train)
    test_set = load_split(cfg.data, cfg.data.test_split, cfg.data.max_test)
    return KNNMonitor(train_set, test_set, cfg.eval, total_steps=1, seed=0)(module, 0)["knn_acc"]


def cell_row(base: str, strategy: str, seed: int, out: Path, extra: list[str]) -> dict:
    """The cell's record: trained through the loop unless its ``eval.json`` is there, read back."""
    from qt_hard.training.config import load_config
    from qt_hard.training.loop import list_checkpoints
    from qt_hard.vision.pipeline import load_split

    run_dir = out / f"{strategy}_s{seed}"
    cfg = load_config(base, [*extra, *STRATEGIES[strategy].changes, f"train.seed={seed}", f"out_dir={run_dir}"])
    if not finished_run(cfg):
        t0 = time.perf_counter()
        resumed = bool(list_checkpoints(run_dir))
        train_run(cfg)
        write_text(run_dir / "wall_s.txt", f"{time.perf_counter() - t0:.1f}{' (resumed)' if resumed else ''}\n")
        write_text(run_dir / "device.txt", f"{device_name()}\t{platform.node()}\n")
    result = read_eval(run_dir)
    dev_file = run_dir / "device.txt"  # where it trained (this machine when the file predates it)
    spec = dev_file.read_text().rstrip("\n") if dev_file.is_file() else f"{device_name()}\t{platform.node()}"
    device, machine = (spec.split("\t") + [""])[:2]
    speeds = [float(r["sentences_per_s"]) for r in read_metrics(run_dir)]
    init_file = out / f"knn_init_s{seed}.json"
    if not init_file.is_file():
        write_text(init_file, json.dumps({"knn_acc": random_init_knn(cfg)}))
    n_train = len(load_split(cfg.data, cfg.data.train_split, cfg.data.max_train))
    return {
        "strategy": strategy,
        "seed": seed,
        "knn_acc": result["knn_acc"],
        "linear_acc": result.get("linear_acc", ""),
        "knn_init": json.loads(init_file.read_text())["knn_acc"],
        "epochs": round(result["step"] / (n_train // cfg.train.batch_size), 2),  # as run (train.steps may set it)
        "steps": result["step"],
        "arch": cfg.model.arch,
        "width": cfg.model.width or "",
        "batch_size": cfg.train.batch_size,
        "train_images": n_train,
        "test_images": len(load_split(cfg.data, cfg.data.test_split, cfg.data.max_test)),
        "wall_s": (run_dir / "wall_s.txt").read_text().strip(),
        "images_per_s": round(statistics.median(speeds[1:] or speeds), 1) if speeds else "",
        "device": device,
        "machine": machine,
    }


def plot(out: Path, rows: list[dict], strategies, seeds, steps_per_epoch: float, title: str) -> Path:
    """kNN accuracy against epochs (each run's ``eval.csv``): each seed thin, the mean over seeds thick,
    the random initialisation's mean dashed."""
    import csv

    import numpy as np

    plt = report.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    curves = {}
    for s in strategies:
        for seed in seeds:
            f = out / f"{s}_s{seed}" / "eval.csv"
            if f.is_file():
                with f.open() as fh:
                    pts = list(csv.DictReader(fh))
                curves.setdefault(s, []).append(([int(r["step"]) for r in pts], [float(r["knn_acc"]) for r in pts]))
    for i, (s, runs) in enumerate(curves.items()):
        for steps, acc in runs:
            ax.plot(np.array(steps) / steps_per_epoch, acc, color=f"C{i}", alpha=0.3, lw=0.8)
        n = min(len(a) for _, a in runs)
        mean = np.mean([a[:n] for _, a in runs], axis=0)
        label = f"{s} (mean of {len(runs)})"
        ax.plot(np.array(runs[0][0][:n]) / steps_per_epoch, mean, color=f"C{i}", lw=2, label=label)
    init = [float(r["knn_init"]) for r in rows if r.get("knn_init") not in (None, "")]
    if init:
        ax.axhline(float(np.mean(init)), color="gray", ls="--", lw=1, label="random init (mean)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("weighted kNN accuracy (%), k=200, t=0.5")
    ax.set_title(textwrap.fill(title, 95), fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "knn_curves.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def table(rows: list[dict], strategies) -> str:
    """The Markdown table: kNN and linear readout mean ± spread per strategy, and the random init."""
    body = []
    for s in strategies:
        mine = [r for r in rows if r["strategy"] == s]
        if not mine:
            continue
        # A resumed run's wall time covers only its last part: left out of the mean.
        walls = [float(str(r["wall_s"]).split()[0]) for r in mine if r["wall_s"] and "resumed" not in str(r["wall_s"])]
        wall = f"{statistics.mean(walls):.0f}" if walls else "-"
        knn, lin = (report.fmt_mean_spread(r[k] for r in mine) for k in ("knn_acc", "linear_acc"))
        body.append([s, knn, lin, str(len(mine)), wall])
    inits = {r["seed"]: r["knn_init"] for r in rows}
    body.append(["*random init (no training)*", report.fmt_mean_spread(inits.values()), "", str(len(inits)), ""])
    head = ["negatives", "kNN acc. (%)", "linear readout (%)", "seeds"]
    head.append("wall time per run (s, training + evaluation)")
    return "\n".join(report.markdown_table(head, body))


def title(rows: list[dict], model) -> str:
    r0 = rows[0]
    arch = f"{r0['arch']}{'-w' + str(r0['width']) if r0['width'] else ''}"
    return (
        f"{method_name(model)} on CIFAR-10 subset ({r0['train_images']} train / {r0['test_images']} test images), "
        f"{arch}, {r0['epochs']} epochs, batch {r0['batch_size']}, {r0['device']}"
    )


def load_setup(setup: dict):
    """The config of a folder's ``setup``; a relative config path is the checkout's when the working
    folder has no such file."""
    from qt_hard.training.config import load_config

    config = Path(setup["config"])
    if not config.is_absolute() and not config.is_file():
        config = ROOT / config
    return load_config(config, list(setup["overrides"]))


def table_files(records: list[dict], setup: dict, strategies, seeds, command: str | None) -> dict[str, str]:
    """From the records alone: ``table.md`` for the cells asked (the title, the table and, when given,
    ``command``) and ``results.csv`` (every cell)."""
    rows = [r for r in records if r["strategy"] in strategies and int(r["seed"]) in seeds]
    csv_text = report.csv_text(FIELDS, records)
    if not rows:
        return {"table.md": "no finished runs yet", "results.csv": csv_text}
    text = f"{title(rows, load_setup(setup).model)}\n\n{table(rows, strategies)}"
    return {"table.md": text + (f"\n\ncommand: {command}" if command else ""), "results.csv": csv_text}


# --------------------------------------------------------------------------------------- the contract
class VisionTable(Experiment):
    """Strategies (the rows) x seeds of SimCLR or MoCo-v2 (see the module docstring)."""

    name = "vision-table"
    help = "SimCLR or MoCo-v2 with uniform, debiased, hard, ring and OT negatives: kNN and linear readout"
    key = KEY
    default_out = "runs/vision_table"
    rows = tuple(STRATEGIES)
    row_table = STRATEGIES
    seeds = "0,1"

    def add_arguments(self, parser) -> None:
        parser.add_argument("--config", default="configs/simclr_cifar10.yaml", help="the base config of every run")
        parser.add_argument(
            "--set",
            nargs="*",
            default=[],
            metavar="section.key=value",
            help="overrides for every run, e.g. train.epochs=50 model.arch=resnet_tiny",
        )
        parser.add_argument(
            "--report-only",
            action="store_true",
            help="no training: record and tabulate the finished run folders (e.g. copied back from a GPU machine)",
        )

    def check(self, args) -> None:
        if not args.report_only:
            check_setup(args.config, list(args.set))

    def configure(self, args) -> None:
        self.asked = (comma_list(args.rows), seed_list(args.seeds), command_line(args))  # the tables' order

    def setup(self, args, out: Path) -> dict:
        return {"config": args.config, "overrides": list(args.set)}

    def run(self, cell: Cell, ctx: Context) -> dict | None:
        args, out, setup = ctx.args, ctx.out, ctx.setup
        strategy, seed = cell.claim
        if args.report_only and not (out / f"{strategy}_s{seed}" / "eval.json").is_file():
            return None  # not finished: left for a run that trains
        return cell_row(setup["config"], strategy, seed, out, setup["overrides"])

    def asked_cells(self, records: list[dict]) -> tuple[list[str], list[int], str | None]:
        """The strategies, seeds and command line the command asked for, else the records' own."""
        if getattr(self, "asked", None):
            return self.asked
        strategies = [s for s in STRATEGIES if any(r["strategy"] == s for r in records)]
        return strategies, sorted({int(r["seed"]) for r in records}), None

    def tables(self, records, setup, out) -> dict[str, str]:
        return table_files(records, setup, *self.asked_cells(records))

    def figures(self, args, out: Path, records, setup) -> None:
        strategies, seeds, _ = self.asked_cells(records)
        rows = [r for r in records if r["strategy"] in strategies and int(r["seed"]) in seeds]
        if rows:
            head = title(rows, load_setup(setup).model)
            plot(out, rows, strategies, seeds, int(rows[0]["steps"]) / float(rows[0]["epochs"]), head)

    def progress(self, record: dict) -> str:
        return f"{record['strategy']} seed {record['seed']}: kNN {record['knn_acc']}, linear {record['linear_acc']}"


def command_line(args) -> str:
    """The command that makes (or, with ``--summary-only``, rewrites) the table, for its last line."""
    parts = ["qt-hard grid run vision-table --config", args.config, "--out", args.out]
    parts += ["--rows", args.rows, "--seeds", args.seeds, *(["--set", *args.set] if args.set else [])]
    return " ".join(parts)


EXPERIMENTS = (VisionTable(),)
