"""MPQA's fast path at several widths, with and without the solver's CG options, side by side.

MPQA is the task whose classifier time grew fastest with the width (issue 14: 8.8 CPU s at
600-d, 1,000 at 2,400-d, exponent 3.4). This runs SentEval's InnerKFoldClassifier protocol on
MPQA (``protocol.inner_kfold``, fast path: the 10 x 10 nested fold problems of each C solved
together) on the same embeddings as ``scripts/bench_eval.py`` (the hashed bag of words, first
``d`` coordinates), once per (width, configuration), and records CPU seconds, Newton steps,
batched CG steps, column-steps (CG steps summed over the problems that took them) and the
protocol's outputs. The configurations toggle :class:`BatchedLogReg`'s ``CG_COMPACT`` and
``CG_STOP_AT_TOL``: ``before`` (both off) is the solver as it was before them, ``compact`` with
CG on the unfinished problems only, ``after`` both on; ``grouped`` is ``compact`` with one
preconditioner Gram per outer fold (``protocol.NESTED_PREC_GROUPS``), ``merged`` ``compact`` with
repeated rows merged (``protocol._PathSolver.MERGE_DUPLICATES``, the default now; every other
configuration solves on the rows as given). The per-fold accuracies, dev accuracy and chosen C of every
configuration are compared (printed; exit status 1 if they differ).

``--features bigru`` replaces the hashed bag of words with Gaussian random projections of a fixed
model's features, as issue 14 allows (``eval/senteval_reference.py``'s ``encoder_projections``:
an untrained S2V-sized bidirectional Quick-Thoughts pair, 4,800-d, scaled to the bag of words'
mean squared norm at each width). A bag of words makes rows that share no word nearly orthogonal
(MPQA's phrases are one to three words); an encoder's features are correlated, as real sentence
embeddings are, and that geometry, not the width alone, is what makes the 100 fold problems hard to
precondition together.

One JSON row per (width, configuration) is appended to ``--output`` (resumable: rows already there
are skipped); printed last: a table and the width exponents of each configuration's CPU time.

    QT_HARD_DATA=/work/shared/data python scripts/bench_mpqa_width.py --widths 600,1200 \
        --output /tmp/bench_mpqa_width.jsonl
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qt_hard.evaluation import logreg, protocol  # noqa: E402
from qt_hard.evaluation.senteval import default_senteval_dir  # noqa: E402
from qt_hard.evaluation.tasks import load_task  # noqa: E402

CONFIGS = {"before": (False, False), "compact": (True, False), "after": (True, True),
           "grouped": (True, False), "merged": (True, False)}
# Configurations with one preconditioner Gram per outer fold (protocol.NESTED_PREC_GROUPS).
GROUPED = {"grouped": "outer"}
# Configurations that merge repeated rows (protocol._PathSolver.MERGE_DUPLICATES); the others
# solve on the rows as given, as the solver did before merging.
MERGED = {"merged"}


def _reference_module():
    spec = importlib.util.spec_from_file_location("senteval_reference", ROOT / "eval" / "senteval_reference.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    return ref


def _features(task, width: int) -> np.ndarray:
    ref = _reference_module()
    texts = task.texts()
    uniq = list(dict.fromkeys(texts))
    enc = ref.HashBagOfWords(width)
    # float32 table then float64, as bench_eval's PrefixCache: the same numbers at every width.
    table = dict(zip(uniq, enc.encode(uniq).astype(np.float32)))
    return np.stack([table[t] for t in texts])


def _encoder_features(task, width: int) -> np.ndarray:
    """``senteval_reference.encoder_projections`` of the task's texts (see module docstring)."""
    return _reference_module().encoder_projections(task.texts(), width).astype(np.float32)


FEATURES = {"hashbow": _features, "bigru": _encoder_features}


