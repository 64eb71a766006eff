"""Table 2 of Robinson et al. (2021) at our scale (``qt-hard grid run qt-table``): Quick-Thoughts with
uniform, debiased and hard negatives, several seeds, SentEval's six tasks.

* **base config**: the script's ``--config`` with its ``--set`` overrides (the ledger's setup);
* **rows**: the paper's four (``ROWS``) and the readings of the hard weights named by
  ``ROW_GRAMMAR`` (``row_spec``); a reading is one more name in ``READINGS``;
* **cells**: (row, seed), trained once in ``OUT/runs/<row>_s<seed>``, then read out under every
  protocol asked, one ledger record per (row, seed, protocol);
* **readout**: ``PROTOCOLS``, one entry per protocol: how a trained encoder is evaluated (the fields
  of its record) and how its records are reported (the files it writes); a protocol is one entry:
  ``senteval`` and ``skipthoughts`` (the six tasks under that classifier protocol, ``table*.md``),
  ``similarity`` (``SIM_TASKS``, ``table_similarity.md``) and ``namesake`` (STS12-16 and the held-out
  next-sentence measures, with the six-task mean in the paired table ``namesake_table.md``);
* **the paper's rows**: Table 2, parsed from the paper's text (``paper_rows``).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from qt_hard.evaluation.datasets import TASKS
from qt_hard.evaluation.similarity import SIMILARITY_TASKS
from qt_hard.experiments import report
from qt_hard.experiments.contract import Cell, Context, Experiment, Row
from qt_hard.experiments.grid import GridError, comma_list
from qt_hard.experiments.runner import finished_run, link_shared_cache, read_metrics, train_run

from .qt_table_namesake import held_out_range, namesake, report_namesake

_ROWS = {  # name: (label, what the row changes)
    "uniform": ("QT (beta=0, tau+=0)", {"negatives": "uniform", "options": {}}),
    "debiased": ("Debiased (tau+=0.01)", {"negatives": "debiased", "options": {"tau_plus": 0.01}}),
    # The rows as this table first ran them (the GPU and CPU tables committed before the readings were
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
ROWS = {name: Row(name, changes, label) for name, (label, changes) in _ROWS.items()}
# The readings of the hard weights a row may name (``HardWeighting``'s ``clip``).
READINGS = ("none", "rescaled", "fig14", "graph_code", "clamp")
ANNEAL_CHANGES = 4  # HCL App. D.1: beta lowered by beta / 4 every quarter of training
ROW_GRAMMAR = (
    "uniform | uniform-floor | debiased | hard1 | hard2 | hard<beta>-<reading>[-floor][-anneal|-warmup], "
    f"reading one of {', '.join(READINGS)}"
)
# The similarity protocol's tasks (``qt_hard.evaluation.similarity``): STS12-16 and the cosine forms of
# STS Benchmark and SICK-R, then SentEval's supervised regression on both.
SIM_TASKS = SIMILARITY_TASKS
SIM_MEAN = "Sim. mean"
# Lines of the paper's Table 2, matched by their opening words: row key -> regex.
PAPER_ROWS = {
    "uniform": r"^QT \(",
    "debiased": r"^Debiased \(",
    "hard1": r"^Hard \(\s*\$\\beta = 1",
    "hard2": r"^Hard \(\s*\$\\beta = 2",
}
KEY = ("row", "seed", "protocol")


def row_spec(name: str) -> Row:
    """The row of a row name (``ROW_GRAMMAR``): its label, and the ``{"negatives", "options"}`` it changes.

    ``hard<beta>-<reading>``: hard weights under that reading of the clip (``HardWeighting``), tau+ 0 and
    no floor, so that the row differs from ``uniform`` in the weights only; ``-floor`` adds the
    estimator's e^{-1/t} floor (``uniform-floor`` is uniform with it); ``-anneal`` lowers beta to 0 in
    ``ANNEAL_CHANGES`` steps (HCL App. D.1, ``beta_anneal``); ``-warmup`` raises it linearly from 0 to
    beta over the first half of training."""
    if name in ROWS:
        return ROWS[name]
    if name == "uniform-floor":
        return Row(
            name, {"negatives": "uniform", "options": {"tau_plus": 0.0, "floor": "hard"}}, "QT (beta=0, tau+=0, floor)"
        )
    m = re.fullmatch(r"hard(\d+(?:\.\d+)?)-([a-z0-9_]+?)((?:-floor)?)((?:-anneal|-warmup)?)", name)
    if not m or m.group(2) not in READINGS:
        raise GridError(f"unknown row {name!r}; rows are {ROW_GRAMMAR}")
    beta, reading, floor, sched = float(m.group(1)), m.group(2), bool(m.group(3)), m.group(4)[1:]
    beta_opt: float | dict = beta
    if sched == "anneal":
        beta_opt = {"schedule": "beta_anneal", "beta": beta, "changes": ANNEAL_CHANGES, "direction": "down"}
    elif sched == "warmup":
        beta_opt = {"schedule": "linear", "start": 0.0, "end": beta, "until": 0.5}
    opts = {"beta": beta_opt, "tau_plus": 0.0, "clip": reading, "floor": "hard" if floor else "none"}
    label = f"Hard (beta={beta:g}{', ' + sched if sched else ''}, {reading}{', floor' if floor else ''})"
    return Row(name, {"negatives": "hard", "options": opts}, label)


def row_order(name: str) -> tuple:
    """Sort key: the paper's rows first, then by beta, reading, floor, schedule."""
    if name in ROWS:
        return (0, list(ROWS).index(name), "")
    if name == "uniform-floor":
        return (0, 0.5, "")
    m = re.fullmatch(r"hard(\d+(?:\.\d+)?)-(.*)", name)
    return (1, float(m.group(1)) if m else 0.0, m.group(2) if m else name)


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


