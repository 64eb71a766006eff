"""Training speed in sentences per second, each case's sides measured in one run on one machine:
a run's rate is that of its median step after ``--warmup`` steps (another process preempting one
step does not move it), rounds alternate the sides and ratios are paired by round.

* ``loop``: the training loop (``qt_hard.training.loop.train``, CSV tracker only, no checkpoints
  before the end; a step timed from one ``on_step`` to the next) against a bare step (the same
  pipeline's module, objective, fused Adam and clipping on batches built before the clock starts),
  for the bag of words on Wiki-N pairs, the Quick-Thoughts bag of words and GRU pair on books, and for
  a GPU the bag of words on Wiki-1000 at B = 1,000 and S2V's GRU pair (``configs/qt_s2v.yaml``). It reads
  the library only through ``train``, the pipeline registry and a task's ``local_batch``, so it also
  measures an older checkout (``PYTHONPATH=<checkout>``).
* ``cells``: N copies of the ``loop`` case ``s2v_gru`` at once, each in a process of its own
  (``runner.in_processes``) on one device from one shared data cache; the timed steps of all cells
  overlap (each waits for the others after its warm-up). Aggregate sentences/s over the span from
  the first timed step's start to the last one's end, each cell's median-step rate, each cell's peak
  RSS and GPU memory. ``DRY=1`` (or ``--dry``): a 16-unit GRU pair on one book on the CPU.
* ``threads``: one config at several ``train.num_threads`` from one prepared cache.
* ``precision``: the README's ``accelerate launch ... qt_hard.cli train`` under each mixed-precision
  mode (``ACCELERATE_USE_CPU`` without a GPU); the median of the ``metrics.csv`` windows after the first.
* ``step``: where one Quick-Thoughts step's time goes (collate, forward, loss, backward, clipping,
  Adam), its GRU FLOPs against ``torch.mm`` at the GRU's shapes measured beside it, and variants of
  the step: ``model`` (the library's encoder), ``packed`` (the packed recurrence it replaced),
  ``adam_foreach`` (torch's multi-tensor Adam instead of the loop's fused one).

A JSON row per run and per case (appended to ``--output`` where a case has it, with the machine,
threads, load average, command and commit) is printed; the last line is the headline.

    nice -n 5 python scripts/bench_train.py loop --steps 40 --rounds 3 --out runs/bench_train_speed
    python scripts/bench_train.py loop --cases bow_wiki1000 s2v_gru --wiki WIKI_1000_DIR          # a GPU
    DRY=1 python scripts/bench_train.py cells --out runs/side_by_side_dry                          # CPU, toy
    python scripts/bench_train.py cells --device cuda --cells 1,2,4,8 --output results/bench_side_by_side_gpu.jsonl
    nice -n 5 python scripts/bench_train.py threads --config configs/qt_books_smoke.yaml --threads 1,2 --steps 150
    python scripts/bench_train.py precision --steps 300 --out runs/bench_precision
    python scripts/bench_train.py step --encoder bow --embed 300 --vocab 30000 --variants adam_foreach,model
"""

from __future__ import annotations

import csv
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import _bench  # beside this file: python puts a script's own folder first on its path


