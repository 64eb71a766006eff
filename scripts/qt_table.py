"""Table 2 of Robinson et al. (2021) at our scale: Quick-Thoughts with uniform, debiased and hard negatives.

Four objectives, one training budget, several seeds each (the paper's rows, section 5.3 / Table 2):

* ``uniform``   QT (beta = 0, tau_plus = 0)
* ``debiased``  tau_plus = 0.01
* ``hard1``     beta = 1, tau_plus = 0, the [-2, 2] clipping of the scores (App. D.3, Fig. 14)
* ``hard2``     beta = 2, tau_plus = 0, the same clipping

All four use the core's joint Quick-Thoughts form (``context_loss``'s default: S2V's objective) and
differ only in the negatives. Each run trains the base config (``--config`` plus ``--set``
overrides, e.g. the sizes), then evaluates the saved encoder on the six tasks under ``--protocol``:
``senteval`` (SentEval's: 10-fold CV on MR CR SUBJ MPQA, TREC and MSRP train/test with a logistic
regression) or ``skipthoughts`` (the skip-thoughts evaluators behind the paper's numbers, where this
installation of ``qt_hard.evaluation`` provides them; otherwise a clear error).

Rows are named by ``ROW_GRAMMAR``: the paper's four (``hard1``/``hard2`` are the rescaled reading with
the floor, as first run), and ``hard<beta>-<reading>[-floor][-anneal|-warmup]`` for the readings of
the hard weights (``clip``), each with the weight diagnostics in its run's ``metrics.csv``.

Resumable: every finished (objective, seed, protocol) is a line of ``OUT/results.jsonl`` (the shared
results ledger, ``qt_hard.ledger``), and is skipped on the next call; an interrupted training resumes
from its checkpoint. Several processes may share one OUT (each claims the cell it runs).
The summary (``OUT/table.md``, ``OUT/table_dev.md`` on the dev folds, ``OUT/table_skipthoughts.md``
for that protocol, printed; ``OUT/results.csv``, one row per run of either protocol;
``OUT/diagnostics.png``, each row's weight diagnostics against steps) gives mean +- sample std over
seeds per task, the six-task mean, the
difference to uniform per task, and the paper's rows (read from the paper's text when ``--paper``
names it); ``OUT/differences.png`` (``differences_skipthoughts.png``) plots the
per-task differences to uniform.

    python scripts/qt_table.py --out runs/qt_table --seeds 0,1,2 --config configs/qt_table.yaml
    python scripts/qt_table.py --out runs/qt_table --summary-only     # the table of what is there
    python scripts/qt_table.py --out runs/qt_gpu --protocol senteval,skipthoughts --eval-device cuda ...

``--protocol`` takes a comma-separated list: each trained run is then evaluated under every protocol
before the next run trains (one encoding, two classifier protocols). ``similarity`` is a protocol
too: the run's semantic similarity (``SIM_TASKS``: STS12-16, STS Benchmark and SICK-R, cosine and
SentEval's supervised form; ``qt_hard.evaluation.similarity``), one ledger record per run with
Spearman and Pearson x100 per task; a run whose ``final/`` is there is evaluated without training
(``--protocol senteval,similarity`` on a finished table adds the similarity records only). Its
summary (``OUT/table_similarity.md``, printed) gives mean +- sample std over seeds per task and of
the similarity mean (STS12-16 mean, STS-B and SICK-R cosine), each row's difference to uniform
paired by seed, and whether that difference exceeds uniform's seed spread. ``--eval-device`` is where the
classifiers are solved (``qt_hard.evaluation.logreg``'s device: ``cpu``, or ``cuda`` for the same
solver on a GPU); the encoder runs on the GPU whenever there is one. Each record says which.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

from qt_hard.script_cli import ScriptParser, output_folder, run_script, seed_list

ROWS = {
    "uniform": ("QT (beta=0, tau+=0)", {"negatives": "uniform", "options": {}}),
    "debiased": ("Debiased (tau+=0.01)", {"negatives": "debiased", "options": {"tau_plus": 0.01}}),
    # The rows as this script first ran them (the GPU and CPU tables committed before the readings were
    # named): the rescaled reading with the estimator's floor.
    "hard1": (
        "Hard (beta=1, tau+=0)",
        {"negatives": "hard", "options": {"beta": 1.0, "tau_plus": 0.0, "clip": "rescaled"}},
    ),
    "hard2": (
        "Hard (beta=2, tau+=0)",
        {"negatives": "hard", "options": {"beta": 2.0, "tau_plus": 0.0, "clip": "rescaled"}},
    ),
}
READINGS = ("none", "rescaled", "fig14", "graph_code", "clamp")
ANNEAL_CHANGES = 4  # HCL App. D.1: beta lowered by beta / 4 every quarter of training
ROW_GRAMMAR = (
    "uniform | uniform-floor | debiased | hard1 | hard2 | hard<beta>-<reading>[-floor][-anneal|-warmup], "
    f"reading one of {', '.join(READINGS)}"
)


def row_spec(name: str) -> tuple[str, dict]:
    """(label, {"negatives", "options"}) of a row name (``ROW_GRAMMAR``).

    ``hard<beta>-<reading>``: hard weights under that reading of the clip (``HardWeighting``), tau+ 0 and
    no floor, so that the row differs from ``uniform`` in the weights only; ``-floor`` adds the
    estimator's e^{-1/t} floor (``uniform-floor`` is uniform with it); ``-anneal`` lowers beta to 0 in
    ``ANNEAL_CHANGES`` steps (HCL App. D.1, ``beta_anneal``); ``-warmup`` raises it linearly from 0 to
    beta over the first half of training."""
    if name in ROWS:
        return ROWS[name]
    if name == "uniform-floor":
        return "QT (beta=0, tau+=0, floor)", {"negatives": "uniform", "options": {"tau_plus": 0.0, "floor": "hard"}}
    m = re.fullmatch(r"hard(\d+(?:\.\d+)?)-([a-z0-9_]+?)((?:-floor)?)((?:-anneal|-warmup)?)", name)
    if not m or m.group(2) not in READINGS:
        raise SystemExit(f"unknown row {name!r}; rows are {ROW_GRAMMAR}")
    beta, reading, floor, sched = float(m.group(1)), m.group(2), bool(m.group(3)), m.group(4)[1:]
    beta_opt: float | dict = beta
    if sched == "anneal":
        beta_opt = {"schedule": "beta_anneal", "beta": beta, "changes": ANNEAL_CHANGES, "direction": "down"}
    elif sched == "warmup":
        beta_opt = {"schedule": "linear", "start": 0.0, "end": beta, "until": 0.5}
    opts = {"beta": beta_opt, "tau_plus": 0.0, "clip": reading, "floor": "hard" if floor else "none"}
    label = f"Hard (beta={beta:g}{', ' + sched if sched else ''}, {reading}{', floor' if floor else ''})"
    return label, {"negatives": "hard", "options": opts}


def row_order(name: str) -> tuple:
    """Sort key: the paper's rows first, then by beta, reading, floor, schedule."""
    if name in ROWS:
        return (0, list(ROWS).index(name), "")
    if name == "uniform-floor":
        return (0, 0.5, "")
    m = re.fullmatch(r"hard(\d+(?:\.\d+)?)-(.*)", name)
    return (1, float(m.group(1)) if m else 0.0, m.group(2) if m else name)