# --------------------------------------------------------------------------------------------
# the protocols: how a trained run is read out, and how its records are reported


@dataclass(frozen=True)
class Protocol:
    """``evaluate(encoder, kfold, data, cache, run)``: the readout fields of a run's record (``cache``, an
    ``EmbeddingCache`` shared by the protocols of one run; ``run``, the run's folder); ``report(records, protocol, paper)``: the
    protocol's tables from the records (``{file name: text}``); ``figures(records, protocol, paper,
    out)``: its figures, drawn into ``out`` (None: it has none)."""

    evaluate: Callable
    report: Callable
    figures: Callable | None = None


def _six_tasks(protocol: str) -> Callable:
    """SentEval's six tasks under ``protocol`` (``qt_hard.evaluation.senteval.PROTOCOLS``): test and
    dev accuracy per task, MRPC's F1."""

    def evaluate(enc, kfold, data, cache=None, run=None) -> dict:
        from qt_hard.evaluation.senteval import run_senteval

        res = run_senteval(enc, list(TASKS), data, kfold=kfold, protocol=protocol, cache=cache)
        return {
            "acc": {t: res[t]["acc"] for t in TASKS},
            "mrpc_f1": res["MRPC"].get("f1"),
            "devacc": {t: res[t].get("devacc") for t in TASKS},
        }

    return evaluate


def _suffix(protocol: str) -> str:
    return "" if protocol == "senteval" else f"_{protocol}"


def report_six_tasks(records: list[dict], protocol: str, paper: dict) -> dict[str, str]:
    """``table.md`` and ``table_dev.md`` (``_<protocol>`` before ``.md`` except for senteval), the dev
    table first."""
    table = summarize(records, protocol, paper)[0]
    dev_table = summarize(records, protocol, paper, field="devacc")[0]
    return {f"table_dev{_suffix(protocol)}.md": dev_table, f"table{_suffix(protocol)}.md": table}


def plot_six_tasks(records: list[dict], protocol: str, paper: dict, out: Path) -> None:
    """``differences.png`` (``_<protocol>`` likewise): the per-task differences to uniform."""
    plot(summarize(records, protocol, paper)[1], paper, out / f"differences{_suffix(protocol)}.png")


def _similarity(enc, kfold, data, cache=None, run=None) -> dict:
    """Semantic similarity (``SIM_TASKS``; ``kfold`` plays no part): Spearman and Pearson x100 per
    task, the dev scores (cosine: dev Spearman; supervised: dev Pearson) and the similarity mean
    (``qt_hard.evaluation.report.similarity_mean``)."""
    from qt_hard.evaluation.report import similarity_mean
    from qt_hard.evaluation.senteval import run_senteval

    res = run_senteval(enc, SIM_TASKS, data, cache=cache)
    return {
        "spearman": {t: res[t]["spearman"] for t in SIM_TASKS},
        "pearson": {t: res[t]["pearson"] for t in SIM_TASKS},
        "dev": {t: res[t].get("devspearman", res[t].get("devpearson")) for t in SIM_TASKS},
        "sim_mean": similarity_mean(res),
    }


