"""Quick-Thoughts at S2V's width (``configs/qt_s2v.yaml``): its controls, its precisions and its learning
curve, three experiments of the grid command, each writing its records as each cell ends (a command
stopped at a deadline keeps what it did).

    qt-hard grid run s2v-controls --out runs/s2v_controls [--rows untrained,bow2400] [--workers 2]
    qt-hard grid run s2v-curve --out runs/s2v --prepare-only
    qt-hard grid run s2v-precision --out runs/s2v [--rows fp32,tf32,bf16] [--steps 200]
    qt-hard grid run s2v-curve --out runs/s2v --steps 3000 --precision tf32 --eval-device cuda

What each one runs and the files it writes: docs/cli.md (``qt-hard grid run s2v-controls`` and the two
after it). ``scripts/device_s2v.sh`` runs them on a GPU machine under their deadlines.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import platform
import statistics
import time
from pathlib import Path

from qt_hard.evaluation.datasets import TASKS
from qt_hard.errors import ArgumentError
from qt_hard.experiments import report
from qt_hard.experiments.contract import Cell, Context, Experiment
from qt_hard.experiments.grid import Row, by_name, comma_list
from qt_hard.experiments.runner import read_metrics

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[3]
PRECISIONS = by_name(
    Row("fp32", ("train.tf32=false", "train.mixed_precision=no")),
    Row("tf32", ("train.tf32=true", "train.mixed_precision=no")),
    Row("bf16", ("train.tf32=false", "train.mixed_precision=bf16")),
)


# A control row: an untrained ``changes["encoder"]`` on the config's tokenizer: ``"config"`` (the config's
# own architecture) or a built-in random encoder (``bow2400``, named ``random:bow2400``).
CONTROLS = by_name(Row("untrained", {"encoder": "config"}), Row("bow2400", {"encoder": "bow2400"}))
PROTOCOL = {"name": "senteval", "seed": 1111, "classifier": "batched-newton"}  # and the command's kfold
PROVENANCE = ("device", "torch", "threads", "commit", "date", "command")
PRECISION_FIELDS = ("precision", "sentences_per_s", "batch_size", "steps", "mean_loss", "losses", "wall_s")
PRECISION_FIELDS += ("device", "torch", "commit", "date")
CURVE_COLUMNS = ["step", "sentences_seen", "epoch", "train_loss", "six_task_mean", *TASKS, "MRPC_f1"]
CURVE_COLUMNS += ["heldout_next_top1", "heldout_uniform_loss", "control_untrained_mean", "control_bow2400_mean"]
CURVE_COLUMNS += ["precision", "train_s", "eval_s", "tokenizer_sha1", "controls_same_tokenizer", "device"]
CURVE_COLUMNS += ["commit", "date"]


# ------------------------------------------------------------------------------------------ shared
def stamp() -> dict:
    """Where and when a record was made: the device (the GPU's name, else the CPU's cores and host), torch's
    version and threads, the checkout's commit and the UTC time."""
    import torch

    from qt_hard.experiments.ledger import git_commit

    gpu = torch.cuda.is_available()
    device = torch.cuda.get_device_name(0) if gpu else f"cpu ({os.cpu_count()} cores, {platform.node()})"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rec = {"device": device, "torch": torch.__version__, "threads": torch.get_num_threads()}
    return {**rec, "commit": git_commit(ROOT), "date": date}


def command_line() -> str:
    """The command as typed (``qt-hard ...``), for the records."""
    import shlex
    import sys

    return shlex.join(["qt-hard", *sys.argv[1:]])


def vocab_sha1(tokenizer) -> str:
    """SHA-1 of the vocabulary in id order: two tokenizers with the same value give every word the
    same id (the normalizer and pre-tokenizer are fixed by ``TOKENIZER_VERSION``)."""
    return hashlib.sha1("\n".join(tokenizer.vocab().itos).encode("utf-8")).hexdigest()


def load_cfg(config: str, overrides, out, extra=()):
    from qt_hard.training.config import load_config

    return load_config(config, [*overrides, f"out_dir={out}", *extra])


