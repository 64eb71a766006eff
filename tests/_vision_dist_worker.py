"""Worker for tests/test_vision_distributed.py: one SimCLR step's loss and gradients, either on the
whole batch in one process or on this rank's half under DDP (gloo), with all-reduced batch norm."""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist

from qt_hard.losses import ContrastiveLoss
from qt_hard.vision.augment import SimCLRAugment
from qt_hard.vision.methods import SimCLRStep
from qt_hard.vision.resnet import SimCLREncoder

B = 16


def step_grads(negatives: str, sync_bn: bool, rows: slice, ddp: bool):
    torch.manual_seed(0)
    model = SimCLREncoder("resnet_tiny", proj_dim=16, width=4, sync_bn=sync_bn)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (B, 3, 32, 32), generator=g, dtype=torch.uint8)
    aug = SimCLRAugment(size=16)
    p1, p2 = aug.sample(B, 32, 32, g), aug.sample(B, 32, 32, g)
    batch = {
        "images": x[rows],
        "view1": {k: v[rows] for k, v in p1.items()},
        "view2": {k: v[rows] for k, v in p2.items()},
    }
    options = {"beta": 1.0, "tau_plus": 0.1} if negatives == "hard" else {}
    step = SimCLRStep(ContrastiveLoss(negatives, temperature=0.5, **options), aug)
    module = torch.nn.parallel.DistributedDataParallel(model) if ddp else model
    loss = step(module, batch)
    loss.backward()
    return loss.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def main():
    rank, world, port, negatives, sync_bn, out = (
        int(sys.argv[1]),
        int(sys.argv[2]),
        sys.argv[3],
        sys.argv[4],
        sys.argv[5] == "1",
        sys.argv[6],
    )
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    per = B // world
    loss, grads = step_grads(negatives, sync_bn, slice(rank * per, (rank + 1) * per), ddp=True)
    losses = [torch.zeros(()) for _ in range(world)]
    dist.all_gather(losses, loss)
    if rank == 0:
        torch.save({"loss": torch.stack(losses).mean(), "grads": grads}, out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
