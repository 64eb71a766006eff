"""Forward + backward time of every negatives strategy against plain InfoNCE with F.cross_entropy,
measured side by side in one run (issue "negatives core", item 6).

Both sides start from the same (B, d) embeddings of two views and compute the (2B, 2B) scores
themselves, so each ratio is "our objective" over "the plainest InfoNCE one can write" for the same
work. Runs are interleaved (baseline, strategy, baseline, ...), each a block of back-to-back calls
lasting at least 0.2 s, and the median of each is taken, so a noisy machine slows both alike. Prints one JSON object and ends with a one-line headline figure.

    python scripts/bench_losses.py                       # B in 256, 1024, 4096; d 768; k all and 64
    python scripts/bench_losses.py --batch-sizes 256 --reps 3 --device cuda
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from qt_hard.diagnostics import LargestTensor
from qt_hard.losses import contrastive_loss

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402

TARGETS = {"hard": 1.05, "debiased": 1.05, "uniform+k": 1.2, "hard+k": 1.2, "ring": 1.3, "ot": 2.0}

STRATEGIES = {
    "uniform": {},
    "debiased": {"tau_plus": 0.1},
    "hard": {"beta": 1.0, "tau_plus": 0.1},
    "ring": {"lower": 10, "upper": 90},
    "label": {"hardening": "exp", "beta": 1.0},
    "ot": {"epsilon": 0.5, "sinkhorn_iters": 20},
}


def infonce_cross_entropy(z1, z2, t):
    """Plain NT-Xent: cross-entropy over the 2B-1 other views, the partner as target."""
    b = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    s = z @ z.T / t
    s = s.masked_fill(torch.eye(2 * b, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(b, 2 * b), torch.arange(b)]).to(z.device)
    return F.cross_entropy(s, target)


def bench(b, d, k, name, opts, reps, device, t=0.5):
    g = torch.Generator(device=device).manual_seed(0)
    z1 = torch.randn(b, d, device=device, generator=g).requires_grad_()
    z2 = torch.randn(b, d, device=device, generator=g).requires_grad_()
    labels = torch.randint(0, 10, (b,), device=device, generator=g)

    def base():
        infonce_cross_entropy(z1, z2, t).backward()

    def ours():
        contrastive_loss(z1, z2, name, temperature=t, k=k, labels=labels, **opts).backward()

    base(), ours()  # warm-up (allocator, kernels)
    calls = _bench.block_calls(base, device=device)
    tb, to = _bench.interleaved([base, ours], [calls, calls], reps, device)
    with LargestTensor() as probe:
        ours()
    peak = None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        ours()
        peak = torch.cuda.max_memory_allocated() / 2**20
    mb, mo = statistics.median(tb), statistics.median(to)
    return {
        "B": b,
        "d": d,
        "k": k if k is not None else "all",
        "strategy": name,
        "baseline_s": round(mb, 5),
        "ours_s": round(mo, 5),
        "ratio": round(mo / mb, 3),
        "peak_mib": None if peak is None else round(peak, 1),
        # memory O(B x candidates): the largest tensor made, in units of the larger of the (2B, 2B)
        # score table and the (2B, d) embeddings (a B x candidates x d tensor would be ~d or ~B)
        "largest_tensor_vs_inputs": round(probe.largest / max((2 * b) ** 2, 2 * b * d), 2),
    }


def _stamp(device) -> dict:
    """The device, torch and its threads, the load average (other processes on the machine lengthen
    both sides of a ratio unevenly: say how many ran) and ``provenance``."""
    from qt_hard.experiments.ledger import provenance

    stamp = {"device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads()}
    stamp["load_average"] = [round(x, 1) for x in os.getloadavg()]
    return {**stamp, **provenance(_bench.ROOT)}


def main(argv=None):
    p = _bench.parser(__doc__, threads=None, reps=3)
    p.add_argument("--batch-sizes", default="256,1024,4096")
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--ks", default="all,64")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    rows = []
    for b in (int(x) for x in args.batch_sizes.split(",")):
        for k in (None if x == "all" else int(x) for x in args.ks.split(",")):
            for name in args.strategies.split(","):
                row = bench(b, args.dim, k, name, STRATEGIES[name], args.reps, device)
                rows.append(row)
                _bench.emit([{**row, **_stamp(device)} if args.out else row], args.out)
    summary = {}
    for row in rows:
        key = row["strategy"] + ("+k" if row["k"] != "all" else "")
        summary.setdefault(key, []).append(row["ratio"])
    worst = {key: max(v) for key, v in summary.items()}
    met = {key: worst[key] <= TARGETS[key] for key in TARGETS if key in worst}
    print(
        json.dumps(
            {
                "device": str(device),
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "worst_ratio": worst,
                "targets": TARGETS,
                "target_met": met,
                "rows": rows,
            }
        )
    )
    name = "hard" if "hard" in worst else next(iter(worst))
    print(
        f"headline: {name} negatives cost {worst[name]:.3f}x plain cross-entropy InfoNCE (worst over B, "
        f"{device.type}); targets met: {sum(met.values())}/{len(met)}"
    )


if __name__ == "__main__":
    main()