def report_similarity(records: list[dict], protocol: str, paper: dict) -> dict[str, str]:
    """``table_similarity.md`` (:func:`summarize_similarity`)."""
    return {"table_similarity.md": summarize_similarity(records)[0]}


PROTOCOLS = {
    "senteval": Protocol(_six_tasks("senteval"), report_six_tasks, plot_six_tasks),
    "skipthoughts": Protocol(_six_tasks("skipthoughts"), report_six_tasks, plot_six_tasks),
    "similarity": Protocol(_similarity, report_similarity),
    "namesake": Protocol(namesake, report_namesake),
}


def protocol(name: str) -> Protocol:
    """The entry of ``PROTOCOLS``; GridError for another name."""
    if name not in PROTOCOLS:
        raise GridError(f"--protocol {name}: no such protocol; choose one of {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]


# --------------------------------------------------------------------------------------------
# one cell: train a row at a seed, read it out under each protocol


def train_one(out: Path, config: str, overrides: list[str], row: str, seed: int) -> Path:
    """Train (or resume, or find finished) the run of ``row`` at ``seed`` in ``OUT/runs/<row>_s<seed>``."""
    from qt_hard.training.config import load_config

    run_dir = Path(out) / "runs" / f"{row}_s{seed}"
    obj = row_spec(row).changes
    over = [*overrides, f"out_dir={run_dir}", f"train.seed={seed}", f"objective.negatives={obj['negatives']}"]
    over.append(f"objective.options={json.dumps(obj['options'])}")
    cfg = load_config(config, over)
    if finished_run(cfg, "final/encoder.json"):
        return run_dir
    # Every run reads the same sentences and token ids: one shared cache (split and tokenize once).
    (Path(out) / "cache").mkdir(parents=True, exist_ok=True)
    link_shared_cache(run_dir, Path(out) / "cache")
    return train_run(cfg, finished="final/encoder.json")


def _shared_cores(args) -> list[str]:
    """Cells side by side share the CPUs: each trains on its share of them (at least one thread)
    unless ``--set`` names a thread count. (With the quick-start config, one thread and two trained
    the same weights bit for bit over 150 steps.)"""
    from qt_hard.workers import usable_cpus

    if args.workers <= 1 or any(s.startswith("train.num_threads=") for s in args.set):
        return []
    return [f"train.num_threads={max(1, usable_cpus() // args.workers)}"]


def run_cell(led, args, row: str, seed: int, protocols: list[str], data) -> list[dict]:
    """Train one (row, seed), then evaluate it under each protocol that has no record yet: the
    records (appended by the caller, :func:`qt_hard.experiments.runner.run_claimed`)."""
    import torch

    import qt_hard
    from qt_hard.evaluation.models import EmbeddingCache

    todo = [p for p in protocols if (row, seed, p) not in led.done()]
    if not todo:
        return []
    t0 = time.perf_counter()
    run_dir = train_one(Path(args.out), args.config, [*args.set, *_shared_cores(args)], row, seed)
    t1 = time.perf_counter()
    # Encode on the GPU where there is one (the classifiers' protocol is the same).
    enc_device = "cuda" if torch.cuda.is_available() else "cpu"
    enc = qt_hard.load_encoder(run_dir, device=enc_device)
    cache = EmbeddingCache(enc)  # one encoding for every protocol of this run
    records = []
    for name in todo:
        t2 = time.perf_counter()
        readout = protocol(name).evaluate(enc, args.kfold, data, cache=cache, run=run_dir)
        rec = {"row": row, "seed": seed, "protocol": name, "run": str(run_dir), **readout}
        rec.update(train_s=round(t1 - t0, 1), eval_s=round(time.perf_counter() - t2, 1), encode_device=enc_device)
        rec.update(solver_device=args.eval_device, config=args.config, overrides=args.set)
        records.append(rec)
    return records


# --------------------------------------------------------------------------------------------
# the six-task report


def _by_row(records: list[dict], protocol: str, field: str, tasks=TASKS, values=lambda r, field: r) -> dict:
    """row (in ``row_order``) -> seed -> ``values(record, field)`` (by default the record), for the
    records of ``protocol`` with every one of ``tasks``' ``field``."""
    by: dict = {}
    for r in records:
        if r.get("protocol") == protocol and all((r.get(field) or {}).get(t) is not None for t in tasks):
            by.setdefault(r["row"], {})[r["seed"]] = values(r, field)
    return {row: by[row] for row in sorted(by, key=row_order)}


def _stats(by: dict) -> dict:
    """row -> n, mean and spread (:func:`.report.mean_spread`) per column of its seeds' values
    (row -> seed -> a value per column), and the seeds."""
    stats = {}
    for row, runs in by.items():
        columns = len(next(iter(runs.values())))
        cells = [report.mean_spread(_column(runs, i).values()) for i in range(columns)]
        stats[row] = {"n": len(runs), "mean": [m for m, _ in cells], "std": [s for _, s in cells]}
        stats[row]["seeds"] = sorted(runs)
    return stats


def _column(runs: dict, i: int) -> dict:
    """seed -> the ``i``-th value of each seed's list."""
    return {seed: vals[i] for seed, vals in runs.items()}


def _mean_cells(s: dict) -> list[str]:
    """A row's ``mean ± spread`` per column of its :func:`_stats`, one decimal."""
    return [f"{m:.1f} ± {sd:.1f}" for m, sd in zip(s["mean"], s["std"])]


def summarize(records: list[dict], protocol: str, paper: dict, field: str = "acc") -> tuple[str, dict]:
    """The table of ``field`` ("acc": test accuracy; "devacc": SentEval's dev accuracy, the mean of the
    inner validation folds, for choosing among rows without the test folds): mean ± spread per task
    and of the six-task mean, the paper's rows, the differences to uniform paired by seed (the six-task
    mean's with its 95% t-interval), and each row's verdict on the six-task mean
    (:func:`.report.paired_verdict`). Returns the text and ``{"stats", "diffs"}``."""
    by = _by_row(records, protocol, field)
    cols = {row: {s: [r[field][t] for t in TASKS] for s, r in runs.items()} for row, runs in by.items()}
    avg = {row: {s: sum(r[field].values()) / len(TASKS) for s, r in runs.items()} for row, runs in by.items()}
    stats = _stats(cols)
    what = "test accuracy" if field == "acc" else "dev accuracy (SentEval's inner validation folds)"
    paper = paper if field == "acc" else {}
    body = []
    for row, s in stats.items():
        label = row_spec(row).label
        m, sd = report.mean_spread(avg[row].values())
        body.append([f"{label} (ours)", str(s["n"]), *_mean_cells(s), f"{m:.2f} ± {sd:.2f}"])
        if row in paper:
            p = [paper[row][t] for t in TASKS]
            body.append([f"{label} (paper)", "–", *(f"{x:.1f}" for x in p), f"{sum(p) / len(p):.1f}"])
    lines = [
        f"Protocol: {protocol}, {what}. Ours: mean ± sample std (ddof 1) over seeds (%); paper: "
        "Table 2 (BookCorpus, full-size QT, test).",
        "",
        *report.markdown_table(["Objective", "seeds", *TASKS, "mean"], body, "lr" + "r" * (len(TASKS) + 1)),
    ]
    diffs = {}
    if "uniform" in stats:
        difference_lines, diffs = _six_task_differences(cols, avg, paper)
        lines += difference_lines
        if field == "devacc":  # the split a choice reads
            rule = "SentEval dev six-task accuracy"
            choice = report.choose_on_dev(avg, lambda r: None if r == "uniform" else "uniform", "uniform", rule)
            lines += ["", choice.sentence()]
    if note := report.commits_note(r for runs in by.values() for r in runs.values()):
        lines += ["", note]
    return "\n".join(lines), {"stats": stats, "diffs": diffs}


def _six_task_differences(cols: dict, avg: dict, paper: dict) -> tuple[list[str], dict]:
    """Each row against uniform, paired by seed: the lines of the difference table (per task the mean
    paired difference, the paper's in brackets; the six-task mean's with its interval and verdict)
    and its verdict sentence, and per row the mean and spread of the paired differences per task."""
    diffs, body = {}, []
    for row, runs in cols.items():
        if row == "uniform":
            continue
        per_task = [report.paired_differences(_column(cols["uniform"], i), _column(runs, i)) for i in range(len(TASKS))]
        diffs[row] = {"mean": [sum(d) / len(d) for d in per_task], "std": [report.spread(d) for d in per_task]}
        pd = [paper[row][t] - paper["uniform"][t] for t in TASKS] if row in paper and "uniform" in paper else None
        cells = [
            f"{x:+.1f}" + (f" [{y:+.1f}]" if pd else "") for x, y in zip(diffs[row]["mean"], pd or [0] * len(TASKS))
        ]
        v = report.paired_verdict(avg["uniform"], avg[row])
        body.append([row_spec(row).label, *cells, v.cell(), v.verdict])
    return [
        "",
        "Difference to uniform (ours: mean over seeds of the differences paired by seed, paper in brackets; "
        "the six-task mean's with its 95% t-interval and verdict):",
        "",
        *report.markdown_table(["Objective", *TASKS, "mean", "verdict"], body, "l" + "r" * (len(TASKS) + 1) + "l"),
        "",
        report.verdict_sentence("uniform", avg["uniform"], {r: avg[r] for r in diffs}, "six-task mean"),
    ], diffs


# --------------------------------------------------------------------------------------------
# the similarity report

SIM_HEADS = (
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
)


def _similarity_values(r: dict, field: str) -> list[float]:
    """A record's ``field`` per task of ``SIM_TASKS`` and its similarity mean: the stored ``sim_mean``
    for Spearman, else (STS12-16 mean + STS-B cos + SICK-R cos) / 3 of ``field``."""
    vals = [float(r[field][t]) for t in SIM_TASKS]
    mean = r.get("sim_mean") if field == "spearman" else None
    if mean is None:
        mean = (statistics.mean(vals[:5]) + r[field]["STSBenchmark-cos"] + r[field]["SICKRelatedness-cos"]) / 3
    return [*vals, float(mean)]


def summarize_similarity(records: list[dict], field: str = "spearman") -> tuple[str, dict]:
    """The similarity table: per row mean ± spread over seeds of ``field`` x100 per task and of the
    similarity mean; then each row's difference to uniform paired by seed, * where its 95% t-interval
    excludes 0 (:func:`.report.paired_verdict`), and the verdict on the similarity mean: better,
    worse, level or not judged. Returns the text and ``{"stats", "diffs", "spread", "verdict"}``
    (lists in ``SIM_HEADS`` order)."""
    by = _by_row(records, "similarity", field, SIM_TASKS, _similarity_values)
    stats = _stats(by)
    lines = [
        f"Semantic similarity, {field.capitalize()} x100 (STS12-16: mean over each year's sets; cos: cosine on "
        "the test split; sup.: SentEval's regression, test). Mean ± sample std (ddof 1) over seeds; "
        f"{SIM_MEAN}: the mean of the STS12-16 mean, STS-B cos and SICK-R cos.",
        "",
        *report.markdown_table(
            ["Objective", "seeds", *SIM_HEADS],
            [[row_spec(row).label, str(s["n"]), *_mean_cells(s)] for row, s in stats.items()],
            "lr" + "r" * len(SIM_HEADS),
        ),
    ]
    diffs, verdict, spread = {}, {}, None
    if "uniform" in stats:
        spread = stats["uniform"]["std"]
        difference_lines, diffs, verdict = _similarity_differences(by)
        lines += difference_lines
    commits = [r for r in records if r.get("protocol") == "similarity" and r["row"] in by]
    if note := report.commits_note(commits):
        lines += ["", note]
    return "\n".join(lines), {"stats": stats, "diffs": diffs, "spread": spread, "verdict": verdict}


def _similarity_differences(by: dict) -> tuple[list[str], dict, dict]:
    """Each row against uniform, paired by seed: the lines of the difference table and its verdict
    sentence, the mean differences per row and the verdict on the similarity mean per row."""
    base = by["uniform"]
    diffs, verdict, body = {}, {}, []
    for row, runs in by.items():
        shared = sorted(set(runs) & set(base))
        if row == "uniform" or not shared:
            continue
        judged = [report.paired_verdict(_column(base, i), _column(runs, i)) for i in range(len(SIM_HEADS))]
        diffs[row] = [v.mean for v in judged]
        verdict[row] = judged[-1].verdict
        marks = ["*" if v.verdict in ("better", "worse") else "" for v in judged]
        cells = [f"{v.mean:+.2f}{m}" for v, m in zip(judged[:-1], marks)]
        body.append([row_spec(row).label, str(len(shared)), *cells, judged[-1].cell() + marks[-1], verdict[row]])
    lines = [
        "",
        "Difference to uniform, paired by seed (mean over the shared seeds of row - uniform); * where its 95% "
        f"t-interval excludes 0; the {SIM_MEAN}'s with that interval and its verdict:",
        "",
        *report.markdown_table(["Objective", "pairs", *SIM_HEADS, "verdict"], body, "lr" + "r" * len(SIM_HEADS) + "l"),
        "",
        report.verdict_sentence(
            "uniform",
            _column(base, len(SIM_HEADS) - 1),
            {k: _column(by[k], len(SIM_HEADS) - 1) for k in diffs},
            SIM_MEAN,
            label=lambda k: row_spec(k).label,
        ),
    ]
    return lines, diffs, verdict


CSV_FIELDS = [
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


def csv_text(records: list[dict]) -> str:
    """One row per finished (objective, seed, protocol) of a six-task protocol: accuracies, six-task
    mean, dev means, times."""

    def row(r):
        acc = [r["acc"][t] for t in TASKS]
        dev = [v for v in (r.get("devacc") or {}).values() if v is not None]
        return {
            **{k: r.get(k) for k in ("row", "seed", "protocol", "mrpc_f1", "train_s", "eval_s", "run")},
            **r["acc"],
            "mean": round(sum(acc) / len(acc), 2),
            "dev_mean": round(sum(dev) / len(dev), 2) if dev else "",
            "solver_device": r.get("solver_device", "cpu"),
        }

    six = [r for r in records if "acc" in r]
    return report.csv_text(
        CSV_FIELDS, [row(r) for r in sorted(six, key=lambda r: (r["protocol"], row_order(r["row"]), r["seed"]))]
    )


def plot(parts: dict, paper: dict, path: Path) -> None:
    """The per-task differences to uniform (bars: mean paired difference, error bars its sample
    std), the paper's differences as crosses."""
    if not parts["diffs"]:
        return
    diffs, marks = {}, {}
    for row, d in parts["diffs"].items():
        label = f"{row_spec(row).label} (ours)"
        diffs[label] = (d["mean"], d["std"])
        if row in paper and "uniform" in paper:
            marks[label] = [paper[row][t] - paper["uniform"][t] for t in TASKS]
    report.plot_differences(diffs, TASKS, "accuracy - uniform (points)", path, marks)


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
    tail = f"_s{seed}"
    runs = sorted((out / "runs").glob(f"*{tail}/metrics.csv"), key=lambda p: row_order(p.parent.name[: -len(tail)]))
    if not runs:
        return False
    plt = report.pyplot()
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5), sharex=True)
    for ax in axes.flat:
        ax.set_prop_cycle(color=plt.cm.tab20.colors)  # up to 20 rows, each its own colour
    for metrics in runs:
        rows = read_metrics(metrics.parent)
        steps = [int(r["step"]) for r in rows]
        for ax, (key, title) in zip(axes.flat, DIAG_PANELS):
            vals = [float(r[key]) if r.get(key) not in (None, "") else float("nan") for r in rows]
            ax.plot(steps, vals, lw=1, label=metrics.parent.name[: -len(tail)])
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


