"""Benchmark: ``qt-hard eval senteval``'s fast solver against the one-LogisticRegression-per-fit
reference, per task and width, on the same embeddings and folds.

Embeddings (``--features``), encoded once per task at the largest width, each width the first
``d`` coordinates:

* ``hashbow``: a fixed random bag of words (``senteval_reference.py``'s ``HashBagOfWords``:
  the mean of md5-seeded Gaussian word vectors); the first ``d`` coordinates are that same encoder
  at width ``d``. Full rank, so the wide problems are really wide; but rows that share no word
  are nearly orthogonal, which at 2,400-d makes MPQA's 100 fold problems (phrases of one to three
  words) hard to precondition together.
* ``bigru``: Gaussian random projections of a fixed model's features (``encoder_projections``
  there): an untrained S2V-sized bidirectional Quick-Thoughts pair, 4,800-d, full rank at every
  width up to 4,800, scaled to the bag of words' mean squared norm. Correlated rows, as sentence
  embeddings have. ``--feature-cache DIR`` keeps each task's 4,800-d table (``.npy``) so that
  later widths do not encode again.

Reference modes (``--reference``):

* ``full``: the whole protocol with scikit-learn (``senteval_reference.py``'s loop),
  timed, with its accuracies; ``--max-iter 100`` is SentEval exactly, ``0`` runs lbfgs to
  convergence (the accuracy check).
* ``subset``: times a fixed subset of the reference's fits on exactly the problems the protocol
  solves (every C on the first inner fold of the first outer fold for MR/CR/SUBJ/MPQA; every C
  on the first fold for TREC/MRPC) and extrapolates: ``sum_C t_C * (number of folds per C) +
  (number of refits) * mean_C t_C``. Rows say ``"reference_extrapolated": true``.
* ``none``: fast path only.

Both sides run with ``--threads`` threads (torch for the fast path; BLAS and OpenMP for
scikit-learn, through ``threadpoolctl``): with its default of a thread per core, scikit-learn's
OpenMP loss loops spent 4-60x the CPU time of one thread on the loaded two-core machine.
``--check`` (with ``subset``) also fits the subset's problems with scikit-learn run to
convergence and with the fast solver alone, and compares their accuracies on the held-out rows.

``--retime-fast TAG``, after a change to the fast solver: rows already in ``--output`` get the
fast side timed again (and, with ``--check``, the fast side of the check, compared with the
earlier row's converged scikit-learn accuracies), their reference figures copied from the earlier
row (the reference code and problems did not change); such rows say
``"reference_from_earlier_row": true``. The last row of a (width, task) is the one summarized.

One JSON row per (width, task) is appended to ``--output`` (resumable: rows already there are
skipped); tasks run in parallel processes with ``--jobs`` (one torch thread each). Printed last:
a summary JSON (six-task times and speedups per width, each task's classifier-time exponent
between the two middle widths) and a one-line headline.

    python scripts/bench_eval.py --widths 256,600 --tasks CR,TREC \
        --reference subset --output /tmp/bench_eval.jsonl
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))  # _bench, when this file is loaded by its path

from qt_hard.evaluation import protocol  # noqa: E402
from qt_hard.evaluation.senteval import default_senteval_dir, evaluate_task, parse_tasks  # noqa: E402
from qt_hard.evaluation.datasets import BinaryTask, TrecTask, load_task  # noqa: E402
import _bench  # noqa: E402


def _reference_module():
    spec = importlib.util.spec_from_file_location(
        "senteval_reference", ROOT / "tests" / "reference" / "senteval_reference.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# The fixed model's width for projected features: encoded once at it, any width a prefix.
FULL_WIDTH = {"bigru": 4800}


def _encode(kind: str, texts: list[str], width: int) -> np.ndarray:
    """(len(texts), width) embeddings of distinct texts at the largest width (see ``--features``)."""
    ref = _reference_module()
    if kind == "hashbow":
        return ref.HashBagOfWords(width).encode(texts)
    return ref.encoder_projections(texts, width, encoder=kind)


def task_features(kind: str, task, width: int, feature_cache=None) -> dict[str, np.ndarray]:
    """Text -> float32 encoding (at least ``width`` wide) of every distinct text of ``task``: read
    from ``feature_cache/<kind>_<task>.npy`` when that table is wide enough, else encoded (at
    ``FULL_WIDTH`` for projected features) and, with ``feature_cache``, saved there atomically."""
    texts = list(dict.fromkeys(task.texts()))
    cached = Path(feature_cache) / f"{kind}_{task.name}.npy" if feature_cache else None
    if cached is not None and cached.exists() and np.load(cached, mmap_mode="r").shape[1] >= width:
        E = np.load(cached)
    else:
        E = _encode(kind, texts, FULL_WIDTH.get(kind, width)).astype(np.float32)
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            np.save(cached.with_suffix(".tmp.npy"), E)
            os.replace(cached.with_suffix(".tmp.npy"), cached)  # atomic: no half-written table
    return dict(zip(texts, E))


class PrefixCache:
    """EmbeddingCache stand-in: the first ``width`` coordinates of a fixed encoding (float64)."""

    def __init__(self, table: dict[str, np.ndarray], width: int):
        self.table, self.width, self.seconds = table, width, 0.0

    def embed(self, texts):
        return np.stack([self.table[t][: self.width] for t in texts]).astype(np.float64)


def _subset_problems(task, cache, kfold, seed):
    """The stated subset of the reference's problems: (X, y, train rows, held-out rows, regs,
    fits per C in the whole protocol, refits, classes). MR/CR/SUBJ/MPQA: the first inner fold of
    the first outer fold (SentEval's splits); TREC/MRPC: the first of the k folds on train."""
    if isinstance(task, BinaryTask):
        X, y = cache.embed(task.texts()), task.labels
        outer = protocol.StratifiedKFold(n_splits=kfold, shuffle=True, random_state=protocol.INNER_SPLIT_SEED)
        tr, _ = next(iter(outer.split(X, y)))
        itr, ite = next(iter(outer.split(X[tr], y[tr])))
        return X, y, tr[itr], tr[ite], protocol.INNER_REGS, kfold * kfold, kfold, 2
    if isinstance(task, TrecTask):
        X, y = cache.embed([" ".join(w) or "." for w in task.train]), task.train_labels
        K = 6
    else:
        A = cache.embed([" ".join(w) or "." for w in task.train_a])
        B = cache.embed([" ".join(w) or "." for w in task.train_b])
        X, y = np.c_[np.abs(A - B), A * B], task.train_labels
        K = 2
    folds = protocol.StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed)
    rows, held = next(iter(folds.split(X, y)))
    return X, y, rows, held, protocol.KFOLD_REGS, kfold, 1, K


