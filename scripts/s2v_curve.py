"""Quick-Thoughts at S2V's width (configs/qt_s2v.yaml): its controls, its precisions, its learning curve.

Subcommands (each writes its results as it goes, so a run stopped at a deadline keeps what it did):

* ``prepare``: the config's books split and tokenized into the run folder's cache (what ``precision``
  and ``curve`` then read without tokenizing).
* ``controls``: the curve's reference lines, on a CPU. The tokenizer that training on the config fits
  (built by the training code itself, ``qt_hard.text.build.build_run``: cased, the config's books,
  ``data.max_vocab`` words), then two untrained encoders on that tokenizer: the config's own
  architecture (the bidirectional GRU pair, 2,400-d) and a 2,400-d bag of words (``random:bow2400``),
  each on the six tasks under the SentEval protocol (``qt-hard eval senteval``'s solver, 10 folds, seed
  1111). Writes ``--output`` (JSON: per row the task results, the six-task mean, the wall time and the
  machine, date, commit, torch threads and command of the run that made it; the tokenizer's SHA-1). A
  row already in ``--output`` for the same tokenizer and protocol is kept, so the rows may be computed
  one at a time (``--rows``).
* ``precision``: the config's training speed in float32, TF32 and bf16 (``train.tf32`` /
  ``train.mixed_precision``), ``--steps`` (200) steps each from the same seed on the same batches
  through the library's loop, and whether each precision's loss stays within ``--tolerance`` of
  float32's: the mean of its logged losses over those steps may differ from float32's by at most
  that fraction (default 0.01, 1%). Rate: sentences/s of the median step after ``--warmup`` steps.
  Writes ``OUT/precision.jsonl`` (a row per precision) and ``OUT/precision_choice.json`` (the
  fastest precision that passed, its rate, and the steps that rate fits into ``--budget-s``).
* ``curve``: uniform Quick-Thoughts with the config trained to ``--steps`` in ``--points`` segments
  (each resumed from the previous one's checkpoint: the same run as one of ``--steps`` steps), and at
  the end of each segment the six tasks (SentEval protocol, the solver on ``--eval-device``, in float32
  without TF32 whatever the training's precision) and the held-out next-sentence accuracy of
  ``scripts/qt_heldout.py`` on the books the config leaves out. Writes ``OUT/curve.csv`` (a row per
  point: ``step``, the six-task mean, per-task accuracies, the held-out top-1 and uniform loss, the
  training loss, and the two control means of ``--controls`` as columns) and ``OUT/curve.png``.
* ``plot``: the figure of a curve CSV.

    python scripts/s2v_curve.py controls --output results/s2v_controls.json
    python scripts/s2v_curve.py precision --out runs/s2v
    python scripts/s2v_curve.py curve --out runs/s2v --steps 3000 --precision tf32 --eval-device cuda

``scripts/device_s2v.sh`` runs ``precision`` and ``curve`` on a GPU machine under their deadlines.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASKS = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")
PRECISIONS = {  # name -> config overrides
    "fp32": ["train.tf32=false", "train.mixed_precision=no"],
    "tf32": ["train.tf32=true", "train.mixed_precision=no"],
    "bf16": ["train.tf32=false", "train.mixed_precision=bf16"],
}
CONTROL_ROWS = ("untrained", "bow2400")


# ---------------------------------------------------------------------------- shared


def machine() -> str:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"cpu ({os.cpu_count()} cores, {platform.node()})"


def commit() -> str:
    env = os.environ.get("QT_HARD_GIT_COMMIT")
    if env:
        return env
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        )
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if head.returncode == 0 else "unknown"
    except OSError:
        return "unknown"


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def shown(path) -> str:
    """``path`` relative to the checkout when it lies inside it (results files name no machine's folders)."""
    p = Path(path).resolve()
    return p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else str(path)


def vocab_sha1(tokenizer) -> str:
    """SHA-1 of the vocabulary in id order: two tokenizers with the same value give every word the
    same id (the normalizer and pre-tokenizer are fixed by ``TOKENIZER_VERSION``)."""
    return hashlib.sha1("\n".join(tokenizer.vocab().itos).encode("utf-8")).hexdigest()


def load_cfg(args, extra=()):
    from qt_hard.training.config import load_config

    return load_config(args.config, [*args.set, f"out_dir={args.out}", *extra])


def senteval(encoder, tasks, data_dir, kfold: int, batch_size: int = 128) -> dict:
    from qt_hard.evaluation.report import six_task_mean
    from qt_hard.evaluation.senteval import run_senteval

    res = run_senteval(encoder, tasks, data_dir, kfold=kfold, seed=1111, fast=True, batch_size=batch_size, log=log)
    return {"results": res, "six_task_mean": six_task_mean(res)}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- prepare


def cmd_prepare(args) -> int:
    """The config's sentences split and tokenized into the run folder's cache (what training reads)."""
    from qt_hard.text.build import build_run

    t0 = time.perf_counter()
    cfg = load_cfg(args)
    run = build_run(cfg, Path(args.out))
    tok = run.make_encoder(run.module).featurizer.tokenizer
    print(
        f"prepared {args.out}: {run.task.n} sentences, {run.task.batches_per_epoch()} batches an epoch, "
        f"vocabulary {len(tok.vocab().itos)} (sha1 {vocab_sha1(tok)[:12]}), {time.perf_counter() - t0:.0f}s"
    )
    return 0


# ---------------------------------------------------------------------------- controls


def cmd_controls(args) -> int:
    import torch

    from qt_hard.encoders import random_encoder
    from qt_hard.paths import data_path
    from qt_hard.text.build import build_run
    from qt_hard.training.config import to_dict

    cfg = load_cfg(args)
    data_dir = Path(args.data) if args.data else data_path("senteval")
    t0 = time.perf_counter()
    run = build_run(cfg, Path(args.out))  # the tokenizer training fits, by the training code
    tok = run.make_encoder(run.module).featurizer.tokenizer
    del run
    Path(args.out).mkdir(parents=True, exist_ok=True)
    tok.save(Path(args.out) / "tokenizer.json")
    payload = {
        "kind": "s2v_controls",
        "config": shown(args.config),
        "overrides": args.set,
        "tokenizer_sha1": vocab_sha1(tok),
        "vocab_size": len(tok.vocab().itos),
        "tokenizer_seconds": round(time.perf_counter() - t0, 1),
        "protocol": {"name": "senteval", "kfold": args.kfold, "seed": 1111, "classifier": "batched-newton"},
        "device": machine(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "commit": commit(),
        "date": today(),
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "rows": {},
    }
    provenance = ("device", "torch", "threads", "commit", "date", "command")
    if args.output and Path(args.output).is_file():  # rows of an earlier run of the same setup stay
        old = json.loads(Path(args.output).read_text())
        if old.get("tokenizer_sha1") == payload["tokenizer_sha1"] and old.get("protocol") == payload["protocol"]:
            payload["rows"] = old.get("rows", {})
            for kept in payload["rows"].values():  # each row keeps the provenance of the run that made it
                for key in provenance:
                    kept.setdefault(key, old.get(key))
    specs = {
        "untrained": (f"untrained {cfg.model.kind}-{cfg.model.encoder}", to_dict(cfg)),
        "bow2400": ("random:bow2400", "bow2400"),
    }
    for key in args.rows:
        name, spec = specs[key]
        enc = random_encoder(spec, tokenizer=tok, seed=cfg.train.seed)
        log(f"control row {name}: {enc.dim}-d")
        t1 = time.perf_counter()
        row = senteval(enc, args.tasks, data_dir, args.kfold, args.batch_size)
        row.update(name=name, dim=enc.dim, wall_s=round(time.perf_counter() - t1, 1))
        row.update({key: payload[key] for key in provenance})
        payload["rows"][key] = row
        if args.output:
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            Path(args.output).write_text(json.dumps(payload, indent=1) + "\n")
        mean = row["six_task_mean"]
        log(f"{name}: six-task mean {mean:.2f}" if mean is not None else f"{name}: {len(row['results'])} task(s)")
    means = {payload["rows"][k]["name"]: payload["rows"][k]["six_task_mean"] for k in payload["rows"]}
    print(
        "controls of "
        + shown(args.config)
        + ": "
        + ", ".join(f"{n} {m if m is None else round(m, 2)}" for n, m in means.items())
    )
    return 0


# ---------------------------------------------------------------------------- precision


def train_timed(cfg, resume: bool = False, overwrite: bool = False) -> list[float]:
    """Train per ``cfg`` through the library's loop; the clock reading after every step. A run stopped
    by SIGTERM / SIGINT (a deadline's ``timeout``) raises the loop's ``Stopped`` after its checkpoint,
    so that nothing is evaluated or recorded as if it had finished."""
    from qt_hard.training.loop import train

    stamps: list[float] = []
    on_step = lambda step, loss: stamps.append(time.perf_counter())  # noqa: E731
    train(cfg, resume=resume, overwrite=overwrite, on_step=on_step, raise_on_stop=True)
    return stamps


def logged_losses(out: Path) -> list[tuple[int, float]]:
    with open(out / "metrics.csv") as fh:
        return [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(fh)]


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def precision_row(args, name: str) -> dict:
    """One precision's run: ``args.steps`` steps of the config through the loop (a process of its own:
    accelerate fixes the mixed precision of a process at its first ``Accelerator``)."""
    import torch

    extra = [*PRECISIONS[name], f"train.steps={args.steps}", "train.log_every=10", "train.trackers=[csv]"]
    extra += ["train.progress=false", "train.checkpoint_every=0"]
    cfg = load_cfg(args, extra)
    t0 = time.perf_counter()
    stamps = train_timed(cfg, overwrite=True)
    steps = [b - a for a, b in zip(stamps[args.warmup :], stamps[args.warmup + 1 :])]
    losses = [v for _, v in logged_losses(Path(args.out))]
    return {
        "precision": name,
        "sentences_per_s": round(cfg.train.batch_size / statistics.median(steps), 1),
        "batch_size": cfg.train.batch_size,
        "steps": args.steps,
        "mean_loss": round(statistics.mean(losses), 5),
        "losses": [round(v, 4) for v in losses],
        "wall_s": round(time.perf_counter() - t0, 1),
        "device": machine(),
        "torch": torch.__version__,
        "commit": commit(),
        "date": today(),
    }


def compare_precisions(rows: list[dict], tolerance: float) -> list[dict]:
    """Each row against float32's: ``rel_diff_mean_loss`` = |mean loss - float32's| / float32's (the
    means over the same logged steps), ``passed`` when it is at most ``tolerance``; float32 passes by
    definition, and nothing passes without a float32 row to compare with."""
    ref = next((r for r in rows if r["precision"] == "fp32"), None)
    for r in rows:
        if ref is None:
            r["passed"] = False
            continue
        rel = abs(r["mean_loss"] - ref["mean_loss"]) / abs(ref["mean_loss"])
        windows = [abs(a - b) / abs(b) for a, b in zip(r["losses"], ref["losses"])]
        r.update(
            rel_diff_mean_loss=round(rel, 5),
            max_rel_diff_window=round(max(windows, default=0.0), 5),
            tolerance=tolerance,
            passed=bool(rel <= tolerance),
        )
    return rows


def cmd_precision(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.child:  # torch is imported here only: the parent stays light
        import torch

        if not torch.cuda.is_available() and not args.allow_cpu:
            raise SystemExit("error: precision needs CUDA (TF32 is a GPU setting); --allow-cpu runs it anyway")
        print(json.dumps(precision_row(args, args.precisions[0])))
        return 0
    rows_file = out / "precision.jsonl"
    rows_file.unlink(missing_ok=True)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    rows = []
    for name in args.precisions:
        cmd = [sys.executable, __file__, "precision", "--child", "--precisions", name, "--config", args.config]
        cmd += ["--out", args.out, "--steps", str(args.steps), "--warmup", str(args.warmup), "--set", *args.set]
        if args.allow_cpu:
            cmd.append("--allow-cpu")
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        try:
            stdout, _ = child.communicate()
        except BaseException:  # a deadline's SIGTERM (below) or Ctrl-C: the child's run ends with us
            child.terminate()
            child.wait(timeout=60)
            raise
        if child.returncode != 0:
            log(f"{name}: the run failed (exit {child.returncode})")
            continue
        rows.append(json.loads(stdout.strip().splitlines()[-1]))
        compare_precisions(rows, args.tolerance)
        rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        r = rows[-1]
        log(f"{name}: {r['sentences_per_s']:.0f} sentences/s, mean loss {r['mean_loss']:.4f}, passed {r['passed']}")
    passed = [r for r in rows if r["passed"]]
    if not passed:
        raise SystemExit("error: no precision passed (did float32 run?)")
    best = max(passed, key=lambda r: r["sentences_per_s"])
    fit = int(best["sentences_per_s"] * args.budget_s // best["batch_size"])
    choice = {k: best[k] for k in ("precision", "sentences_per_s", "batch_size")}
    choice.update(budget_s=args.budget_s, steps=max(args.points, fit - fit % args.points), tolerance=args.tolerance)
    (out / "precision_choice.json").write_text(json.dumps(choice) + "\n")
    print(
        "precision: "
        + ", ".join(f"{r['precision']} {r['sentences_per_s']:.0f}/s{'' if r['passed'] else ' (failed)'}" for r in rows)
        + f"; chosen {best['precision']}, {choice['steps']} steps in {args.budget_s:.0f} s"
    )
    return 0


# ---------------------------------------------------------------------------- curve

CURVE_COLUMNS = [
    "step",
    "sentences_seen",
    "epoch",
    "train_loss",
    "six_task_mean",
    *TASKS,
    "MRPC_f1",
    "heldout_next_top1",
    "heldout_uniform_loss",
    "control_untrained_mean",
    "control_bow2400_mean",
    "precision",
    "train_s",
    "eval_s",
    "tokenizer_sha1",
    "controls_same_tokenizer",
    "device",
    "commit",
    "date",
]


def held_out_range(cfg, args) -> tuple[int, int]:
    """The held-out books: --heldout FIRST,LAST, else the config's excluded books (one run of them)."""
    if args.heldout:
        first, last = (int(x) for x in args.heldout.split(","))
        return first, last
    ex = cfg.data.exclude_books or []
    if not ex or ex != list(range(ex[0], ex[-1] + 1)):
        raise SystemExit(
            "error: --heldout FIRST,LAST is needed: the config's data.exclude_books is not one run of books"
        )
    return ex[0], ex[-1] + 1


def read_controls(path) -> dict:
    if not path or not Path(path).is_file():
        return {}
    return json.loads(Path(path).read_text())


def cmd_curve(args) -> int:
    import importlib.util

    import torch

    import qt_hard
    from qt_hard.evaluation import logreg
    from qt_hard.paths import data_path
    from qt_hard.training.loop import Stopped

    spec = importlib.util.spec_from_file_location("qt_heldout", ROOT / "scripts" / "qt_heldout.py")
    qt_heldout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(qt_heldout)

    out = Path(args.out)
    if args.steps < args.points:
        raise SystemExit(f"error: --steps {args.steps} is fewer than --points {args.points}")
    logreg.DEFAULT_DEVICE = logreg.check_device(args.eval_device, "--eval-device")
    data_dir = Path(args.data) if args.data else data_path("senteval")
    controls = read_controls(args.controls)
    points = [round(args.steps * (k + 1) / args.points) for k in range(args.points)]
    base = [*PRECISIONS[args.precision], "train.trackers=[csv]", "train.progress=false", "train.checkpoint_every=0"]
    base += ["train.keep_checkpoints=1"]
    cfg = load_cfg(args, [*base, f"train.steps={points[0]}"])
    first, last = held_out_range(cfg, args)
    books = cfg.data.path or str(data_path("books"))
    held = qt_heldout.HeldOut(first, last, root=books, cache=out / "cache" / "books")  # training's book cache
    csv_path = out / "curve.csv"
    start = time.monotonic()
    train_s, last_cost = 0.0, 0.0
    out.mkdir(parents=True, exist_ok=True)
    with open(csv_path, "w", newline="") as fh:
        csv.DictWriter(fh, CURVE_COLUMNS).writeheader()
    for k, step in enumerate(points):
        if args.deadline_s and time.monotonic() - start + last_cost > args.deadline_s:
            log(f"deadline: the point at step {step} would end after {args.deadline_s:.0f} s; stopped")
            break
        t0 = time.monotonic()
        cfg = load_cfg(args, [*base, f"train.steps={step}"])
        try:
            train_timed(cfg, resume=k > 0, overwrite=k == 0)
        except Stopped as err:
            log(f"{err}: the point at step {step} is not recorded")
            break
        t1 = time.monotonic()
        train_s += t1 - t0
        if torch.cuda.is_available():  # the evaluation in full float32 whatever the training's precision
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        enc = qt_hard.load_encoder(out / "final", device=args.eval_device)
        res = senteval(enc, args.tasks, data_dir, args.kfold, args.batch_size)
        ho = held.score(enc)
        sha = vocab_sha1(enc.featurizer.tokenizer)
        del enc
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        t2 = time.monotonic()
        last_cost = (
            (t2 - t0) * (points[k + 1] - step) / max(1, step - (points[k - 1] if k else 0))
            if k + 1 < len(points)
            else 0
        )
        losses = logged_losses(out)
        with open(out / "metrics.csv") as mf:
            epoch = [row["epoch"] for row in csv.DictReader(mf)][-1:] or [""]
        r = res["results"]
        row = {
            "step": step,
            "sentences_seen": step * cfg.train.batch_size,
            "epoch": epoch[0],
            "train_loss": round(losses[-1][1], 5) if losses else "",
            "six_task_mean": "" if res["six_task_mean"] is None else round(res["six_task_mean"], 3),
            **{t: round(r[t]["acc"], 2) if t in r else "" for t in TASKS},
            "MRPC_f1": round(r["MRPC"]["f1"], 2) if "MRPC" in r else "",
            "heldout_next_top1": ho["next_top1"],
            "heldout_uniform_loss": ho["uniform_loss"],
            "precision": args.precision,
            "train_s": round(train_s, 1),
            "eval_s": round(t2 - t1, 1),
            "tokenizer_sha1": sha,
            "controls_same_tokenizer": bool(controls) and controls.get("tokenizer_sha1") == sha,
            "device": machine(),
            "commit": commit(),
            "date": today(),
        }
        for key in CONTROL_ROWS:
            m = controls.get("rows", {}).get(key, {}).get("six_task_mean")
            row[f"control_{key}_mean"] = "" if m is None else round(m, 3)
        with open(csv_path, "a", newline="") as fh:
            csv.DictWriter(fh, CURVE_COLUMNS).writerow(row)
        log(
            f"step {step}: six-task mean {row['six_task_mean']}, held-out top-1 {ho['next_top1']}, "
            f"train {t1 - t0:.0f}s, eval {t2 - t1:.0f}s"
        )
    plot(csv_path, out / "curve.png")
    rows = list(csv.DictReader(open(csv_path)))
    if rows:
        lastrow = rows[-1]
        print(
            f"s2v curve: step {lastrow['step']} six-task mean {lastrow['six_task_mean']} (controls: untrained "
            f"{lastrow['control_untrained_mean'] or '-'}, bow2400 {lastrow['control_bow2400_mean'] or '-'}), "
            f"held-out top-1 {lastrow['heldout_next_top1']}"
        )
    return 0


def plot(csv_path, png) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(open(csv_path)))
    if not rows:
        return
    steps = [int(r["step"]) for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    mean = [float(r["six_task_mean"]) if r["six_task_mean"] else float("nan") for r in rows]
    a.plot(steps, mean, "o-", label="qt_s2v (uniform)")
    for key, style in (("untrained", "--"), ("bow2400", ":")):
        v = rows[-1][f"control_{key}_mean"]
        if v:
            a.axhline(float(v), ls=style, color="gray", label=f"control: {key}")
    a.set_xlabel("step")
    a.set_ylabel("six-task mean accuracy (%)")
    a.legend(fontsize=7)
    b.plot(steps, [float(r["heldout_next_top1"]) for r in rows], "o-", color="C1")
    b.set_xlabel("step")
    b.set_ylabel("held-out next-sentence top-1")
    fig.suptitle(f"configs/qt_s2v.yaml, {rows[-1]['precision']}, {rows[-1]['device']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)


def cmd_plot(args) -> int:
    plot(args.csv, args.png)
    print(f"wrote {args.png}")
    return 0


# ---------------------------------------------------------------------------- main


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(s, out_default):
        s.add_argument("--config", default=str(ROOT / "configs" / "qt_s2v.yaml"))
        s.add_argument("--set", nargs="*", default=[], help="config overrides, e.g. data.max_books=20")
        s.add_argument("--out", default=out_default, help="run folder (its cache/ holds the tokens)")

    def evaluation(s):
        s.add_argument("--tasks", default=",".join(TASKS), type=lambda v: [t for t in v.split(",") if t])
        s.add_argument("--kfold", type=int, default=10)
        s.add_argument("--batch-size", type=int, default=128, help="encoding batch size")
        s.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")

    a = sub.add_parser("prepare", help="split and tokenize the config's books into the run folder's cache")
    common(a, "runs/s2v")
    a.set_defaults(func=cmd_prepare)

    c = sub.add_parser("controls", help="the untrained controls on the config's tokenizer (CPU)")
    common(c, "runs/s2v_controls")
    evaluation(c)
    c.add_argument("--rows", default=",".join(CONTROL_ROWS), type=lambda v: [r for r in v.split(",") if r])
    c.add_argument("--output", default=None, help="JSON results (results/s2v_controls.json)")
    c.set_defaults(func=cmd_controls)

    r = sub.add_parser("precision", help="sentences/s in float32, TF32, bf16 and the loss check")
    common(r, "runs/s2v")
    r.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=list(PRECISIONS))
    r.add_argument("--steps", type=int, default=200)
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--tolerance", type=float, default=0.01, help="largest relative difference of the mean loss")
    r.add_argument("--budget-s", type=float, default=360.0, help="training seconds the curve's steps fit into")
    r.add_argument("--points", type=int, default=3, help="the chosen steps are a multiple of this")
    r.add_argument("--allow-cpu", action="store_true", help="run without CUDA (the dry run)")
    r.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    r.set_defaults(func=cmd_precision)

    u = sub.add_parser("curve", help="train in segments, evaluate each point")
    common(u, "runs/s2v")
    evaluation(u)
    u.add_argument("--steps", type=int, required=True)
    u.add_argument("--points", type=int, default=3)
    u.add_argument("--precision", choices=list(PRECISIONS), default="fp32")
    u.add_argument("--eval-device", default="cpu")
    u.add_argument("--controls", default=str(ROOT / "results" / "s2v_controls.json"))
    u.add_argument("--heldout", default=None, help="FIRST,LAST held-out books (default: data.exclude_books)")
    u.add_argument("--deadline-s", type=float, default=0.0, help="start no point that would end after this")
    u.set_defaults(func=cmd_curve)

    q = sub.add_parser("plot", help="the figure of a curve CSV")
    q.add_argument("csv")
    q.add_argument("png")
    q.set_defaults(func=cmd_plot)

    args = p.parse_args(argv)
    if hasattr(args, "tasks"):
        bad = sorted(set(args.tasks) - set(TASKS))
        if bad:
            p.error(f"--tasks: unknown task(s) {bad}; known: {','.join(TASKS)}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