TASKS = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")
SIM_TASKS = (
    "STS12",
    "STS13",
    "STS14",
    "STS15",
    "STS16",
    "STSBenchmark-cos",
    "SICKRelatedness-cos",
    "STSBenchmark",
    "SICKRelatedness",
)
# Lines of the paper's Table 2, matched by their opening words: row key -> regex.
PAPER_ROWS = {
    "uniform": r"^QT \(",
    "debiased": r"^Debiased \(",
    "hard1": r"^Hard \(\s*\$\\beta = 1",
    "hard2": r"^Hard \(\s*\$\\beta = 2",
}


KEY = ("row", "seed", "protocol")


def open_ledger(out: Path, setup: dict | None):
    """The folder's results ledger (``qt_hard.ledger``: one line per finished (row, seed, protocol),
    one training setup per folder). A results file written before the ledger had a header (records
    only, each naming its config and overrides) is adopted when every record is of this setup."""
    from qt_hard.ledger import Ledger

    path = out / "results.jsonl"
    if setup is not None and path.is_file():
        lines = [x for x in path.read_text(encoding="utf-8").splitlines(keepends=True) if x.strip()]
        first = json.loads(lines[0]) if lines else {}
        if "row" in first:  # records without a header
            complete = [x for x in lines if x.endswith("\n")]
            records = [json.loads(x) for x in complete]
            if any(
                {"config": r.get("config"), "overrides": sorted(r.get("overrides") or [])} != setup for r in records
            ):
                raise SystemExit(f"{path} holds runs of another training setup; give this one its own --out")
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps({"ledger": 1, "setup": setup}) + "\n" + "".join(complete), encoding="utf-8")
            os.replace(tmp, path)
    return Ledger(out, KEY, setup)


