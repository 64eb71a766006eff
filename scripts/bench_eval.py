"""Evaluation speed: qt-hard's evaluation paths against a reference on the same model and data, and
encoding speed; threads pinned, each row printed as JSON and appended to ``--output`` / ``--out``.

* ``senteval``: ``qt-hard eval senteval``'s fast solver against the one-LogisticRegression-per-fit
  reference, per task and width, on the same embeddings and folds. Embeddings (``--features``):
  ``hashbow``, ``senteval_reference.py``'s fixed random bag of words (full rank; rows that share no
  word nearly orthogonal), or ``bigru``, Gaussian random projections of an untrained S2V-sized
  bidirectional Quick-Thoughts pair's 4,800-d features (correlated rows, as sentence embeddings have),
  encoded once per task at the largest width, each width the first ``d`` coordinates. The reference
  (``--reference``): ``subset``, a fixed subset of scikit-learn's fits on exactly the problems the
  protocol solves (every C on the first inner fold of the first outer fold; TREC/MRPC: the first
  fold), extrapolated to the protocol (``sum_C t_C * fits per C + refits *
  mean_C t_C``); ``none``. Both sides on ``--threads`` threads (scikit-learn's OpenMP through
  ``OMP_NUM_THREADS``: a thread per core spent 4-60x the CPU time of one on a loaded machine).
  ``--check`` also fits the subset's problems with scikit-learn run to convergence and compares held-out
  accuracies. ``--retime-fast TAG``, after a change to the fast solver, times the fast side of rows
  already in ``--output`` again and copies their reference figures (``reference_from_earlier_row``).
  Resumable: rows already there are skipped. The headline: six-task times, speedups and each task's
  classifier-time exponent between the two middle widths (CPU seconds).
* ``retrieval``: ``qt-hard eval retrieval``'s path against sentence-transformers'
  ``InformationRetrievalEvaluator`` on MiniLM, alternating for ``--reps`` rounds from nothing (no
  embedding kept), and qt-hard on a random bag of words as a fraction of its MiniLM time.
* ``similarity``: seconds of the similarity suite and of the six transfer tasks, each with a fresh
  embedding cache, for one model; the encoding and scoring seconds, sentences and pairs, the scores.
* ``encode``: sentences/s of ``SentenceEncoder.encode`` and of ``EmbeddingCache`` on N MR sentences,
  three repetitions, a Quick-Thoughts model of a config's sizes with random weights (or ``--model``).

    python scripts/bench_eval.py senteval --widths 256,600,2400 --reference subset --check --output results/bench_eval.jsonl
    python scripts/bench_eval.py retrieval --out results/bench_retrieval.jsonl
    python scripts/bench_eval.py similarity --model random:bow --output results/bench_similarity.jsonl
    python scripts/bench_eval.py encode --threads 1 --out results/bench_encode.jsonl
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import _bench  # beside this file: python puts a script's own folder first on its path


FULL_WIDTH = {"bigru": 4800}  # the fixed model's width for projected features: any width a prefix
TRANSFER = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")
# The reference's figures a re-timed row copies from the earlier row of its key.
REFERENCE_FIELDS = ("reference_seconds", "reference_cpu_seconds", "reference_fits_timed", "reference_extrapolated")


def _reference_module():
    spec = importlib.util.spec_from_file_location(
        "senteval_reference", _bench.ROOT / "tests" / "reference" / "senteval_reference.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _encode(kind: str, texts: list[str], width: int) -> np.ndarray:
    """(len(texts), width) embeddings of distinct texts at the largest width (see ``--features``)."""
    ref = _reference_module()
    return ref.HashBagOfWords(width).encode(texts) if kind == "hashbow" else ref.encoder_projections(texts, width, kind)


def task_features(kind: str, task, width: int, feature_cache=None) -> dict[str, np.ndarray]:
    """Text -> float32 encoding (at least ``width`` wide) of every distinct text of ``task``: read
    from ``feature_cache/<kind>_<task>.npy`` when that table is wide enough, else encoded (at
    ``FULL_WIDTH`` for projected features) and, with ``feature_cache``, saved there atomically."""
    texts = list(dict.fromkeys(task.texts()))
    cached = Path(feature_cache) / f"{kind}_{task.name}.npy" if feature_cache else None
    if cached is not None and cached.exists() and np.load(cached, mmap_mode="r").shape[1] >= width:
        return dict(zip(texts, np.load(cached)))
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
    """The subset of the reference's problems: (X, y, train rows, held-out rows, regs, fits per C in
    the whole protocol, refits, classes)."""
    from qt_hard.evaluation import protocol
    from qt_hard.evaluation.datasets import BinaryTask, TrecTask

    if isinstance(task, BinaryTask):
        X, y = cache.embed(task.texts()), task.labels
        outer = protocol.StratifiedKFold(n_splits=kfold, shuffle=True, random_state=protocol.INNER_SPLIT_SEED)
        tr, _ = next(iter(outer.split(X, y)))
        itr, ite = next(iter(outer.split(X[tr], y[tr])))
        return X, y, tr[itr], tr[ite], protocol.INNER_REGS, kfold * kfold, kfold, 2
    if isinstance(task, TrecTask):
        X, y, K = cache.embed([" ".join(w) or "." for w in task.train]), task.train_labels, 6
    else:
        A, B = (cache.embed([" ".join(w) or "." for w in side]) for side in (task.train_a, task.train_b))
        X, y, K = np.c_[np.abs(A - B), A * B], task.train_labels, 2
    rows, held = next(iter(protocol.StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed).split(X, y)))
    return X, y, rows, held, protocol.KFOLD_REGS, kfold, 1, K


def _subset_reference(problems, seed, max_iter):
    """Time the subset's reference fits (one per C) and extrapolate to the protocol. Returns ([wall,
    CPU seconds], number of fits timed, held-out accuracies per C in percent)."""
    from qt_hard.evaluation import protocol

    X, y, rows, held, regs, per_c, refits, _ = problems
    wall, cpu, acc = [], [], []
    for C in regs:
        t0, c0 = time.perf_counter(), time.process_time()
        clf = protocol.reference_fit(X[rows], y[rows], C, seed, max_iter=max_iter)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        acc.append(100 * float(np.mean(clf.predict(X[held]) == y[held])))
    return [sum(t) * per_c + refits * float(np.mean(t)) for t in (wall, cpu)], len(regs), acc


def _subset_check(problems, seed, converged: bool = True) -> tuple[list, list, list]:
    """Held-out accuracies (percent) per C on the subset's problems of the fast solver and (with
    ``converged``) of scikit-learn run to convergence (lbfgs, tol 1e-8) on the same rows, and the
    share of held-out predictions the two agree on."""
    from qt_hard.evaluation import protocol
    from qt_hard.evaluation.logreg import BatchedLogReg, predict_logreg

    X, y, rows, held, regs, _, _, K = problems
    model, fast, conv, agree = BatchedLogReg(X[rows], y[rows], K), [], [], []
    pct = lambda a, b: 100 * float(np.mean(a == b))
    for C in regs:
        pf = predict_logreg(model, model.fit(np.ones((len(rows), 1)), C, tol=protocol.FAST_TOL), X[held])[:, 0]
        fast.append(pct(pf, y[held]))
        if converged:
            pc = protocol.reference_fit(X[rows], y[rows], C, seed, max_iter=None).predict(X[held])
            conv.append(pct(pc, y[held]))
            agree.append(pct(pf, pc))
    return fast, conv, agree


def _check_record(regs, fast, conv, ref, **extra) -> dict:
    """The accuracy check's record: per-C accuracies of the fast solver, of converged scikit-learn and
    of the timed reference fits, and the largest differences to the fast ones."""
    diff = lambda other: round(max(abs(a - b) for a, b in zip(fast, other)), 3)
    return {"C": list(regs), "acc_fast": fast, "acc_converged": conv, "acc_reference": ref, **extra} | {
        "max_abs_diff_converged": diff(conv),
        "max_abs_diff_reference": diff(ref),
    }


def _fast_side(task, cache, args) -> tuple[dict, float, dict]:
    """The fast solver on the whole protocol: its result, its CPU seconds and the Newton and CG
    steps it took (counted by wrapping ``BatchedLogReg.fit`` for the call)."""
    from qt_hard.evaluation import logreg
    from qt_hard.evaluation.senteval import evaluate_task

    stats, fit = {"n_newton": 0, "n_cg": 0}, logreg.BatchedLogReg.fit

    def counting_fit(self, *a, **kw):
        W = fit(self, *a, **kw)
        stats["n_newton"], stats["n_cg"] = stats["n_newton"] + self.n_newton, stats["n_cg"] + self.n_cg
        return W

    logreg.BatchedLogReg.fit = counting_fit
    cpu = time.process_time()
    try:
        fast = evaluate_task(task, cache, kfold=args.kfold, seed=args.seed, fast=True)
    finally:
        logreg.BatchedLogReg.fit = fit
    return fast, time.process_time() - cpu, stats


def _reference_side(row: dict, fast: dict, task, cache, args, old: dict | None) -> None:
    """The reference into ``row``: copied from ``old`` (the earlier row of a re-timed key, the fast side
    of its check redone), else measured as ``--reference`` says (nothing for ``none``)."""
    max_iter = None if args.max_iter == 0 else args.max_iter
    if old is not None and "reference_seconds" in old:
        row.update({k: old[k] for k in REFERENCE_FIELDS if k in old}, reference_from_earlier_row=True)
        if "check" in old:
            acc, _, _ = _subset_check(_subset_problems(task, cache, args.kfold, args.seed), args.seed, converged=False)
            c = old["check"]
            row["check"] = _check_record(
                c["C"], acc, c["acc_converged"], c["acc_reference"], converged_from_earlier_row=True
            )
    elif args.reference == "subset":
        problems = _subset_problems(task, cache, args.kfold, args.seed)
        (secs, cpu), nfits, acc = _subset_reference(problems, args.seed, max_iter)
        row.update(reference_seconds=round(secs, 2), reference_cpu_seconds=round(cpu, 2), reference_fits_timed=nfits)
        row["reference_extrapolated"] = True
        if args.check:
            c0 = time.process_time()
            fast_acc, conv, agree = _subset_check(problems, args.seed)
            row["check"] = _check_record(problems[4], fast_acc, conv, acc, prediction_agreement_pct=agree)
            row["check"]["cpu_seconds"] = round(time.process_time() - c0, 2)


def width_row(name: str, task, table, w: int, args, encode_s: float, old: dict | None) -> dict:
    """The row of one (width, task): the fast side, the reference and the speedups."""
    cache = PrefixCache(table, w)
    fast, fast_cpu, stats = _fast_side(task, cache, args)
    row = {"task": name, "width": w, "features": f"{args.features}:{w}", "threads": args.threads}
    row.update(encode_seconds_max_width=round(encode_s, 2), fast_seconds=fast["classify_seconds"])
    row.update(fast_cpu_seconds=round(fast_cpu, 2), fast_acc=fast["acc"], fast_f1=fast.get("f1"))
    row.update(fast_chosen_C=fast["chosen_C"], newton_steps=stats["n_newton"], cg_steps=stats["n_cg"])
    row.update(reference_mode=args.reference, reference_max_iter=args.max_iter or "converged")
    if args.retime_fast:
        row["retime_tag"] = args.retime_fast
    _reference_side(row, fast, task, cache, args, old)
    if "reference_seconds" in row:
        row["speedup"] = round(row["reference_seconds"] / max(row["fast_seconds"], 1e-9), 2)
        row["cpu_speedup"] = round(row["reference_cpu_seconds"] / max(row["fast_cpu_seconds"], 1e-9), 2)
    return row


def _kind(row: dict) -> str:
    """A row's feature kind ("hashbow:600" -> "hashbow")."""
    return row.get("features", "hashbow").split(":")[0]


