#!/usr/bin/env python
"""k-versus-N ablation on Wiki-N: Ash, Goel, Krishnamurthy, Misra (AISTATS 2022), section 5,
Fig. 3; App. D.1, Figs. 5-7.

Every cell of the grid is one bag-of-words NCE training on Wiki-N (the first N articles) with
App. D.1's settings (768-d, temperature 1, unnormalized, no positive in the denominator, Adam lr
0.01, gradient clip 2.5, tokens seen fewer than 50 times -> UNK, 80/20 split per article,
50 NCE epochs, 50 epochs of the linear classifier), ``k`` negatives per anchor drawn out of the
2(B-1) candidates of a batch of B pairs (optionally collision-free), then both readouts: the mean
classifier on the whole training split and the trained linear classifier.

    python scripts/k_vs_n.py prepare configs/k_vs_n.yaml --cache runs/k_vs_n/cache   # tokenize once
    python scripts/k_vs_n.py plan configs/k_vs_n.yaml --cache runs/k_vs_n/cache      # cells + estimate
    python scripts/k_vs_n.py run configs/k_vs_n.yaml --cache runs/k_vs_n/cache \\
        --results runs/k_vs_n/results.csv --workers 4 --device cuda
    python scripts/k_vs_n.py plot runs/k_vs_n/results.csv --out docs/figures

Wiki-N is built by ``qt_hard.data.wiki.build_wiki`` from ``$QT_HARD_DATA/wikipedia`` (4,715
articles with at least 200 sentences from a 2015 WikiExtractor dump), *not* the CURL release of
Saunshi et al. (2019) that the paper used: numbers are comparable in trend, not digit for digit.

Layout of the work (all of it a function of the grid file and the cache folder):

* ``prepare`` builds the Wiki folder (``--cache/wiki_<articles>_<min_sentences>``) and tokenizes
  all of it once into ``--cache/tokens`` (NLTK's word tokenizer); it is the only step that
  tokenizes, so a machine without nltk runs the grid from a carried cache folder. Each N is a
  prefix of those tokens with its own 80/20 split and vocabulary (the library's ``data.classes``).
* A cell is a run of the library's training loop (``qt_hard.training.loop.train``) on the config
  ``cell_tree`` writes: ``pipeline: text``, the bag of words, ``objective.collision_free`` and
  ``data.shuffle_labels`` for the two collision modes, the readouts as the pipeline's evaluation
  (``eval.readouts``: mean classifier, linear classifier, diagnostics). Its run folder is
  ``RESULTS.cells/<cell_id>/``; a cell stopped by a signal (or killed after a checkpoint,
  ``--checkpoint-every``) resumes from its checkpoint, else it starts again.
* ``run`` appends one record per finished cell (full config, seed, metrics, diagnostics, wall
  time, git commit) to the results ledger ``NAME.jsonl`` beside ``--results NAME.csv``
  (``qt_hard.experiments.ledger``; its setup is the grid's data and train settings, so one file
  never mixes two budgets) and rewrites the CSV and ``NAME.diag.jsonl`` from it. A cell is claimed through
  the ledger (a file in ``claims/`` beside the CSV naming host and pid); a finished cell (its
  record in the ledger) is never run again; the claim of a process that died (same host, pid
  gone) is taken over, so a killed grid continues where it stopped and two processes
  (``--workers``, two shells, ``accelerate launch``) never run a cell twice. A CSV without its
  ledger beside it is refused. A cell is a pure function of its config
  and seed (on the CPU, bit for bit), so a cell cut in the middle resumed from a checkpoint, or
  run again from its start, ends the same.
* Under ``accelerate launch`` every process is an independent worker on the GPU of its
  ``LOCAL_RANK``: a bag-of-words cell is far too small to gain from data parallelism (its step is
  a few kernels; DDP would all-reduce the whole V x 768 table every step), so cells are spread
  over processes instead of each cell using all of them.
* ``plot`` redraws every figure from the results alone.

The grid, the cell and its readout, the results files and the figures are
``qt_hard/experiments/specs/k_vs_n.py``; this script is their command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from qt_hard.experiments.specs import k_vs_n as spec
from qt_hard.paths import check_output_file
from qt_hard.script_cli import ScriptParser, run_script
from qt_hard.experiments.grid import seed_list


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("prepare", "plan", "run"):
        p = sub.add_parser(name)
        p.add_argument("grid", help="grid YAML (configs/k_vs_n*.yaml)")
        p.add_argument("--cache", default="runs/k_vs_n/cache", help="Wiki-N token caches (prepare writes them)")
        p.add_argument("--epochs", type=int, help="NCE epochs (D.1: 50)")
        p.add_argument("--linear-epochs", type=int, help="linear-classifier epochs (D.1: 50)")
        p.add_argument("--optimizer", choices=["adam", "sparse_adam"])
        p.add_argument("--seeds", help="comma-separated seeds, replacing the grid's")
        if name != "prepare":
            p.add_argument(
                "--results",
                default="runs/k_vs_n/results.csv",
                help="results CSV NAME.csv, derived from its ledger NAME.jsonl beside it; cells "
                "are claimed in claims/ beside it (a claim of another host is never taken over, "
                "so results carried to a fresh machine travel without claims/)",
            )
            p.add_argument("--device", default="auto", help="cpu | cuda | auto")
            p.add_argument("--workers", type=int, default=1, help="processes claiming cells")
            p.add_argument(
                "--threads", type=int, default=None, help="torch threads per worker (default: CPU cores / workers)"
            )
            p.add_argument("--no-estimate", action="store_true", help="skip the timing probe")
        if name == "run":
            p.add_argument("--max-cells", type=int, default=None, help="stop after this many cells per worker")
            p.add_argument("--no-prepare", action="store_true", help="fail instead of tokenizing missing N")
            p.add_argument(
                "--checkpoint-every",
                type=int,
                default=0,
                help="steps between a cell's checkpoints (0: only when a signal stops it)",
            )
    p = sub.add_parser("plot")
    p.add_argument("results")
    p.add_argument("--out", default=None, help="folder of the PNGs (default: beside the CSV)")
    p = sub.add_parser("diagnose", help="markdown table of the cells' diagnostics (collisions study)")
    p.add_argument("results")
    args = ap.parse_args(argv)

    if args.cmd == "diagnose":
        print(spec.diagnose(Path(args.results)))
    elif args.cmd == "plot":
        res = Path(args.results)
        for path in spec.plot(res, Path(args.out) if args.out else res.parent):
            print(path)
        print(json.dumps(spec.summarize(spec._parse(spec.read_results(res))), default=str))
    else:
        seeds = seed_list(args.seeds) if args.seeds else None
        ov = {"epochs": args.epochs, "linear_epochs": args.linear_epochs, "optimizer": args.optimizer, "seeds": seeds}
        if args.cmd == "prepare":
            grid = spec.load_grid(args.grid, **ov)
            spec.prepare(grid.data, [c.N for c in spec.expand(grid)[0]], Path(args.cache))
            return 0
        check_output_file(args.results, "--results", replaceable=spec.is_results_csv, kind="results CSV")
        run = {"max_cells": args.max_cells, "checkpoint_every": args.checkpoint_every, "no_prepare": args.no_prepare}
        spec.run(
            args.cmd,
            args.grid,
            ov,
            args.results,
            args.cache,
            args.device,
            args.workers,
            args.threads,
            no_estimate=args.no_estimate,
            **(run if args.cmd == "run" else {}),
        )
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