WIKI_BOW = {"kind": "bow", "max_len": 128}
BOOKS = {"kind": "books", "max_books": 8, "min_count": 3, "max_vocab": 50000}
CASES = {
    # The bag of words of Ash et al. on Wiki-N pairs (configs/bow_wiki_smoke.yaml's model and loss).
    "bow_wiki": {
        "model": {**WIKI_BOW, "dim": 128},
        "data": {"kind": "wiki", "articles": 50, "min_sentences": 200, "min_count": 5},
        "objective": {"negatives": "uniform", "temperature": 1.0, "normalize": False, "include_positive": False},
        "train": {"batch_size": 256, "lr": 0.01, "grad_clip": 2.5},
    },
    # The Quick-Thoughts bag-of-words pair on books (configs/qt_books_smoke.yaml on 8 books).
    "bow_books": {
        "model": {"kind": "qt", "encoder": "bow", "embed_dim": 384, "max_len": 50},
        "data": BOOKS,
        "objective": {"negatives": "hard", "include_positive": True, "context": 1},
        "train": {"batch_size": 400, "lr": 0.005, "grad_clip": 5.0},
    },
    # The Quick-Thoughts GRU pair (64-d words, 128-d states, batches of 64) on the same books.
    "gru_books": {
        "model": {"kind": "qt", "encoder": "gru", "embed_dim": 64, "hidden_dim": 128, "max_len": 50},
        "data": BOOKS,
        "objective": {"negatives": "uniform", "include_positive": True, "context": 1},
        "train": {"batch_size": 64, "lr": 0.0005, "grad_clip": 5.0},
    },
    # k-versus-N's B = 1,000 row (configs/k_vs_n_b1000_long.yaml: 768-d, min count 50, all 2(B-1)
    # in-batch negatives) on Wiki-1000.
    "bow_wiki1000": {
        "model": {**WIKI_BOW, "dim": 768},
        "data": {"kind": "wiki", "articles": 1000, "min_sentences": 200, "min_count": 50, "classes": 1000},
        "objective": {"negatives": "uniform", "temperature": 1.0, "normalize": False, "include_positive": False},
        "train": {"batch_size": 1000, "lr": 0.01, "grad_clip": 2.5},
    },
    # S2V's GRU pair, configs/qt_s2v.yaml as it is, on its first 60 books: a vocabulary near the
    # config's 50,001 rows at a fraction of the tokenizing.
    "s2v_gru": {"from": "configs/qt_s2v.yaml", "data": {"max_books": 60}},
}
CASES["bow_wiki"]["objective"]["k"] = 100
CASES["bow_books"]["objective"]["options"] = {"beta": 1.0, "tau_plus": 0.0, "clip": "rescaled"}
DRY_CELL = ["model.embed_dim=16", "model.hidden_dim=16", "data.max_books=1", "data.exclude_books=null"]
DRY_CELL += ["train.batch_size=32", "data.max_vocab=5000"]


def _config(case: str, out: Path, steps: int, threads: int, overrides: list[str]):
    """The case's config into ``out``; ``from`` names a config file whose tree the case's sections update."""
    import yaml

    tree = json.loads(json.dumps(CASES[case]))
    source = tree.pop("from", None)
    if source is not None:
        base = yaml.safe_load((_bench.ROOT / source).read_text())
        base.pop("note", None)
        tree = {**base, **{k: {**base.get(k, {}), **v} for k, v in tree.items()}}
    tree["train"].update(seed=0, log_every=10, num_threads=threads)
    return _bench.timed_config(tree, out, overrides, steps)


def _runs(p, steps, warmup, out: str, rounds: int | None = None, output: bool = True):
    """The arguments of the cases that train: steps, warm-up, rounds, the run folders, the JSONL and
    the config overrides."""
    p.add_argument("--steps", type=int, default=steps, help="steps of every timed run")
    p.add_argument("--warmup", type=int, default=warmup, help="first steps of a run left out of its rate")
    if rounds:
        p.add_argument("--rounds", type=int, default=rounds, help="rounds of every side (medians are reported)")
    p.add_argument("--out", default=out, help="the run folders; a shared data cache is kept there")
    if output:
        p.add_argument("--output", default=None, help="JSONL the rows are appended to")
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. train.batch_size=128")


def _warmup_check(p, args):
    if args.steps < args.warmup + 3:
        p.error("--steps must exceed --warmup by at least 3")


# ---------------------------------------------------------------------------- loop


