"""The evaluation guide's Wiki-N table: the two Wiki-50 smoke configs trained and read out, beside their controls.

Wiki-50 is built first by ``qt-hard data wiki --articles 50 --out RUNS/wiki50`` (from the dump of ``qt-hard
data get wikipedia``; kept and reused when it is there), as the README builds it. Four rows, each a
``qt-hard eval wiki`` run on it (mean classifier and trained linear classifier, top-1 on the run's own
80/20 split of Wiki-50):

* ``configs/bow_wiki_smoke.yaml`` trained (``qt-hard train``, wall seconds recorded), then evaluated;
* the same architecture untrained (``random:configs/bow_wiki_smoke.yaml``, split seed 0);
* ``configs/hf_wiki_smoke.yaml`` (MiniLM fine-tuned 40 steps) trained, then evaluated;
* MiniLM untouched (``minilm``, split seed 0).

Each row, with its commands, their wall seconds, the Wiki-50 build command (``data_command``; its wall
seconds in ``data_seconds``, null when an earlier build was reused) and the machine's context (commit,
torch, threads, load average), is appended to ``--out``; ``python -m docgen --write`` renders the table.

    python scripts/wiki_smoke_table.py --out results/wiki_smoke.jsonl [--runs runs/wiki_smoke]
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from qt_hard.experiments.ledger import measurement_stamp
from qt_hard.experiments.report import append_json_line
from qt_hard.script_cli import ScriptParser, run_script
from qt_hard.paths import output_folder

ROWS = ("bow_trained", "bow_untrained", "hf_trained", "minilm")


def _run(argv: list[str]) -> float:
    """Run a ``qt-hard`` command; its wall seconds (SystemExit naming it when it fails)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"error: {shlex.join(argv)} exited {proc.returncode}: {tail}")
    return round(time.perf_counter() - start, 1)


QT = [sys.executable, "-m", "qt_hard.cli"]


def wiki50(runs: Path) -> Path:
    """The Wiki-50 folder every row reads."""
    return runs / "wiki50"


def data_command(runs: Path) -> list[str]:
    """The command that builds Wiki-50, as the README's ``qt-hard data wiki --articles 50``."""
    return [*QT, "data", "wiki", "--articles", "50", "--out", str(wiki50(runs))]


def commands(row: str, runs: Path) -> tuple[list[list[str]], Path]:
    """The row's commands (training first where it trains) and the results JSON its evaluation writes;
    every evaluation reads :func:`wiki50`."""
    result = runs / f"{row}.json"
    data = ["--data", str(wiki50(runs)), "--classes", "50"]
    if row in ("bow_trained", "hf_trained"):
        name = row.split("_")[0]
        out = runs / name
        train = [*QT, "train", f"configs/{name}_wiki_smoke.yaml", "--out", str(out), "train.progress=false"]
        evaluate = [*QT, "eval", "wiki", "--model", str(out / "final"), *data]
        return [train, [*evaluate, "--output", str(result)]], result
    model = "random:configs/bow_wiki_smoke.yaml" if row == "bow_untrained" else "minilm"
    return [[*QT, "eval", "wiki", "--model", model, *data, "--split-seed", "0", "--output", str(result)]], result


def _shown(argv: list[str]) -> str:
    """A command as a reader types it (``qt-hard ...``)."""
    return shlex.join(["qt-hard", *argv[3:]])


def main(argv=None) -> int:
    p = ScriptParser(prog="wiki_smoke_table.py", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="append one JSON row per table row to this JSONL")
    p.add_argument("--runs", default="runs/wiki_smoke", help="folder of the trained runs and the results JSON")
    p.add_argument("--rows", default=",".join(ROWS), help=f"which rows (default all: {','.join(ROWS)})")
    args = p.parse_args(argv)
    rows = [r for r in args.rows.split(",") if r]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        p.error(f"--rows: unknown {', '.join(unknown)}; known: {', '.join(ROWS)}")
    if not rows:
        p.error(f"--rows: name at least one row of {', '.join(ROWS)}")
    runs = output_folder(args.runs, "--runs")
    runs.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    build = data_command(runs)
    data_seconds = None if wiki50(runs).is_dir() else _run(build)  # an earlier build of the same command is reused
    for row in [r for r in ROWS if r in rows]:
        stamp = measurement_stamp(Path(__file__).resolve().parent)
        argvs, result = commands(row, runs)
        seconds = [_run(a) for a in argvs]
        res = json.loads(result.read_text())["results"]
        line = append_json_line(
            args.out,
            {
                "row": row,
                "mean_classifier_acc": res["mean_classifier"]["acc"],
                "linear_acc": res["linear"]["acc"],
                "commands": [_shown(a) for a in argvs],
                "wall_seconds": seconds,
                "data_command": _shown(build),
                "data_seconds": data_seconds,
                **stamp,
            },
        )
        print(line, flush=True)
        print(f"{row}: mean {res['mean_classifier']['acc']:.1f} / linear {res['linear']['acc']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
