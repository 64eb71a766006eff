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

Resumable: every finished (objective, seed, protocol) is a line of ``OUT/results.jsonl``, appended in
one write, and is skipped on the next call; an interrupted training resumes from its checkpoint.
The summary (``OUT/table.md``, ``OUT/table_skipthoughts.md`` for that protocol, printed;
``OUT/results.csv``, one row per run of either protocol) gives mean +- std over seeds per task, the six-task mean, the
difference to uniform per task, and the paper's rows (read from the paper's text when it is found
under ``$QT_HARD_DATA/../papers``); ``OUT/differences.png`` (``differences_skipthoughts.png``) plots the
per-task differences to uniform.

    python scripts/qt_table.py --out runs/qt_table --seeds 0,1,2 --config configs/qt_table.yaml
    python scripts/qt_table.py --out runs/qt_table --summary-only     # the table of what is there
    python scripts/qt_table.py --out runs/qt_gpu --protocol senteval,skipthoughts --eval-device cuda ...

``--protocol`` takes a comma-separated list: each trained run is then evaluated under every protocol
before the next run trains (one encoding, two classifier protocols). ``--eval-device`` is where the
classifiers are solved (``qt_hard.evaluation.logreg``'s device: ``cpu``, or ``cuda`` for the same
solver on a GPU); the encoder runs on the GPU whenever there is one. Each record says which.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path

ROWS = {
    "uniform": ("QT (beta=0, tau+=0)", {"negatives": "uniform", "options": {}}),
    "debiased": ("Debiased (tau+=0.01)", {"negatives": "debiased", "options": {"tau_plus": 0.01}}),
    "hard1": ("Hard (beta=1, tau+=0)", {"negatives": "hard", "options": {"beta": 1.0, "tau_plus": 0.0, "clip": True}}),
    "hard2": ("Hard (beta=2, tau+=0)", {"negatives": "hard", "options": {"beta": 2.0, "tau_plus": 0.0, "clip": True}}),
}
TASKS = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")
# Lines of the paper's Table 2, matched by their opening words: row key -> regex.
PAPER_ROWS = {"uniform": r"^QT \(", "debiased": r"^Debiased \(", "hard1": r"^Hard \(\s*\$\\beta = 1",
              "hard2": r"^Hard \(\s*\$\\beta = 2"}


