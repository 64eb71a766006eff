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
from qt_hard.errors import ConfigError


@dataclass
class TokenStore:
    """Token ids of n sentences, flattened: sentence i is ``flat[offsets[i]:offsets[i+1]]``.

    One int32 array instead of n Python lists keeps a large corpus compact (and savable as .npy).
    """

    flat: np.ndarray  # (total_tokens,) int32
    offsets: np.ndarray  # (n + 1,) int64

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

    @classmethod
    def write(cls, prefix, id_chunks) -> "TokenStore":
        """Write the ids of ``id_chunks`` (an iterable of lists of id lists, sentences in order) as
        ``<prefix>_flat.npy`` and ``<prefix>_offsets.npy``, a chunk at a time: the flat ids go to disk
        as they come, so memory holds one chunk and the offsets, never the corpus's id lists. Returns
        the store loaded back (the flat ids memory-mapped)."""
        import os

        raw = f"{prefix}_flat.bin"
        lengths = []
        with open(raw, "wb") as fh:
            for chunk in id_chunks:
                n = np.fromiter((len(x) for x in chunk), dtype=np.int64, count=len(chunk))
                flat = np.fromiter(itertools.chain.from_iterable(chunk), dtype=np.int32, count=int(n.sum()))
                fh.write(flat.tobytes())
                lengths.append(n)
        lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        # The .npy form of the raw ids, copied through in blocks (the header needs the total first).
        out = np.lib.format.open_memmap(f"{prefix}_flat.npy", mode="w+", dtype=np.int32, shape=(total,))
        src = np.memmap(raw, dtype=np.int32, mode="r", shape=(total,)) if total else np.zeros(0, np.int32)
        for start in range(0, total, 1 << 24):
            out[start : start + (1 << 24)] = src[start : start + (1 << 24)]
        out.flush()
        del out, src
        os.remove(raw)
        np.save(f"{prefix}_offsets.npy", offsets)  # last: its presence marks a complete store
        return cls.load(prefix)

    @classmethod
    def load(cls, prefix) -> "TokenStore":
        return cls(np.load(f"{prefix}_flat.npy", mmap_mode="r"), np.load(f"{prefix}_offsets.npy"))


def _local_slice(rows: np.ndarray, rank: int, world: int) -> np.ndarray:
    per = len(rows) // world
    return rows[rank * per : (rank + 1) * per]


# A corpus whose ids take more than this share of the free GPU memory stays on the host.
DEVICE_SHARE = 0.25
# Up to this size the ids are kept as one padded (n, L) table (a batch is a row gather); above
# it, as flat ids + offsets (a batch is a gather of single ids), e.g. BookCorpus's 74 M sentences.
PADDED_MAX_BYTES = 1 << 30


