"""Table 2 of Robinson et al. (2021) at our scale: Quick-Thoughts with uniform, debiased and hard negatives.

Four objectives, one training budget, several seeds each (the paper's rows, section 5.3 / Table 2):

* ``uniform``   QT (beta = 0, tau_plus = 0)
* ``debiased``  tau_plus = 0.01
* ``hard1``     beta = 1, tau_plus = 0, the [-2, 2] clipping of the scores (App. D.3, Fig. 14)
* ``hard2``     beta = 2, tau_plus = 0, the same clipping

All four use the core's joint Quick-Thoughts form (``context_loss``'s default: S2V's objective) and
differ only in the negatives. Each run trains the base config (``--config`` plus ``--set``
overrides, e.g. the sizes), then evaluates the saved encoder on the six tasks under ``--protocol``:
``senteval`` (SentEval's: 10-fold CV on MR CR SUBJ MPQA, TREC and MSRP train/test with a logistic
regression) or ``skipthoughts`` (the skip-thoughts evaluators behind the paper's numbers, where this
installation of ``qt_hard.evaluation`` provides them; otherwise a clear error).

The rows, readings and protocols are declared in ``qt_hard/experiments/specs/qt_table.py``. Rows are
named by ``ROW_GRAMMAR``: the paper's four (``hard1``/``hard2`` are the rescaled reading with
the floor, as first run), and ``hard<beta>-<reading>[-floor][-anneal|-warmup]`` for the readings of
the hard weights (``clip``), each with the weight diagnostics in its run's ``metrics.csv``.

Resumable: every finished (objective, seed, protocol) is a line of ``OUT/results.jsonl`` (the shared
results ledger, ``qt_hard.experiments.ledger``), and is skipped on the next call; an interrupted training resumes
from its checkpoint. Several processes may share one OUT (each claims the cell it runs).
The summary (``OUT/table.md``, ``OUT/table_dev.md`` on the dev folds, ``OUT/table_skipthoughts.md``
for that protocol, printed; ``OUT/results.csv``, one row per run of either protocol;
``OUT/diagnostics.png``, each row's weight diagnostics against steps) gives mean +- sample std over
seeds per task, the six-task mean, the
difference to uniform per task, and the paper's rows (read from the paper's text when ``--paper``
names it); ``OUT/differences.png`` (``differences_skipthoughts.png``) plots the
per-task differences to uniform.

    python scripts/qt_table.py --out runs/qt_table --seeds 0,1,2 --config configs/qt_table.yaml
    python scripts/qt_table.py --out runs/qt_table --summary-only     # the table of what is there
    python scripts/qt_table.py --out runs/qt_gpu --protocol senteval,skipthoughts --eval-device cuda ...

``--protocol`` takes a comma-separated list: each trained run is then evaluated under every protocol
before the next run trains (one encoding, two classifier protocols). ``similarity`` is a protocol
too: the run's semantic similarity (``SIM_TASKS``: STS12-16, STS Benchmark and SICK-R, cosine and
SentEval's supervised form; ``qt_hard.evaluation.similarity``), one ledger record per run with
Spearman and Pearson x100 per task; a run whose ``final/`` is there is evaluated without training
(``--protocol senteval,similarity`` on a finished table adds the similarity records only). Its
summary (``OUT/table_similarity.md``, printed) gives mean +- sample std over seeds per task and of
the similarity mean (STS12-16 mean, STS-B cos and SICK-R cos), each row's difference to uniform
paired by seed, and its verdict (the 95% t-interval of the paired differences). ``--eval-device`` is where the
classifiers are solved (``qt_hard.evaluation.logreg``'s device: ``cpu``, or ``cuda`` for the same
solver on a GPU); the encoder runs on the GPU whenever there is one. Each record says which.

``--workers N`` trains and evaluates N cells (row, seed) at once, each in a process of its own, all on
``--device`` (``auto``: the GPU where there is one; ``cuda``: N processes sharing one GPU; ``cpu``);
the books are split and tokenized once into ``OUT/cache`` before they start, and every run only reads
that cache (``qt_hard.experiments.runner``). Give each cell its share of the CPU cores
(``--set train.num_threads=...``).

    python scripts/qt_table.py --out runs/qt_s2v_rows --config configs/qt_s2v.yaml --workers 6 --device cuda \
        --rows uniform,hard1-clamp,hard2-clamp --seeds 0,1 --eval-device cuda --set train.num_threads=2
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import os

from qt_hard.errors import UserError
from qt_hard.experiments.grid import comma_list
from qt_hard.experiments.runner import DEVICES, check_device, in_processes, prepare_shared_cache, run_claimed
from qt_hard.experiments.specs import qt_table as spec
from qt_hard.script_cli import ScriptParser, run_script
from qt_hard.paths import output_folder
from qt_hard.experiments.grid import seed_list


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/qt_table")
    ap.add_argument("--config", default="configs/qt_table.yaml", help="base training config")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rows", default=",".join(spec.ROWS), help=f"objectives: {spec.ROW_GRAMMAR}")
    ap.add_argument(
        "--protocol",
        default="senteval",
        help=f"{' | '.join(spec.PROTOCOLS)}, or several comma-separated (each run evaluated under each; "
        "similarity: STS12-16, STS Benchmark, SICK-R)",
    )
    ap.add_argument("--eval-device", default="cpu", help="where the classifiers are solved: cpu (default) or cuda")
    ap.add_argument("--kfold", type=int, default=10)
    ap.add_argument("--data", default=None, help="SentEval data folder (default $QT_HARD_DATA/senteval)")
    ap.add_argument(
        "--paper", default=None, help="the paper's text, whose Table 2 rows join the table (left out without it)"
    )
    ap.add_argument("--summary-only", action="store_true", help="print the table of the finished runs only")
    ap.add_argument("--workers", type=int, default=1, help="cells trained at once, each in a process of its own")
    ap.add_argument("--device", default="auto", help=f"where the cells train: {' | '.join(DEVICES)} (default auto)")
    args = ap.parse_args(argv)
    if args.workers < 1:
        raise SystemExit(f"--workers {args.workers}: give at least 1")

    # Every argument is checked before anything is written.
    out = output_folder(args.out)
    seeds, rows, protocols = seed_list(args.seeds), comma_list(args.rows), comma_list(args.protocol)
    for r in rows:
        spec.row_spec(r)  # an unknown row is an error before anything runs
    if not protocols:
        raise SystemExit("--protocol: give at least one protocol")
    for p in protocols:
        spec.protocol(p)
    if not args.summary_only:
        from qt_hard.evaluation import logreg
        from qt_hard.evaluation.senteval import default_senteval_dir
        from qt_hard.training.config import load_config

        load_config(args.config, list(args.set), check_pipeline=False)  # the file, its keys and values
        if args.data and not (Path(args.data) / "MR").is_dir():
            raise SystemExit(f"--data {args.data}: no SentEval task folders in it (MR/ is missing)")
        try:
            logreg.check_device(args.eval_device, "--eval-device")
            check_device(args.device)
        except (ValueError, UserError) as err:
            raise SystemExit(str(err)) from None
    out.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        logreg.DEFAULT_DEVICE = args.eval_device
        # Finished runs are skipped by (row, seed, protocol): results of another budget in the same
        # OUT would be skipped as if they were this one's, so the ledger refuses to mix setups.
        led = spec.ledger(out, {"config": args.config, "overrides": sorted(args.set)})
        data = args.data or default_senteval_dir()
        # Seeds outermost: every row gets a seed early. Several processes may run on one OUT: each
        # cell is claimed by the process that runs it.
        todo = [
            (row, seed) for seed in seeds for row in rows if any((row, seed, p) not in led.done() for p in protocols)
        ]
        if todo and args.workers > 1:
            # Split and tokenized once, here: the cells side by side only read OUT/cache.
            prepare_shared_cache(load_config(args.config, list(args.set)), out)
            os.environ["QT_HARD_EVAL_DEVICE"] = args.eval_device  # the workers' solver device
        jobs = [(led, cell, partial(spec.run_cell, led, args, *cell, protocols, data)) for cell in todo]
        for _ in in_processes(run_claimed, jobs, args.workers, fresh=True, device=args.device):
            pass
    paper = spec.paper_rows(Path(args.paper) if args.paper else None)
    if not paper:
        print("note: the paper's Table 2 was not found; its rows are left out", file=sys.stderr)
    spec.write_report(out, protocols, paper)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
