"""The image table (``scripts/vision_table.py``): SimCLR or MoCo-v2 with uniform, debiased, hard, ring
and OT negatives at one budget and several seeds.

Base config: the script's ``--config`` with its ``--set`` overrides (the ledger's setup); a cell is
(strategy, seed), trained in ``OUT/<strategy>_s<seed>``; its readout is ``eval.json``'s kNN and
linear-readout accuracy, the images per second of ``metrics.csv``, and per seed the kNN accuracy of
the randomly initialised encoder. ``STRATEGIES`` are HCL's settings (debiased and hard with tau+ 0.1,
hard beta 1; Robinson et al. 2021 sec. 5.1), Ring's annealing (Wu et al. 2021, sec. 4 and appendix:
the lower percentile rises linearly over the first half of training, the closest 5% excluded) and
OT's epsilon 0.5 (Jiang et al., Table II's best for the NCE loss on CIFAR-10)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import textwrap
import time
from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.grid import Row
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.runner import read_eval, read_metrics, run_claimed, train_run

STRATEGIES = {
    r.name: r
    for r in (
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
}
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


def ledger(out: Path, config: str, overrides: list[str]) -> Ledger:
    """The folder's results for this setup (the config and the overrides of every run)."""
    return Ledger(out, KEY, {"config": config, "overrides": list(overrides)})


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


def run_cell(base: str, strategy: str, seed: int, out: Path, extra: list[str]) -> dict | None:
    """Train (or resume, or read back) one cell and append its record; None when another process
    holds the cell or it has its record."""
    recs = run_claimed(
        ledger(out, base, extra),
        (strategy, seed),
        lambda: cell_row(base, strategy, seed, out, extra),
        key=(strategy, seed),
    )
    return recs[0] if recs else None


def cell_row(base: str, strategy: str, seed: int, out: Path, extra: list[str]) -> dict:
    """The cell's record: trained through the loop unless its ``eval.json`` is there, read back."""
    from qt_hard.training.config import load_config
    from qt_hard.training.loop import list_checkpoints
    from qt_hard.vision.pipeline import load_split

    run_dir = out / f"{strategy}_s{seed}"
    cfg = load_config(base, [*extra, *STRATEGIES[strategy].overrides, f"train.seed={seed}", f"out_dir={run_dir}"])
    if not (run_dir / "eval.json").is_file():
        t0 = time.perf_counter()
        resumed = bool(list_checkpoints(run_dir))
        train_run(cfg)
        (run_dir / "wall_s.txt").write_text(f"{time.perf_counter() - t0:.1f}{' (resumed)' if resumed else ''}\n")
        (run_dir / "device.txt").write_text(f"{device_name()}\t{platform.node()}\n")
    result = read_eval(run_dir)
    dev_file = run_dir / "device.txt"  # where it trained (this machine when the file predates it)
    spec = dev_file.read_text().rstrip("\n") if dev_file.is_file() else f"{device_name()}\t{platform.node()}"
    device, machine = (spec.split("\t") + [""])[:2]
    speeds = [float(r["sentences_per_s"]) for r in read_metrics(run_dir)]
    init_file = out / f"knn_init_s{seed}.json"
    if not init_file.is_file():
        init_file.write_text(json.dumps({"knn_acc": random_init_knn(cfg)}))
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


def write_report(out: Path, config: str, overrides: list[str], strategies, seeds, command: str) -> list[dict]:
    """From the ledger alone: ``results.csv`` (every cell), and for the cells asked ``table.md`` (the
    title, the table, ``command``; printed too), the curves and a JSON line per strategy, then the
    headline. Returns the cells asked."""
    from qt_hard.training.config import load_config

    records = ledger(out, config, overrides).latest()
    report.write_csv(out / "results.csv", FIELDS, records)
    rows = [r for r in records if r["strategy"] in strategies and int(r["seed"]) in seeds]
    if not rows:
        print("no finished runs yet")
        return rows
    cfg = load_config(config, list(overrides))
    head = title(rows, cfg.model)
    png = plot(out, rows, strategies, seeds, int(rows[0]["steps"]) / float(rows[0]["epochs"]), head)
    md = table(rows, strategies)
    (out / "table.md").write_text(f"{head}\n\n{md}\n\ncommand: {command}\n")
    print(md)
    knn = {}
    for s in strategies:
        mine = [r for r in rows if r["strategy"] == s]
        if mine:
            knn[s] = statistics.mean(float(r["knn_acc"]) for r in mine)
            line = {"strategy": s, "knn_acc": [float(r["knn_acc"]) for r in mine]}
            line.update(linear_acc=[r["linear_acc"] for r in mine], seeds=[r["seed"] for r in mine])
            print(json.dumps({**line, "images_per_s": [r["images_per_s"] for r in mine]}))
    best = max(knn, key=knn.get)
    init = statistics.mean(float(r["knn_init"]) for r in rows)
    best_knn = report.fmt_mean_spread(r["knn_acc"] for r in rows if r["strategy"] == best)
    print(
        f"vision table ({len(rows)} runs, {cfg.model.arch}, {rows[0]['epochs']} epochs): best kNN {best} "
        f"{best_knn}% vs random init {init:.1f}%; plot {png}"
    )
    return rows