def bare_rate(cfg, warmup: int) -> float:
    """Sentences/s of forward, loss, backward, clipping and Adam on batches built beforehand."""
    import torch
    from accelerate.utils import send_to_device, set_seed

    from qt_hard.pipelines import get_pipeline

    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    set_seed(cfg.train.seed)
    run = get_pipeline(cfg.pipeline).build(cfg, Path(cfg.out_dir))
    if hasattr(run.task, "to_device"):
        run.task.to_device(device)
    module = run.module.to(device).train()
    opt = torch.optim.Adam(module.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay, fused=True)
    gen = torch.Generator(device=device)
    gen.manual_seed(cfg.train.seed * 1009 + 17)
    batches = [send_to_device(run.task.local_batch(s, 0, 1), device) for s in range(cfg.train.steps)]
    stamps = []
    for step, batch in enumerate(batches):
        run.objective.set_progress(step / len(batches))
        loss = run.objective(module, batch, gen)
        loss.backward()
        if cfg.train.grad_clip:
            torch.nn.utils.clip_grad_norm_(module.parameters(), cfg.train.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        float(loss.detach())  # the loop reads the loss every step too
        stamps.append(time.perf_counter())
    _bench.sync()
    return _bench.step_rate(cfg, stamps[warmup:])


def loop_arguments(p):
    _runs(p, 40, 5, "runs/bench_train_speed", rounds=3, output=False)
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (train.num_threads)")
    p.add_argument("--wiki", default=None, help="Wiki folder of bow_wiki1000 (default: built from the dump)")
    p.add_argument("--case-set", action="append", default=[], metavar="CASE:KEY=VALUE", help="one case's override")


def loop_case(case: str, args, overrides: list[str], meta: dict) -> float:
    """The case's rounds of a loop and a bare run (a row printed per run, then the case's row);
    returns the median over rounds of loop/bare within a round."""
    rates = {"loop": [], "bare": []}
    for rnd in range(args.rounds):
        for path, measure in (("loop", _bench.train_rate), ("bare", bare_rate)):
            # One run folder per case: the loop's data cache (tokens, Wiki-N) is built once.
            cfg = _config(case, Path(args.out) / case, args.steps, args.threads, overrides)
            t0 = time.perf_counter()
            rates[path].append(measure(cfg, args.warmup))
            row = {"case": case, "path": path, "round": rnd, "sentences_per_s": round(rates[path][-1], 1)}
            _bench.emit([{**row, "wall_s": round(time.perf_counter() - t0, 2), **meta}])
    loop, bare = statistics.median(rates["loop"]), statistics.median(rates["bare"])
    paired = _bench.paired_ratio(rates["loop"], rates["bare"])
    row = {"case": case, "loop_sentences_per_s": round(loop, 1), "bare_sentences_per_s": round(bare, 1)}
    _bench.emit(
        [{**row, "ratio": round(paired, 3), "ratio_of_medians": round(loop / bare, 3), "rounds": args.rounds, **meta}]
    )
    return paired


def loop(args):
    """The training loop's step against a bare step."""
    _warmup_check(args.parser, args)
    per_case: dict[str, list[str]] = {c: list(args.overrides) for c in CASES}
    if args.wiki:
        per_case["bow_wiki1000"].append(f"data.path={Path(args.wiki).resolve()}")
    for item in args.case_set:
        case, sep, override = item.partition(":")
        if not sep or case not in CASES or "=" not in override:
            args.parser.error(f"--case-set {item!r}: expected CASE:KEY=VALUE with CASE one of {', '.join(CASES)}")
        per_case[case].append(override)
    import torch

    import qt_hard

    meta = {"device": _bench.device_name(), "torch": torch.__version__, "threads": args.threads}
    meta.update(library=str(Path(qt_hard.__file__).resolve().parent.parent), steps=args.steps, warmup=args.warmup)
    ratios = {case: loop_case(case, args, per_case[case], meta) for case in args.cases}
    print(
        f"loop/bare on {meta['device']}, {args.threads} thread(s), {args.steps} steps x {args.rounds} rounds: "
        + "; ".join(f"{c} {r:.2f}" for c, r in ratios.items())
    )


# ---------------------------------------------------------------------------- cells


def cell(tree: dict, run_dir: str, cache: str, warmup: int, gate: str, n: int, index: int) -> dict:
    """One cell (in its worker): train ``tree`` into ``run_dir`` from the shared ``cache``; after
    ``warmup`` steps, wait for the other cells of the round (files in ``gate``). Returns the wall-clock
    times at which its timed steps ended, the first one's start, and its memory."""
    import torch

    from qt_hard.experiments.runner import link_shared_cache
    from qt_hard.training.config import config_from_dict
    from qt_hard.training.loop import train

    link_shared_cache(run_dir, cache)
    stamps: list[float] = []

    def on_step(step, loss):
        if step == warmup:
            Path(gate, f"ready{index}").touch()
            deadline = time.time() + 600
            while len(list(Path(gate).glob("ready*"))) < n and time.time() < deadline:
                time.sleep(0.005)
        stamps.append(time.time())  # after the gate: the stamp at `warmup` starts the timed steps

    train(config_from_dict({**tree, "out_dir": run_dir}), on_step=on_step, overwrite=True)
    gpu = {}
    if torch.cuda.is_available():
        gpu["gpu_peak_allocated_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
        gpu["gpu_peak_reserved_mib"] = round(torch.cuda.max_memory_reserved() / 2**20)
    rss = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    # the timed steps run from stamps[warmup - 1] to stamps[-1]
    return {"index": index, "pid": os.getpid(), "timed": stamps[warmup - 1 :], "peak_rss_mib": rss, **gpu}


def aggregate(cells: list[dict], sentences_per_step: int) -> dict:
    """Aggregate sentences/s of cells whose ``timed`` lists hold the end of the step before their
    first timed step, then the end of each timed step: all timed sentences over the span from the
    earliest start to the latest end; per cell, the rate of its median step."""
    starts, ends = [c["timed"][0] for c in cells], [c["timed"][-1] for c in cells]
    steps, span = sum(len(c["timed"]) - 1 for c in cells), max(ends) - min(starts)
    per_cell = [
        sentences_per_step / statistics.median(b - a for a, b in zip(c["timed"], c["timed"][1:])) for c in cells
    ]
    return {
        "aggregate_sentences_per_s": round(steps * sentences_per_step / span, 1),
        "span_s": round(span, 2),
        "start_spread_s": round(max(starts) - min(starts), 3),
        "per_cell_sentences_per_s": [round(r, 1) for r in per_cell],
    }


def cells_arguments(p):
    p.add_argument("--dry", action="store_true", default=os.environ.get("DRY") == "1", help="toy size on the CPU")
    p.add_argument("--cells", default=None, help="comma list of N (default 1,2,4; a GPU: 1,2,4,8)")
    p.add_argument("--device", default=None, help="cpu | cuda (default: cuda where there is one; --dry: cpu)")
    _runs(p, None, None, "runs/side_by_side")  # steps 60 and warm-up 10; --dry: 30 and 5
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads of each cell")


def cells_round(n: int, args, tree: dict, cache: Path, out: Path) -> list[dict]:
    """N cells at once: their rows (each one's memory), then the round's aggregate row."""
    from qt_hard.experiments.runner import in_processes

    gate = out / f"n{n}" / "gate"
    shutil.rmtree(out / f"n{n}", ignore_errors=True)
    gate.mkdir(parents=True)
    jobs = [(tree, str(out / f"n{n}" / f"cell{i}"), str(cache), args.warmup, str(gate), n, i) for i in range(n)]
    t0 = time.perf_counter()
    cells = sorted(in_processes(cell, jobs, workers=n, fresh=True, device=args.device), key=lambda c: c["index"])
    wall = time.perf_counter() - t0
    rows = [{"cells": n, "cell": c["index"], **{k: v for k, v in c.items() if "_mib" in k}} for c in cells]
    summary = {"cells": n, **aggregate(cells, tree["train"]["batch_size"]), "round_wall_s": round(wall, 1)}
    summary["peak_rss_mib_per_cell"] = max(c["peak_rss_mib"] for c in cells)
    if args.device == "cuda":
        summary["gpu_peak_reserved_mib_per_cell"] = max(c["gpu_peak_reserved_mib"] for c in cells)
    return [*rows, summary]


def cells(args):
    """Aggregate sentences/s of N cells training side by side on one device."""
    import torch

    from qt_hard.experiments.runner import check_device, prepare_shared_cache
    from qt_hard.training.config import to_dict

    args.device = args.device or ("cpu" if args.dry or not torch.cuda.is_available() else "cuda")
    check_device(args.device)
    args.steps, args.warmup = args.steps or (30 if args.dry else 60), args.warmup or (5 if args.dry else 10)
    _warmup_check(args.parser, args)
    overrides, out = [*(DRY_CELL if args.dry else []), *args.overrides], Path(args.out).resolve()
    cfg = _config("s2v_gru", out / "shared", args.steps, args.threads, overrides)
    t0 = time.perf_counter()
    cache, prepare_s = prepare_shared_cache(cfg, out / "shared"), round(time.perf_counter() - t0, 1)
    meta = {"case": "s2v_gru", "dry": args.dry}
    meta["device"] = _bench.device_name() if args.device == "cuda" else f"cpu ({os.cpu_count()} cores)"
    meta.update(threads_per_cell=args.threads, batch_size=cfg.train.batch_size, steps=args.steps, warmup=args.warmup)
    meta.update(overrides=overrides, **_bench.stamp(__file__, args.argv))
    heads = []
    for n in [int(x) for x in (args.cells or ("1,2,4,8" if args.device == "cuda" else "1,2,4")).split(",")]:
        rows = cells_round(n, args, to_dict(cfg), cache, out)
        base = (heads or rows[-1:])[0]["aggregate_sentences_per_s"]
        rows[-1].update(ratio_to_one=round(rows[-1]["aggregate_sentences_per_s"] / base, 2), prepare_s=prepare_s)
        heads.append(rows[-1])
        _bench.emit([{**r, **meta} for r in rows], args.output)  # as each round ends: a stopped run keeps them
    print(
        f"side by side on {meta['device']} (s2v_gru{' DRY' if args.dry else ''}, batch {cfg.train.batch_size}, "
        f"{args.threads} thread(s) a cell): "
        + "; ".join(
            f"N={r['cells']} {r['aggregate_sentences_per_s']:,.0f} sentences/s ({r['ratio_to_one']:.2f}x), "
            f"{r['peak_rss_mib_per_cell']} MiB RSS a cell"
            for r in heads
        )
    )


# ---------------------------------------------------------------------------- threads


def threads_arguments(p):
    p.add_argument("--config", required=True)
    p.add_argument("--threads", default="1,2", help="comma list of train.num_threads")
    _runs(p, 150, 10, "runs/bench_threads", rounds=2)


def threads(args):
    """One config's training speed at several torch thread counts."""
    _warmup_check(args.parser, args)
    from qt_hard.experiments.runner import link_shared_cache, prepare_shared_cache

    counts, out = [int(t) for t in args.threads.split(",")], Path(args.out).resolve()
    base = [*args.overrides, "train.log_every=10"]
    cache = prepare_shared_cache(_bench.timed_config(args.config, out / "shared", base, args.steps), out / "shared")
    meta = {"config": args.config, "overrides": args.overrides, "steps": args.steps, "warmup": args.warmup}
    meta.update(_bench.stamp(__file__, args.argv))
    rates: dict[int, list[float]] = {t: [] for t in counts}
    for rnd in range(args.rounds):
        for t in counts if rnd % 2 == 0 else counts[::-1]:
            shutil.rmtree(out / f"t{t}", ignore_errors=True)
            link_shared_cache(out / f"t{t}", cache)
            cfg = _bench.timed_config(args.config, out / f"t{t}", [*base, f"train.num_threads={t}"], args.steps)
            rates[t].append(_bench.train_rate(cfg, args.warmup))
            row = {"num_threads": t, "round": rnd, "sentences_per_s": round(rates[t][-1], 1)}
            _bench.emit([{**row, **meta}], args.output)
    heads = [{"num_threads": t, "sentences_per_s": round(statistics.median(rates[t]), 1)} for t in counts]
    for h in heads:
        h.update(ratio=round(_bench.paired_ratio(rates[h["num_threads"]], rates[counts[0]]), 2), **meta)
    _bench.emit(heads, args.output)
    print(
        f"{args.config}, {args.steps} steps x {args.rounds} rounds: "
        + "; ".join(
            f"{r['num_threads']} thread(s) {r['sentences_per_s']:,.0f} sentences/s ({r['ratio']:.2f}x)" for r in heads
        )
    )


# ---------------------------------------------------------------------------- precision


def precision_mode(mode: str, args, env: dict) -> dict:
    """One mode's row: the README's ``accelerate launch`` of ``qt-hard train`` into ``--out``/<mode>, then
    the median of its ``metrics.csv`` windows after the first (the warm-up); a failed run's row holds the
    training process's own exception, not the launcher's."""
    import torch

    out = Path(args.out) / mode
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        "launch",
        "--num_processes",
        "1",
        "--num_machines",
        "1",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        "0",
    ]
    cmd += ["-m", "qt_hard.cli", "train", args.config, "--out", str(out), f"train.steps={args.steps}"]
    # mixed_precision quoted: YAML reads a bare no as False.
    cmd += [f"train.mixed_precision='{mode}'", "train.checkpoint_every=0", "train.progress=false"]
    cmd += [f"train.log_every={args.log_every}", *args.overrides]
    row = {"mode": mode, "device": _bench.device_name(), "num_processes": 1, "config": args.config, "steps": args.steps}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.accelerate_cli", *cmd], env=env, capture_output=True, text=True
    )
    row.update(wall_s=round(time.perf_counter() - t0, 2), command=" ".join(["accelerate", *cmd]))
    if proc.returncode != 0:
        errors = [ln for ln in proc.stderr.splitlines() if re.match(r"^[\w.]+(Error|Exception): ", ln)]
        errors = [ln[-300:] for ln in errors if "CalledProcessError" not in ln]
        return {**row, "error": (errors or [f"exit {proc.returncode}: {proc.stderr[-300:]}"])[0]}
    with open(out / "metrics.csv") as fh:
        rows = list(csv.DictReader(fh))
    speeds = [float(r["sentences_per_s"]) for r in rows[1:] or rows]
    row.update(sentences_per_s=round(statistics.median(speeds), 1), windows=len(speeds))
    return {**row, "final_loss": round(float(rows[-1]["loss"]), 4), "torch": torch.__version__}


