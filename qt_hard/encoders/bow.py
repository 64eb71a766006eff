"""Bag-of-words sentence encoder (Ash et al., AISTATS 2022, section 5 and App. D.1).

A sentence x is the list of its unique tokens t_i with weights p_i = count(t_i) / len(x);
its representation is f(x) = sum_i p_i * nu_{t_i}, nu in R^{V x d} a word-embedding matrix.
The mean of the token embeddings over all (repeated) tokens of x is exactly that sum, so an
``nn.EmbeddingBag(mode="mean")`` computes it in one fused op.
"""

from __future__ import annotations

import torch
from torch import nn


class BagOfWordsEncoder(nn.Module):
    """f(x) = sum_i p_i nu_{t_i} over the non-padding token ids of each row.

    Args:
        vocab_size: V, including pad (id 0) and UNK (id 1).
        dim: d, the embedding (and output) dimension (768 in Ash et al., Table 1).
        padding_idx: id excluded from the mean (the pad id of the vocabulary).
        sparse: sparse gradients for the embedding table (only the rows of the batch's tokens),
            for ``torch.optim.SparseAdam`` (lazy Adam; plain ``Adam`` rejects sparse gradients).

    forward(ids (B, L) long, lengths (B,) long) -> (B, d) float. ``lengths`` is accepted for a
    common signature with the recurrent encoders; the padding id alone decides what is averaged,
    so a row with extra padding encodes the same. A row of padding only encodes to zeros.
    """

    def __init__(self, vocab_size: int, dim: int = 768, padding_idx: int = 0, sparse: bool = False):
        super().__init__()
        if vocab_size < 2 or dim < 1:
            raise ValueError(f"BagOfWordsEncoder needs vocab_size >= 2 and dim >= 1, got {vocab_size}, {dim}")
        # PyTorch default init (normal(0, 1)), as Ash et al. D.1 ("PyTorch default initialization").
        self.bag = nn.EmbeddingBag(vocab_size, dim, mode="mean", padding_idx=padding_idx, sparse=sparse)
        self.dim = dim

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        if ids.dim() != 2:
            raise ValueError(f"ids must be (batch, length), got shape {tuple(ids.shape)}")
        # EmbeddingBag leaves padding_idx entries out of both the sum and the count of "mean".
        return self.bag(ids)