def run_task(name: str, widths: list[int], args) -> None:
    """All widths of one task (one process), appended to the output as each ends; a key (width, task,
    reference mode, feature kind) already there (with ``--retime-fast``, with that tag) is skipped."""
    from qt_hard.evaluation.datasets import load_task

    _bench.pin_threads(args.threads, evaluation=True)
    out, done, earlier = Path(args.output), set(), {}
    for r in map(json.loads, out.read_text().splitlines() if out.exists() else []):
        key = (r["width"], r["task"], r["reference_mode"], _kind(r))
        earlier[key] = r  # the last row of a key is the current one
        if not args.retime_fast or r.get("retime_tag") == args.retime_fast:
            done.add(key)
    todo = [w for w in widths if (w, name, args.reference, args.features) not in done]
    if todo:
        task = load_task(name, args.data)
        t0 = time.perf_counter()
        table = task_features(args.features, task, max(widths), args.feature_cache)
        encode_s = time.perf_counter() - t0
        for w in todo:
            old = earlier.get((w, name, args.reference, args.features)) if args.retime_fast else None
            _bench.emit(
                [width_row(name, task, table, w, args, encode_s, old)], out
            )  # short appends: safe across processes


def summarize(rows: list[dict], widths: list[int], tasks: list[str]) -> dict:
    """Per width, the tasks' summed seconds and speedups, the largest accuracy differences; per task,
    the exponent of its CPU seconds between the two middle widths."""
    by, summary = {(r["width"], r["task"]): r for r in rows}, {"widths": {}, "exponents": {}}
    for w in widths:
        rs = [by[(w, t)] for t in tasks if (w, t) in by]
        if len(rs) < len(tasks):
            continue
        s = summary["widths"][w] = {k: round(sum(r[k] for r in rs), 2) for k in ("fast_seconds", "fast_cpu_seconds")}
        if all("reference_seconds" in r for r in rs):
            s.update({k: round(sum(r[k] for r in rs), 2) for k in ("reference_seconds", "reference_cpu_seconds")})
            s["speedup"] = round(s["reference_seconds"] / max(s["fast_seconds"], 1e-9), 2)
            s["cpu_speedup"] = round(s["reference_cpu_seconds"] / max(s["fast_cpu_seconds"], 1e-9), 2)
            s["reference_extrapolated"] = any(r.get("reference_extrapolated") for r in rs)
        if len(checks := [r["check"] for r in rs if "check" in r]) == len(rs):
            s["check_max_abs_diff_converged"] = max(c["max_abs_diff_converged"] for c in checks)
            s["check_max_abs_diff_reference"] = max(c["max_abs_diff_reference"] for c in checks)
    mid = [w for w in widths if w in (600, 2400)] or widths[:2]
    if len(mid) == 2:
        a, b = summary["exponent_widths"] = mid
        for t in tasks:
            if (a, t) in by and (b, t) in by:
                # CPU seconds: wall time on the shared machine moves with the other users' load.
                ratio = by[(b, t)]["fast_cpu_seconds"] / max(by[(a, t)]["fast_cpu_seconds"], 1e-9)
                summary["exponents"][t] = round(math.log(ratio) / math.log(b / a), 2)
    return summary