class TokenBatcher:
    """Padded batches of rows of a ``TokenStore``, built by index gathers (no per-sentence Python).

    The ids live as tensors on one device (:meth:`to`); ``batch(rows)`` builds the (R, L) id
    matrix of sentences ``rows``, L the longest of them (at least 1), padded with ``pad_id`` on
    the right (or the left), exactly as ``WordFeaturizer.collate`` / ``HFFeaturizer.collate`` pad
    the same id lists. Two layouts give the same batches:

    * padded (when n x L_max int32 fit in ``PADDED_MAX_BYTES``): the whole corpus as one
      (n, L_max) table, each sentence at the left (right when padding on the left); a batch is
      the rows ``rows`` cut to their L columns (the left or the right ones);
    * flat: ``pos[r, j] = j - start[r]`` (start[r] = L - n[r] on the left, else 0) and
      ``ids[r, j] = flat[offsets[rows[r]] + pos[r, j]]`` where 0 <= pos[r, j] < n[r], else pad.

    Word batches are ``{"ids", "lengths"}`` (sentences cut at ``max_len``); transformer batches
    ``{"input_ids", "attention_mask"}``. The lengths are also kept on the host, so L is known
    without reading the device.
    """

    def __init__(
        self,
        store: TokenStore,
        max_len: int | None = None,
        pad_id: int = 0,
        left: bool = False,
        attention_mask: bool = False,
        padded: bool | None = None,
    ):
        lengths = np.diff(np.asarray(store.offsets, dtype=np.int64))
        if max_len is not None:
            lengths = np.minimum(lengths, max_len)
        self.store, self.lengths = store, lengths
        self.width = max(1, int(lengths.max(initial=0)))
        self.pad_id, self.left, self.attention_mask = int(pad_id), left, attention_mask
        self.padded = len(lengths) * self.width * 4 <= PADDED_MAX_BYTES if padded is None else padded
        self.device = torch.device("cpu")
        self._tensors = None

    @property
    def nbytes(self) -> int:
        ids = len(self.lengths) * self.width * 4 if self.padded else self.store.flat.nbytes + self.store.offsets.nbytes
        return int(ids + self.lengths.nbytes)

    def _table(self) -> np.ndarray:
        """The (n, L_max) int32 padded table, filled a block of rows at a time (bounded memory)."""
        n, width = len(self.lengths), self.width
        flat, offsets = np.asarray(self.store.flat), np.asarray(self.store.offsets, dtype=np.int64)
        table = np.full((n, width), self.pad_id, dtype=np.int32)
        cols = np.arange(width)
        for start in range(0, n, 1 << 16):
            stop = min(start + (1 << 16), n)
            length = self.lengths[start:stop, None]
            pos = cols[None, :] - (width - length) if self.left else np.broadcast_to(cols, (stop - start, width))
            real = (pos >= 0) & (pos < length)
            table[start:stop][real] = flat[(offsets[start:stop, None] + pos)[real]]
        return table

    def to(self, device) -> TokenBatcher:
        """Keep the ids as tensors on ``device`` (flat on a CPU shares the store's memory, a map included)."""
        import warnings

        self.device = torch.device(device)
        lengths = torch.from_numpy(self.lengths).to(self.device)
        if self.padded:
            self._tensors = (torch.from_numpy(self._table()).to(self.device), None, lengths)
            return self
        with warnings.catch_warnings():  # a read-only memory map: never written through the tensor
            warnings.simplefilter("ignore", UserWarning)
            flat = torch.from_numpy(np.asarray(self.store.flat))
        offsets = torch.from_numpy(np.asarray(self.store.offsets, dtype=np.int64))
        self._tensors = (flat.to(self.device), offsets.to(self.device), lengths)
        return self

    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        if self._tensors is None:
            self.to("cpu")
        ids_or_flat, offsets, lengths = self._tensors
        rows = np.asarray(rows, dtype=np.int64)
        width = max(1, int(self.lengths[rows].max(initial=0)))
        r = torch.from_numpy(rows).to(self.device, non_blocking=True)
        n = lengths[r]
        cols = torch.arange(width, device=self.device)
        pos = cols[None, :] - (width - n)[:, None] if self.left else cols[None, :].expand(len(rows), width)
        if offsets is None:  # padded table: the rows, cut to the batch's columns
            part = slice(self.width - width, self.width) if self.left else slice(0, width)
            ids = ids_or_flat.index_select(0, r)[:, part].long()
        else:
            real = (pos >= 0) & (pos < n[:, None])
            idx = (offsets[r][:, None] + pos).clamp_(0, max(len(ids_or_flat) - 1, 0))
            ids = ids_or_flat[idx].long() if len(ids_or_flat) else torch.zeros_like(idx)
            ids = ids.masked_fill_(~real, self.pad_id)
        if self.attention_mask:
            return {"input_ids": ids, "attention_mask": ((pos >= 0) & (pos < n[:, None])).long()}
        return {"ids": ids, "lengths": n}


class _Prefetch:
    """The next step's host batch built in a background thread while this step trains.

    Batches are a pure function of the step, so a prefetched batch is the batch of that step
    whatever happens in between; a step that was not prefetched (the first, a resume) is built
    at once. Host tensors are pinned so the copy to the GPU can overlap compute."""

    def __init__(self, build: Callable[[int, int, int], dict], pin: bool):
        from concurrent.futures import ThreadPoolExecutor

        self.build, self.pin = build, pin
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="qt-hard-batches")
        self.pending: dict[tuple, object] = {}

    def _make(self, key):
        batch = self.build(*key)
        return _pinned(batch) if self.pin else batch

    def __call__(self, step: int, rank: int, world: int) -> dict:
        key = (step, rank, world)
        future = self.pending.pop(key, None)
        batch = future.result() if future is not None else self._make(key)
        for stale in list(self.pending):  # a jump (resume) leaves nothing old behind
            self.pending.pop(stale).cancel()
        nxt = (step + 1, rank, world)
        self.pending[nxt] = self.pool.submit(self._make, nxt)
        return batch


def _pinned(batch):
    if isinstance(batch, dict):
        return {k: _pinned(v) for k, v in batch.items()}
    return batch.pin_memory() if isinstance(batch, torch.Tensor) else batch


class _DeviceBatches:
    """Where a task's batches are built: ``to_device(device)`` (the loop calls it) moves the ids,
    labels and document ids there when they fit (a CPU always; a GPU when the ids take at most
    ``DEVICE_SHARE`` of its free memory); otherwise batches are built on the host, one step
    ahead in a background thread."""

    batcher: TokenBatcher
    device = torch.device("cpu")
    _host_batch = None

    def _move_arrays(self, device) -> None:
        raise NotImplementedError

    def to_device(self, device, resident: bool | None = None) -> None:
        device = torch.device(device)
        if resident is None:  # a GPU when the ids take at most DEVICE_SHARE of its free memory
            resident = device.type != "cuda" or self.batcher.nbytes <= DEVICE_SHARE * torch.cuda.mem_get_info(device)[0]
        self.batcher.to(device if resident else "cpu")
        self._move_arrays(device if resident else "cpu")
        self.device = device if resident else torch.device("cpu")
        self._host_batch = None if resident else _Prefetch(self._build, pin=device.type == "cuda")

    def local_batch(self, step: int, rank: int, world: int) -> dict[str, torch.Tensor]:
        return (self._build if self._host_batch is None else self._host_batch)(step, rank, world)


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