def paper_rows(paper: Path | None) -> dict[str, dict[str, float]]:
    """The paper's Table 2 (acc per task) parsed from its text, {} when the file is not found."""
    if paper is None or not paper.is_file():
        return {}
    rows = {}
    for line in paper.read_text(encoding="utf-8").splitlines():
        for key, pat in PAPER_ROWS.items():
            if key not in rows and re.match(pat, line):
                nums = [float(x) for x in re.findall(r"(?<![\w.])\d+\.\d+", line.split(")", 1)[1])]
                if len(nums) >= 6:
                    rows[key] = dict(zip(TASKS, nums[:6]))
    return rows


def evaluator(protocol: str):
    """run(encoder, tasks, kfold, data, cache=None) -> {task: {"acc": ..}} under ``protocol`` (SentEval's
    or the skip-thoughts evaluators', ``qt_hard.evaluation.senteval.PROTOCOLS``); SystemExit for another
    name. ``cache``: an ``EmbeddingCache`` of the encoder, shared by the protocols of one run."""
    from qt_hard.evaluation.senteval import PROTOCOLS, run_senteval

    if protocol == "similarity":  # the cosine tasks and SentEval's regression; kfold plays no part
        return lambda enc, tasks, kfold, data, cache=None: run_senteval(enc, SIM_TASKS, data, cache=cache)
    if protocol not in PROTOCOLS:
        raise SystemExit(f"--protocol {protocol}: no such protocol; choose one of {', '.join(PROTOCOLS)}, similarity")
    return lambda enc, tasks, kfold, data, cache=None: run_senteval(
        enc, tasks, data, kfold=kfold, protocol=protocol, cache=cache
    )


DIAG_PANELS = (
    ("ess_frac", "effective sample size / negatives"),
    ("w_ratio_median", "median w_max / w_min"),
    ("pushed_up_frac", "negatives pushed up"),
    ("score_std", "score std"),
    ("floor_binds_frac", "anchors on the floor"),
    ("loss", "training loss"),
    ("beta", "beta in effect (schedules)"),
)


