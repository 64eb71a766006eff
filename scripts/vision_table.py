"""SimCLR (or MoCo-v2, with a MoCo config such as ``configs/moco_cifar10_cpu.yaml``) with uniform,
debiased, hard, ring and OT negatives at one budget and several seeds: kNN curves (PNG) and a table
of final kNN and linear-readout accuracy (mean ± std). With MoCo, uniform is plain MoCo-v2 and ring
is MoCoRing (the band of percentiles taken over the queue).

    python scripts/vision_table.py --out runs/vision_table [--config configs/simclr_cifar10.yaml]
        [--strategies uniform,debiased,hard,ring,ot] [--seeds 0,1] [--set train.epochs=50 ...]

Every (strategy, seed) cell is one ``qt-hard train`` run (the same loop, pipeline ``vision``) in
``OUT/<strategy>_s<seed>``. Resumable: each finished cell is a record of ``OUT/results.jsonl``
(:class:`qt_hard.ledger.Ledger`; one folder, one setup: the config and the ``--set`` overrides) and
is skipped; a run folder with its ``eval.json`` is read back, an interrupted one continues from its
newest checkpoint, so rerunning the same command finishes the table. Several copies of the command
may share one ``--out``: each claims the cell it trains. Also per seed, the kNN accuracy of the
randomly initialised encoder (the same initial weights as the runs) is the baseline the runs must
beat.

Outputs: ``OUT/results.csv`` (one row per cell), ``OUT/knn_curves.png`` (kNN accuracy vs epoch, mean over seeds with
each seed thin), ``OUT/table.md`` (the README table; sample standard deviations, ddof 1) and a JSON
summary line per strategy, then a one-line headline. The strategies' settings (``STRATEGIES``) are HCL's (debiased and hard with
tau_plus 0.1, hard beta 1; Robinson et al. 2021 sec. 5.1), Ring's annealing (Wu et al. 2021, sec. 4
and appendix: the lower percentile rises linearly over the first half of training, the closest 5%
excluded) and OT's epsilon 0.5 (Jiang et al., Table II's best for the NCE loss on CIFAR-10).
"""

from __future__ import annotations

import csv
import json
import os
import platform
import statistics
import sys
import textwrap
import time
from pathlib import Path

from qt_hard.script_cli import ScriptParser, output_folder, run_script, seed_list

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable from a checkout without installing the package

from qt_hard.ledger import Ledger  # noqa: E402

STRATEGIES = {
    "uniform": ["objective.negatives=uniform", "objective.options={}"],
    "debiased": ["objective.negatives=debiased", "objective.options={tau_plus: 0.1}"],
    "hard": ["objective.negatives=hard", "objective.options={beta: 1.0, tau_plus: 0.1}"],
    "ring": [
        "objective.negatives=ring",
        "objective.options={lower: {schedule: linear, start: 0.0, end: 85.0, until: 0.5}, upper: 95.0}",
    ],
    "ot": ["objective.negatives=ot", "objective.options={epsilon: 0.5}"],
}
FIELDS = [
    "strategy",
    "seed",
    "knn_acc",
    "linear_acc",
    "knn_init",
    "epochs",
    "steps",
    "arch",
    "width",
    "batch_size",
    "train_images",
    "test_images",
    "wall_s",
    "images_per_s",
    "device",
    "machine",
]
KEY = ("strategy", "seed")


def _device_name() -> str:
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


def _write_rows(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)  # atomic: a reader never sees half a file


def random_init_knn(cfg) -> float:
    """kNN accuracy of the encoder as the loop initialises it for ``cfg.train.seed`` (no training)."""
    import torch

    from qt_hard.vision.pipeline import KNNMonitor, build_encoder, load_split

    torch.manual_seed(cfg.train.seed)  # the loop's set_seed before building the module
    module = build_encoder(cfg.model)
    if torch.cuda.is_available():
        module = module.cuda()
    train_set = load_split(
        cfg.data, "train" if "unlabeled" in cfg.data.train_split else cfg.data.train_split, cfg.data.max_train
    )
    test_set = load_split(cfg.data, cfg.data.test_split, cfg.data.max_test)
    return KNNMonitor(train_set, test_set, cfg.eval, total_steps=1, seed=0)(module, 0)["knn_acc"]


