"""SimCLR (or MoCo-v2, with a MoCo config such as ``configs/moco_cifar10_cpu.yaml``) with uniform,
debiased, hard, ring and OT negatives at one budget and several seeds: kNN curves (PNG) and a table
of final kNN and linear-readout accuracy (mean ± std). With MoCo, uniform is plain MoCo-v2 and ring
is MoCoRing (the band of percentiles taken over the queue).

    python scripts/vision_table.py --out runs/vision_table [--config configs/simclr_cifar10.yaml]
        [--strategies uniform,debiased,hard,ring,ot] [--seeds 0,1] [--set train.epochs=50 ...]

Every (strategy, seed) cell is one ``qt-hard train`` run (the same loop, pipeline ``vision``) in
``OUT/<strategy>_s<seed>``. Resumable: each finished cell is a record of ``OUT/results.jsonl``
(:class:`qt_hard.experiments.ledger.Ledger`; one folder, one setup: the config and the ``--set``
overrides) and is skipped; a run folder with its ``eval.json`` is read back, an interrupted one
continues from its newest checkpoint, so rerunning the same command finishes the table. Several
copies of the command may share one ``--out``: each claims the cell it trains. Also per seed, the kNN
accuracy of the randomly initialised encoder (the same initial weights as the runs) is the baseline
the runs must beat.

Outputs: ``OUT/results.csv`` (one row per cell), ``OUT/knn_curves.png`` (kNN accuracy vs epoch, mean
over seeds with each seed thin), ``OUT/table.md`` (the README table; sample standard deviations, ddof
1) and a JSON summary line per strategy, then a one-line headline. The strategies' settings are
``STRATEGIES`` of ``qt_hard/experiments/specs/vision_table.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable from a checkout without installing

from qt_hard.experiments.grid import cells, comma_list  # noqa: E402
from qt_hard.experiments.specs import vision_table as spec  # noqa: E402
from qt_hard.script_cli import ScriptParser, run_script  # noqa: E402
from qt_hard.paths import output_folder  # noqa: E402
from qt_hard.experiments.grid import seed_list  # noqa: E402


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/simclr_cifar10.yaml")
    ap.add_argument("--out", default="runs/vision_table")
    ap.add_argument("--strategies", default=",".join(spec.STRATEGIES))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="section.key=value",
        help="overrides for every run, e.g. train.epochs=50 model.arch=resnet_tiny",
    )
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="no training: table and plot of the finished runs (e.g. run folders copied back from a GPU machine)",
    )
    args = ap.parse_args(argv)
    strategies, seeds = comma_list(args.strategies), seed_list(args.seeds)
    unknown = set(strategies) - set(spec.STRATEGIES)
    if unknown:
        ap.error(f"unknown strategies {sorted(unknown)}; choose from {', '.join(spec.STRATEGIES)}")
    out = output_folder(args.out)
    if not args.report_only:
        spec.check_setup(args.config, list(args.set))  # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    led = spec.ledger(out, args.config, list(args.set))
    done = led.done()
    for seed, s in cells(seeds, strategies):
        finished = (out / f"{s}_s{seed}" / "eval.json").is_file()
        if (s, seed) in done or (args.report_only and not finished):
            continue
        if not finished:
            print(f"== {s} seed {seed}", flush=True)
        if spec.run_cell(args.config, s, seed, out, list(args.set)) is None and not finished:
            print(f"{out / f'{s}_s{seed}'} is being trained by another process; skipped", flush=True)
    spec.write_report(out, args.config, list(args.set), strategies, seeds, f"python {' '.join(sys.argv)}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
