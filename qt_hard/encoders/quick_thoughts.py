"""Quick-Thoughts encoders (Logeswaran & Lee, ICLR 2018; used by Robinson et al. 2021, Table 2).

Two sentence encoders f and g with separate parameters. Training scores f(s_i) . g(s_j) over a
batch of consecutive sentences (the objective lives in ``qt_hard.losses.context_loss``); for
evaluation a sentence is represented by concat(f(s), g(s)).

Each of f and g is one of the S2V encoder types:

* ``gru``:   a unidirectional GRU; the representation is the hidden state at the last real token.
* ``bigru``: a bidirectional GRU; concat of the forward state at the last real token and the
  backward state at the first token, so the output is 2 * hidden_dim.
* ``bow``:   the mean of the word embeddings (a bag of words; output embed_dim).

Padding never enters a representation. The bidirectional GRU (and any GRU on a GPU, where cuDNN
runs packed batches well) packs the sequences with their true lengths. The unidirectional GRU on a
CPU runs over the padded batch and reads each row's state at its last real token instead: the
recurrence is causal, so that state is exactly the packed one, and a dense recurrence ran 3.2x faster
than packing at batch 400 here (``scripts/bench_train.py step``; packing's backward took 86% of the step).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

ENCODER_TYPES = ("gru", "bigru", "bow")
# The saved pair's config file in a sentence-transformers folder (``st_module.QuickThoughtsModule``).
QT_CONFIG = "quick_thoughts_config.json"


def pad(id_lists, lengths, pad_id: int = 0, left: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, mask), both (B, L) long, L the largest of ``lengths`` (at least 1): row i holds the first
    ``lengths[i]`` ids of ``id_lists[i]`` and ``pad_id`` after them (before them with ``left``); the mask
    is 1 on the ids."""
    width = max([1, *lengths])
    ids = torch.full((len(id_lists), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(id_lists), width), dtype=torch.long)
    for row, (x, n) in enumerate(zip(id_lists, lengths)):
        if n:
            cols = slice(width - n, width) if left else slice(0, n)
            ids[row, cols] = torch.as_tensor(np.asarray(x[:n], dtype=np.int64))
            mask[row, cols] = 1
    return ids, mask


def contiguous_state(module: torch.nn.Module, prefix: str = "") -> dict[str, torch.Tensor]:
    """A state_dict safetensors accepts: CPU tensors, each its own contiguous storage (cuDNN packs a
    GRU's weights into one shared buffer; safetensors refuses shared storage)."""
    return {prefix + k: v.detach().to("cpu", copy=True).contiguous() for k, v in module.state_dict().items()}


class SentenceRNN(nn.Module):
    """One Quick-Thoughts sentence encoder.

    forward(ids (B, L) long, lengths (B,) long) -> (B, out_dim). Rows are right-padded with
    ``padding_idx``; a length of 0 is treated as one padding token (its embedding is zero), so an
    empty sentence still has a defined encoding.
    """

    def __init__(
        self, vocab_size: int, encoder: str = "gru", embed_dim: int = 128, hidden_dim: int = 256, padding_idx: int = 0
    ):
        super().__init__()
        if encoder not in ENCODER_TYPES:
            raise ValueError(f"unknown Quick-Thoughts encoder {encoder!r}; choose one of {ENCODER_TYPES}")
        self.encoder = encoder
        self.padding_idx = padding_idx
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        # S2V's word-embedding initializer (uniform, scale 0.1) instead of torch's N(0, 1): with
        # unnormalized scores f.g, N(0, 1) words start the logits at a scale of tens, and one epoch of
        # a 60-book quick-start run ended with its loss still above the all-equal-scores value log(B - 1).
        with torch.no_grad():
            self.embedding.weight.uniform_(-0.1, 0.1)
            self.embedding.weight[padding_idx].zero_()
        if encoder == "bow":
            self.rnn = None
            self.out_dim = embed_dim
        else:
            bidirectional = encoder == "bigru"
            self.rnn = nn.GRU(embed_dim, hidden_dim, batch_first=True, bidirectional=bidirectional)
            self.out_dim = hidden_dim * (2 if bidirectional else 1)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 2 or lengths.shape != ids.shape[:1]:
            raise ValueError(f"expected ids (B, L) and lengths (B,), got {tuple(ids.shape)} and {tuple(lengths.shape)}")
        lengths = lengths.clamp(min=1)
        emb = self.embedding(ids)  # (B, L, e)
        if self.rnn is None:
            mask = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]
            summed = (emb * mask.unsqueeze(-1).to(emb.dtype)).sum(1)
            return summed / lengths.unsqueeze(-1).to(emb.dtype)
        if torch.is_autocast_enabled(emb.device.type):
            # The recurrence runs in float32 under bf16/fp16 autocast: autocast would cast the GRU's
            # weights on every call (on cuDNN a fresh copy outside the flattened weight buffer,
            # re-packed each step), and the small GRUs trained here gain less from the lower
            # precision than those casts cost; the loss is computed in float32 anyway.
            with torch.autocast(emb.device.type, enabled=False):
                return self._recur(emb.float(), ids, lengths)
        return self._recur(emb, ids, lengths)

    def _recur(self, emb: torch.Tensor, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if self.encoder == "gru" and emb.device.type == "cpu":
            out, _ = self.rnn(emb)  # (B, L, h), causal in time
            # The state after each row's last real token (later padding steps cannot reach it).
            return out[torch.arange(ids.shape[0], device=ids.device), lengths - 1]
        packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, h_n = self.rnn(packed)  # (directions, B, h)
        # h_n holds, per direction, the state after the last *real* step (packing stops each
        # row at its own length), in the original row order.
        return torch.cat(list(h_n), dim=-1)  # (B, directions * h)


class QuickThoughtsEncoder(nn.Module):
    """The pair (f, g) of Quick-Thoughts.

    forward(ids, lengths) -> (f_emb (B, d_f), g_emb (B, d_g)), the training view.
    embed(ids, lengths)   -> concat(f, g): (B, d_f + d_g), the evaluation representation.
    """

    def __init__(
        self, vocab_size: int, encoder: str = "gru", embed_dim: int = 128, hidden_dim: int = 256, padding_idx: int = 0
    ):
        super().__init__()
        self.f = SentenceRNN(vocab_size, encoder, embed_dim, hidden_dim, padding_idx)
        self.g = SentenceRNN(vocab_size, encoder, embed_dim, hidden_dim, padding_idx)
        self.dim = self.f.out_dim + self.g.out_dim

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.f(ids, lengths), self.g(ids, lengths)

    def embed(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        f, g = self(ids, lengths)
        return torch.cat([f, g], dim=-1)
