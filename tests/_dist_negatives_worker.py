"""Run under ``torchrun --standalone --nproc_per_node 2`` (gloo, CPU): each process takes its half of
a fixed global batch, computes the losses with candidates gathered from both processes, and saves
its losses and the gradients with respect to its own inputs."""

import sys

import torch
import torch.distributed as dist

from qt_hard.losses import context_loss, contrastive_loss, ranking_loss

CASES = {
    "uniform": lambda a, b, n, y, d: contrastive_loss(a, b, "uniform", labels=y),
    "hard": lambda a, b, n, y, d: contrastive_loss(a, b, "hard", beta=1.0, tau_plus=0.1),
    "ring": lambda a, b, n, y, d: contrastive_loss(a, b, "ring", lower=10, upper=90),
    "label": lambda a, b, n, y, d: contrastive_loss(a, b, "label", labels=y, hardening="exp", beta=1.0),
    "ash": lambda a, b, n, y, d: contrastive_loss(a, b, temperature=1.0, normalize=False, include_positive=False),
    "context": lambda a, b, n, y, d: context_loss(a, b, "hard", beta=1.0, clip="rescaled", context=2, doc_ids=d),
    "ranking": lambda a, b, n, y, d: ranking_loss(a, b, n, "hard", beta=0.5),
    # k decoupled from the per-device batch: k = every global candidate (2B - 2 = 14 two-view, 3B - 1 =
    # 23 with two explicit negatives), more than one process's own rows hold (6 and 11), so the draw
    # is all of the gathered set whatever the generator.
    "uniform_k_all": lambda a, b, n, y, d: contrastive_loss(a, b, "uniform", k=14),
    "ring_k_all": lambda a, b, n, y, d: contrastive_loss(a, b, "ring", lower=10, upper=90, k=14),
    "ranking_k_all": lambda a, b, n, y, d: ranking_loss(a, b, n, "hard", beta=0.5, k=23),
}


def global_batch():
    g = torch.Generator().manual_seed(0)
    B = 8
    return (
        torch.randn(B, 6, generator=g, dtype=torch.float64),
        torch.randn(B, 6, generator=g, dtype=torch.float64),
        torch.randn(B, 2, 6, generator=g, dtype=torch.float64),
        torch.arange(B) % 3,
        torch.tensor([0, 0, 0, 1, 1, 1, 1, 1]),
    )


def main(out):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    a, b, n, y, d = global_batch()
    sl = slice(rank * a.shape[0] // world, (rank + 1) * a.shape[0] // world)
    result = {}
    for name, fn in CASES.items():
        xs = [t[sl].clone().requires_grad_() for t in (a, b, n)]
        loss = fn(*xs, y[sl], d[sl])
        loss.backward()
        result[name] = (loss.item(), [x.grad for x in xs])
    torch.save(result, f"{out}/rank{rank}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