def senteval(encoder, args) -> dict:
    """The tasks of ``--tasks`` under SentEval's protocol (``--kfold`` folds, seed 1111)."""
    from qt_hard.evaluation.report import six_task_mean
    from qt_hard.evaluation.senteval import run_senteval

    data = Path(args.data) if args.data else None
    res = run_senteval(encoder, args.tasks, data, kfold=args.kfold, seed=1111, batch_size=args.batch_size, log=log.info)
    return {"results": res, "six_task_mean": six_task_mean(res)}


def prepare_run(config: str, overrides, out: Path) -> tuple:
    """The config's data split and tokenized into ``out/cache`` (what training reads; reused when it is
    there) by the training code itself; (the run, its tokenizer, seconds)."""
    from qt_hard.text.build import build_run

    t0 = time.perf_counter()
    run = build_run(load_cfg(config, overrides, out), Path(out))
    return run, run.make_encoder(run.module).featurizer.tokenizer, round(time.perf_counter() - t0, 1)


def _tasks(text: str) -> list[str]:
    tasks = comma_list(text)
    bad = sorted(set(tasks) - set(TASKS))
    if bad or not tasks:
        raise ArgumentError(f"--tasks: unknown task(s) {bad}; known: {','.join(TASKS)}")
    return tasks


class _S2V(Experiment):
    """The options every part takes: the config, its overrides, and (``evaluates``) SentEval's."""

    seeds = ""
    evaluates = True

    def add_arguments(self, parser) -> None:
        parser.add_argument("--config", default="configs/qt_s2v.yaml", help="the training config")
        parser.add_argument(
            "--set", nargs="*", default=[], metavar="section.key=value", help="config overrides, e.g. data.max_books=20"
        )
        if self.evaluates:
            parser.add_argument("--tasks", default=",".join(TASKS), help="SentEval tasks, comma-separated")
            parser.add_argument("--kfold", type=int, default=10, help="SentEval's outer folds")
            parser.add_argument("--batch-size", type=int, default=128, help="encoding batch size")
            parser.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")

    def check(self, args) -> None:
        if self.evaluates:
            args.tasks = _tasks(args.tasks) if isinstance(args.tasks, str) else args.tasks
            if args.kfold < 2:
                raise ArgumentError(f"--kfold {args.kfold}: give at least 2")
        load_cfg(args.config, args.set, args.out)  # the file, its keys and values

    def cells(self, args, rows, seeds) -> list[Cell]:
        return [Cell((row,)) for row in rows]


# ------------------------------------------------------------------------------------------ controls
def control_row(args, out: Path, name: str) -> dict:
    """One control: its encoder on ``OUT/tokenizer.json`` and the tasks; the record."""
    from qt_hard.data.wordlevel import WordTokenizer
    from qt_hard.encoders import random_encoder
    from qt_hard.training.config import to_dict

    cfg = load_cfg(args.config, args.set, out)
    tok = WordTokenizer.load(out / "tokenizer.json")
    spec = CONTROLS[name].changes["encoder"]
    label, spec = (
        (f"untrained {cfg.model.kind}-{cfg.model.encoder}", to_dict(cfg))
        if spec == "config"
        else (f"random:{spec}", spec)
    )
    enc = random_encoder(spec, tokenizer=tok, seed=cfg.train.seed)
    log.info("control row %s: %d-d", label, enc.dim)
    t0 = time.perf_counter()
    rec = {"row": name, **senteval(enc, args), "name": label, "dim": enc.dim}
    rec.update(wall_s=round(time.perf_counter() - t0, 1), **args.tokenizer_info)
    return {**rec, **stamp(), "command": args.command_line}


def controls_document(records: list[dict], setup: dict) -> dict:
    """``s2v_controls.json``: the setup, the tokenizer, the provenance of the newest record's run, and
    per row its results with the provenance of the run that made it."""
    newest = max(records, key=lambda r: r["date"])
    protocol = setup["protocol"]
    doc = {"kind": "s2v_controls", "config": setup["config"], "overrides": setup["overrides"]}
    doc.update({k: newest[k] for k in ("tokenizer_sha1", "vocab_size", "tokenizer_seconds")})
    doc["protocol"] = {k: protocol[k] for k in ("name", "kfold", "seed", "classifier")}
    doc.update({k: newest[k] for k in PROVENANCE})
    keys = ("results", "six_task_mean", "name", "dim", "wall_s", *PROVENANCE)
    by = {r["row"]: r for r in records}
    doc["rows"] = {row: {k: by[row][k] for k in keys} for row in CONTROLS if row in by}
    return doc