def precision_arguments(p):
    p.add_argument("--config", default="configs/qt_books_smoke.yaml")
    p.add_argument("--precisions", nargs="+", default=["no", "bf16", "fp16"], choices=["no", "bf16", "fp16"])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--out", default="runs/bench_precision")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="config override")


def precision(args):
    """Training throughput of the README's accelerate launch command under each mixed-precision mode."""
    if args.steps <= args.log_every:
        args.parser.error("--steps must exceed --log-every: the first window (warm-up) is left out of the median")
    import torch

    env = {**os.environ, **({} if torch.cuda.is_available() else {"ACCELERATE_USE_CPU": "true"})}
    results = []
    for mode in args.precisions:
        results.append(precision_mode(mode, args, env))
        _bench.emit(results[-1:])
    base = next((r["sentences_per_s"] for r in results if r["mode"] == "no" and "sentences_per_s" in r), None)
    parts = [
        f"{r['mode']}: failed"
        if "sentences_per_s" not in r
        else f"{r['mode']} {r['sentences_per_s']:.0f} sent/s"
        + (f" ({r['sentences_per_s'] / base:.2f}x)" if base else "")
        for r in results
    ]
    print(f"train speed on {_bench.device_name()}, 1 process, {args.config}: " + "; ".join(parts))
    # fp16 on a CPU is an error by design
    return int(any("error" in r for r in results if not (r["mode"] == "fp16" and "cpu" in r["device"])))