def plot_diagnostics(out: Path, path: Path, seed: int = 0) -> bool:
    """One figure: each row's weight diagnostics (metrics.csv of its run with ``seed``) against steps."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted(
        (out / "runs").glob(f"*_s{seed}/metrics.csv"), key=lambda p: row_order(p.parent.name[: -len(f"_s{seed}")])
    )
    if not runs:
        return False
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5), sharex=True)
    for ax in axes.flat:
        ax.set_prop_cycle(color=plt.cm.tab20.colors)  # up to 20 rows, each its own colour
    for metrics in runs:
        name = metrics.parent.name[: -len(f"_s{seed}")]
        with metrics.open() as fh:
            rows = list(csv.DictReader(fh))
        steps = [int(r["step"]) for r in rows]
        for ax, (key, title) in zip(axes.flat, DIAG_PANELS):
            vals = [float(r[key]) if r.get(key) not in (None, "") else float("nan") for r in rows]
            ax.plot(steps, vals, lw=1, label=name)
            ax.set_title(title, fontsize=9)
    axes[0, 1].set_yscale("log")
    for ax in axes[1]:
        ax.set_xlabel("step")
    legend = axes.flat[len(DIAG_PANELS)]  # the spare panel holds the legend
    legend.legend(*axes[0, 0].get_legend_handles_labels(), fontsize=7, loc="center", frameon=False)
    legend.axis("off")
    fig.suptitle(f"Weight diagnostics per row (seed {seed}; logged every log_every steps)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def train_one(args, key: str, seed: int) -> Path:
    from qt_hard.training.config import load_config
    from qt_hard.training.loop import list_checkpoints, train

    run_dir = Path(args.out) / "runs" / f"{key}_s{seed}"
    final = run_dir / "final" / "encoder.json"
    if final.is_file():
        return run_dir
    obj = row_spec(key)[1]
    over = list(args.set) + [
        f"out_dir={run_dir}",
        f"train.seed={seed}",
        f"objective.negatives={obj['negatives']}",
        f"objective.options={json.dumps(obj['options'])}",
    ]
    cfg = load_config(args.config, over)
    # Every run reads the same sentences and token ids: one shared cache (split and tokenize once).
    shared = Path(args.out) / "cache"
    shared.mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not (run_dir / "cache").exists():
        (run_dir / "cache").symlink_to(shared.resolve(), target_is_directory=True)
    resume = bool(list_checkpoints(run_dir))
    # Without a checkpoint (or a final model, above) the folder holds at most a run cut short
    # before its first checkpoint: start it again.
    train(cfg, resume=resume, overwrite=not resume)
    if not final.is_file():  # stopped by a signal (e.g. a time limit): its checkpoint is kept
        raise SystemExit(f"{run_dir}: training was interrupted; run the same command again to resume it")
    return run_dir


def run_cell(args, ledger, key: str, seed: int, todo: list[str], run_evals: dict, data) -> None:
    """Train one (row, seed) (resuming its checkpoint), then evaluate it under each protocol of
    ``todo``, one ledger record each."""
    import torch

    import qt_hard
    from qt_hard.evaluation.models import EmbeddingCache
    from qt_hard.ledger import provenance

    t0 = time.perf_counter()
    run_dir = train_one(args, key, seed)
    t1 = time.perf_counter()
    # Encode on the GPU where there is one (the classifiers' protocol is the same).
    enc_device = "cuda" if torch.cuda.is_available() else "cpu"
    enc = qt_hard.load_encoder(run_dir, device=enc_device)
    cache = EmbeddingCache(enc)  # one encoding for every protocol of this run
    for protocol in todo:
        t2 = time.perf_counter()
        res = run_evals[protocol](enc, list(TASKS), args.kfold, data, cache=cache)
        if protocol == "similarity":
            rec = similarity_record(res)
        else:
            rec = {
                "acc": {t: res[t]["acc"] for t in TASKS},
                "mrpc_f1": res["MRPC"].get("f1"),
                "devacc": {t: res[t].get("devacc") for t in TASKS},
            }
        rec = {
            "row": key,
            "seed": seed,
            "protocol": protocol,
            "run": str(run_dir),
            **rec,
            "train_s": round(t1 - t0, 1),
            "eval_s": round(time.perf_counter() - t2, 1),
            "encode_device": enc_device,
            "solver_device": args.eval_device,
            "config": args.config,
            "overrides": args.set,
            **provenance(Path(__file__).resolve().parent),
        }
        ledger.append(rec)
        print(json.dumps(rec), flush=True)


SIM_MEAN = "Sim. mean"


def similarity_record(res: dict) -> dict:
    """The ledger fields of one run's similarity results: Spearman and Pearson x100 per task of
    ``SIM_TASKS``, the dev scores (cosine: dev Spearman; supervised: dev Pearson) and the similarity
    mean (``qt_hard.evaluation.report.similarity_mean``)."""
    from qt_hard.evaluation.report import similarity_mean

    return {
        "spearman": {t: res[t]["spearman"] for t in SIM_TASKS},
        "pearson": {t: res[t]["pearson"] for t in SIM_TASKS},
        "dev": {t: res[t].get("devspearman", res[t].get("devpearson")) for t in SIM_TASKS},
        "sim_mean": similarity_mean(res),
    }


def summarize_similarity(records: list[dict], field: str = "spearman") -> tuple[str, dict]:
    """The similarity table: per row mean +- sample std (ddof 1) over seeds of ``field`` x100 per task
    and of the similarity mean; then each row's difference to uniform paired by seed (the mean over
    the seeds both have of row - uniform) and whether it exceeds the spread, the sample std over
    seeds of uniform's value. Returns (markdown, {"stats", "diffs", "spread", "verdict"})."""
    import numpy as np

    cols = [*SIM_TASKS, SIM_MEAN]
    by: dict = {}
    for r in records:
        if r.get("protocol") == "similarity" and all((r.get(field) or {}).get(t) is not None for t in SIM_TASKS):
            vals = [r[field][t] for t in SIM_TASKS]
            mean = r.get("sim_mean") if field == "spearman" else None
            if mean is None:
                years = [r[field][t] for t in SIM_TASKS[:5]]
                mean = (float(np.mean(years)) + r[field]["STSBenchmark-cos"] + r[field]["SICKRelatedness-cos"]) / 3
            by.setdefault(r["row"], {})[r["seed"]] = np.array([*vals, mean])
    stats = {}
    for key in sorted(by, key=row_order):
        m = np.stack(list(by[key].values()))
        stats[key] = {
            "n": len(m),
            "mean": m.mean(0),
            "std": m.std(0, ddof=1) if len(m) > 1 else np.zeros(len(cols)),
            "seeds": sorted(by[key]),
        }
    heads = [
        "STS12",
        "STS13",
        "STS14",
        "STS15",
        "STS16",
        "STS-B cos",
        "SICK-R cos",
        "STS-B sup.",
        "SICK-R sup.",
        SIM_MEAN,
    ]
    lines = [
        f"Semantic similarity, {field.capitalize()} x100 (STS12-16: mean over each year's sets; cos: cosine on "
        "the test split; sup.: SentEval's regression, test). Mean ± sample std (ddof 1) over seeds; "
        f"{SIM_MEAN}: the mean of the STS12-16 mean, STS-B cos and SICK-R cos.",
        "",
        "| Objective | seeds | " + " | ".join(heads) + " |",
        "|---|---:|" + "---:|" * len(heads),
    ]
    for key, s in stats.items():
        cells = [f"{m:.1f} ± {sd:.1f}" for m, sd in zip(s["mean"], s["std"])]
        lines.append(f"| {row_spec(key)[0]} | {s['n']} | " + " | ".join(cells) + " |")
    diffs, verdict, spread = {}, {}, None
    if "uniform" in stats:
        base = by["uniform"]
        spread = stats["uniform"]["std"]
        lines += [
            "",
            "Difference to uniform, paired by seed (mean over the shared seeds of row - uniform); * where its size "
            "exceeds uniform's seed spread (sample std over seeds) in that column:",
            "",
            "| Objective | shared seeds | " + " | ".join(heads) + " |",
            "|---|---:|" + "---:|" * len(heads),
        ]
        for key in stats:
            if key == "uniform":
                continue
            shared = sorted(set(by[key]) & set(base))
            if not shared:
                continue
            d = np.stack([by[key][s] - base[s] for s in shared]).mean(0)
            diffs[key] = d
            beyond = (np.abs(d) > spread) & (stats["uniform"]["n"] > 1)
            verdict[key] = "higher" if beyond[-1] and d[-1] > 0 else "lower" if beyond[-1] else "within"
            cells = [f"{x:+.2f}" + ("*" if b else "") for x, b in zip(d, beyond)]
            lines.append(f"| {row_spec(key)[0]} | {len(shared)} | " + " | ".join(cells) + " |")
        if stats["uniform"]["n"] < 2:
            lines += ["", "Uniform has one seed so far: no seed spread to judge the differences by."]
        else:
            said = [
                f"{row_spec(k)[0]}: {v} ({diffs[k][-1]:+.2f} against a spread of {spread[-1]:.2f})"
                for k, v in verdict.items()
            ]
            lines += ["", f"{SIM_MEAN} against uniform beyond its seed spread: " + ("; ".join(said) or "no other row")]
    return "\n".join(lines), {"stats": stats, "diffs": diffs, "spread": spread, "verdict": verdict}


