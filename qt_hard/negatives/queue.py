"""A FIFO queue (memory bank) of past embeddings as extra candidates: MoCo (He et al. 2020) and
MoCoRing (Wu et al. 2021, Alg. 1: ``enqueue(queue, emb2); dequeue(queue)``)."""

from __future__ import annotations

import torch

from .distributed import gather

UNKNOWN_LABEL = -1


class EmbeddingQueue(torch.nn.Module):
    """Fixed-size FIFO of detached embeddings and their class labels, saved with the model's
    state_dict (resumable).

    Args:
        size: capacity M.
        dim: embedding dimension d.

    ``embeddings()`` returns the (m, d) filled part (m <= M), oldest first, and ``labels()`` the (m,)
    labels of those rows, ``-1`` (:data:`UNKNOWN_LABEL`) where they were enqueued without one.
    ``enqueue(x, labels)`` appends (b, d) new embeddings with their (b,) non-negative class labels or
    none (gathered from every process under torch.distributed, so all processes keep the same queue)
    and drops the oldest beyond M. Pass ``labels()`` as ``extra_labels`` next to ``embeddings()`` as
    ``extra_candidates``, so that label-aware negatives (H-SCL, collision-free k) see the queue's
    classes: a queued row of the anchor's class is then no negative, one of unknown class always is.
    """

    def __init__(self, size: int, dim: int):
        super().__init__()
        if size < 1 or dim < 1:
            raise ValueError(f"queue size and dim must be positive, got size={size}, dim={dim}")
        self.register_buffer("buffer", torch.zeros(size, dim))
        self.register_buffer("label_buffer", torch.full((size,), UNKNOWN_LABEL, dtype=torch.long))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))
        self.register_buffer("head", torch.zeros((), dtype=torch.long))

    @property
    def size(self) -> int:
        return self.buffer.shape[0]

    def _ordered(self, x: torch.Tensor) -> torch.Tensor:
        n, head = int(self.filled), int(self.head)
        if n < self.size:
            return x[:n]
        return torch.cat([x[head:], x[:head]])

    def embeddings(self) -> torch.Tensor:
        return self._ordered(self.buffer)

    def labels(self) -> torch.Tensor:
        """(m,) int64 labels of :meth:`embeddings`' rows, -1 where unknown."""
        return self._ordered(self.label_buffer)

    @torch.no_grad()
    def enqueue(self, x: torch.Tensor, labels=None) -> None:
        if x.dim() != 2 or x.shape[1] != self.buffer.shape[1]:
            raise ValueError(f"queue holds (n, {self.buffer.shape[1]}) embeddings, got {tuple(x.shape)}")
        if labels is None:
            labels = torch.full((x.shape[0],), UNKNOWN_LABEL, dtype=torch.long, device=x.device)
        else:
            labels = torch.as_tensor(labels, device=x.device)
            if labels.shape != (x.shape[0],) or labels.is_floating_point() or labels.dtype == torch.bool:
                raise ValueError(
                    f"queue labels must be ({x.shape[0]},) integer class ids, got dtype "
                    f"{labels.dtype} shape {tuple(labels.shape)}"
                )
            if labels.numel() and int(labels.min()) < 0:
                raise ValueError(
                    "queue labels must be >= 0 (-1 marks an unknown label); enqueue "
                    "without labels for rows of unknown class"
                )
        x = gather(x.detach(), with_grad=False)[0][-self.size :]
        labels = gather(labels.long(), with_grad=False)[0][-self.size :]
        n, head = x.shape[0], int(self.head)
        idx = (torch.arange(n, device=x.device) + head) % self.size
        self.buffer[idx] = x.to(self.buffer.dtype)
        self.label_buffer[idx] = labels.to(self.label_buffer.device)
        self.head.fill_((head + n) % self.size)
        self.filled.fill_(min(int(self.filled) + n, self.size))