def _subset_reference(problems, seed, max_iter):
    """Time the subset's reference fits (one per C) and extrapolate to the protocol:
    ``sum_C t_C * (fits per C) + refits * mean_C t_C``. Returns ([wall, CPU seconds], number of
    fits timed, held-out accuracies per C in percent)."""
    X, y, rows, held, regs, per_c, refits, _ = problems
    wall, cpu, acc = [], [], []
    for C in regs:
        t0, c0 = time.perf_counter(), time.process_time()
        clf = protocol.reference_fit(X[rows], y[rows], C, seed, max_iter=max_iter)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        acc.append(100 * float(np.mean(clf.predict(X[held]) == y[held])))
    return [sum(t) * per_c + refits * float(np.mean(t)) for t in (wall, cpu)], len(regs), acc


def _fast_subset_acc(problems):
    """The fast solver alone on the subset's problems: held-out accuracies (percent) per C."""
    from qt_hard.evaluation.logreg import BatchedLogReg, predict_logreg

    X, y, rows, held, regs, _, _, K = problems
    model = BatchedLogReg(X[rows], y[rows], K)
    out = []
    for C in regs:
        W = model.fit(np.ones((len(rows), 1)), C, tol=protocol.FAST_TOL)
        out.append(100 * float(np.mean(predict_logreg(model, W, X[held])[:, 0] == y[held])))
    return out