def summarize(records: list[dict], protocol: str, paper: dict, field: str = "acc") -> tuple[str, dict]:
    """The table of ``field`` ("acc": test accuracy; "devacc": SentEval's dev accuracy, the mean of the
    inner validation folds, for choosing among rows without the test folds)."""
    import numpy as np

    by = {}
    for r in records:
        if r.get("protocol") == protocol and all((r.get(field) or {}).get(t) is not None for t in TASKS):
            by.setdefault(r["row"], {})[r["seed"]] = r
    stats = {}
    for key in sorted(by, key=row_order):
        runs = list(by[key].values())
        acc = np.array([[r[field][t] for t in TASKS] for r in runs])
        stats[key] = {
            "n": len(runs),
            "mean": acc.mean(0),
            "std": acc.std(0, ddof=1) if len(runs) > 1 else np.zeros(len(TASKS)),
            "avg": acc.mean(1),
            "seeds": sorted(by[key]),
        }
    head = "| Objective | seeds | " + " | ".join(TASKS) + " | mean |"
    what = "test accuracy" if field == "acc" else "dev accuracy (SentEval's inner validation folds)"
    lines = [
        f"Protocol: {protocol}, {what}. Ours: mean ± sample std (ddof 1) over seeds (%); paper: "
        "Table 2 (BookCorpus, full-size QT, test).",
        "",
        head,
        "|---|---:|" + "---:|" * (len(TASKS) + 1),
    ]
    if field != "acc":
        paper = {}
    for key, s in stats.items():
        cells = [f"{m:.1f} ± {sd:.1f}" for m, sd in zip(s["mean"], s["std"])]
        avg = s["avg"]
        avg_sd = avg.std(ddof=1) if len(avg) > 1 else 0.0
        lines.append(
            f"| {row_spec(key)[0]} (ours) | {s['n']} | " + " | ".join(cells) + f" | {avg.mean():.2f} ± {avg_sd:.2f} |"
        )
        if key in paper:
            p = [paper[key][t] for t in TASKS]
            lines.append(
                f"| {row_spec(key)[0]} (paper) | – | "
                + " | ".join(f"{x:.1f}" for x in p)
                + f" | {sum(p) / len(p):.1f} |"
            )
    diffs = {}
    if "uniform" in stats:
        lines += [
            "",
            "Difference to uniform (ours: mean over seeds; paper in brackets):",
            "",
            "| Objective | " + " | ".join(TASKS) + " | mean |",
            "|---|" + "---:|" * (len(TASKS) + 1),
        ]
        base = stats["uniform"]
        for key, s in stats.items():
            if key == "uniform":
                continue
            d = s["mean"] - base["mean"]
            diffs[key] = d
            pd = [paper[key][t] - paper["uniform"][t] for t in TASKS] if key in paper and "uniform" in paper else None
            cells = [f"{x:+.1f}" + (f" [{y:+.1f}]" if pd else "") for x, y in zip(d, pd or [0] * len(TASKS))]
            lines.append(f"| {row_spec(key)[0]} | " + " | ".join(cells) + f" | {d.mean():+.2f} |")
        # The spread the differences are judged by: the sample std over seeds of uniform's six-task mean.
        spread = float(base["avg"].std(ddof=1)) if base["n"] > 1 else 0.0
        better = [k for k, d in diffs.items() if d.mean() > spread]
        if base["n"] < 2:
            lines += ["", "Uniform has one seed so far: no seed spread to judge the differences by."]
        else:
            lines += [
                "",
                (
                    f"Beat uniform on the six-task mean by more than uniform's seed spread (sample std of "
                    f"its six-task mean, {spread:.2f}): {', '.join(better)}."
                    if better
                    else f"No row beats uniform on the six-task mean by more than uniform's seed spread (sample "
                    f"std of its six-task mean, {spread:.2f})."
                ),
            ]
    return "\n".join(lines), {"stats": stats, "diffs": diffs}


