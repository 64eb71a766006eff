"""Where the time of one Quick-Thoughts GRU training step goes, and how close it is to the machine.

One step as the training loop runs it (``qt_hard.training``): collate B consecutive sentences,
f and g encoders (embedding + packed GRU), the core's ``ContextLoss`` (joint form), backward, gradient
clipping, Adam over every parameter. Each phase is timed separately over ``--steps`` steps (after
warm-up), on sentence lengths drawn from the local books when they are there (else a geometric
stand-in). The GRU's useful work is counted in FLOPs (3 gates, input and recurrent matmuls, forward
and twice that backward) and set against the matmul throughput of this machine measured side by side
(``torch.mm`` at the GRU's own shapes), which gives the fraction of the matmul rate the step reaches.

Variants (``--variants``) are the same step with one thing changed, measured in the same run:
``model`` (the library's encoder as it is: on a CPU the dense recurrence read at each row's length),
``packed`` (``pack_padded_sequence``, the library's path before), ``sorted`` (rows sorted by length
before packing), ``threads2`` (the library's encoder on two torch threads), ``adam_foreach`` (the
library's encoder with torch's default multi-tensor Adam instead of the fused kernel the loop uses now).
Like the training loop, the script lets glibc keep freed memory (``keep_freed_memory``) before it starts.
``--encoder bow`` times the bag-of-words f/g pair instead (no GRU FLOPs then). ``--device cuda`` runs
the step (and the side-by-side ``torch.mm``) on a GPU, where the encoder takes cuDNN's packed GRU;
every phase is then timed between ``torch.cuda.synchronize()`` calls.

    python scripts/bench_qt_step.py [--batch 400] [--embed 128] [--hidden 256] [--vocab 50000] [--steps 5]
    python scripts/bench_qt_step.py --encoder bow --embed 300 --vocab 30000 --variants adam_foreach,model
    python scripts/bench_qt_step.py --device cuda --embed 300 --hidden 1200 --steps 50 --warmup 5 --variants model

Prints JSON, then a headline.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from qt_hard.encoders.quick_thoughts import QuickThoughtsEncoder
from qt_hard.losses import ContextLoss

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
from _bench import sync as _sync  # noqa: E402


def book_lengths(n: int, max_len: int, seed: int) -> np.ndarray:
    """Token counts of n consecutive book sentences (the first books' cache-free sample), else a stand-in."""
    rng = np.random.default_rng(seed)
    try:
        from qt_hard.data.books import book_sentences, find_books
        from qt_hard.data.wordlevel import word_tokens
        from qt_hard.paths import data_path

        sents = []
        for f in find_books(data_path("books"))[:2]:
            sents += list(book_sentences(f))
        lens = np.array([len(word_tokens(s)) for s in sents[:5000]])
        return np.minimum(rng.choice(lens, n), max_len).clip(1)
    except FileNotFoundError:
        return np.minimum(rng.geometric(1 / 18, n), max_len)


def gru_flops(lengths: np.ndarray, embed: int, hidden: int) -> float:
    """FLOPs of the GRU matmuls of one step: 2 encoders, per token 2 * 3h * (e + h) forward, x3 with
    backward (input and weight gradients)."""
    per_token = 2 * 3 * hidden * (embed + hidden)
    return float(lengths.sum()) * per_token * 2 * 3


def matmul_gflops(batch: int, embed: int, hidden: int, reps: int = 20, device=None) -> float:
    """torch.mm throughput at the GRU's shapes: (B, e+h) x (e+h, 3h), float32 (TF32 as torch's
    default leaves it: off for matmuls)."""
    device = torch.device("cpu") if device is None else device
    a = torch.randn(batch, embed + hidden, device=device)
    b = torch.randn(embed + hidden, 3 * hidden, device=device)
    for _ in range(3):
        a @ b
    _sync(device)
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    _sync(device)
    dt = time.perf_counter() - t
    return 2 * batch * (embed + hidden) * 3 * hidden * reps / dt / 1e9


class PackedQT(torch.nn.Module):
    """The packed recurrence (``pack_padded_sequence``), whatever the library's own path is: the
    reference the dense CPU path of ``SentenceRNN`` replaced (same states, see its docstring)."""

    def __init__(self, qt: QuickThoughtsEncoder):
        super().__init__()
        self.qt = qt

    def _one(self, enc, ids, lengths):
        from torch.nn.utils.rnn import pack_padded_sequence

        packed = pack_padded_sequence(enc.embedding(ids), lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
        return enc.rnn(packed)[1][0]

    def forward(self, ids, lengths):
        return self._one(self.qt.f, ids, lengths), self._one(self.qt.g, ids, lengths)


def run_variant(name, args, lengths_all, threads):
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    dev = torch.device(args.device)
    model = QuickThoughtsEncoder(args.vocab, args.encoder, args.embed, args.hidden).to(dev)
    step_model = PackedQT(model) if name in ("packed", "sorted") else model
    loss_fn = ContextLoss("uniform", context=1)
    # The loop's optimizer (fused Adam) except in the variants measuring the paths before.
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, fused=name not in ("adam_foreach", "packed", "sorted"))
    rng = np.random.default_rng(1)
    phases = {"collate": 0.0, "forward": 0.0, "loss": 0.0, "backward": 0.0, "clip": 0.0, "adam": 0.0}
    n_sent = 0
    total_lengths = []
    for step in range(args.steps + args.warmup):
        start = int(rng.integers(0, len(lengths_all) - args.batch))
        lens = lengths_all[start : start + args.batch]
        t0 = time.perf_counter()
        ids = torch.zeros(args.batch, int(lens.max()), dtype=torch.long)
        for r, n in enumerate(lens):
            ids[r, :n] = torch.as_tensor(rng.integers(2, args.vocab, n))
        lengths = torch.as_tensor(lens)
        if name == "sorted":
            order = torch.argsort(lengths, descending=True)
            ids, lengths = ids[order], lengths[order]  # consecutive order is lost: timing only
        ids, lengths = ids.to(dev), lengths.to(dev)
        _sync(dev)
        t1 = time.perf_counter()
        f, g = step_model(ids, lengths)
        _sync(dev)
        t2 = time.perf_counter()
        loss = loss_fn(f, g)
        _sync(dev)
        t3 = time.perf_counter()
        loss.backward()
        _sync(dev)
        t4 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        _sync(dev)
        t5 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _sync(dev)
        t6 = time.perf_counter()
        if step >= args.warmup:
            for k, a, b in zip(phases, (t0, t1, t2, t3, t4, t5), (t1, t2, t3, t4, t5, t6)):
                phases[k] += b - a
            n_sent += args.batch
            total_lengths.append(lens)
    total = sum(phases.values())
    flops = gru_flops(np.concatenate(total_lengths), args.embed, args.hidden) if args.encoder == "gru" else 0.0
    return {
        "variant": name,
        "threads": threads,
        "sentences_per_s": round(n_sent / total, 1),
        "step_s": round(total / args.steps, 3),
        "phase_share": {k: round(v / total, 3) for k, v in phases.items()},
        "gru_gflops_per_s": round(flops / total / 1e9, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", choices=("gru", "bow"), default="gru")
    ap.add_argument("--batch", type=int, default=400)
    ap.add_argument("--embed", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=50000)
    ap.add_argument("--max-len", type=int, default=50)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--variants", default="packed,model,sorted,threads2")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: torch sees no CUDA device here")
    if args.encoder == "bow" and {"packed", "sorted"} & set(args.variants.split(",")):
        raise SystemExit("--encoder bow: the packed and sorted variants are GRU paths")
    from qt_hard.training.loop import keep_freed_memory

    keep_freed_memory()  # as the training loop does on a CPU
    lengths_all = book_lengths(20000, args.max_len, seed=0)
    rows = []
    for v in args.variants.split(","):
        threads = 2 if v == "threads2" else 1
        name = "model" if v == "threads2" else v
        torch.set_num_threads(threads)
        mm = matmul_gflops(args.batch, args.embed, args.hidden, device=torch.device(args.device))  # side by side
        row = run_variant(name, args, lengths_all, threads)
        row["variant"] = v
        row["matmul_gflops_per_s"] = round(mm, 2)
        row["fraction_of_matmul"] = round(row["gru_gflops_per_s"] / mm, 3)
        rows.append(row)
    print(
        json.dumps(
            {
                "device": args.device,
                "batch": args.batch,
                "embed": args.embed,
                "hidden": args.hidden,
                "vocab": args.vocab,
                "mean_tokens": round(float(lengths_all.mean()), 1),
                "rows": rows,
            },
            indent=1,
        )
    )
    base = rows[0]
    print(
        f"QT {args.encoder} step on {args.device} at batch {args.batch}: {base['sentences_per_s']} sentences/s ({base['variant']}, "
        f"{base['threads']} thread), {base['gru_gflops_per_s']} GFLOP/s of GRU matmuls = "
        f"{100 * base['fraction_of_matmul']:.0f}% of torch.mm's {base['matmul_gflops_per_s']} GFLOP/s; "
        + ", ".join(f"{r['variant']} {r['sentences_per_s'] / base['sentences_per_s']:.2f}x" for r in rows[1:])
    )


if __name__ == "__main__":
    main()
