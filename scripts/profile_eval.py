"""Where the fast SentEval solver's time goes, per task and width (issue 14, item 1).

Runs ``qt-hard eval senteval``'s fast path (SentEval protocol) on the same embeddings as
``scripts/bench_eval.py`` (``--features hashbow`` or ``bigru``, each width the first ``d``
coordinates of one encoding; ``--feature-cache`` shares bench_eval's tables) with CPU timers around
the pieces of :class:`qt_hard.evaluation.logreg.BatchedLogReg`:

* ``setup``: building the solver (float32 copies; the row-space QR when d >= n),
* ``gram``: the preconditioner's Gram matrices ``X^T diag(dbar) X`` (``n_gram`` of them),
* ``factor``: their Cholesky factors, one per (C, group) and block (``n_factor`` calls),
* ``precond_apply``: the triangular solves, once per CG step,
* ``hvp``: the Hessian-vector products (two float32 products with X per CG step),
* ``newton``: logits, objective and gradient (float64), once per Newton step and line search,
* ``other``: the rest of the task (folds, masks, predictions, scoring).

plus Newton and CG step counts. One JSON line per (task, width) to stdout and ``--output``
(appended); the last line names each task's largest part at the largest width.

    QT_HARD_DATA=/work/shared/data python scripts/profile_eval.py --features bigru \
        --feature-cache runs/bench_bigru/cache --widths 600,2400 --tasks TREC,MRPC
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qt_hard.evaluation import logreg  # noqa: E402
from qt_hard.evaluation.senteval import default_senteval_dir, evaluate_task, parse_tasks  # noqa: E402
from qt_hard.evaluation.tasks import load_task  # noqa: E402

# BatchedLogReg method -> part. Nested calls are not double counted: only the outermost timed
# call of a stack adds its time.
PARTS = {"__init__": "setup", "_refresh_gram": "gram", "_preconditioners": "factor",
         "_apply_prec": "precond_apply", "_hvp": "hvp", "logits": "newton", "_objective": "newton",
         "_gradient": "newton"}


def _bench_eval():
    spec = importlib.util.spec_from_file_location("bench_eval", ROOT / "scripts" / "bench_eval.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Timers:
    """CPU seconds per part while installed (``with Timers() as t``), and call counts."""

    def __init__(self):
        self.seconds = collections.Counter()
        self.calls = collections.Counter()
        self._depth = 0
        self._saved = {}

    def __enter__(self):
        for name, part in PARTS.items():
            orig = getattr(logreg.BatchedLogReg, name)
            self._saved[name] = orig

            def timed(*a, _orig=orig, _part=part, **kw):
                self._depth += 1
                t = time.process_time()
                try:
                    return _orig(*a, **kw)
                finally:
                    self._depth -= 1
                    if self._depth == 0:
                        self.seconds[_part] += time.process_time() - t
                    self.calls[_part] += 1

            setattr(logreg.BatchedLogReg, name, timed)
        return self

    def __exit__(self, *exc):
        for name, orig in self._saved.items():
            setattr(logreg.BatchedLogReg, name, orig)


def profile_task(name: str, width: int, table: dict, be, args) -> dict:
    import torch

    task = load_task(name, args.data)
    cache = be.PrefixCache(table, width)
    fit = logreg.BatchedLogReg.fit
    steps = collections.Counter()

    def counting_fit(self, *a, **kw):
        W = fit(self, *a, **kw)
        steps["newton"] += self.n_newton
        steps["cg"] += self.n_cg
        return W

    torch.set_num_threads(args.threads)
    logreg.DEFAULT_THREADS = args.threads
    logreg.BatchedLogReg.fit = counting_fit
    try:
        with Timers() as timers:
            cpu = time.process_time()
            res = evaluate_task(task, cache, kfold=args.kfold, seed=args.seed, fast=True)
            total = time.process_time() - cpu
    finally:
        logreg.BatchedLogReg.fit = fit
    parts = {k: round(v, 2) for k, v in sorted(timers.seconds.items())}
    parts["other"] = round(total - sum(timers.seconds.values()), 2)
    return {"task": name, "width": width, "features": f"{args.features}:{width}", "threads": args.threads,
            "cpu_seconds": round(total, 2), "parts": parts,
            "n_gram": timers.calls["gram"], "n_factor": timers.calls["factor"],
            "newton_steps": steps["newton"], "cg_steps": steps["cg"], "acc": res["acc"],
            "chosen_C": res["chosen_C"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="600,2400")
    ap.add_argument("--tasks", default="MR,CR,SUBJ,MPQA,TREC,MRPC")
    ap.add_argument("--features", choices=("hashbow", "bigru"), default="hashbow")
    ap.add_argument("--feature-cache", default=None, help="bench_eval's folder of encoded tables")
    ap.add_argument("--kfold", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1111)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument("--output", default=None, help="also append the JSON lines here")
    args = ap.parse_args(argv)
    args.data = str(args.data or default_senteval_dir())
    widths = sorted(int(w) for w in args.widths.split(","))
    be = _bench_eval()
    rows = []
    for name in parse_tasks(args.tasks):
        texts = list(dict.fromkeys(load_task(name, args.data).texts()))
        full = be.FULL_WIDTH.get(args.features, max(widths))
        cached = Path(args.feature_cache) / f"{args.features}_{name}.npy" if args.feature_cache else None
        if cached is not None and cached.exists() and np.load(cached, mmap_mode="r").shape[1] >= max(widths):
            E = np.load(cached)
        else:
            E = be._encode(args.features, texts, full).astype(np.float32)
        table = dict(zip(texts, E))
        for w in widths:
            row = profile_task(name, w, table, be, args)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.output:
                with open(args.output, "a") as f:
                    f.write(json.dumps(row) + "\n")
    top = max(widths)
    print("largest part at %d-d: " % top + ", ".join(
        f"{r['task']} {max(r['parts'], key=r['parts'].get)} "
        f"{r['parts'][max(r['parts'], key=r['parts'].get)] / max(r['cpu_seconds'], 1e-9):.0%} of {r['cpu_seconds']:.0f} s"
        for r in rows if r["width"] == top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
