"""Held-out check of saved Quick-Thoughts models on books they were not trained on.

Scores 30 fixed blocks of 64 consecutive sentences drawn from books FIRST..LAST-1 of
$QT_HARD_DATA/books (sorted order, 0-based) with one measure for every model, whatever negatives it
was trained with: the *uniform* context loss (Quick-Thoughts, +-1 neighbours) and next-sentence
top-1 (is f(s_i).g(s_{i+1}) the largest of the 63 other sentences? chance 1/63 = 0.016).
configs/qt_s2v.yaml leaves these books (8-10 by default) out of its training data.

    python scripts/qt_heldout.py --first 8 --last 11 runs/qt_books_smoke/final [more models ...]

Prints one JSON line per model; the last line is the first model's top-1. The measure is
``qt_hard.evaluation.heldout.HeldOut``, which scores an encoder in-process (``qt-hard grid run
s2v-curve`` does so along a training run).
"""

from __future__ import annotations

import json
import sys

import torch

from qt_hard.evaluation.heldout import HeldOut
from qt_hard.script_cli import ScriptParser, run_script


def parser() -> ScriptParser:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="saved QT models (OUT/final)")
    ap.add_argument("--first", type=int, default=8, help="first held-out book (0-based)")
    ap.add_argument("--last", type=int, default=11, help="books read: the first LAST books")
    ap.add_argument("--blocks", type=int, default=30)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--cache", default=None, help="Arrow cache folder for the books")
    return ap


def main() -> None:
    import qt_hard

    from qt_hard.errors import ArgumentError

    args = parser().parse_args()
    torch.set_num_threads(1)
    if not 0 <= args.first < args.last or args.blocks < 1 or args.block_size < 2:
        raise ArgumentError(
            f"need 0 <= --first < --last, --blocks >= 1 and --block-size >= 2; got --first {args.first} "
            f"--last {args.last} --blocks {args.blocks} --block-size {args.block_size}"
        )
    encoders = {path: qt_hard.load_encoder(path) for path in args.models}  # every model, before the books
    held = HeldOut(args.first, args.last, args.blocks, args.block_size, args.cache)
    first_top1 = None
    for path in args.models:
        res = {"model": path, "held_out_books": [args.first, args.last], **held.score(encoders[path])}
        first_top1 = res["next_top1"] if first_top1 is None else first_top1
        print(json.dumps(res))
    print(f"next-sentence top-1 of {args.models[0]}: {first_top1}")


if __name__ == "__main__":
    sys.exit(run_script(main))
