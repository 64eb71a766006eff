"""The accuracy check of ``scripts/bench_eval.py --check`` alone, for one task and width, one C at
a time: on the subset's problems (``bench_eval``'s ``subset`` reference mode: the first inner fold
of the first outer fold, or the first fold for TREC / MRPC) the fast solver and scikit-learn's
lbfgs run to convergence (tol 1e-8, up to 10,000 iterations) are fitted at every C of the task's
grid and scored on the held-out rows. Each C's row is printed (and appended to ``--output``) as
soon as it is done, and a rerun skips the C already there: for checks that take hours (TREC's
multinomial lbfgs at 4,800-d: over an hour), which ``bench_eval.py --check`` runs in one piece.

    QT_HARD_DATA=../shared/data python scripts/check_subset.py --task TREC --features bigru \\
        --width 4800 --feature-cache runs/bench_bigru/cache --output results/check_subset.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from qt_hard.evaluation.senteval import default_senteval_dir  # noqa: E402
from qt_hard.evaluation.tasks import load_task  # noqa: E402

import bench_eval as be  # noqa: E402  (scripts/: its features and subset problems)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", required=True, help="MR, CR, SUBJ, MPQA, TREC or MRPC")
    ap.add_argument("--features", choices=("hashbow", "bigru"), default="hashbow")
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--feature-cache", default=None, help="as scripts/bench_eval.py's")
    ap.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument("--kfold", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1111)
    ap.add_argument("--output", default=None, help="append one JSON row per C here (resumable)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from qt_hard.evaluation.logreg import BatchedLogReg

    task = load_task(args.task.upper(), args.data or default_senteval_dir())
    features = f"{args.features}:{args.width}"
    rows_all = []  # this task's and features' rows, earlier ones first
    if args.output and Path(args.output).exists():
        rows_all = [r for r in map(json.loads, Path(args.output).read_text().splitlines())
                    if (r["task"], r["features"]) == (task.name, features)]
    done = {r["C"] for r in rows_all}
    table = be.task_features(args.features, task, args.width, args.feature_cache)
    problems = be._subset_problems(task, be.PrefixCache(table, args.width), args.kfold, args.seed)
    X, y, rows, held, regs, _, _, K = problems
    model = BatchedLogReg(X[rows], y[rows], K)
    for C in regs:
        if C in done:
            continue
        fast, conv, fast_cpu, lbfgs_cpu = be.check_at(problems, model, C, args.seed)
        row = {"task": task.name, "features": features, "C": C, "n_train": len(rows), "n_held": len(held),
               "acc_fast": round(100 * float(np.mean(fast == y[held])), 3),
               "acc_converged": round(100 * float(np.mean(conv == y[held])), 3),
               "prediction_agreement_pct": round(100 * float(np.mean(fast == conv)), 3),
               "fast_cpu_seconds": round(fast_cpu, 2), "lbfgs_cpu_seconds": round(lbfgs_cpu, 2)}
        print(json.dumps(row), flush=True)
        rows_all.append(row)
        if args.output:
            with open(args.output, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    if rows_all:
        diff = max(abs(r["acc_fast"] - r["acc_converged"]) for r in rows_all)
        print(f"{task.name} {features}: {len(rows_all)} of {len(regs)} C checked, max abs diff fast - converged "
              f"{diff:.2f} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