def task_cells(results: dict, mean) -> list[str]:
    return [f"{results[t]['acc']:.1f}" if t in results else "–" for t in TASKS] + [
        "–" if mean is None else f"{mean:.2f}"
    ]


class Controls(_S2V):
    """The untrained controls on the config's tokenizer (docs/cli.md)."""

    name = "s2v-controls"
    help = "Quick-Thoughts at S2V's width: the untrained controls on its tokenizer, six tasks"
    key = ("row",)
    fields = ("results", "six_task_mean", "name", "dim", "tokenizer_sha1")
    ledger_name = "controls.jsonl"
    default_out = "runs/s2v_controls"
    rows = tuple(CONTROLS)
    row_table = CONTROLS

    def setup(self, args, out: Path) -> dict:
        protocol = {**PROTOCOL, "kfold": args.kfold}
        return {"config": args.config, "overrides": list(args.set), "protocol": protocol, "tasks": args.tasks}

    def prepare(self, args, out: Path, todo: list[Cell]) -> None:
        """The tokenizer training fits, by the training code, saved once for the rows."""
        run, tok, seconds = prepare_run(args.config, args.set, out)
        del run
        tok.save(out / "tokenizer.json")
        args.tokenizer_info = {"tokenizer_sha1": vocab_sha1(tok), "vocab_size": len(tok.vocab().itos)}
        args.tokenizer_info["tokenizer_seconds"] = seconds
        args.command_line = command_line()

    def run(self, cell: Cell, ctx: Context) -> dict:
        args, out = ctx.args, ctx.out
        return control_row(args, out, cell.claim[0])

    def tables(self, records, setup, out: Path) -> dict[str, str]:
        if not records:
            return {}
        doc = controls_document(records, setup)
        body = [[f"{k} ({r['name']})", *task_cells(r["results"], r["six_task_mean"])] for k, r in doc["rows"].items()]
        head = ["control", *TASKS, "mean"]
        caption = f"Test accuracy (%), SentEval's protocol, {doc['protocol']['kfold']} folds; tokenizer "
        caption += f"{doc['tokenizer_sha1'][:12]} ({doc['vocab_size']} rows) of {doc['config']}."
        md = "\n".join([caption, "", *report.markdown_table(head, body, "l" + "r" * 7)])
        return {"s2v_controls.md": md, "s2v_controls.json": json.dumps(doc, indent=1)}

    def progress(self, record: dict) -> str:
        mean = record["six_task_mean"]
        done = f"six-task mean {mean:.2f}" if mean is not None else f"{len(record['results'])} task(s)"
        return f"{record['name']}: {done}"


