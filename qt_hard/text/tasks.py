"""What one training step sees: deterministic global batches, split into per-process shards.

Two layouts, both reading pre-tokenized sentences from a ``TokenStore``:

* ``ContextTask`` (Quick-Thoughts, Logeswaran & Lee 2018): a global batch is B *consecutive*
  sentences of the corpus; the loss is ``qt_hard.losses.context_loss`` (positives: the +-c
  neighbours in the same document; candidates: every other sentence of the global batch).
* ``PairTask`` (Ash et al. 2022, App. D.1): a global batch is B positive pairs (x_i, x_i^+),
  redrawn every epoch; the loss is ``qt_hard.losses.contrastive_loss`` (two-view layout).

Batches are a pure function of (seed, step): step -> (epoch, position) -> global rows. Resuming
therefore needs only the step, and process r of W takes rows [r*B/W, (r+1)*B/W) of the global
batch, so W processes together see exactly the batch one process would, in the same order (the
core gathers candidates in rank order).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from qt_hard.encoders.quick_thoughts import QuickThoughtsEncoder


@dataclass
class TokenStore:
    """Token ids of n sentences, flattened: sentence i is ``flat[offsets[i]:offsets[i+1]]``.

    One int32 array instead of n Python lists keeps a large corpus compact (and savable as .npy).
    """

    flat: np.ndarray      # (total_tokens,) int32
    offsets: np.ndarray   # (n + 1,) int64

    @classmethod
    def from_lists(cls, id_lists: Sequence[Sequence[int]]) -> "TokenStore":
        lengths = np.fromiter((len(x) for x in id_lists), dtype=np.int64, count=len(id_lists))
        offsets = np.zeros(len(id_lists) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.fromiter(itertools.chain.from_iterable(id_lists), dtype=np.int32, count=int(offsets[-1]))
        return cls(flat, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.flat[self.offsets[i] : self.offsets[i + 1]]

    def save(self, prefix) -> None:
        np.save(f"{prefix}_flat.npy", self.flat)
        np.save(f"{prefix}_offsets.npy", self.offsets)

    @classmethod
    def load(cls, prefix) -> "TokenStore":
        return cls(np.load(f"{prefix}_flat.npy", mmap_mode="r"), np.load(f"{prefix}_offsets.npy"))


def _local_slice(rows: np.ndarray, rank: int, world: int) -> np.ndarray:
    per = len(rows) // world
    return rows[rank * per : (rank + 1) * per]


def _call(module: torch.nn.Module, x: dict[str, torch.Tensor]):
    if "input_ids" in x:  # transformer batches
        return module(x["input_ids"], x["attention_mask"])
    return module(x["ids"], x["lengths"])


def _is_qt(module: torch.nn.Module) -> bool:
    return isinstance(getattr(module, "module", module), QuickThoughtsEncoder)  # DDP wraps the encoder


def two_views(module: torch.nn.Module, x: dict[str, torch.Tensor]):
    """(anchor-side, candidate-side) encodings (B, d): (f, g) for Quick-Thoughts, (z, z) otherwise."""
    if _is_qt(module):
        return _call(module, x)
    z = _call(module, x)
    return z, z


def single_view(module: torch.nn.Module, x: dict[str, torch.Tensor]) -> torch.Tensor:
    """One encoding (B, d) per sentence: concat(f, g) for Quick-Thoughts, f(x) otherwise."""
    if _is_qt(module):
        return torch.cat(_call(module, x), dim=-1)
    return _call(module, x)


class ContextTask:
    """Quick-Thoughts batches of B consecutive sentences.

    Each epoch starts the blocks at a random shift in [0, B) (so block boundaries move between
    epochs) and visits the blocks in a random order; both are drawn from (seed, epoch).
    """

    sentences_per_row = 1

    def __init__(self, tokens: TokenStore, doc_ids: np.ndarray, collate: Callable, batch_size: int, seed: int):
        if len(tokens) != len(doc_ids):
            raise ValueError(f"{len(tokens)} sentences but {len(doc_ids)} doc ids")
        if len(tokens) < 2 * batch_size:
            raise ValueError(
                f"corpus has {len(tokens)} sentences, fewer than two batches of {batch_size}; "
                "use more data or a smaller train.batch_size"
            )
        self.tokens, self.doc_ids, self.collate = tokens, np.asarray(doc_ids, dtype=np.int64), collate
        self.batch_size, self.seed = batch_size, seed
        self._epoch, self._plan = None, None

    def batches_per_epoch(self) -> int:
        # The smallest count over all shifts, so every epoch has the same length.
        return (len(self.tokens) - (self.batch_size - 1)) // self.batch_size

    def _epoch_plan(self, epoch: int):
        if self._epoch != epoch:
            rng = np.random.default_rng([self.seed, epoch])
            shift = int(rng.integers(self.batch_size))
            order = rng.permutation(self.batches_per_epoch())
            self._epoch, self._plan = epoch, (shift, order)
        return self._plan

    def global_rows(self, step: int) -> np.ndarray:
        nb = self.batches_per_epoch()
        shift, order = self._epoch_plan(step // nb)
        start = shift + int(order[step % nb]) * self.batch_size
        return np.arange(start, start + self.batch_size)

    def local_batch(self, step: int, rank: int, world: int) -> dict[str, torch.Tensor]:
        rows = _local_slice(self.global_rows(step), rank, world)
        return {"x": self.collate([self.tokens[i] for i in rows]), "doc_ids": torch.as_tensor(self.doc_ids[rows])}


class PairTask:
    """Positive-pair batches (x_i, x_i^+) with class labels, pairs redrawn every epoch.

    pairs_for_epoch(epoch) -> (P, 2) int array of sentence indices; labels: (n,) class per sentence.
    """

    sentences_per_row = 2

    def __init__(self, tokens: TokenStore, labels: np.ndarray | None, pairs_for_epoch: Callable[[int], np.ndarray],
                 collate: Callable, batch_size: int, seed: int):
        self.tokens, self.collate = tokens, collate
        self.labels = None if labels is None else np.asarray(labels, dtype=np.int64)
        self.pairs_for_epoch = pairs_for_epoch
        self.batch_size, self.seed = batch_size, seed
        self._epoch, self._pairs = None, None
        n_pairs = len(self._epoch_pairs(0))
        if n_pairs < batch_size:
            raise ValueError(f"only {n_pairs} positive pairs per epoch, fewer than train.batch_size={batch_size}")
        self._nb = n_pairs // batch_size

    def _epoch_pairs(self, epoch: int) -> np.ndarray:
        if self._epoch != epoch:
            pairs = np.asarray(self.pairs_for_epoch(epoch), dtype=np.int64).reshape(-1, 2)
            # Mix pairs across classes (Ash et al. D.1) with an order drawn from (seed, epoch).
            pairs = pairs[np.random.default_rng([self.seed, epoch, 1]).permutation(len(pairs))]
            self._epoch, self._pairs = epoch, pairs
        return self._pairs

    def batches_per_epoch(self) -> int:
        return self._nb

    def global_rows(self, step: int) -> np.ndarray:
        pairs = self._epoch_pairs(step // self._nb)
        pos = step % self._nb
        return pairs[pos * self.batch_size : (pos + 1) * self.batch_size]

    def local_batch(self, step: int, rank: int, world: int) -> dict[str, torch.Tensor]:
        rows = _local_slice(self.global_rows(step), rank, world)
        batch = {"a": self.collate([self.tokens[i] for i in rows[:, 0]]),
                 "b": self.collate([self.tokens[i] for i in rows[:, 1]])}
        if self.labels is not None:
            batch["labels"] = torch.as_tensor(self.labels[rows[:, 0]])
        return batch
