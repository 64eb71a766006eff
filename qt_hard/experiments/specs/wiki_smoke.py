"""The evaluation guide's Wiki-N table (``qt-hard grid run wiki-smoke``): the two Wiki-50 smoke configs
trained and read out, beside their controls; its cells, ledger and table: docs/cli.md (``qt-hard grid
run wiki-smoke``).

    qt-hard grid run wiki-smoke --out results [--runs runs/wiki_smoke] [--rows bow_trained,minilm]
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.contract import Cell, Context, Experiment, Row
from qt_hard.experiments.grid import by_name

ROOT = Path(__file__).resolve().parents[3]
QT = [sys.executable, "-m", "qt_hard.cli"]
DEFAULT_RUNS = "runs/wiki_smoke"


def smoke_config(row: Row) -> str:
    """The smoke config a trained row trains, ``configs/<folder>_wiki_smoke.yaml`` ("" for a row
    evaluated as it is)."""
    folder = row.changes.get("folder", "")
    return f"configs/{folder}_wiki_smoke.yaml" if folder else ""


# Each row: ``changes["folder"]``, a smoke config (:func:`smoke_config`) trained into ``RUNS/<folder>``
# and its ``final/`` evaluated, or ``changes["model"]`` evaluated as it is (split seed 0).
ROWS = by_name(
    Row(
        "bow_trained",
        {"folder": "bow"},
        "`configs/bow_wiki_smoke.yaml` trained (256 pairs a step, k = 100, 200 steps)",
    ),
    Row("bow_untrained", {"model": "random:configs/bow_wiki_smoke.yaml"}, "the same architecture untrained"),
    Row(
        "hf_trained",
        {"folder": "hf"},
        "MiniLM fine-tuned by `configs/hf_wiki_smoke.yaml` (40 steps of 16 pairs, D.1 loss, t = 0.05)",
    ),
    Row("minilm", {"model": "minilm"}, "MiniLM untouched"),
)
FIELDS = ("mean_classifier_acc", "linear_acc", "commands", "wall_seconds")


def _run(argv: list[str]) -> float:
    """Run a ``qt-hard`` command; its wall seconds (SystemExit naming it when it fails)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{shown(argv)} exited {proc.returncode}: {tail}")
    return round(time.perf_counter() - start, 1)


def wiki50(runs: Path) -> Path:
    """The Wiki-50 folder every row reads."""
    return runs / "wiki50"


def data_command(runs: Path) -> list[str]:
    """The command that builds Wiki-50, as the README's ``qt-hard data wiki --articles 50``."""
    return [*QT, "data", "wiki", "--articles", "50", "--out", str(wiki50(runs))]


def commands(row: str, runs: Path) -> tuple[list[list[str]], Path]:
    """The row's commands (training first where it trains) and the results JSON its evaluation writes;
    every evaluation reads :func:`wiki50`."""
    spec, result = ROWS[row], runs / f"{row}.json"
    data = ["--data", str(wiki50(runs)), "--classes", "50"]
    if smoke_config(spec):
        out = runs / spec.changes["folder"]
        train = [*QT, "train", smoke_config(spec), "--out", str(out), "train.progress=false"]
        evaluate = [*QT, "eval", "wiki", "--model", str(out / "final"), *data]
        return [train, [*evaluate, "--output", str(result)]], result
    return [
        [*QT, "eval", "wiki", "--model", spec.changes["model"], *data, "--split-seed", "0", "--output", str(result)]
    ], result


def shown(argv: list[str]) -> str:
    """A command as a reader types it (``qt-hard ...``)."""
    return shlex.join(["qt-hard", *argv[3:]])


# --------------------------------------------------------------------------------------- the table
def fine_tune_against_base(tuned: dict, base: dict) -> str:
    """Where the MiniLM smoke fine-tune ends against the untouched MiniLM, on both classifiers."""
    sides = [
        "above" if tuned[k] > base[k] else "below" if tuned[k] < base[k] else "level with"
        for k in ("mean_classifier_acc", "linear_acc")
    ]
    where = (
        f"{sides[0]} the untouched model on both classifiers"
        if sides[0] == sides[1]
        else (f"{sides[0]} the untouched model on the mean classifier and {sides[1]} it on the linear one")
    )
    return f"The fine-tune (a smoke run, not a recipe) ends {where}."


def measured(r: dict) -> str:
    """A row's context cells: the UTC date, the commit, threads and the 1-minute load average."""
    return f"{r['utc'][:10]}, {r['commit']}, {r['threads']} thread(s), load {r['load_average_1min']:.1f}"