# ------------------------------------------------------------------------------------------ precision
def precision_row(job: dict) -> dict:
    """One precision's run: ``steps`` steps of the config through the loop into ``out`` (in a process
    of its own, :meth:`Precision.run`)."""
    from qt_hard.training.loop import train

    extra = [*PRECISIONS[job["precision"]].changes, f"train.steps={job['steps']}", "train.log_every=10"]
    extra += ["train.trackers=[csv]", "train.progress=false", "train.checkpoint_every=0"]
    cfg = load_cfg(job["config"], job["overrides"], job["out"], extra)
    t0 = time.perf_counter()
    stamps: list[float] = []
    train(cfg, overwrite=True, on_step=lambda step, loss: stamps.append(time.perf_counter()), raise_on_stop=True)
    warm = job["warmup"]
    steps = [b - a for a, b in zip(stamps[warm:], stamps[warm + 1 :])]
    losses = [float(r["loss"]) for r in read_metrics(job["out"])]
    return {
        "precision": job["precision"],
        "sentences_per_s": round(cfg.train.batch_size / statistics.median(steps), 1),
        "batch_size": cfg.train.batch_size,
        "steps": job["steps"],
        "mean_loss": round(statistics.mean(losses), 5),
        "losses": [round(v, 4) for v in losses],
        "wall_s": round(time.perf_counter() - t0, 1),
        **{k: v for k, v in stamp().items() if k != "threads"},
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


def choice(rows: list[dict], budget_s: float, points: int, tolerance: float) -> dict | None:
    """The fastest precision that passed, and the steps (a multiple of ``points``) its rate fits into
    ``budget_s``; None when none passed."""
    passed = [r for r in rows if r["passed"]]
    if not passed:
        return None
    best = max(passed, key=lambda r: r["sentences_per_s"])
    fit = int(best["sentences_per_s"] * budget_s // best["batch_size"])
    picked = {k: best[k] for k in ("precision", "sentences_per_s", "batch_size")}
    return {**picked, "budget_s": budget_s, "steps": max(points, fit - fit % points), "tolerance": tolerance}


class Precision(_S2V):
    """The config's rate and loss in each precision (docs/cli.md)."""

    name = "s2v-precision"
    help = "Quick-Thoughts at S2V's width: sentences/s in float32, TF32 and bf16, and the loss check"
    key = ("precision",)
    fields = PRECISION_FIELDS[1:]
    ledger_name = "precision_runs.jsonl"
    default_out = "runs/s2v"
    rows = tuple(PRECISIONS)
    row_table = PRECISIONS
    evaluates = False

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--steps", type=int, default=200, help="training steps of each precision")
        parser.add_argument("--warmup", type=int, default=10, help="steps left out of the rate")
        parser.add_argument(
            "--tolerance", type=float, default=0.01, help="largest relative difference of the mean loss"
        )
        parser.add_argument("--budget-s", type=float, default=360.0, help="training seconds the curve's steps fit into")
        parser.add_argument("--points", type=int, default=3, help="the chosen steps are a multiple of this")
        parser.add_argument("--allow-cpu", action="store_true", help="run without CUDA (the dry run)")

    def check(self, args) -> None:
        if args.workers != 1:
            raise ArgumentError(f"--workers {args.workers}: the precisions are timed one at a time; give 1")
        if args.steps < args.warmup + 2 or args.warmup < 0:
            raise ArgumentError(f"--steps {args.steps}: give at least --warmup + 2 ({args.warmup + 2})")
        if args.points < 1:
            raise ArgumentError(f"--points {args.points}: give at least 1")
        super().check(args)
        import torch

        if not torch.cuda.is_available() and not args.allow_cpu:
            raise ArgumentError("s2v-precision needs CUDA (TF32 is a GPU setting); --allow-cpu runs it anyway")

    def setup(self, args, out: Path) -> dict:
        return {"config": args.config, "overrides": list(args.set), "steps": args.steps, "warmup": args.warmup}

    def run(self, cell: Cell, ctx: Context) -> dict | None:
        args, out = ctx.args, ctx.out
        job = {"precision": cell.claim[0], "config": args.config, "overrides": list(args.set), "out": str(out)}
        from qt_hard.workers import process_pool, stop_pool

        pool = process_pool(1)  # a process of its own: accelerate fixes its mixed precision at its first Accelerator
        try:
            return pool.submit(precision_row, {**job, "steps": args.steps, "warmup": args.warmup}).result()
        except Exception as err:  # no record: the next precision runs
            log.info("%s: the run failed: %s: %s", cell.claim[0], type(err).__name__, err)
            return None
        finally:
            stop_pool(pool)  # a stop ends the run at once

    def configure(self, args) -> None:
        self.budget = (args.budget_s, args.points, args.tolerance)

    def tables(self, records, setup, out: Path) -> dict[str, str]:
        if not records:
            return {}
        budget_s, points, tolerance = getattr(self, "budget", (360.0, 3, 0.01))
        rows = compare_precisions([{k: r[k] for k in PRECISION_FIELDS} for r in records], tolerance)
        picked = choice(rows, budget_s, points, tolerance)
        body = [
            [r["precision"], f"{r['sentences_per_s']:.0f}", f"{r['mean_loss']:.4f}", "yes" if r["passed"] else "no"]
            for r in rows
        ]
        lines = report.markdown_table(["precision", "sentences/s", "mean loss", "within tolerance"], body, "lrrl")
        end = "no precision passed (did float32 run?)"
        if picked:
            end = f"chosen {picked['precision']}, {picked['steps']} steps in {picked['budget_s']:.0f} s"
        files = {
            "precision.md": "\n".join([*lines, "", end]),
            "precision.jsonl": "".join(json.dumps(r) + "\n" for r in rows),
        }
        if picked:
            files["precision_choice.json"] = json.dumps(picked)
        return files

    def progress(self, record: dict) -> str:
        return (
            f"{record['precision']}: {record['sentences_per_s']:.0f} sentences/s, mean loss {record['mean_loss']:.4f}"
        )


# ------------------------------------------------------------------------------------------ curve
def held_out_range(cfg, heldout: str | None) -> tuple[int, int]:
    """The held-out books: ``--heldout FIRST,LAST``, else the config's excluded books (one run of them)."""
    if heldout:
        try:
            first, last = (int(x) for x in heldout.split(","))
        except ValueError:
            raise ArgumentError(f"--heldout {heldout}: give FIRST,LAST (two book numbers)") from None
        if not 0 <= first < last:
            raise ArgumentError(f"--heldout {heldout}: need 0 <= FIRST < LAST")
        return first, last
    ex = cfg.data.exclude_books or []
    if not ex or ex != list(range(ex[0], ex[-1] + 1)):
        raise ArgumentError("--heldout FIRST,LAST is needed: the config's data.exclude_books is not one run of books")
    return ex[0], ex[-1] + 1


def read_controls(path) -> dict:
    if not path or not Path(path).is_file():
        return {}
    return json.loads(Path(path).read_text())


def curve_points(steps: int, points: int) -> list[int]:
    return [round(steps * (k + 1) / points) for k in range(points)]


def segment_config(args, out: Path, step: int):
    base = [*PRECISIONS[args.precision].changes, "train.trackers=[csv]", "train.progress=false"]
    base += ["train.checkpoint_every=0", "train.keep_checkpoints=1", f"train.steps={step}"]
    return load_cfg(args.config, args.set, out, base)


def evaluate_point(args, out: Path, held) -> tuple[dict, dict, str]:
    """The six tasks and the held-out measures of ``OUT/final``, in float32 without TF32."""
    import torch

    import qt_hard

    if torch.cuda.is_available():  # the evaluation in full float32 whatever the training's precision
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    enc = qt_hard.load_encoder(out / "final", device=args.eval_device)
    res = senteval(enc, args)
    ho = held.score(enc)
    sha = vocab_sha1(enc.featurizer.tokenizer)
    del enc
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return res, ho, sha


def point_record(args, out: Path, step: int, res: dict, ho: dict, sha: str) -> dict:
    """A point's record: the columns of ``curve.csv`` but the times (added by the caller)."""
    cfg = segment_config(args, out, step)
    last = read_metrics(out)[-1:]  # the last logged row
    r, controls = res["results"], read_controls(args.controls)
    row = {
        "step": step,
        "sentences_seen": step * cfg.train.batch_size,
        "epoch": float(last[0]["epoch"]) if last and last[0]["epoch"] else "",
        "train_loss": round(float(last[0]["loss"]), 5) if last else "",
        "six_task_mean": "" if res["six_task_mean"] is None else round(res["six_task_mean"], 3),
        **{t: round(r[t]["acc"], 2) if t in r else "" for t in TASKS},
        "MRPC_f1": round(r["MRPC"]["f1"], 2) if "MRPC" in r else "",
        "heldout_next_top1": ho["next_top1"],
        "heldout_uniform_loss": ho["uniform_loss"],
    }
    for key in CONTROLS:
        m = controls.get("rows", {}).get(key, {}).get("six_task_mean")
        row[f"control_{key}_mean"] = "" if m is None else round(m, 3)
    row.update(precision=args.precision, tokenizer_sha1=sha)
    row["controls_same_tokenizer"] = bool(controls) and controls.get("tokenizer_sha1") == sha
    return {**row, **stamp()}  # run() keeps the columns of curve.csv


def curve_csv(records: list[dict]) -> str:
    """``curve.csv``: a row per point in step order, :data:`CURVE_COLUMNS`, as the csv module writes them."""
    rows = sorted(records, key=lambda r: int(r["step"]))
    return report.csv_text(CURVE_COLUMNS, [{c: r.get(c, "") for c in CURVE_COLUMNS} for r in rows])


def _number(value) -> float:
    return float(value) if value not in ("", None) else float("nan")


def plot(rows: list[dict], png) -> None:
    """The curve's figure: the six-task mean against the controls, and the held-out top-1."""
    if not rows:
        return
    plt = report.pyplot()
    steps = [int(r["step"]) for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    a.plot(steps, [_number(r["six_task_mean"]) for r in rows], "o-", label="qt_s2v (uniform)")
    for key, style in (("untrained", "--"), ("bow2400", ":")):
        v = rows[-1][f"control_{key}_mean"]
        if v not in ("", None):
            a.axhline(float(v), ls=style, color="gray", label=f"control: {key}")
    a.set_xlabel("step")
    a.set_ylabel("six-task mean accuracy (%)")
    a.legend(fontsize=7)
    b.plot(steps, [_number(r["heldout_next_top1"]) for r in rows], "o-", color="C1")
    b.set_xlabel("step")
    b.set_ylabel("held-out next-sentence top-1")
    fig.suptitle(f"configs/qt_s2v.yaml, {rows[-1]['precision']}, {rows[-1]['device']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)


def curve_table(records: list[dict]) -> str:
    rows = sorted(records, key=lambda r: int(r["step"]))
    body = [
        [str(r["step"]), str(r["epoch"]), str(r["train_loss"]), str(r["six_task_mean"])]
        + [str(r["heldout_next_top1"]), str(r["heldout_uniform_loss"])]
        for r in rows
    ]
    head = ["step", "epoch", "last logged loss", "six-task mean", "held-out top-1", "held-out loss"]
    last = rows[-1]
    end = f"controls: untrained {last['control_untrained_mean'] or '-'}, bow2400 {last['control_bow2400_mean'] or '-'}"
    return "\n".join([*report.markdown_table(head, body, "rrrrrr"), "", end])


class Curve(_S2V):
    """The learning curve, a cell a point (docs/cli.md)."""

    name = "s2v-curve"
    help = "Quick-Thoughts at S2V's width: a learning curve, six tasks and held-out next-sentence measures"
    key = ("step",)
    fields = tuple(CURVE_COLUMNS[1:])
    ledger_name = "curve.jsonl"
    default_out = "runs/s2v"

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--steps", type=int, default=None, help="training steps of the whole curve")
        parser.add_argument("--points", type=int, default=3, help="evaluation points (segments of training)")
        parser.add_argument("--precision", choices=list(PRECISIONS), default="fp32", help="the training's precision")
        parser.add_argument("--eval-device", default="cpu", help="where the classifiers are solved: cpu or cuda")
        parser.add_argument("--controls", default="results/s2v_controls.json", help="s2v-controls' s2v_controls.json")
        parser.add_argument("--heldout", default=None, help="FIRST,LAST held-out books (default: data.exclude_books)")
        parser.add_argument("--deadline-s", type=float, default=0.0, help="start no point that would end after this")
        parser.add_argument(
            "--prepare-only", action="store_true", help="only split and tokenize the books into OUT/cache"
        )

    def check(self, args) -> None:
        from qt_hard.evaluation import logreg

        super().check(args)
        if args.prepare_only:
            return
        if args.steps is None or args.points < 1 or args.steps < args.points:
            raise ArgumentError(f"--steps {args.steps} --points {args.points}: give at least as many steps as points")
        if args.workers != 1:
            raise ArgumentError(f"--workers {args.workers}: the points are one run, each resuming the last; give 1")
        logreg.check_device(args.eval_device, "--eval-device")
        held_out_range(load_cfg(args.config, args.set, args.out), args.heldout)

    def setup(self, args, out: Path) -> dict:
        if args.prepare_only:  # nothing is recorded: the folder's own setup, whatever it is
            return self.ledger(out, self.ledger_name).setup or {"config": args.config}
        first, last = held_out_range(load_cfg(args.config, args.set, out), args.heldout)
        setup = {"config": args.config, "overrides": list(args.set), "steps": args.steps, "points": args.points}
        return {
            **setup,
            "precision": args.precision,
            "heldout": [first, last],
            "tasks": args.tasks,
            "kfold": args.kfold,
        }

    def cells(self, args, rows, seeds) -> list[Cell]:
        if args.prepare_only:
            return [Cell(("prepare",))]  # never recorded: prepare always runs
        return [Cell((step,)) for step in curve_points(args.steps, args.points)]

    def prepare(self, args, out: Path, todo: list[Cell]) -> list[Cell] | None:
        if args.prepare_only:
            run, tok, seconds = prepare_run(args.config, args.set, out)
            print(
                f"prepared {out}: {run.task.n} sentences, {run.task.batches_per_epoch()} batches an epoch, "
                f"vocabulary {len(tok.vocab().itos)} (sha1 {vocab_sha1(tok)[:12]}), {seconds:.0f}s",
                flush=True,
            )
            return []
        from qt_hard.evaluation import logreg

        logreg.DEFAULT_DEVICE = args.eval_device
        self.clock, self.last_cost, self.held = time.monotonic(), 0.0, None
        return None

    def held_out(self, args, out: Path):
        from qt_hard.evaluation.heldout import HeldOut
        from qt_hard.paths import data_path

        if self.held is None:  # training's book cache
            cfg = load_cfg(args.config, args.set, out)
            first, last = held_out_range(cfg, args.heldout)
            books = cfg.data.path or str(data_path("books"))
            self.held = HeldOut(first, last, root=books, cache=out / "cache" / "books")
        return self.held

    def run(self, cell: Cell, ctx: Context) -> dict | None:
        args, out = ctx.args, ctx.out
        from qt_hard.training.loop import Stopped, train

        points, step = curve_points(args.steps, args.points), cell.claim[0]
        k = points.index(step)
        if args.deadline_s and time.monotonic() - self.clock + self.last_cost > args.deadline_s:
            log.info("deadline: the point at step %d would end after %.0f s; not run", step, args.deadline_s)
            self.last_cost = float("inf")
            return None
        t0 = time.monotonic()
        try:
            train(segment_config(args, out, step), resume=k > 0, overwrite=k == 0, raise_on_stop=True)
        except Stopped as err:
            raise SystemExit(
                f"{err}: the point at step {step} is not recorded; run the same command to resume"
            ) from None
        t1 = time.monotonic()
        res, ho, sha = evaluate_point(args, out, self.held_out(args, out))
        t2 = time.monotonic()
        if k + 1 < len(points):  # what the next point will take, at this one's pace
            self.last_cost = (t2 - t0) * (points[k + 1] - step) / max(1, step - (points[k - 1] if k else 0))
        before = [r for r in self.ledger(out, self.ledger_name).latest() if k and r["step"] == points[k - 1]]
        rec = point_record(args, out, step, res, ho, sha)
        rec.update(train_s=round((before[0]["train_s"] if before else 0.0) + t1 - t0, 1), eval_s=round(t2 - t1, 1))
        return {c: rec[c] for c in CURVE_COLUMNS}

    def tables(self, records, setup, out: Path) -> dict[str, str]:
        if not records:
            return {}
        return {"curve.md": curve_table(records), "curve.csv": curve_csv(records)}

    def figures(self, args, out: Path, records, setup) -> None:
        plot(sorted(records, key=lambda r: int(r["step"])), out / "curve.png")

    def progress(self, record: dict) -> str:
        r = record
        return (
            f"step {r['step']}: six-task mean {r['six_task_mean']}, held-out top-1 {r['heldout_next_top1']}, "
            f"train {r['train_s']}s in all, eval {r['eval_s']}s"
        )


EXPERIMENTS = (Controls(), Precision(), Curve())
