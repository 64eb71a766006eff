"""The FIFO memory bank (MoCo; Ring Alg. 1) and its use as extra candidates."""

import math

import pytest
import torch

from qt_hard.losses import ranking_loss
from qt_hard.negatives import EmbeddingQueue


def test_queue_is_fifo_and_bounded():
    q = EmbeddingQueue(size=5, dim=2)
    assert q.embeddings().shape == (0, 2)
    q.enqueue(torch.arange(6.0).reshape(3, 2))  # rows 0,1,2
    q.enqueue(torch.arange(6.0, 14.0).reshape(4, 2))  # rows 3..6: 0 and 1 fall out
    got = q.embeddings()[:, 0].tolist()
    assert got == [4.0, 6.0, 8.0, 10.0, 12.0]  # oldest first
    state = q.state_dict()
    q2 = EmbeddingQueue(size=5, dim=2)
    q2.load_state_dict(state)
    assert torch.equal(q2.embeddings(), q.embeddings())  # resumable with the model
    with pytest.raises(ValueError, match="queue holds"):
        q.enqueue(torch.zeros(2, 3))


def test_moco_ring_uses_queue_only():
    """in_batch=False: the negatives are the queue alone; the ring keeps a band of it (Alg. 1)."""
    g = torch.Generator().manual_seed(0)
    a, p = torch.randn(3, 4, generator=g, dtype=torch.float64), torch.randn(3, 4, generator=g, dtype=torch.float64)
    bank = torch.randn(10, 4, generator=g, dtype=torch.float64)
    t = 0.2
    norm = lambda x: x / x.norm(dim=-1, keepdim=True)
    losses = []
    for i in range(3):
        s_pos = float(norm(a[i]) @ norm(p[i])) / t
        xs = sorted(float(norm(a[i]) @ norm(m)) / t for m in bank)
        ring = xs[2:8]  # percentiles [20, 80) of 10
        losses.append(-s_pos + math.log(math.exp(s_pos) + sum(math.exp(x) for x in ring)))
    got = ranking_loss(a, p, None, "ring", temperature=t, lower=20, upper=80, extra_candidates=bank, in_batch=False)
    assert got.item() == pytest.approx(sum(losses) / 3, abs=1e-10)