def table(records: list[dict], ledger: str, command: str) -> str:
    """The Markdown table of each row's newest record (``records``, read from ``ledger``), its caption
    naming the Wiki-50 build and ``command``, the command that writes the records."""
    newest = {r["row"]: r for r in records}
    body = [
        [
            spec.label,
            f"{newest[row]['mean_classifier_acc']:.1f} / {newest[row]['linear_acc']:.1f}",
            ", then ".join(f"`{c}` ({s:.0f} s)" for c, s in zip(newest[row]["commands"], newest[row]["wall_seconds"])),
            measured(newest[row]),
        ]
        for row, spec in ROWS.items()
        if row in newest
    ]
    head = ["model", "Wiki-50 mean / linear classifier (%)", "commands (wall s)", "date, commit, threads, load"]
    built = {r.get("data_command") for r in newest.values()}  # one Wiki-50 under every row, or none named
    source = f", built by `{next(iter(built))}`" if len(built) == 1 and None not in built else ""
    caption = (
        f"Top-1 on the run's 80/20 split of Wiki-50 (split seed 0){source}; each row's newest line of "
        f"`{ledger}` (machine: {next(iter(newest.values()))['machine']}), written by `{command}`."
    )
    if "hf_trained" in newest and "minilm" in newest:
        caption += " " + fine_tune_against_base(newest["hf_trained"], newest["minilm"])
    return "\n".join([caption, "", *report.markdown_table(head, body, "lrll")])


def runs_of(setup: dict | None) -> str:
    """The runs folder a setup's Wiki-50 build command names (the default when there is none)."""
    build = shlex.split((setup or {}).get("data_command") or "")
    return str(Path(build[build.index("--out") + 1]).parent) if "--out" in build else DEFAULT_RUNS


# --------------------------------------------------------------------------------------- the contract
class WikiSmoke(Experiment):
    """The rows of :data:`ROWS`, each once (docs/cli.md)."""

    name = "wiki-smoke"
    help = "The Wiki-50 smoke configs trained and read out (mean and linear classifier), beside their controls"
    key = ("row",)
    fields = FIELDS
    ledger_name = "wiki_smoke.jsonl"
    default_out = DEFAULT_RUNS
    rows = tuple(ROWS)
    row_table = ROWS
    seeds = ""

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--runs", default=DEFAULT_RUNS, help="folder of Wiki-50, the trained runs and the evaluations' JSON"
        )

    def check(self, args) -> None:
        from qt_hard.paths import output_folder

        output_folder(args.runs, "--runs")

    def setup(self, args, out: Path) -> dict:
        return {"data_command": shown(data_command(Path(args.runs)))}

    def cells(self, args, rows, seeds) -> list[Cell]:
        return [Cell((row,)) for row in ROWS if row in rows]

    def prepare(self, args, out: Path, todo: list[Cell]) -> None:
        """Wiki-50, built once before the rows (an earlier build is reused: ``data_seconds`` null), and
        the command line the records name."""
        runs = Path(args.runs)
        runs.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        args.data_seconds = None if wiki50(runs).is_dir() else _run(data_command(runs))
        args.command_line = shlex.join(["qt-hard", *sys.argv[1:]])

    def run(self, cell: Cell, ctx: Context) -> dict:
        args, setup = ctx.args, ctx.setup
        from qt_hard.experiments.ledger import measurement_stamp

        row, runs = cell.claim[0], Path(args.runs)
        stamp = {**measurement_stamp(ROOT), "command": args.command_line}
        argvs, result = commands(row, runs)
        seconds = [_run(a) for a in argvs]
        res = json.loads(result.read_text())["results"]
        return {
            "row": row,
            "mean_classifier_acc": res["mean_classifier"]["acc"],
            "linear_acc": res["linear"]["acc"],
            "commands": [shown(a) for a in argvs],
            "wall_seconds": seconds,
            "data_command": setup["data_command"],
            "data_seconds": args.data_seconds,
            **stamp,
        }

    def tables(self, records, setup, out: Path) -> dict[str, str]:
        if not records:
            return {}
        runs = runs_of(setup)
        command = f"qt-hard grid run wiki-smoke --out {out.as_posix()}"
        command += f" --runs {runs}" if runs != DEFAULT_RUNS else ""
        return {"wiki_smoke.md": table(records, f"{out.as_posix()}/{self.ledger_name}", command)}

    def progress(self, record: dict) -> str:
        return f"{record['row']}: mean {record['mean_classifier_acc']:.1f} / linear {record['linear_acc']:.1f}"


EXPERIMENTS = (WikiSmoke(),)