class ContextTask(_DeviceBatches):
    """Quick-Thoughts batches of B consecutive sentences.

    Each epoch starts the blocks at a random shift in [0, B) (so block boundaries move between
    epochs) and visits the blocks in a random order; both are drawn from (seed, epoch).
    ``batcher`` builds the padded ids (``TokenBatcher``); the document ids sit beside them.
    """

    sentences_per_row = 1

    def __init__(self, batcher: TokenBatcher, doc_ids: np.ndarray, batch_size: int, seed: int):
        n = len(batcher.lengths)
        if n != len(doc_ids):
            raise ValueError(f"{n} sentences but {len(doc_ids)} doc ids")
        if n < 2 * batch_size:
            raise ConfigError(
                f"corpus has {n} sentences, fewer than two batches of {batch_size}; "
                "use more data or a smaller train.batch_size"
            )
        self.batcher, self.n = batcher, n
        self.doc_ids = np.asarray(doc_ids, dtype=np.int64)
        self._doc_ids = torch.from_numpy(self.doc_ids)
        self.batch_size, self.seed = batch_size, seed
        self._epoch, self._plan = None, None

    def _move_arrays(self, device) -> None:
        self._doc_ids = torch.from_numpy(self.doc_ids).to(device)

    def batches_per_epoch(self) -> int:
        # The smallest count over all shifts, so every epoch has the same length.
        return (self.n - (self.batch_size - 1)) // self.batch_size

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

    def _build(self, step: int, rank: int, world: int) -> dict[str, torch.Tensor]:
        rows = _local_slice(self.global_rows(step), rank, world)
        # Consecutive rows: the document ids are a slice, no index copy.
        return {"x": self.batcher.batch(rows), "doc_ids": self._doc_ids[int(rows[0]) : int(rows[-1]) + 1]}


class PairTask(_DeviceBatches):
    """Positive-pair batches (x_i, x_i^+) with class labels, pairs redrawn every epoch.

    pairs_for_epoch(epoch) -> (P, 2) int array of sentence indices, in the order batches take them
    (B at a time, the remainder dropped); labels: (n,) class per sentence.
    ``shuffle_labels``: each batch's labels are permuted among its pairs, by a permutation drawn
    from (seed, step) (the control of collision-free sampling: as many same-label candidates are
    removed, but random ones). Under W processes the permutation is of the global batch.
    """

    sentences_per_row = 2

    def __init__(
        self,
        batcher: TokenBatcher,
        labels: np.ndarray | None,
        pairs_for_epoch: Callable[[int], np.ndarray],
        batch_size: int,
        seed: int,
        shuffle_labels: bool = False,
    ):
        self.batcher = batcher
        self.labels = None if labels is None else np.asarray(labels, dtype=np.int64)
        if shuffle_labels and self.labels is None:
            raise ValueError("shuffled labels need class labels")
        self._labels = None if self.labels is None else torch.from_numpy(self.labels)
        self.shuffle_labels = shuffle_labels
        self.pairs_for_epoch = pairs_for_epoch
        self.batch_size, self.seed = batch_size, seed
        self._epoch, self._pairs = None, None
        n_pairs = len(self._epoch_pairs(0))
        if n_pairs < batch_size:
            raise ConfigError(f"only {n_pairs} positive pairs per epoch, fewer than train.batch_size={batch_size}")
        self._nb = n_pairs // batch_size

    def _move_arrays(self, device) -> None:
        if self.labels is not None:
            self._labels = torch.from_numpy(self.labels).to(device)

    def _epoch_pairs(self, epoch: int) -> np.ndarray:
        if self._epoch != epoch:
            # In batch order: ``pairs_for_epoch`` mixes them across classes (Ash et al. D.1;
            # ``qt_hard.data.wiki.positive_pair_indices`` draws that order from (epoch, seed)).
            pairs = np.asarray(self.pairs_for_epoch(epoch), dtype=np.int64).reshape(-1, 2)
            self._epoch, self._pairs = epoch, pairs
        return self._pairs

    def batches_per_epoch(self) -> int:
        return self._nb

    def global_rows(self, step: int) -> np.ndarray:
        pairs = self._epoch_pairs(step // self._nb)
        pos = step % self._nb
        return pairs[pos * self.batch_size : (pos + 1) * self.batch_size]

    def label_rows(self, step: int) -> np.ndarray:
        """The sentence whose label each pair of the global batch carries (its first, unless shuffled)."""
        first = self.global_rows(step)[:, 0]
        if not self.shuffle_labels:
            return first
        return first[np.random.default_rng([self.seed, step, 2]).permutation(len(first))]

    def _build(self, step: int, rank: int, world: int) -> dict[str, torch.Tensor]:
        rows = _local_slice(self.global_rows(step), rank, world)
        batch = {"a": self.batcher.batch(rows[:, 0]), "b": self.batcher.batch(rows[:, 1])}
        if self._labels is not None:
            own = torch.from_numpy(_local_slice(self.label_rows(step), rank, world))
            batch["labels"] = self._labels[own.to(self._labels.device, non_blocking=True)]
        return batch
