#!/usr/bin/env python
"""Sentences per second of one bag-of-words NCE step on Wiki-N (Ash et al. 2022, App. D.1:
768-d, B pairs = 2B sentences, Adam lr 0.01, clip 2.5), and where the time goes.

Three variants, timed side by side on the same data, interleaved round by round:

* ``train_loop``: what ``qt-hard train configs/bow_wiki.yaml`` does per step: ``PairTask``
  batches collated in Python from a ``TokenStore`` (``WordFeaturizer.collate``), the loss, dense
  Adam (torch's default implementation), ``clip_grad_norm_``.
* ``cell``: what a ``scripts/k_vs_n.py`` cell does: the split's ids padded once into one (n, L)
  tensor on the device, a batch is a row gather cut to its longest sentence; fused Adam on a GPU.
* ``cell_sparse_adam``: as ``cell`` with sparse embedding gradients and ``torch.optim.SparseAdam``
  (lazy Adam: only the rows of the batch's tokens are updated; *not* D.1's optimizer).

Every phase (batch, forward + loss, backward, clip, optimizer) is timed with a device sync
around it, so the phase split slows the step a little; the headline uses separately timed
un-instrumented steps. Prints one JSON object and a last line with the figure.

    python scripts/bench_bow_step.py --cache runs/k_vs_n/cache --N 300          # after `k_vs_n.py prepare`
    python scripts/bench_bow_step.py --cache runs/k_vs_n/cache --N 3029 --device cuda
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import k_vs_n as K  # noqa: E402


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


class Variant:
    def __init__(self, name, data, store, device, B, k, dim, seed=0):
        from qt_hard.encoders.bow import BagOfWordsEncoder
        from qt_hard.encoders.text import WordFeaturizer
        from qt_hard.losses import ContrastiveLoss
        from qt_hard.training.tasks import PairTask

        self.name, self.data, self.device, self.B = name, data, device, B
        torch.manual_seed(seed)
        self.sparse = name == "cell_sparse_adam"
        self.module = BagOfWordsEncoder(data.vocab_size, dim, sparse=self.sparse).to(device)
        if self.sparse:
            self.opt = torch.optim.SparseAdam(list(self.module.parameters()), lr=0.01)
        elif name == "cell":
            self.opt = torch.optim.Adam(self.module.parameters(), lr=0.01, fused=device.type == "cuda" or None)
        else:
            self.opt = torch.optim.Adam(self.module.parameters(), lr=0.01)
        self.loss_fn = ContrastiveLoss("uniform", temperature=1.0, k=k, normalize=False, include_positive=False)
        self.loss_fn.generator = torch.Generator(device=device).manual_seed(seed)
        from qt_hard.data.wiki import positive_pair_indices

        if name == "train_loop":
            collate = WordFeaturizer(None, max_len=128).collate
            self.task = PairTask(store, data.train_labels_np,
                                 lambda e: positive_pair_indices(data.members, e, seed)[:, :2], collate, B, seed)
        self.pairs = torch.as_tensor(positive_pair_indices(data.members, 0, seed)[:, :2], device=device)
        self.step_i = 0

    def batch(self):
        i = self.step_i % (len(self.pairs) // self.B)
        self.step_i += 1
        if self.name == "train_loop":
            b = self.task.local_batch(i, 0, 1)
            return b["a"]["ids"].to(self.device), b["b"]["ids"].to(self.device)
        rows = self.pairs[i * self.B:(i + 1) * self.B]
        d = self.data
        return K._batch(d.train_ids, d.train_len, rows[:, 0]), K._batch(d.train_ids, d.train_len, rows[:, 1])

    def step(self, phases: dict | None):
        dev = self.device

        def mark(name, t):
            if phases is not None:
                _sync(dev)
                now = time.perf_counter()
                phases[name] = phases.get(name, 0.0) + now - t
                return now
            return t

        t = time.perf_counter()
        a, b = self.batch()
        t = mark("batch", t)
        loss = self.loss_fn(self.module(a), self.module(b))
        t = mark("forward_loss", t)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        t = mark("backward", t)
        if self.sparse:
            K._clip_sparse_(self.module.parameters(), 2.5)
        else:
            torch.nn.utils.clip_grad_norm_(self.module.parameters(), 2.5)
        t = mark("clip", t)
        self.opt.step()
        mark("optimizer", t)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", default="configs/k_vs_n.yaml", help="grid whose data section names the cache")
    ap.add_argument("--cache", default="runs/k_vs_n/cache")
    ap.add_argument("--N", type=int, default=300)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--k", type=int, default=None, help="negatives per anchor (default: all 2(B-1))")
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--steps", type=int, default=5, help="timed steps per variant and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--variants", default="train_loop,cell,cell_sparse_adam")
    args = ap.parse_args(argv)

    from qt_hard.training.tasks import TokenStore

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    grid = K.load_grid(args.grid)
    path = K.data_file(Path(args.cache), grid.data, args.N)
    data = K.load_cell_data(path, device)
    z = np.load(path)
    store = TokenStore(z["train_flat"].astype(np.int32), z["train_offsets"])
    variants = [Variant(n, data, store, device, args.B, args.k, args.dim) for n in args.variants.split(",")]
    for v in variants:  # warm-up
        v.step(None)
        v.step(None)
    _sync(device)
    times = {v.name: [] for v in variants}
    phases = {v.name: {} for v in variants}
    for _ in range(args.rounds):
        for v in variants:
            t0 = time.perf_counter()
            for _ in range(args.steps):
                v.step(None)
            _sync(device)
            times[v.name].append((time.perf_counter() - t0) / args.steps)
        for v in variants:
            for _ in range(max(1, args.steps // 2)):
                v.step(phases[v.name])
    out = {"N": args.N, "B": args.B, "k": args.k, "dim": args.dim, "vocab": data.vocab_size,
           "device": str(device), "threads": torch.get_num_threads(), "variants": {}}
    for v in variants:
        s = statistics.median(times[v.name])
        total = sum(phases[v.name].values())
        out["variants"][v.name] = {
            "step_s": round(s, 5), "sentences_per_s": round(2 * args.B / s, 1),
            "phase_share": {k: round(x / total, 3) for k, x in phases[v.name].items()}}
    base = out["variants"].get("train_loop")
    if base:
        for name, v in out["variants"].items():
            v["speedup_vs_train_loop"] = round(base["step_s"] / v["step_s"], 2)
    print(json.dumps(out, indent=1))
    parts = [f"{n} {v['sentences_per_s']:.0f} sent/s" for n, v in out["variants"].items()]
    print(f"BoW step, Wiki-{args.N}, B={args.B}, k={args.k or 'all'}, {device}: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
