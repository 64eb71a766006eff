"""The Python loss API on degenerate batches: one ``ValueError`` for inputs holding NaN or an
infinity and for a batch in which no anchor has a negative, instead of a NaN or a 0.0 loss."""

from __future__ import annotations

import pytest
import torch

from qt_hard.errors import NonFiniteError, NotEnoughCandidatesError
from qt_hard.losses import ContrastiveLoss, context_loss, contrastive_loss, local_global_loss, ranking_loss


def _nan(b=4, d=8):
    z = torch.randn(b, d)
    z[1, 2] = float("nan")
    return z


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: contrastive_loss(_nan(), torch.randn(4, 8), "hard", beta=1.0), "z1"),
        (lambda: contrastive_loss(torch.randn(4, 8), torch.randn(4, 8).fill_(float("inf")), "uniform"), "z2"),
        (lambda: context_loss(torch.randn(4, 8), _nan(), "uniform"), "g_emb"),
        (lambda: ranking_loss(torch.randn(4, 8), torch.randn(4, 8), _nan(8).view(4, 2, 8), "uniform"), "explicit"),
        (lambda: local_global_loss(_nan(5), torch.randn(2, 8), torch.tensor([0, 0, 1, 1, 1])), "node_emb"),
    ],
)
def test_non_finite_inputs_raise(call, name):
    """These returned NaN (the hard weights of a NaN score are NaN, and so is every sum they enter)."""
    with pytest.raises(NonFiniteError, match=name) as err:
        call()
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: contrastive_loss(torch.randn(1, 8), torch.randn(1, 8), "uniform"),
        lambda: contrastive_loss(torch.randn(1, 8), torch.randn(1, 8), "hard", beta=1.0, tau_plus=0.1),
        lambda: contrastive_loss(
            torch.randn(3, 8),
            torch.randn(3, 8),
            "uniform",
            labels=torch.zeros(3, dtype=torch.long),
            collision_free=True,
        ),
        lambda: ranking_loss(torch.randn(1, 8), torch.randn(1, 8), None, "uniform"),
        lambda: local_global_loss(torch.randn(3, 8), torch.randn(1, 8), torch.tensor([0, 0, 0])),
    ],
)
def test_a_batch_without_a_negative_raises(call):
    """These returned 0.0: a single pair, one class under collision_free, one graph."""
    with pytest.raises(NotEnoughCandidatesError, match="the batch has no negative") as err:
        call()
    assert isinstance(err.value, ValueError)


def test_smallest_batches_with_a_negative_still_score():
    torch.manual_seed(0)
    assert torch.isfinite(contrastive_loss(torch.randn(2, 8), torch.randn(2, 8), "hard", beta=1.0))
    assert torch.isfinite(ranking_loss(torch.randn(1, 8), torch.randn(1, 8), torch.randn(1, 2, 8), "uniform"))
    # the guard may leave an anchor of a batch that has negatives without any: not an error
    z = torch.randn(3, 8)
    guarded = ContrastiveLoss("uniform", guard="absolute", guard_margin=10.0)
    assert torch.isfinite(guarded(z, z + 0.01 * torch.randn(3, 8)))