# ---------------------------------------------------------------------------- step


def book_lengths(n: int, max_len: int, seed: int):
    """Token counts of n consecutive book sentences (the first books' cache-free sample), else a stand-in."""
    import numpy as np

    rng = np.random.default_rng(seed)
    try:
        from qt_hard.data.books import book_sentences, find_books
        from qt_hard.data.wordlevel import word_tokens
        from qt_hard.paths import data_path

        sents = [s for f in find_books(data_path("books"))[:2] for s in book_sentences(f)]
        lens = np.array([len(word_tokens(s)) for s in sents[:5000]])
        return np.minimum(rng.choice(lens, n), max_len).clip(1)
    except FileNotFoundError:
        return np.minimum(rng.geometric(1 / 18, n), max_len)


def matmul_gflops(batch: int, embed: int, hidden: int, device, reps: int = 20) -> float:
    """torch.mm throughput at the GRU's shapes: (B, e+h) x (e+h, 3h), float32 (TF32 as torch's
    default leaves it: off for matmuls)."""
    import torch

    a, b = torch.randn(batch, embed + hidden, device=device), torch.randn(embed + hidden, 3 * hidden, device=device)
    for _ in range(3):
        a @ b
    return 2 * batch * (embed + hidden) * 3 * hidden / _bench.timed(lambda: a @ b, reps, device) / 1e9