def check_at(problems, model, C: float, seed: int):
    """Held-out predictions at ``C`` on the subset's problems of the fast solver (``model``, a
    ``BatchedLogReg`` on the subset's training rows) and of scikit-learn run to convergence (lbfgs,
    tol 1e-8, up to 10,000 iterations) on the same rows, with the CPU seconds of each:
    ``(fast, converged, fast_cpu, lbfgs_cpu)``."""
    from qt_hard.evaluation.logreg import predict_logreg

    X, y, rows, held = problems[:4]
    t = time.process_time()
    W = model.fit(np.ones((len(rows), 1)), C, tol=protocol.FAST_TOL)
    fast = predict_logreg(model, W, X[held])[:, 0]
    fast_cpu = time.process_time() - t
    t = time.process_time()
    conv = protocol.reference_fit(X[rows], y[rows], C, seed, max_iter=None).predict(X[held])
    return fast, conv, fast_cpu, time.process_time() - t


def _subset_check(problems, seed, acc_reference):
    """Accuracy check on the subset's problems: the fast solver against scikit-learn run to
    convergence on the same rows and C (``check_at``), scored on the held-out rows;
    ``acc_reference`` are the timed reference fits' (``--max-iter``). Returns a dict of per-C
    accuracies (percent) and the largest differences."""
    from qt_hard.evaluation.logreg import BatchedLogReg

    X, y, rows, held, regs, _, _, K = problems
    fast, conv, agree = [], [], []
    model = BatchedLogReg(X[rows], y[rows], K)
    for C in regs:
        pf, pc, _, _ = check_at(problems, model, C, seed)
        fast.append(100 * float(np.mean(pf == y[held])))
        conv.append(100 * float(np.mean(pc == y[held])))
        agree.append(100 * float(np.mean(pf == pc)))
    return _check_record(list(regs), fast, conv, acc_reference, prediction_agreement_pct=agree)


def _check_record(regs, fast, conv, ref, **extra) -> dict:
    """The accuracy check's record: per-C accuracies (percent) of the fast solver, of scikit-learn run
    to convergence and of the timed reference fits, and the largest differences to the fast ones."""
    return {
        "C": regs,
        "acc_fast": fast,
        "acc_converged": conv,
        "acc_reference": ref,
        **extra,
        "max_abs_diff_converged": round(max(abs(a - b) for a, b in zip(fast, conv)), 3),
        "max_abs_diff_reference": round(max(abs(a - b) for a, b in zip(fast, ref)), 3),
    }


def _earlier_rows(out: Path, retime_fast: str | None) -> tuple[set, dict]:
    """(keys done, the last row of each key) of the output so far: a key (width, task, reference
    mode, feature kind) is done when its row is there (with ``--retime-fast``, a row of that tag)."""
    done, earlier = set(), {}
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            key = (r["width"], r["task"], r["reference_mode"], _kind(r))
            earlier[key] = r  # the last row of a key is the current one
            if not retime_fast or r.get("retime_tag") == retime_fast:
                done.add(key)
    return done, earlier


def _fast_side(task, cache, args) -> tuple[dict, float, dict]:
    """The fast solver on the whole protocol: its result, its CPU seconds and the Newton and CG
    steps it took (counted by wrapping ``BatchedLogReg.fit`` for the call)."""
    from qt_hard.evaluation import logreg

    stats = {"n_newton": 0, "n_cg": 0, "n_gram": 0}
    fit = logreg.BatchedLogReg.fit

    def counting_fit(self, *a, fit=fit, stats=stats, **kw):
        W = fit(self, *a, **kw)
        stats["n_newton"] += self.n_newton
        stats["n_cg"] += self.n_cg
        return W

    logreg.BatchedLogReg.fit = counting_fit
    cpu = time.process_time()
    try:
        fast = evaluate_task(task, cache, kfold=args.kfold, seed=args.seed, fast=True)
    finally:
        logreg.BatchedLogReg.fit = fit
    return fast, time.process_time() - cpu, stats


# The reference's figures a re-timed row copies from the earlier row of its key.
REFERENCE_FIELDS = (
    "reference_seconds",
    "reference_cpu_seconds",
    "reference_fits_timed",
    "reference_extrapolated",
    "reference_acc",
    "reference_f1",
    "reference_chosen_C",
    "acc_difference",
)


