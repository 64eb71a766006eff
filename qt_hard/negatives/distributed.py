"""All-gather that carries gradients, so that under ``torch.distributed`` (``accelerate launch``,
``torchrun``) the candidate set is the *global* batch while anchors stay local (docs/architecture.md,
"Distributed").

Gradient bookkeeping: process r computes ``loss_r`` on its local anchors against the gathered
candidates. The backward of the gather sums, over all processes, the gradient that flows into each
slice and hands every process the part belonging to its own inputs. With DDP averaging gradients over
the W processes, every parameter then receives ``(1/W) * sum_r d loss_r``, i.e. the gradient of the
mean loss, which equals one process on the concatenated batch when the local batches are equal.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def world() -> tuple[int, int]:
    """(rank, world_size); (0, 1) when torch.distributed is not initialized."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class _GatherWithGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, sizes: list[int]) -> torch.Tensor:  # type: ignore[override]
        rank, size = world()
        ctx.rank, ctx.sizes = rank, sizes
        longest = max(sizes)
        # all_gather wants equal shapes: pad the local slice to the longest one, cut after.
        padded = x.new_zeros((longest, *x.shape[1:]))
        padded[: x.shape[0]] = x
        out = [torch.empty_like(padded) for _ in range(size)]
        dist.all_gather(out, padded.contiguous())
        return torch.cat([o[:n] for o, n in zip(out, sizes)], dim=0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        start = sum(ctx.sizes[: ctx.rank])
        return grad[start : start + ctx.sizes[ctx.rank]], None


def gather(x: torch.Tensor, *, with_grad: bool = True) -> tuple[torch.Tensor, int]:
    """Concatenate ``x`` (n_r, ...) from every process in rank order.

    Returns ``(x_all, offset)`` where ``offset`` is where this process's rows start in ``x_all``.
    Without an initialized process group this is ``(x, 0)``. Local sizes may differ between processes
    (the last batch of an epoch); rows are padded for the collective and cut again.
    """
    rank, size = world()
    if size == 1:
        return x, 0
    n = torch.tensor([x.shape[0]], device=x.device, dtype=torch.long)
    ns = [torch.zeros_like(n) for _ in range(size)]
    dist.all_gather(ns, n)
    sizes = [int(v.item()) for v in ns]
    offset = sum(sizes[:rank])
    if with_grad and x.requires_grad:
        return _GatherWithGrad.apply(x, sizes), offset
    with torch.no_grad():
        return _GatherWithGrad.forward(_Ctx(), x, sizes), offset


class _Ctx:
    """Stand-in for autograd's ctx when gathering tensors that need no gradient (labels, ids)."""