def packed_states(qt, ids, lengths):
    """The packed recurrence (``pack_padded_sequence``), whatever the library's own path is: the
    reference the dense CPU path of ``SentenceRNN`` replaced (same states, see its docstring)."""
    from torch.nn.utils.rnn import pack_padded_sequence

    def one(enc):
        packed = pack_padded_sequence(enc.embedding(ids), lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
        return enc.rnn(packed)[1][0]

    return one(qt.f), one(qt.g)


def step_batch(args, lens, rng, dev):
    """A batch of random ids at ``lens`` tokens."""
    import torch

    ids = torch.zeros(args.batch, int(lens.max()), dtype=torch.long)
    for r, n in enumerate(lens):
        ids[r, :n] = torch.as_tensor(rng.integers(2, args.vocab, n))
    return ids.to(dev), torch.as_tensor(lens).to(dev)


def step_variant(name, args, lengths_all) -> dict:
    """One variant's phases over ``--steps`` steps after ``--warmup``: sentences/s, each phase's share."""
    import numpy as np
    import torch

    from qt_hard.encoders.quick_thoughts import QuickThoughtsEncoder
    from qt_hard.losses import ContextLoss

    torch.manual_seed(0)
    dev = torch.device(args.device)
    model = QuickThoughtsEncoder(args.vocab, args.encoder, args.embed, args.hidden).to(dev)
    forward = (lambda ids, lengths: packed_states(model, ids, lengths)) if name == "packed" else model
    loss_fn = ContextLoss("uniform", context=1)
    # The loop's optimizer (fused Adam) except in the variants measuring the paths before.
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, fused=name == "model")
    rng, phases, n_tokens = np.random.default_rng(1), dict.fromkeys(("collate", "forward", "loss", "backward"), 0.0), 0
    phases.update(clip=0.0, adam=0.0)
    for step in range(args.steps + args.warmup):
        start = int(rng.integers(0, len(lengths_all) - args.batch))
        lens = lengths_all[start : start + args.batch]
        marks = [time.perf_counter()]
        mark = lambda marks=marks: (_bench.sync(dev), marks.append(time.perf_counter()))
        ids, lengths = step_batch(args, lens, rng, dev)
        mark()
        f, g = forward(ids, lengths)
        mark()
        loss = loss_fn(f, g)
        mark()
        loss.backward()
        mark()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        mark()
        opt.step()
        opt.zero_grad(set_to_none=True)
        mark()
        if step >= args.warmup:
            for k, a, b in zip(phases, marks, marks[1:]):
                phases[k] += b - a
            n_tokens += int(lens.sum())
    total = sum(phases.values())
    # the GRU's matmuls: 2 encoders, per token 2 * 3h * (e + h) forward, x3 with backward
    flops = n_tokens * 2 * 3 * args.hidden * (args.embed + args.hidden) * 2 * 3 if args.encoder == "gru" else 0.0
    return {
        "variant": name,
        "threads": 1,
        "sentences_per_s": round(args.batch * args.steps / total, 1),
        "step_s": round(total / args.steps, 3),
        "phase_share": {k: round(v / total, 3) for k, v in phases.items()},
        "gru_gflops_per_s": round(flops / total / 1e9, 2),
    }