def _reference_from_earlier(row: dict, old: dict, fast: dict, task, cache, args) -> None:
    """The reference (unchanged code, unchanged problems) is not timed again: its figures are the
    earlier row's, said so in the row; the fast side of the check is redone and compared with the
    earlier converged scikit-learn accuracies."""
    for k in REFERENCE_FIELDS:
        if k in old:
            row[k] = old[k]
    row["reference_from_earlier_row"] = True
    if "acc_difference" in old and "reference_acc" in old:
        row["acc_difference"] = round(fast["acc"] - old["reference_acc"], 2)
    if "check" in old:
        acc = _fast_subset_acc(_subset_problems(task, cache, args.kfold, args.seed))
        conv, ref = old["check"]["acc_converged"], old["check"]["acc_reference"]
        row["check"] = _check_record(old["check"]["C"], acc, conv, ref, converged_from_earlier_row=True)


def _reference_side(row: dict, fast: dict, task, cache, args, max_iter) -> None:
    """The reference of ``--reference`` (``full``: the whole protocol; ``subset``: the subset's fits,
    extrapolated, and with ``--check`` the accuracy check) into ``row``; nothing for ``none``."""
    if args.reference == "full":
        cpu = time.process_time()
        ref = evaluate_task(task, cache, kfold=args.kfold, seed=args.seed, fast=False, max_iter=max_iter)
        row.update(
            reference_seconds=ref["classify_seconds"],
            reference_cpu_seconds=round(time.process_time() - cpu, 2),
            reference_acc=ref["acc"],
            reference_f1=ref.get("f1"),
            reference_chosen_C=ref["chosen_C"],
            reference_extrapolated=False,
            acc_difference=round(fast["acc"] - ref["acc"], 2),
        )
    elif args.reference == "subset":
        problems = _subset_problems(task, cache, args.kfold, args.seed)
        (secs, cpu), nfits, acc = _subset_reference(problems, args.seed, max_iter)
        row.update(
            reference_seconds=round(secs, 2),
            reference_cpu_seconds=round(cpu, 2),
            reference_fits_timed=nfits,
            reference_extrapolated=True,
        )
        if args.check:
            c0 = time.process_time()
            row["check"] = _subset_check(problems, args.seed, acc)
            row["check"]["cpu_seconds"] = round(time.process_time() - c0, 2)


def width_row(name: str, task, table, w: int, args, encode_s: float, old: dict | None) -> dict:
    """The row of one (width, task): the fast side, then the reference (measured, or with
    ``--retime-fast`` copied from ``old``, the earlier row of the key), and the speedups."""
    max_iter = None if args.max_iter == 0 else args.max_iter
    cache = PrefixCache(table, w)
    fast, fast_cpu, stats = _fast_side(task, cache, args)
    row = {
        "task": name,
        "width": w,
        "features": f"{args.features}:{w}",
        "threads": args.threads,
        "encode_seconds_max_width": round(encode_s, 2),
        "fast_seconds": fast["classify_seconds"],
        "fast_cpu_seconds": round(fast_cpu, 2),
        "fast_acc": fast["acc"],
        "fast_f1": fast.get("f1"),
        "fast_chosen_C": fast["chosen_C"],
        "newton_steps": stats["n_newton"],
        "cg_steps": stats["n_cg"],
        "reference_mode": args.reference,
        "reference_max_iter": max_iter or "converged",
    }
    if args.retime_fast:
        row["retime_tag"] = args.retime_fast
    if old is not None and "reference_seconds" in old:
        _reference_from_earlier(row, old, fast, task, cache, args)
    else:
        _reference_side(row, fast, task, cache, args, max_iter)
    if "reference_seconds" in row:
        row["speedup"] = round(row["reference_seconds"] / max(row["fast_seconds"], 1e-9), 2)
        row["cpu_speedup"] = round(row["reference_cpu_seconds"] / max(row["fast_cpu_seconds"], 1e-9), 2)
    return row