def write_csv(records: list[dict], path: Path) -> None:
    """One row per finished (objective, seed, protocol): accuracies, six-task mean, dev means, times."""
    import csv

    fields = [
        "row",
        "seed",
        "protocol",
        *TASKS,
        "mean",
        "mrpc_f1",
        "dev_mean",
        "train_s",
        "eval_s",
        "solver_device",
        "run",
    ]
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fields)
        w.writeheader()
        for r in sorted(
            (r for r in records if "acc" in r), key=lambda r: (r["protocol"], row_order(r["row"]), r["seed"])
        ):
            acc = [r["acc"][t] for t in TASKS]
            dev = [v for v in (r.get("devacc") or {}).values() if v is not None]
            w.writerow(
                {
                    "row": r["row"],
                    "seed": r["seed"],
                    "protocol": r["protocol"],
                    **r["acc"],
                    "mean": round(sum(acc) / len(acc), 2),
                    "mrpc_f1": r.get("mrpc_f1"),
                    "dev_mean": round(sum(dev) / len(dev), 2) if dev else "",
                    "train_s": r.get("train_s"),
                    "eval_s": r.get("eval_s"),
                    "solver_device": r.get("solver_device", "cpu"),
                    "run": r.get("run"),
                }
            )
    os.replace(tmp, path)  # a reader never sees half a file


