"""The evaluation guide's Wiki-N table: the two Wiki-50 smoke configs trained and read out, beside their controls.

Four rows, each a ``qt-hard eval wiki`` run (mean classifier and trained linear classifier, top-1 on the
run's own 80/20 split of Wiki-50):

* ``configs/bow_wiki_smoke.yaml`` trained (``qt-hard train``, wall seconds recorded), then evaluated;
* the same architecture untrained (``random:configs/bow_wiki_smoke.yaml``, split seed 0);
* ``configs/hf_wiki_smoke.yaml`` (MiniLM fine-tuned 40 steps) trained, then evaluated;
* MiniLM untouched (``minilm``, split seed 0).

Each row, with its commands, their wall seconds and the machine's context (commit, torch, threads, load
average), is appended to ``--out``; ``python -m qt_hard.experiments.pages --write`` renders the table.

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


def commands(row: str, runs: Path) -> tuple[list[list[str]], Path]:
    """The row's commands (training first where it trains) and the results JSON its evaluation writes."""
    qt = [sys.executable, "-m", "qt_hard.cli"]
    result = runs / f"{row}.json"
    data = ["--data", str(runs / "bow" / "cache" / "wiki_50_200"), "--classes", "50"]
    if row in ("bow_trained", "hf_trained"):
        name = row.split("_")[0]
        out = runs / name
        train = [*qt, "train", f"configs/{name}_wiki_smoke.yaml", "--out", str(out), "train.progress=false"]
        evaluate = [*qt, "eval", "wiki", "--model", str(out / "final"), *data]
        return [train, [*evaluate, "--output", str(result)]], result
    model = "random:configs/bow_wiki_smoke.yaml" if row == "bow_untrained" else "minilm"
    return [[*qt, "eval", "wiki", "--model", model, *data, "--split-seed", "0", "--output", str(result)]], result


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
    if set(rows) - {"bow_trained"} and "bow_trained" not in rows:
        if not (Path(args.runs) / "bow" / "cache" / "wiki_50_200").is_dir():
            p.error("--rows: every row reads the Wiki-50 that bow_trained builds; include bow_trained first")
    runs = output_folder(args.runs, "--runs")
    runs.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for row in [r for r in ROWS if r in rows]:  # bow_trained builds the Wiki-50 cache the others read
        stamp = measurement_stamp(Path(__file__).resolve().parent)
        argvs, result = commands(row, runs)
        seconds = [_run(a) for a in argvs]
        res = json.loads(result.read_text())["results"]
        shown = [shlex.join(["qt-hard", *a[3:]]) for a in argvs]
        line = append_json_line(
            args.out,
            {
                "row": row,
                "mean_classifier_acc": res["mean_classifier"]["acc"],
                "linear_acc": res["linear"]["acc"],
                "commands": shown,
                "wall_seconds": seconds,
                **stamp,
            },
        )
        print(line, flush=True)
        print(f"{row}: mean {res['mean_classifier']['acc']:.1f} / linear {res['linear']['acc']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
