"""The Quick-Thoughts pair as a sentence-transformers module (``modules.json`` names this class's path).

Kept apart from :mod:`qt_hard.encoders.st_folder` (which imports it when saving) because it subclasses sentence-transformers'
``InputModule``: importing the encoders does not import sentence-transformers, loading a folder that
names this class does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from sentence_transformers.sentence_transformer.modules import InputModule

from qt_hard.encoders.quick_thoughts import QT_CONFIG, QuickThoughtsEncoder, contiguous_state, pad

HUB_KEYS = ("subfolder", "token", "cache_folder", "revision", "local_files_only")


class QuickThoughtsModule(InputModule):
    """The Quick-Thoughts f/g pair (GRU, bi-GRU or bag-of-words cells; Logeswaran & Lee 2018) as a
    sentence-transformers input module: word-level tokenizer -> right-padded ids (B, L) and lengths (B,)
    -> ``sentence_embedding`` = concat(f(s), g(s)) (B, d_f + d_g), S2V's evaluation vector.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` (the model's word-level ``tokenizer.json``; pad id 0;
            its truncation cuts sentences at the model's ``max_len``).
        vocab_size, encoder, embed_dim, hidden_dim: :class:`QuickThoughtsEncoder`'s arguments.

    Saved as ``quick_thoughts_config.json``, ``model.safetensors`` (keys ``qt.f.*``, ``qt.g.*``) and
    ``tokenizer.json`` in the model folder's root.
    """

    config_keys = ["vocab_size", "encoder", "embed_dim", "hidden_dim"]
    config_file_name = QT_CONFIG
    save_in_root = True

    def __init__(
        self,
        tokenizer,
        vocab_size: int,
        encoder: str = "gru",
        embed_dim: int = 128,
        hidden_dim: int = 256,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.tokenizer.no_padding()
        self.vocab_size, self.encoder = int(vocab_size), encoder
        self.embed_dim, self.hidden_dim = int(embed_dim), int(hidden_dim)
        self.qt = QuickThoughtsEncoder(self.vocab_size, encoder, self.embed_dim, self.hidden_dim)

    def preprocess(self, inputs, prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        if prompt:
            inputs = self._prepend_prompt(inputs, prompt)
        ids = [e.ids for e in self.tokenizer.encode_batch(list(inputs), add_special_tokens=False)]
        lengths = [len(x) for x in ids]
        return {"input_ids": pad(ids, lengths)[0], "lengths": torch.as_tensor(lengths, dtype=torch.long)}

    def forward(self, features: dict[str, torch.Tensor], **kwargs) -> dict[str, torch.Tensor]:
        features["sentence_embedding"] = self.qt.embed(features["input_ids"], features["lengths"])
        return features

    @property
    def max_seq_length(self) -> int | None:
        trunc = self.tokenizer.truncation
        return int(trunc["max_length"]) if trunc else None

    def get_embedding_dimension(self) -> int:
        return int(self.qt.dim)

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        from safetensors.torch import save_file

        self.save_config(output_path)
        state = contiguous_state(self.qt, "qt.")
        if safe_serialization:
            save_file(state, str(Path(output_path) / "model.safetensors"))
        else:
            torch.save(state, str(Path(output_path) / "pytorch_model.bin"))
        self.tokenizer.save(str(Path(output_path) / "tokenizer.json"))

    @classmethod
    def load(cls, model_name_or_path: str, **kwargs) -> "QuickThoughtsModule":
        from tokenizers import Tokenizer

        # Where sentence-transformers' loaders look for the files (a local folder, or the Hub's).
        hub = {k: v for k, v in kwargs.items() if k in HUB_KEYS}
        config = cls.load_config(model_name_or_path, **hub)
        tok_path = cls.load_file_path(model_name_or_path, filename="tokenizer.json", **hub)
        if tok_path is None:
            raise FileNotFoundError(f"{model_name_or_path}: tokenizer.json is missing")
        module = cls(Tokenizer.from_file(tok_path), **config)
        cls.load_torch_weights(model_name_or_path, model=module, **hub)
        return module