def run_task(name: str, widths: list[int], args) -> list[dict]:
    """All widths of one task (one process); appends rows to the task's part of the output."""
    _bench.pin_threads(args.threads, evaluation=True)
    out = Path(args.output)
    done, earlier = _earlier_rows(out, args.retime_fast)
    todo = [w for w in widths if (w, name, args.reference, args.features) not in done]
    if not todo:
        return []
    task = load_task(name, args.data)
    t0 = time.perf_counter()
    table = task_features(args.features, task, max(widths), args.feature_cache)
    encode_s = time.perf_counter() - t0
    rows = []
    for w in todo:
        old = earlier.get((w, name, args.reference, args.features)) if args.retime_fast else None
        row = width_row(name, task, table, w, args, encode_s, old)
        _bench.emit([row], out)  # one short line per append: safe across the task processes
        rows.append(row)
    return rows


def _kind(row: dict) -> str:
    """A row's feature kind ("hashbow:600" -> "hashbow")."""
    return row.get("features", "hashbow").split(":")[0]


def summarize(rows: list[dict], widths: list[int], tasks: list[str]) -> dict:
    by = {(r["width"], r["task"]): r for r in rows}
    summary = {"widths": {}, "exponents": {}}
    for w in widths:
        rs = [by[(w, t)] for t in tasks if (w, t) in by]
        if len(rs) < len(tasks):
            continue
        s = {
            "fast_seconds": round(sum(r["fast_seconds"] for r in rs), 2),
            "fast_cpu_seconds": round(sum(r["fast_cpu_seconds"] for r in rs), 2),
        }
        if all("reference_seconds" in r for r in rs):
            s["reference_seconds"] = round(sum(r["reference_seconds"] for r in rs), 2)
            s["reference_cpu_seconds"] = round(sum(r["reference_cpu_seconds"] for r in rs), 2)
            s["speedup"] = round(s["reference_seconds"] / max(s["fast_seconds"], 1e-9), 2)
            s["cpu_speedup"] = round(s["reference_cpu_seconds"] / max(s["fast_cpu_seconds"], 1e-9), 2)
            s["reference_extrapolated"] = any(r.get("reference_extrapolated") for r in rs)
        diffs = [abs(r["acc_difference"]) for r in rs if "acc_difference" in r]
        if diffs:
            s["max_abs_acc_difference"] = max(diffs)
        checks = [r["check"] for r in rs if "check" in r]
        if len(checks) == len(rs):
            s["check_max_abs_diff_converged"] = max(c["max_abs_diff_converged"] for c in checks)
            s["check_max_abs_diff_reference"] = max(c["max_abs_diff_reference"] for c in checks)
        summary["widths"][w] = s
    mid = [w for w in widths if w in (600, 2400)] or widths[:2]
    if len(mid) == 2:
        a, b = mid
        for t in tasks:
            if (a, t) in by and (b, t) in by:
                # CPU seconds: wall time on the shared machine moves with the other users' load.
                ratio = by[(b, t)]["fast_cpu_seconds"] / max(by[(a, t)]["fast_cpu_seconds"], 1e-9)
                summary["exponents"][t] = round(math.log(ratio) / math.log(b / a), 2)
        summary["exponent_widths"] = [a, b]
    return summary


