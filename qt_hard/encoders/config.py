"""The model section of a training config: which encoder, which sizes.

Shared by training (``qt_hard.training.config``) and by the saved-model format, so that the
``model`` entry of ``OUT/final/encoder.json`` is exactly this dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

MODEL_KINDS = ("bow", "qt", "hf")


@dataclass
class ModelConfig:
    """Encoder choice and sizes.

    kind:       "bow" (Ash et al. bag of words), "qt" (Quick-Thoughts f/g pair) or "hf"
                (a transformer with its folder's sentence-transformers pooling).
    dim:        bag-of-words embedding dimension d (768 in Ash et al., Table 1).
    encoder:    Quick-Thoughts cell of f and g: "gru" | "bigru" | "bow".
    embed_dim:  Quick-Thoughts word-embedding size (CPU-sized default; S2V uses 300).
    hidden_dim: Quick-Thoughts GRU state size (CPU-sized default; S2V uses 1200 / 2400).
    max_len:    tokens kept per sentence (longer sentences are truncated).
    lower:      lowercase before word tokenization (word models).
    hf_path:    local folder of a pretrained transformer (kind "hf"): a sentence-transformers folder
                (its pooling and normalization modules are kept) or a plain Hugging Face one (mean
                pooling), or ``minilm``.
    """

    kind: Literal[MODEL_KINDS] = "bow"
    dim: int = 768
    encoder: Literal["gru", "bigru", "bow"] = "gru"
    embed_dim: int = 128
    hidden_dim: int = 256
    max_len: int = 64
    lower: bool = True
    hf_path: Optional[str] = None

    def validate(self) -> None:
        if self.kind not in MODEL_KINDS:  # a config read from YAML is typed; this guards one built in code
            raise ValueError(f"model.kind must be one of {MODEL_KINDS}, got {self.kind!r}")
        if self.kind == "hf" and not self.hf_path:
            raise ValueError("model.kind 'hf' needs model.hf_path (a local model directory)")
        for name in ("dim", "embed_dim", "hidden_dim", "max_len"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"model.{name} must be >= 1, got {getattr(self, name)!r}")
