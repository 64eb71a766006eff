"""A FIFO queue (memory bank) of past embeddings as extra candidates: MoCo (He et al. 2020) and
MoCoRing (Wu et al. 2021, Alg. 1: ``enqueue(queue, emb2); dequeue(queue)``)."""

from __future__ import annotations

import torch

from .distributed import gather


class EmbeddingQueue(torch.nn.Module):
    """Fixed-size FIFO of detached embeddings, saved with the model's state_dict (resumable).

    Args:
        size: capacity M.
        dim: embedding dimension d.

    ``embeddings()`` returns the (m, d) filled part (m <= M), oldest first; ``enqueue(x)`` appends
    (b, d) new embeddings (gathered from every process under torch.distributed, so all processes keep
    the same queue) and drops the oldest beyond M.
    """

    def __init__(self, size: int, dim: int):
        super().__init__()
        if size < 1 or dim < 1:
            raise ValueError(f"queue size and dim must be positive, got size={size}, dim={dim}")
        self.register_buffer("buffer", torch.zeros(size, dim))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))
        self.register_buffer("head", torch.zeros((), dtype=torch.long))

    @property
    def size(self) -> int:
        return self.buffer.shape[0]

    def embeddings(self) -> torch.Tensor:
        n, head = int(self.filled), int(self.head)
        if n < self.size:
            return self.buffer[:n]
        return torch.cat([self.buffer[head:], self.buffer[:head]])

    @torch.no_grad()
    def enqueue(self, x: torch.Tensor) -> None:
        if x.dim() != 2 or x.shape[1] != self.buffer.shape[1]:
            raise ValueError(f"queue holds (n, {self.buffer.shape[1]}) embeddings, got {tuple(x.shape)}")
        x = gather(x.detach(), with_grad=False)[0][-self.size:]
        n, head = x.shape[0], int(self.head)
        idx = (torch.arange(n, device=x.device) + head) % self.size
        self.buffer[idx] = x.to(self.buffer.dtype)
        self.head.fill_((head + n) % self.size)
        self.filled.fill_(min(int(self.filled) + n, self.size))