def headline(summary: dict) -> str:
    """Per width the six-task times, speedups and accuracy differences, then each task's exponent."""
    head = []
    for w, s in summary["widths"].items():
        part = f"{w}-d: fast {s['fast_seconds']:.0f}s"
        if "speedup" in s:
            est = " (extrapolated)" if s["reference_extrapolated"] else ""
            part += f" vs reference {s['reference_seconds']:.0f}s{est} = {s['speedup']:.1f}x (CPU time {s['cpu_speedup']:.1f}x)"
        if "check_max_abs_diff_converged" in s:
            part += (
                f", subset fits' held-out acc vs converged sklearn max |diff| {s['check_max_abs_diff_converged']:.2f}"
            )
            part += f" (vs the timed reference {s['check_max_abs_diff_reference']:.2f})"
        head.append(part)
    exps = ", ".join(f"{t} {e:.2f}" for t, e in summary["exponents"].items())
    return (
        "six-task classifier time: "
        + "; ".join(head)
        + (f" | width exponents {summary.get('exponent_widths')}: {exps}" if exps else "")
    )


def senteval_arguments(p):
    p.add_argument("--widths", default="256,600,2400,4800")
    p.add_argument("--tasks", default=",".join(TRANSFER))
    p.add_argument("--reference", choices=("subset", "none"), default="subset")
    p.add_argument("--max-iter", type=int, default=100, help="reference lbfgs cap: 100 as SentEval, 0 to convergence")
    p.add_argument("--check", action="store_true", help="with --reference subset: compare with converged sklearn")
    p.add_argument("--features", choices=("hashbow", "bigru"), default="hashbow", help="the embeddings (see above)")
    p.add_argument("--feature-cache", default=None, help="folder for each task's encoded table (reused by later runs)")
    p.add_argument("--retime-fast", default=None, metavar="TAG", help="re-time the fast side of rows already there")
    p.add_argument("--kfold", type=int, default=10)
    p.add_argument("--seed", type=int, default=1111)
    p.add_argument("--threads", type=int, default=1, help="torch threads per task process")
    p.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    p.add_argument("--output", default="outputs/bench_eval.jsonl")