def run_cell(base: str, strategy: str, seed: int, out: Path, extra: list[str]) -> dict | None:
    """Train (or resume, or read back) one cell and append its record; None when another process
    holds the cell."""
    led = ledger(out, base, extra)
    with led.claim((strategy, seed)) as got:
        if not got:
            print(f"{out / f'{strategy}_s{seed}'} is being trained by another process; skipped", flush=True)
            return None
        if (strategy, seed) in led.done():
            return None
        row = _cell_row(base, strategy, seed, out, extra)
        led.append(row)
    return row


def _cell_row(base: str, strategy: str, seed: int, out: Path, extra: list[str]) -> dict:
    from qt_hard.training.config import load_config
    from qt_hard.training.loop import list_checkpoints, train

    run_dir = out / f"{strategy}_s{seed}"
    overrides = [*extra, *STRATEGIES[strategy], f"train.seed={seed}", f"out_dir={run_dir}"]
    cfg = load_config(base, overrides)
    if not (run_dir / "eval.json").is_file():
        t0 = time.perf_counter()
        resume = bool(list_checkpoints(run_dir))
        # no checkpoint: at most a run cut short before its first checkpoint
        train(cfg, resume=resume, overwrite=not resume)
        if not (run_dir / "eval.json").is_file():  # stopped by a signal: checkpointed, not evaluated
            raise SystemExit(f"{run_dir} was interrupted; run the same command again to resume it")
        (run_dir / "wall_s.txt").write_text(f"{time.perf_counter() - t0:.1f}{' (resumed)' if resume else ''}\n")
        (run_dir / "device.txt").write_text(f"{_device_name()}\t{platform.node()}\n")
    result = json.loads((run_dir / "eval.json").read_text())
    dev_file = run_dir / "device.txt"  # where it trained (this machine when the file predates it)
    spec = dev_file.read_text().rstrip("\n") if dev_file.is_file() else f"{_device_name()}\t{platform.node()}"
    device, machine = (spec.split("\t") + [""])[:2]
    with (run_dir / "metrics.csv").open() as fh:
        speeds = [float(r["sentences_per_s"]) for r in csv.DictReader(fh)]
    init_file = out / f"knn_init_s{seed}.json"
    if not init_file.is_file():
        init_file.write_text(json.dumps({"knn_acc": random_init_knn(cfg)}))
    from qt_hard.vision.pipeline import load_split

    n_train = len(load_split(cfg.data, cfg.data.train_split, cfg.data.max_train))
    epochs = round(result["step"] / (n_train // cfg.train.batch_size), 2)  # as run (train.steps may set it)
    return {
        "strategy": strategy,
        "seed": seed,
        "knn_acc": result["knn_acc"],
        "linear_acc": result.get("linear_acc", ""),
        "knn_init": json.loads(init_file.read_text())["knn_acc"],
        "epochs": epochs,
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


def _curves(out: Path, strategies, seeds):
    curves = {}
    for s in strategies:
        for seed in seeds:
            f = out / f"{s}_s{seed}" / "eval.csv"
            if not f.is_file():
                continue
            with f.open() as fh:
                rows = list(csv.DictReader(fh))
            curves.setdefault(s, []).append(([int(r["step"]) for r in rows], [float(r["knn_acc"]) for r in rows]))
    return curves


def plot(out: Path, rows: list[dict], strategies, seeds, steps_per_epoch: float, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.5))
    curves = _curves(out, strategies, seeds)
    init = [float(r["knn_init"]) for r in rows if r.get("knn_init") not in (None, "")]
    for i, (s, runs) in enumerate(curves.items()):
        color = f"C{i}"
        for steps, acc in runs:
            ax.plot(np.array(steps) / steps_per_epoch, acc, color=color, alpha=0.3, lw=0.8)
        n = min(len(a) for _, a in runs)
        mean = np.mean([a[:n] for _, a in runs], axis=0)
        ax.plot(np.array(runs[0][0][:n]) / steps_per_epoch, mean, color=color, lw=2, label=f"{s} (mean of {len(runs)})")
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


def _mean_std(values) -> str:
    vals = [float(v) for v in values if v not in (None, "")]
    if not vals:
        return "-"
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return f"{statistics.mean(vals):.1f} ± {sd:.1f}"


def table(rows: list[dict], strategies) -> str:
    lines = [
        "| negatives | kNN acc. (%) | linear readout (%) | seeds | wall time per run (s, training + evaluation) |",
        "|---|---|---|---|---|",
    ]
    for s in strategies:
        mine = [r for r in rows if r["strategy"] == s]
        if not mine:
            continue
        # A resumed run's wall time covers only its last part: left out of the mean.
        walls = [float(str(r["wall_s"]).split()[0]) for r in mine if r["wall_s"] and "resumed" not in str(r["wall_s"])]
        wall = f"{statistics.mean(walls):.0f}" if walls else "-"
        lines.append(
            f"| {s} | {_mean_std(r['knn_acc'] for r in mine)} | {_mean_std(r['linear_acc'] for r in mine)} | "
            f"{len(mine)} | {wall} |"
        )
    inits = {r["seed"]: r["knn_init"] for r in rows}
    lines.append(f"| *random init (no training)* | {_mean_std(inits.values())} | | {len(inits)} | |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/simclr_cifar10.yaml")
    ap.add_argument("--out", default="runs/vision_table")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="section.key=value",
        help="overrides for every run, e.g. train.epochs=50 model.arch=resnet_tiny",
    )
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="no training: table and plot of the finished runs (e.g. run folders copied back from a GPU machine)",
    )
    args = ap.parse_args(argv)
    strategies = [s for s in args.strategies.split(",") if s]
    unknown = set(strategies) - set(STRATEGIES)
    if unknown:
        ap.error(f"unknown strategies {sorted(unknown)}; choose from {', '.join(STRATEGIES)}")
    seeds = seed_list(args.seeds)
    out = output_folder(args.out)
    if not args.report_only:
        from qt_hard.training.config import load_config

        from qt_hard.paths import data_path

        load_config(args.config, list(args.set))  # the file, the overrides and the data, before any write
        data_path("cifar10")
    out.mkdir(parents=True, exist_ok=True)
    led = ledger(out, args.config, list(args.set))
    for seed in seeds:
        for s in strategies:
            finished = (out / f"{s}_s{seed}" / "eval.json").is_file()
            if (s, seed) in led.done() or (args.report_only and not finished):
                continue
            if not finished:
                print(f"== {s} seed {seed}", flush=True)
            run_cell(args.config, s, seed, out, list(args.set))
    rows = led.latest()
    _write_rows(out / "results.csv", rows)
    rows = [r for r in rows if r["strategy"] in strategies and int(r["seed"]) in seeds]
    if not rows:
        print("no finished runs yet")
        return 0
    from qt_hard.training.config import load_config

    cfg = load_config(args.config, list(args.set))
    r0 = rows[0]
    steps_per_epoch = int(r0["steps"]) / float(r0["epochs"])
    title = (
        f"{method_name(cfg.model)} on CIFAR-10 subset ({r0['train_images']} train / {r0['test_images']} test images), "
        f"{r0['arch']}{'-w' + str(r0['width']) if r0['width'] else ''}, {r0['epochs']} epochs, batch "
        f"{r0['batch_size']}, {r0['device']}"
    )
    png = plot(out, rows, strategies, seeds, steps_per_epoch, title)
    md = table(rows, strategies)
    (out / "table.md").write_text(f"{title}\n\n{md}\n\ncommand: python {' '.join(sys.argv)}\n")
    print(md)
    for s in strategies:
        mine = [r for r in rows if r["strategy"] == s]
        if mine:
            print(
                json.dumps(
                    {
                        "strategy": s,
                        "knn_acc": [float(r["knn_acc"]) for r in mine],
                        "linear_acc": [r["linear_acc"] for r in mine],
                        "seeds": [r["seed"] for r in mine],
                        "images_per_s": [r["images_per_s"] for r in mine],
                    }
                )
            )
    best = max(
        strategies,
        key=lambda s: (
            statistics.mean(float(r["knn_acc"]) for r in rows if r["strategy"] == s)
            if any(r["strategy"] == s for r in rows)
            else -1
        ),
    )
    init = statistics.mean(float(r["knn_init"]) for r in rows)
    print(
        f"vision table ({len(rows)} runs, {cfg.model.arch}, {r0['epochs']} epochs): best kNN {best} "
        f"{_mean_std(r['knn_acc'] for r in rows if r['strategy'] == best)}% vs random init {init:.1f}%; "
        f"plot {png}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main))