def markdown_table(rows: list[dict], widths: list[int], tasks: list[str]) -> str:
    """Per width: each task's fast / reference CPU seconds and ratio, the six-task sums, and the
    accuracy check's largest held-out difference against converged scikit-learn."""
    by = {(r["width"], r["task"]): r for r in rows}
    lines = [
        "| width | " + " | ".join(tasks) + " | all tasks | check: max abs diff (points) |",
        "|---|" + "---|" * (len(tasks) + 2),
    ]
    for w in widths:
        cells, fast, ref, diffs = [], 0.0, 0.0, []
        for t in tasks:
            r = by.get((w, t))
            if r is None or "reference_cpu_seconds" not in r:
                cells.append("-")
                continue
            fast += r["fast_cpu_seconds"]
            ref += r["reference_cpu_seconds"]
            cells.append(f"{r['fast_cpu_seconds']:.0f} / {r['reference_cpu_seconds']:.0f} ({r['cpu_speedup']:.1f}x)")
            if "check" in r:
                diffs.append(r["check"]["max_abs_diff_converged"])
        total = f"{fast:.0f} / {ref:.0f} ({ref / max(fast, 1e-9):.1f}x)" if "-" not in cells else "-"
        check = f"{max(diffs):.2f}" if len(diffs) == len(tasks) else "-"
        lines.append(f"| {w} | " + " | ".join(cells) + f" | {total} | {check} |")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="256,600,2400,4800")
    ap.add_argument("--tasks", default="MR,CR,SUBJ,MPQA,TREC,MRPC")
    ap.add_argument("--reference", choices=("full", "subset", "none"), default="subset")
    ap.add_argument("--max-iter", type=int, default=100, help="reference lbfgs cap: 100 as SentEval, 0 to convergence")
    ap.add_argument(
        "--check",
        action="store_true",
        help="with --reference subset: also fit the subset's problems with scikit-learn "
        "run to convergence and compare held-out accuracies with the fast solver",
    )
    ap.add_argument(
        "--features",
        choices=("hashbow", "bigru"),
        default="hashbow",
        help="hashbow: the fixed random bag of words; bigru: random projections of an "
        "untrained S2V-sized bidirectional Quick-Thoughts pair's 4,800-d features",
    )
    ap.add_argument("--feature-cache", default=None, help="folder for each task's encoded table (reused by later runs)")
    ap.add_argument(
        "--retime-fast",
        default=None,
        metavar="TAG",
        help="re-time the fast solver (after a change to it) for rows already in the output, "
        "keeping their reference figures and converged-check accuracies (the reference "
        "code did not change; rows say reference_from_earlier_row); rows missing "
        "altogether are measured in full. TAG marks the new rows, so a rerun with the "
        "same TAG resumes",
    )
    ap.add_argument("--kfold", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1111)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per task process")
    ap.add_argument("--jobs", type=int, default=1, help="tasks run in parallel processes")
    ap.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument("--output", default="outputs/bench_eval.jsonl")
    return ap


def headline(summary: dict) -> str:
    """The one-line headline: per width the six-task times, speedups and accuracy differences, then
    each task's classifier-time exponent."""
    head = []
    for w, s in summary["widths"].items():
        part = f"{w}-d: fast {s['fast_seconds']:.0f}s"
        if "speedup" in s:
            est = " (extrapolated)" if s["reference_extrapolated"] else ""
            part += (
                f" vs reference {s['reference_seconds']:.0f}s{est} = {s['speedup']:.1f}x"
                f" (CPU time {s['cpu_speedup']:.1f}x)"
            )
        if "max_abs_acc_difference" in s:
            part += f", max |acc diff| {s['max_abs_acc_difference']:.2f}"
        if "check_max_abs_diff_converged" in s:
            part += (
                f", subset fits' held-out acc vs converged sklearn max |diff| "
                f"{s['check_max_abs_diff_converged']:.2f} (vs the timed reference "
                f"{s['check_max_abs_diff_reference']:.2f})"
            )
        head.append(part)
    exps = ", ".join(f"{t} {e:.2f}" for t, e in summary["exponents"].items())
    return (
        "six-task classifier time: "
        + "; ".join(head)
        + (f" | width exponents {summary.get('exponent_widths')}: {exps}" if exps else "")
    )


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    widths = sorted(int(w) for w in args.widths.split(","))
    tasks = parse_tasks(args.tasks)
    args.data = str(args.data or default_senteval_dir())
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            list(pool.map(run_task, tasks, [widths] * len(tasks), [args] * len(tasks)))
    else:
        for t in tasks:
            run_task(t, widths, args)
    rows = [json.loads(line) for line in Path(args.output).read_text().splitlines()]
    rows = [
        r for r in rows if r["reference_mode"] == args.reference and r["task"] in tasks and _kind(r) == args.features
    ]
    print(markdown_table(rows, widths, tasks))
    summary = summarize(rows, widths, tasks)
    summary.update(
        load_average_at_start=load,
        cpu_count=os.cpu_count(),
        jobs=args.jobs,
        reference=args.reference,
        reference_max_iter=args.max_iter or "converged",
    )
    print(json.dumps(summary))
    print(headline(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
