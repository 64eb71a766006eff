"""Held-out check of saved Quick-Thoughts models on books they were not trained on.

Scores 30 fixed blocks of 64 consecutive sentences drawn from books FIRST..LAST-1 of
$QT_HARD_DATA/books (sorted order, 0-based) with one measure for every model, whatever negatives it
was trained with: the *uniform* context loss (Quick-Thoughts, +-1 neighbours) and next-sentence
top-1 (is f(s_i).g(s_{i+1}) the largest of the 63 other sentences? chance 1/63 = 0.016).
configs/qt_s2v.yaml leaves these books (8-10 by default) out of its training data.

    python scripts/qt_heldout.py --first 8 --last 11 runs/qt_books_smoke/final [more models ...]

Prints one JSON line per model; the last line is the first model's top-1. ``HeldOut`` scores an
encoder in-process (scripts/s2v_curve.py does so along a training run).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch

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


class HeldOut:
    """The fixed blocks of books ``first``..``last - 1`` (drawn with seed 0) and their scores.

    ``score(encoder)`` -> {"uniform_loss", "next_top1"}: means over the blocks, the encoder's own
    tokenizer and device."""

    def __init__(self, first: int = 8, last: int = 11, blocks: int = 30, block_size: int = 64, cache=None, root=None):
        from qt_hard.data.books import dataset_column, load_books
        from qt_hard.paths import data_path

        if not 0 <= first < last:
            raise ValueError(f"held-out books need 0 <= first < last, got {first}, {last}")
        ds = load_books(str(root or data_path("books")), max_books=last, cache_dir=cache)
        self.docs = dataset_column(ds, "doc_id", numpy=True).astype(np.int64)
        self.text = dataset_column(ds, "text")
        self.rows = np.nonzero(self.docs >= first)[0]
        self.first, self.last, self.block_size = first, last, block_size
        if len(self.rows) <= block_size:
            raise ValueError(
                f"books {first}-{last - 1} have {len(self.rows)} sentences, too few for blocks of {block_size}"
            )
        n = min(blocks, len(self.rows) - block_size)
        self.starts = np.random.default_rng(0).choice(len(self.rows) - block_size, n, replace=False)

    def score(self, enc) -> dict:
        from qt_hard.losses import context_loss

        module = enc.module
        was_training = module.training
        module.eval()
        device = next(module.parameters()).device
        B = self.block_size
        losses, top1 = [], []
        try:
            with torch.inference_mode():
                for s in self.starts:
                    rows = self.rows[s : s + B]
                    batch = enc.featurizer.collate([enc.featurizer.ids(self.text[i]) for i in rows])
                    f, g = module(batch["ids"].to(device), batch["lengths"].to(device))
                    f, g = f.float(), g.float()
                    doc = torch.as_tensor(self.docs[rows], device=device)
                    losses.append(float(context_loss(f, g, "uniform", doc_ids=doc)))
                    scores = f @ g.T
                    scores.fill_diagonal_(float("-inf"))
                    top1.append(float((scores[:-1].argmax(1) == torch.arange(1, B, device=device)).float().mean()))
        finally:
            module.train(was_training)
        return {"uniform_loss": round(float(np.mean(losses)), 3), "next_top1": round(float(np.mean(top1)), 3)}


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
