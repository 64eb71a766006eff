"""Held-out check of saved Quick-Thoughts models on books they were not trained on.

Scores 30 fixed blocks of 64 consecutive sentences drawn from books FIRST..LAST-1 of
$QT_HARD_DATA/books (sorted order, 0-based) with one measure for every model, whatever negatives it
was trained with: the *uniform* context loss (Quick-Thoughts, +-1 neighbours) and next-sentence
top-1 (is f(s_i).g(s_{i+1}) the largest of the 63 other sentences? chance 1/63 = 0.016).

    python scripts/qt_heldout.py --first 8 --last 11 runs/qt_books_smoke/final [more models ...]

Prints one JSON line per model; the last line is the first model's top-1.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch

from qt_hard.script_cli import ScriptParser, run_script


def main() -> None:
    import qt_hard
    from qt_hard.data.books import dataset_column, load_books
    from qt_hard.losses import context_loss
    from qt_hard.paths import data_path

    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="saved QT models (OUT/final)")
    ap.add_argument("--first", type=int, default=8, help="first held-out book (0-based)")
    ap.add_argument("--last", type=int, default=11, help="books read: the first LAST books")
    ap.add_argument("--blocks", type=int, default=30)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--cache", default=None, help="Arrow cache folder for the books")
    args = ap.parse_args()
    torch.set_num_threads(1)
    from qt_hard.errors import ArgumentError

    if not 0 <= args.first < args.last or args.blocks < 1 or args.block_size < 2:
        raise ArgumentError(
            f"need 0 <= --first < --last, --blocks >= 1 and --block-size >= 2; got --first {args.first} "
            f"--last {args.last} --blocks {args.blocks} --block-size {args.block_size}"
        )
    encoders = {path: qt_hard.load_encoder(path) for path in args.models}  # every model, before the books

    ds = load_books(str(data_path("books")), max_books=args.last, cache_dir=args.cache)
    docs = dataset_column(ds, "doc_id", numpy=True).astype(np.int64)
    text = dataset_column(ds, "text")
    rows_all = np.nonzero(docs >= args.first)[0]
    B = args.block_size
    starts = np.random.default_rng(0).choice(len(rows_all) - B, args.blocks, replace=False)
    first_top1 = None
    for path in args.models:
        enc = encoders[path]
        module = enc.module.eval()
        losses, top1 = [], []
        with torch.inference_mode():
            for s in starts:
                rows = rows_all[s : s + B]
                batch = enc.featurizer.collate([enc.featurizer.ids(text[i]) for i in rows])
                f, g = module(batch["ids"], batch["lengths"])
                losses.append(float(context_loss(f, g, "uniform", doc_ids=torch.as_tensor(docs[rows]))))
                scores = f @ g.T
                scores.fill_diagonal_(float("-inf"))
                top1.append(float((scores[:-1].argmax(1) == torch.arange(1, B)).float().mean()))
        res = {
            "model": path,
            "held_out_books": [args.first, args.last],
            "uniform_loss": round(float(np.mean(losses)), 3),
            "next_top1": round(float(np.mean(top1)), 3),
        }
        first_top1 = res["next_top1"] if first_top1 is None else first_top1
        print(json.dumps(res))
    print(f"next-sentence top-1 of {args.models[0]}: {first_top1}")


if __name__ == "__main__":
    sys.exit(run_script(main))