def run_one(X, y, config: str, threads: int) -> dict:
    """The protocol once with ``config``'s solver options; counts Newton / CG steps."""
    compact, stop = CONFIGS[config]
    stats = {"newton": 0, "cg": 0, "column_steps": 0, "fits": 0, "grams": 0}
    fit = logreg.BatchedLogReg.fit

    def counting_fit(self, *a, **kw):
        W = fit(self, *a, **kw)
        stats["newton"] += self.n_newton
        stats["cg"] += self.n_cg
        stats["column_steps"] += int(sum(int(c.sum()) for c in self.cg_log))
        stats["fits"] += 1
        stats["grams"] = self.n_gram
        return W

    old_groups, old_merge = protocol.NESTED_PREC_GROUPS, protocol._PathSolver.MERGE_DUPLICATES
    protocol.NESTED_PREC_GROUPS = GROUPED.get(config)
    protocol._PathSolver.MERGE_DUPLICATES = config in MERGED
    old = logreg.BatchedLogReg.CG_COMPACT, logreg.BatchedLogReg.CG_STOP_AT_TOL
    logreg.BatchedLogReg.CG_COMPACT, logreg.BatchedLogReg.CG_STOP_AT_TOL = compact, stop
    logreg.BatchedLogReg.fit = counting_fit
    logreg.DEFAULT_THREADS = threads
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        out = protocol.inner_kfold(X, y, 2, fast=True)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        logreg.BatchedLogReg.fit = fit
        protocol.NESTED_PREC_GROUPS, protocol._PathSolver.MERGE_DUPLICATES = old_groups, old_merge
        logreg.BatchedLogReg.CG_COMPACT, logreg.BatchedLogReg.CG_STOP_AT_TOL = old
    return {"config": config, "cg_compact": compact, "cg_stop_at_tol": stop,
            "prec_groups": GROUPED.get(config), "merge_duplicates": config in MERGED,
            "cpu_seconds": round(cpu, 2), "wall_seconds": round(wall, 2), **stats,
            "acc": out["acc"], "devacc": out["devacc"], "fold_acc": out["fold_acc"],
            "chosen_C": out["chosen_C"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="600,1200,2400")
    ap.add_argument("--configs", default="before,compact",
                    help=f"comma-separated, from {sorted(CONFIGS)}")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--features", default="hashbow", choices=sorted(FEATURES),
                    help="hashbow: the hashed bag of words; bigru: random projections of an untrained "
                         "S2V-sized bidirectional GRU pair's features")
    ap.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument("--output", default="outputs/bench_mpqa_width.jsonl")
    args = ap.parse_args(argv)
    widths = sorted(int(w) for w in args.widths.split(","))
    configs = args.configs.split(",")
    bad = [c for c in configs if c not in CONFIGS]
    if bad:
        ap.error(f"unknown configuration(s) {bad}; choose from {sorted(CONFIGS)}")
    import torch

    torch.set_num_threads(args.threads)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    rows = [r for r in rows if r.get("features", "hashbow:").split(":")[0] == args.features]
    done = {(r["width"], r["config"]) for r in rows}
    task = load_task("MPQA", str(args.data or default_senteval_dir()))
    y = np.asarray(task.labels)
    Xfull = None
    for w in widths:
        for c in configs:
            if (w, c) in done:
                continue
            if Xfull is None:
                Xfull = FEATURES[args.features](task, max(widths))
            row = {"task": "MPQA", "width": w, "features": f"{args.features}:{w}", "threads": args.threads,
                   **run_one(Xfull[:, :w].astype(np.float64), y, c, args.threads)}
            with open(out, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
            rows.append(row)
    by = {(r["width"], r["config"]): r for r in rows}
    print("| width | " + " | ".join(f"{c}: CPU s / Newton / CG / column-steps" for c in configs) + " |")
    print("|---|" + "---|" * len(configs))
    for w in widths:
        cells = [f"{by[(w, c)]['cpu_seconds']:.1f} / {by[(w, c)]['newton']} / {by[(w, c)]['cg']} / "
                 f"{by[(w, c)]['column_steps']}" if (w, c) in by else "-" for c in configs]
        print(f"| {w} | " + " | ".join(cells) + " |")
    summary = {"same_outputs": {}, "exponents": {}}
    for w in widths:
        rs = [by[(w, c)] for c in configs if (w, c) in by]
        summary["same_outputs"][w] = all(
            (r["fold_acc"], r["chosen_C"], r["devacc"]) == (rs[0]["fold_acc"], rs[0]["chosen_C"], rs[0]["devacc"])
            for r in rs)
    lo, hi = widths[0], widths[-1]
    for c in configs:
        if (lo, c) in by and (hi, c) in by and hi > lo:
            ratio = by[(hi, c)]["cpu_seconds"] / max(by[(lo, c)]["cpu_seconds"], 1e-9)
            summary["exponents"][c] = round(math.log(ratio) / math.log(hi / lo), 2)
    summary["exponent_widths"] = [lo, hi]
    print(json.dumps(summary))
    return 0 if all(summary["same_outputs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