def _protocols_of(records: list[dict]) -> list[str]:
    return [name for name in PROTOCOLS if any(r.get("protocol") == name for r in records)]


def report_files(records: list[dict], paper: dict) -> dict[str, str]:
    """From the records alone: ``results.csv`` and the tables of every protocol they hold (in
    ``PROTOCOLS``' order)."""
    files = {"results.csv": csv_text(records)}
    for name in _protocols_of(records):
        files.update(protocol(name).report(records, name, paper))
    return files


def draw_figures(records: list[dict], paper: dict, out: Path) -> None:
    """Each protocol's figures and the weight diagnostics (``diagnostics.png``), drawn into ``out``."""
    for name in _protocols_of(records):
        if protocol(name).figures is not None:
            protocol(name).figures(records, name, paper, out)
    plot_diagnostics(out, out / "diagnostics.png")


# --------------------------------------------------------------------------------------------
# the contract: qt-hard grid run qt-table


class Table2(Experiment):
    """The rows x seeds of Table 2 at our scale, each cell trained once and read out under every
    ``--protocol`` (one record a protocol); see the module docstring."""

    name = "qt-table"
    help = "Table 2 of Robinson et al. (2021): Quick-Thoughts with uniform, debiased and hard negatives"
    key = KEY
    rows = tuple(ROWS)
    default_out = "runs/qt_table"
    table_names = ("results.csv",)
    paper: dict = {}

    def add_arguments(self, parser) -> None:
        parser.add_argument("--config", default="configs/qt_table.yaml", help="base training config")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
        parser.add_argument(
            "--protocol",
            default="senteval",
            help=f"{' | '.join(PROTOCOLS)}, or several comma-separated (each run evaluated under each)",
        )
        parser.add_argument("--eval-device", default="cpu", help="where the classifiers are solved: cpu or cuda")
        parser.add_argument("--kfold", type=int, default=10)
        parser.add_argument("--data", default=None, help="SentEval data folder (default $QT_HARD_DATA/senteval)")
        parser.add_argument("--paper", default=None, help="the paper's text, whose Table 2 rows join the table")

    def row(self, name: str) -> Row:
        return row_spec(name)

    def record_problem(self, record: dict) -> str | None:
        """A six-task record's accuracies must hold every task of Table 2 (the tables average them)."""
        acc = record.get("acc")
        if acc is None:
            return None
        missing = [t for t in TASKS if t not in acc] if isinstance(acc, dict) else list(TASKS)
        return f"the record's acc lacks the task(s) {', '.join(missing)}" if missing else None

    def check(self, args) -> None:
        from qt_hard.evaluation import logreg
        from qt_hard.training.config import load_config

        self.protocols = comma_list(args.protocol)
        if not self.protocols:
            raise GridError("--protocol: give at least one protocol")
        for p in self.protocols:
            protocol(p)
        cfg = load_config(args.config, list(args.set), check_pipeline=False)  # the file, its keys and values
        if "namesake" in self.protocols:
            held_out_range(cfg.data.exclude_books)
        if args.data and not (Path(args.data) / "MR").is_dir():
            raise GridError(f"--data {args.data}: no SentEval task folders in it (MR/ is missing)")
        logreg.check_device(args.eval_device, "--eval-device")

    def setup(self, args, out: Path) -> dict:
        # Finished runs are skipped by (row, seed, protocol): results of another budget in the same
        # OUT would be skipped as if they were this one's, so the ledger refuses to mix setups.
        return {"config": args.config, "overrides": sorted(args.set)}

    def cells(self, args, rows, seeds) -> list[Cell]:
        protocols = comma_list(args.protocol)
        return [Cell((row, seed), tuple((row, seed, p) for p in protocols)) for seed in seeds for row in rows]

    def prepare(self, args, out: Path, todo: list[Cell]) -> None:
        import os

        from qt_hard.evaluation import logreg

        logreg.DEFAULT_DEVICE = args.eval_device
        os.environ["QT_HARD_EVAL_DEVICE"] = args.eval_device  # the workers' solver device
        if args.workers > 1:  # split and tokenized once, here: the cells side by side only read OUT/cache
            from qt_hard.experiments.runner import prepare_shared_cache
            from qt_hard.training.config import load_config

            prepare_shared_cache(load_config(args.config, list(args.set)), out)

    def run(self, cell: Cell, ctx: Context) -> list[dict]:
        args, out, setup = ctx.args, ctx.out, ctx.setup
        from qt_hard.evaluation.senteval import default_senteval_dir

        led = self.ledger(out, self.ledger_name, setup)
        data = args.data or default_senteval_dir()
        return run_cell(led, args, *cell.claim, comma_list(args.protocol), data)

    def configure(self, args) -> None:
        import logging

        self.paper = paper_rows(Path(args.paper) if getattr(args, "paper", None) else None)
        if getattr(args, "paper", None) and not self.paper:
            logging.getLogger(__name__).info("note: the paper's Table 2 was not found; its rows are left out")

    def tables(self, records, setup, out: Path) -> dict[str, str]:
        return report_files(records, self.paper)

    def figures(self, args, out: Path, records, setup) -> None:
        draw_figures(records, self.paper, out)

    def progress(self, record: dict) -> str:
        return f"{record['row']} seed {record['seed']} under {record['protocol']}"


EXPERIMENTS = (Table2(),)