def append_line(path: Path, record: dict) -> None:
    """One JSON line in a single O_APPEND write, so that a crash never leaves half a record."""
    data = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_results(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn last line from a killed writer on a filesystem without atomic append
    return out


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


def default_paper() -> Path | None:
    try:
        from qt_hard.paths import data_root

        root = data_root(required=False)
    except Exception:
        return None
    if root is None:
        return None
    hits = sorted((Path(root).parent / "papers").glob("000_*.txt"))
    return hits[0] if hits else None


def evaluator(protocol: str):
    """run(encoder, tasks, kfold, data, cache=None) -> {task: {"acc": ..}} under ``protocol`` (SentEval's
    or the skip-thoughts evaluators', ``qt_hard.evaluation.senteval.PROTOCOLS``); SystemExit for another
    name. ``cache``: an ``EmbeddingCache`` of the encoder, shared by the protocols of one run."""
    from qt_hard.evaluation.senteval import PROTOCOLS, run_senteval

    if protocol not in PROTOCOLS:
        raise SystemExit(f"--protocol {protocol}: no such protocol; choose one of {', '.join(PROTOCOLS)}")
    return lambda enc, tasks, kfold, data, cache=None: run_senteval(enc, tasks, data, kfold=kfold,
                                                                    protocol=protocol, cache=cache)


def train_one(args, key: str, seed: int) -> Path:
    from qt_hard.training.config import load_config
    from qt_hard.training.loop import list_checkpoints, train

    run_dir = Path(args.out) / "runs" / f"{key}_s{seed}"
    final = run_dir / "final" / "encoder.json"
    if final.is_file():
        return run_dir
    obj = ROWS[key][1]
    over = list(args.set) + [f"out_dir={run_dir}", f"train.seed={seed}", f"objective.negatives={obj['negatives']}",
                             f"objective.options={json.dumps(obj['options'])}"]
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


def summarize(records: list[dict], protocol: str, paper: dict) -> tuple[str, dict]:
    import numpy as np

    by = {}
    for r in records:
        if r.get("protocol") == protocol:
            by.setdefault(r["row"], {})[r["seed"]] = r
    stats = {}
    for key in ROWS:
        runs = list(by.get(key, {}).values())
        if not runs:
            continue
        acc = np.array([[r["acc"][t] for t in TASKS] for r in runs])
        stats[key] = {"n": len(runs), "mean": acc.mean(0), "std": acc.std(0, ddof=1) if len(runs) > 1 else np.zeros(len(TASKS)),
                      "avg": acc.mean(1), "seeds": sorted(by[key])}
    head = "| Objective | seeds | " + " | ".join(TASKS) + " | mean |"
    lines = [f"Protocol: {protocol}. Ours: mean ± std over seeds (accuracy, %); paper: Table 2 (BookCorpus, "
             "full-size QT).", "", head, "|---|---:|" + "---:|" * (len(TASKS) + 1)]
    for key, s in stats.items():
        cells = [f"{m:.1f} ± {sd:.1f}" for m, sd in zip(s["mean"], s["std"])]
        avg = s["avg"]
        avg_sd = avg.std(ddof=1) if len(avg) > 1 else 0.0
        lines.append(f"| {ROWS[key][0]} (ours) | {s['n']} | " + " | ".join(cells) + f" | {avg.mean():.1f} ± {avg_sd:.1f} |")
        if key in paper:
            p = [paper[key][t] for t in TASKS]
            lines.append(f"| {ROWS[key][0]} (paper) | – | " + " | ".join(f"{x:.1f}" for x in p)
                         + f" | {sum(p) / len(p):.1f} |")
    diffs = {}
    if "uniform" in stats:
        lines += ["", "Difference to uniform (ours: mean over seeds; paper in brackets):", "",
                  "| Objective | " + " | ".join(TASKS) + " | mean |", "|---|" + "---:|" * (len(TASKS) + 1)]
        base = stats["uniform"]
        for key, s in stats.items():
            if key == "uniform":
                continue
            d = s["mean"] - base["mean"]
            diffs[key] = d
            pd = ([paper[key][t] - paper["uniform"][t] for t in TASKS]
                  if key in paper and "uniform" in paper else None)
            cells = [f"{x:+.1f}" + (f" [{y:+.1f}]" if pd else "") for x, y in zip(d, pd or [0] * len(TASKS))]
            lines.append(f"| {ROWS[key][0]} | " + " | ".join(cells) + f" | {d.mean():+.2f} |")
        spread = float(np.mean(base["std"]))
        better = [k for k, d in diffs.items() if d.mean() > spread]
        if base["n"] < 2:
            lines += ["", "Uniform has one seed so far: no seed spread to judge the differences by."]
        else:
            lines += ["", (f"Hard or debiased negatives beat uniform on the six-task mean by more than the mean "
                           f"seed spread ({spread:.2f}) here: {', '.join(better)}." if better else
                           f"No objective beats uniform on the six-task mean by more than the mean seed spread "
                           f"({spread:.2f}) here.")]
    return "\n".join(lines), {"stats": stats, "diffs": diffs}


def write_csv(records: list[dict], path: Path) -> None:
    """One row per finished (objective, seed, protocol): accuracies, six-task mean, dev means, times."""
    import csv

    fields = ["row", "seed", "protocol", *TASKS, "mean", "mrpc_f1", "dev_mean", "train_s", "eval_s", "solver_device", "run"]
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fields)
        w.writeheader()
        for r in sorted(records, key=lambda r: (r["protocol"], list(ROWS).index(r["row"]), r["seed"])):
            acc = [r["acc"][t] for t in TASKS]
            dev = [v for v in (r.get("devacc") or {}).values() if v is not None]
            w.writerow({"row": r["row"], "seed": r["seed"], "protocol": r["protocol"], **r["acc"],
                        "mean": round(sum(acc) / len(acc), 2), "mrpc_f1": r.get("mrpc_f1"),
                        "dev_mean": round(sum(dev) / len(dev), 2) if dev else "",
                        "train_s": r.get("train_s"), "eval_s": r.get("eval_s"),
                        "solver_device": r.get("solver_device", "cpu"), "run": r.get("run")})
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
        ax.bar(x + i * w, d, w, yerr=err, capsize=2, label=f"{ROWS[key][0]} (ours)")
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/qt_table")
    ap.add_argument("--config", default="configs/qt_table.yaml", help="base training config")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"objectives among {', '.join(ROWS)}")
    ap.add_argument("--protocol", default="senteval",
                    help="senteval | skipthoughts, or both comma-separated (each run evaluated under each)")
    ap.add_argument("--eval-device", default="cpu",
                    help="where the classifiers are solved: cpu (default) or cuda")
    ap.add_argument("--kfold", type=int, default=10)
    ap.add_argument("--data", default=None, help="SentEval data folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument("--paper", default=None, help="the paper's text (default $QT_HARD_DATA/../papers/000_*.txt)")
    ap.add_argument("--summary-only", action="store_true", help="print the table of the finished runs only")
    args = ap.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    seeds = [int(s) for s in args.seeds.split(",") if s != ""]
    rows = [r for r in args.rows.split(",") if r]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        raise SystemExit(f"unknown rows {unknown}; choose among {', '.join(ROWS)}")
    protocols = [p for p in args.protocol.split(",") if p]
    if not protocols:
        raise SystemExit("--protocol: give at least one protocol")
    if not args.summary_only:
        run_evals = {p: evaluator(p) for p in protocols}
        import torch

        from qt_hard.evaluation import logreg
        from qt_hard.evaluation.models import EmbeddingCache
        from qt_hard.evaluation.senteval import default_senteval_dir

        try:
            logreg.check_device(args.eval_device, "--eval-device")
        except ValueError as err:
            raise SystemExit(str(err)) from None
        logreg.DEFAULT_DEVICE = args.eval_device
        # Finished runs are skipped by (row, seed, protocol): results of another budget in the same
        # OUT would be skipped as if they were this one's, so refuse to mix them.
        other = {(r.get("config"), tuple(sorted(r.get("overrides") or []))) for r in read_results(results)}
        other.discard((args.config, tuple(sorted(args.set))))
        if other:
            cfg, sets = sorted(other, key=str)[0]
            raise SystemExit(f"{results} holds runs of another training setup ({cfg} with {list(sets)}); "
                             f"give this one (--config {args.config} {' '.join('--set ' + x for x in args.set)}) "
                             "its own --out")
        data = args.data or default_senteval_dir()
        import qt_hard

        for seed in seeds:  # seeds outermost: an early stop still leaves every row with a seed
            for key in rows:
                done = {(r["row"], r["seed"], r["protocol"]) for r in read_results(results)}
                todo = [p for p in protocols if (key, seed, p) not in done]
                if not todo:
                    continue
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
                    rec = {"row": key, "seed": seed, "protocol": protocol, "run": str(run_dir),
                           "acc": {t: res[t]["acc"] for t in TASKS}, "mrpc_f1": res["MRPC"].get("f1"),
                           "devacc": {t: res[t].get("devacc") for t in TASKS},
                           "train_s": round(t1 - t0, 1), "eval_s": round(time.perf_counter() - t2, 1),
                           "encode_device": enc_device, "solver_device": args.eval_device,
                           "config": args.config, "overrides": args.set}
                    append_line(results, rec)
                    print(json.dumps(rec), flush=True)
    paper = paper_rows(Path(args.paper) if args.paper else default_paper())
    if not paper:
        print("note: the paper's Table 2 was not found; its rows are left out", file=sys.stderr)
    records = read_results(results)
    write_csv(records, out / "results.csv")
    for protocol in protocols:
        table, parts = summarize(records, protocol, paper)
        # One table and plot per protocol (SentEval's keeps the plain names).
        suffix = "" if protocol == "senteval" else f"_{protocol}"
        table_path, plot_path = out / f"table{suffix}.md", out / f"differences{suffix}.png"
        table_path.write_text(table + "\n")
        plot(parts["diffs"], parts["stats"], paper, plot_path)
        print(table)
        n = sum(s["n"] for s in parts["stats"].values())
        print(f"{n} runs under {protocol} in {results}; table {table_path}, plot {plot_path}")


if __name__ == "__main__":
    main()