def step_arguments(p):
    p.add_argument("--encoder", choices=("gru", "bow"), default="gru")
    for name, default in (("batch", 400), ("embed", 128), ("hidden", 256), ("vocab", 50000), ("max-len", 50)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--variants", default="packed,model")
    p.add_argument("--device", default="cpu", help="cpu or cuda")


def step(args):
    """Where the time of one Quick-Thoughts training step goes, and how close it is to torch.mm."""
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        args.parser.error(f"--device {args.device}: torch sees no CUDA device here")
    variants = args.variants.split(",")
    if set(variants) - {"model", "packed", "adam_foreach"} or args.encoder == "bow" and "packed" in variants:
        args.parser.error("--variants from model, packed (a GRU path) and adam_foreach")
    from qt_hard.training.loop import keep_freed_memory

    keep_freed_memory()  # as the training loop does on a CPU
    lengths_all, rows = book_lengths(20000, args.max_len, seed=0), []
    torch.set_num_threads(1)
    for v in variants:
        mm = matmul_gflops(args.batch, args.embed, args.hidden, torch.device(args.device))  # side by side
        rows.append({**step_variant(v, args, lengths_all), "matmul_gflops_per_s": round(mm, 2)})
        rows[-1]["fraction_of_matmul"] = round(rows[-1]["gru_gflops_per_s"] / mm, 3)
    sizes = {k: getattr(args, k) for k in ("device", "batch", "embed", "hidden", "vocab")}
    _bench.emit([{**sizes, "mean_tokens": round(float(lengths_all.mean()), 1), "rows": rows}])
    b = rows[0]
    print(
        f"QT {args.encoder} step on {args.device} at batch {args.batch}: {b['sentences_per_s']} sentences/s "
        f"({b['variant']}, {b['threads']} thread), {b['gru_gflops_per_s']} GFLOP/s of GRU matmuls = "
        f"{100 * b['fraction_of_matmul']:.0f}% of torch.mm's {b['matmul_gflops_per_s']} GFLOP/s; "
        + ", ".join(f"{r['variant']} {r['sentences_per_s'] / b['sentences_per_s']:.2f}x" for r in rows[1:])
    )


main = _bench.main_of(__name__)  # its cases: each NAME_arguments(parser) with its NAME(args)


if __name__ == "__main__":
    sys.exit(main())