def senteval(args):
    """The fast SentEval solver against the one-LogisticRegression-per-fit reference."""
    from qt_hard.evaluation.senteval import default_senteval_dir, parse_tasks

    widths, tasks = sorted(int(w) for w in args.widths.split(",")), parse_tasks(args.tasks)
    args.data = str(args.data or default_senteval_dir())
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    for task in tasks:
        run_task(task, widths, args)
    rows = [json.loads(line) for line in Path(args.output).read_text().splitlines()]
    keep = lambda r: r["reference_mode"] == args.reference and r["task"] in tasks and _kind(r) == args.features
    print(headline(summarize(list(filter(keep, rows)), widths, tasks)))


# ---------------------------------------------------------------------------- retrieval


def _beir(folder: Path, docs: int | None):
    """The folder's data with the first ``docs`` documents plus every judged one (None: all)."""
    from qt_hard.data.beir import load_beir

    data = load_beir(folder)
    if docs is not None and docs < len(data.doc_ids):
        judged = {d for q in data.qrels["test"].values() for d in q}
        keep = [i for i, d in enumerate(data.doc_ids) if i < docs or d in judged]
        data.doc_ids, data.doc_texts = [data.doc_ids[i] for i in keep], [data.doc_texts[i] for i in keep]
    return data


def retrieval_ours(folder: Path, spec: str, docs: int | None) -> float:
    """qt-hard's retrieval evaluation from nothing: its test nDCG@10."""
    from qt_hard.evaluation.models import EmbeddingCache, load_model
    from qt_hard.evaluation.retrieval import evaluate_retrieval

    data = _beir(folder, docs)
    model = load_model(spec, sentences=lambda: data.doc_texts + list(data.queries.values()))
    return evaluate_retrieval(EmbeddingCache(model), data)["test"]["ndcg@10"]


