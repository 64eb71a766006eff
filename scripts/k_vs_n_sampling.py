"""What plain, collision-free and shuffled-control sampling draw on the batches of a k-versus-N grid's
cells (N, B) at each k, under the grid's data and its first seed
(:func:`qt_hard.experiments.specs.k_vs_n_sampling.measure_grid`; what it found: docs/reproductions/k-vs-n.md,
"What else differs between the two samplings"). The grid's Wiki-N caches are built first where missing;
no cell is trained and nothing is written.

    python scripts/k_vs_n_sampling.py configs/k_vs_n.yaml --cache runs/k_vs_n/cache --N 1000 --k 100,1000 --steps 80

Prints the JSON object (results/k_vs_n/sampling_1000.json holds the one above) and a line per k.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv=None) -> int:
    from qt_hard.errors import UserError
    from qt_hard.experiments.grid import seed_list
    from qt_hard.experiments.specs.k_vs_n_sampling import measure_grid, summary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid", help="grid YAML of Wiki-N (configs/k_vs_n*.yaml)")
    parser.add_argument("--cache", default="runs/k_vs_n/cache", help="Wiki-N token caches (built where missing)")
    parser.add_argument("--N", type=int, default=1000, help="the cells' N (default: 1000)")
    parser.add_argument("--B", type=int, default=1000, help="the cells' B (default: 1000)")
    parser.add_argument("--k", default="100,1000", help="the cells' k, comma-separated (default: 100,1000)")
    parser.add_argument("--steps", type=int, default=800, help="the training steps measured (default: 800)")
    args = parser.parse_args(argv)
    try:
        ks = seed_list(args.k, "--k")
        out = measure_grid(Path(args.grid), Path(args.cache), args.N, args.B, ks, args.steps)
    except UserError as err:
        parser.error(str(err))
    print(json.dumps(out, indent=1))
    print("\n".join(summary(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
