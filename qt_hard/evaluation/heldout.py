"""Held-out next-sentence measures of a Quick-Thoughts encoder on books it was not trained on.

:class:`HeldOut` scores 30 fixed blocks of 64 consecutive sentences drawn from books FIRST..LAST-1 of
the books folder (sorted order, 0-based) with one measure for every model, whatever negatives it was
trained with: the *uniform* context loss (Quick-Thoughts, +-1 neighbours) and next-sentence top-1 (is
f(s_i).g(s_{i+1}) the largest of the 63 other sentences? chance 1/63 = 0.016). ``configs/qt_s2v.yaml``
leaves these books (8-10 by default) out of its training data. ``qt-hard grid run qt-table --protocol
namesake`` scores a grid's runs with it (on the books their config leaves out); ``qt-hard grid run
s2v-curve`` scores the curve's model at each point.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["HeldOut"]


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