def retrieval_theirs(folder: Path, docs: int | None) -> float:
    """sentence-transformers' InformationRetrievalEvaluator on the same files: its nDCG@10 x 100."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    from qt_hard.evaluation.models import load_model

    data = _beir(folder, docs)
    model, qrels = load_model("minilm").model, data.qrels["test"]
    evaluator = InformationRetrievalEvaluator(
        queries={q: data.queries[q] for q in qrels},
        corpus=dict(zip(data.doc_ids, data.doc_texts)),
        relevant_docs={q: {d for d, s in judged.items() if s > 0} for q, judged in qrels.items()},
        score_functions={"cosine": cos_sim},
        show_progress_bar=False,
    )
    return 100 * evaluator.compute_all_metrics(model)["cosine"]["ndcg@k"][10]


def retrieval_arguments(p):
    _bench.common(p, reps=3)
    p.add_argument("--data", default=None, help="BEIR folder (default $QT_HARD_DATA/beir/scifact)")
    p.add_argument("--docs", type=int, default=None, help="the first N documents plus the judged ones (default all)")


def retrieval(args):
    """qt-hard's retrieval evaluation against sentence-transformers' InformationRetrievalEvaluator."""
    from qt_hard.paths import data_path

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    _bench.pin_threads(args.threads, evaluation=True)  # both sides, the embedding cache's encoder too
    folder = Path(args.data) if args.data else data_path("beir", "scifact")
    sides = {
        "evaluator minilm": lambda: retrieval_theirs(folder, args.docs),
        "qt-hard minilm": lambda: retrieval_ours(folder, "minilm", args.docs),
        "qt-hard random:bow": lambda: retrieval_ours(folder, "random:bow", args.docs),
    }
    times, ndcg = {name: [] for name in sides}, {}
    for _ in range(args.reps):
        for name, run in sides.items():
            t = time.perf_counter()
            ndcg[name] = run()
            times[name].append(time.perf_counter() - t)
    med, stamp, rows = (
        {name: statistics.median(ts) for name, ts in times.items()},
        _bench.stamp(__file__, args.argv),
        [],
    )
    for name, ts in times.items():
        of = "evaluator minilm" if "minilm" in name else "qt-hard minilm"
        rows.append({"case": name, "docs": args.docs or "all", "seconds_median": round(med[name], 3)})
        rows[-1].update(seconds=[round(t, 3) for t in ts], ratio=round(med[name] / med[of], 3), ratio_of=of)
        rows[-1].update({"ndcg@10": round(ndcg[name], 4), **stamp})
    _bench.emit(rows, args.out)
    mini, bow, ev = rows[1], rows[2], rows[0]
    print(
        f"headline: qt-hard takes {mini['ratio']:.2f}x the evaluator's time on all-MiniLM-L6-v2 (nDCG@10 "
        f"{mini['ndcg@10']:.2f} vs {ev['ndcg@10']:.2f}); the bag of words takes {bow['ratio']:.3f}x qt-hard's MiniLM time"
    )


# ---------------------------------------------------------------------------- similarity


def suite(encoder, tasks, data) -> dict:
    """Run ``tasks`` with a fresh cache; the seconds and counts of the run."""
    from qt_hard.evaluation.models import EmbeddingCache
    from qt_hard.evaluation.senteval import run_senteval

    cache = EmbeddingCache(encoder)
    start = time.perf_counter()
    res = run_senteval(encoder, tasks, data, cache=cache)
    wall = time.perf_counter() - start
    return {
        "tasks": list(tasks),
        # the headline score of each task: Spearman x100 (similarity) or accuracy (transfer)
        "scores": {t: round(r.get("spearman", r.get("acc", float("nan"))), 2) for t, r in res.items()},
        "task_seconds": {t: r["seconds"] for t, r in res.items()},
        "seconds": round(wall, 1),
        "encode_seconds": round(cache.seconds, 1),
        "classify_or_score_seconds": round(
            sum(r.get("classify_seconds", r.get("score_seconds", 0.0)) for r in res.values()), 1
        ),
        "sentences_encoded": cache.n_encoded,
        "test_pairs_scored": sum(r.get("npairs", r.get("ntest", 0)) for r in res.values()),
    }


def similarity_arguments(p):
    p.add_argument("--model", required=True, help="a --model spec of qt-hard eval senteval (random:bow, minilm, ...)")
    p.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    p.add_argument("--output", default=None, help="append the JSON row here")


def similarity(args):
    """Seconds of the similarity suite beside the six transfer tasks, for one model."""
    from qt_hard.evaluation.datasets import task_sentences
    from qt_hard.evaluation.models import load_model
    from qt_hard.evaluation.similarity import SIMILARITY_TASKS
    from qt_hard.paths import data_path

    data = Path(args.data) if args.data else data_path("senteval")
    load_before, start = os.getloadavg(), time.perf_counter()
    # a random: model's vocabulary covers both suites, so that the two runs embed with one model
    encoder = load_model(args.model, sentences=lambda: task_sentences([*TRANSFER, *SIMILARITY_TASKS], data))
    row = {"model": args.model, "load_seconds": round(time.perf_counter() - start, 1)}
    row["similarity"], row["transfer"] = s, t = suite(encoder, SIMILARITY_TASKS, data), suite(encoder, TRANSFER, data)
    row.update(_bench.stamp(__file__, args.argv), load_average_before=[round(x, 1) for x in load_before])
    _bench.emit([{**row, "eval_threads": int(os.environ.get("QT_HARD_EVAL_THREADS", "1"))}], args.output)
    head = f"{args.model}: similarity suite {s['seconds']:.0f} s ({s['sentences_encoded']} sentences encoded in "
    head += f"{s['encode_seconds']:.0f} s, {s['test_pairs_scored']} test pairs)"
    head += (
        f"; six transfer tasks {t['seconds']:.0f} s ({t['sentences_encoded']} sentences in {t['encode_seconds']:.0f} s)"
    )
    print(head + f"; load average {row['load_average_before'][0]} -> {round(os.getloadavg()[0], 1)}")


# ---------------------------------------------------------------------------- encode


def encode_arguments(p):
    _bench.common(p, threads=None)
    p.add_argument("--config", default="configs/qt_books.yaml")
    p.add_argument("--model", default=None, help="a saved model instead of a random one")
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")


def encode(args):
    """Sentences/s of SentenceEncoder.encode and the evaluation's EmbeddingCache on N MR sentences."""
    import torch

    from qt_hard.evaluation.models import EmbeddingCache
    from qt_hard.paths import data_path

    if args.threads:
        torch.set_num_threads(args.threads)
    lines: list[str] = []
    for name in ("rt-polarity.pos", "rt-polarity.neg"):
        with open(data_path("senteval", "MR", name), encoding="latin-1") as fh:
            lines += [line.strip() for line in fh][: args.n // 2]
    if args.model:
        import qt_hard

        enc = qt_hard.load_encoder(args.model)
    else:
        from qt_hard.encoders import random_encoder

        enc = random_encoder(args.config, lines, seed=0)
    rate = lambda fn: round(len(lines) / _bench.timed(fn))
    direct, cached = [], []
    for _ in range(3):
        direct.append(rate(lambda: enc.encode(lines, batch_size=args.batch_size)))
        cached.append(rate(lambda: EmbeddingCache(enc, batch_size=64).embed(lines)))
    row = {"n": len(lines), "config": None if args.model else args.config, "model": args.model}
    row.update(batch_size=args.batch_size, torch_threads=torch.get_num_threads(), dim=enc.dim)
    row.update(encode_sent_s=direct, embedding_cache_sent_s=cached)
    _bench.emit([{**row, **_bench.stamp(__file__, args.argv)}], args.out)
    print(f"encode: {int(np.median(direct))} sentences/s")


main = _bench.main_of(__name__)  # its cases: each NAME_arguments(parser) with its NAME(args)


if __name__ == "__main__":
    sys.exit(main())