def plot(diffs: dict, stats: dict, paper: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if not diffs:
        return
    fig, ax = plt.subplots(figsize=(8, 3.5))
    x = np.arange(len(TASKS))
    w = 0.8 / len(diffs)
    for i, (key, d) in enumerate(diffs.items()):
        err = np.sqrt(stats[key]["std"] ** 2 + stats["uniform"]["std"] ** 2)
        ax.bar(x + i * w, d, w, yerr=err, capsize=2, label=f"{row_spec(key)[0]} (ours)")
        if key in paper and "uniform" in paper:
            pd = [paper[key][t] - paper["uniform"][t] for t in TASKS]
            ax.scatter(x + i * w, pd, marker="x", color="k", zorder=3, label="paper" if i == 0 else None)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x + w * (len(diffs) - 1) / 2, TASKS)
    ax.set_ylabel("accuracy - uniform (points)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/qt_table")
    ap.add_argument("--config", default="configs/qt_table.yaml", help="base training config")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"objectives: {ROW_GRAMMAR}")
    ap.add_argument(
        "--protocol",
        default="senteval",
        help="senteval | skipthoughts | similarity, or several comma-separated (each run evaluated under each; "
        "similarity: STS12-16, STS Benchmark, SICK-R)",
    )
    ap.add_argument("--eval-device", default="cpu", help="where the classifiers are solved: cpu (default) or cuda")
    ap.add_argument("--kfold", type=int, default=10)
    ap.add_argument("--data", default=None, help="SentEval data folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument(
        "--paper", default=None, help="the paper's text, whose Table 2 rows join the table (left out without it)"
    )
    ap.add_argument("--summary-only", action="store_true", help="print the table of the finished runs only")
    args = ap.parse_args()

    # Every argument is checked before anything is written.
    out = output_folder(args.out)
    seeds = seed_list(args.seeds)
    rows = [r for r in args.rows.split(",") if r]
    for r in rows:
        row_spec(r)  # an unknown row is an error before anything runs
    protocols = [p for p in args.protocol.split(",") if p]
    if not protocols:
        raise SystemExit("--protocol: give at least one protocol")
    if not args.summary_only:
        from qt_hard.training.config import load_config

        load_config(args.config, list(args.set), check_pipeline=False)  # the file, its keys and values
        if args.data and not (Path(args.data) / "MR").is_dir():
            raise SystemExit(f"--data {args.data}: no SentEval task folders in it (MR/ is missing)")
    out.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        run_evals = {p: evaluator(p) for p in protocols}
        from qt_hard.evaluation import logreg
        from qt_hard.evaluation.senteval import default_senteval_dir

        try:
            logreg.check_device(args.eval_device, "--eval-device")
        except ValueError as err:
            raise SystemExit(str(err)) from None
        logreg.DEFAULT_DEVICE = args.eval_device
        # Finished runs are skipped by (row, seed, protocol): results of another budget in the same
        # OUT would be skipped as if they were this one's, so the ledger refuses to mix setups.
        ledger = open_ledger(out, {"config": args.config, "overrides": sorted(args.set)})
        data = args.data or default_senteval_dir()
        # Seeds outermost: every row gets a seed early. Several processes may run on one OUT: each
        # cell is claimed (qt_hard.ledger) by the process that runs it.
        for seed, key in [(seed, key) for seed in seeds for key in rows]:
            todo = [p for p in protocols if (key, seed, p) not in ledger.done()]
            if not todo:
                continue
            with ledger.claim((key, seed)) as mine:
                if mine:
                    run_cell(args, ledger, key, seed, todo, run_evals, data)
    paper = paper_rows(Path(args.paper) if args.paper else None)
    if not paper:
        print("note: the paper's Table 2 was not found; its rows are left out", file=sys.stderr)
    records = open_ledger(out, None).latest() if (out / "results.jsonl").is_file() else []
    write_csv(records, out / "results.csv")
    for protocol in protocols:
        if protocol == "similarity":
            table = summarize_similarity(records)[0]
            (out / "table_similarity.md").write_text(table + "\n")
            print(table)
            n = sum(1 for r in records if r.get("protocol") == "similarity")
            print(f"{n} runs under similarity in {out / 'results.jsonl'}; table {out / 'table_similarity.md'}")
            continue
        table, parts = summarize(records, protocol, paper)
        # One table and plot per protocol (SentEval's keeps the plain names).
        suffix = "" if protocol == "senteval" else f"_{protocol}"
        table_path, plot_path = out / f"table{suffix}.md", out / f"differences{suffix}.png"
        table_path.write_text(table + "\n")
        dev_table = summarize(records, protocol, paper, field="devacc")[0]
        (out / f"table_dev{suffix}.md").write_text(dev_table + "\n")
        print(dev_table + "\n")
        plot(parts["diffs"], parts["stats"], paper, plot_path)
        print(table)
        n = sum(s["n"] for s in parts["stats"].values())
        print(f"{n} runs under {protocol} in {out / 'results.jsonl'}; table {table_path}, plot {plot_path}")
    if plot_diagnostics(out, out / "diagnostics.png"):
        print(f"weight diagnostics: {out / 'diagnostics.png'}")


if __name__ == "__main__":
    sys.exit(run_script(main))
