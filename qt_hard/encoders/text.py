"""Raw strings in, vectors out: featurizers, the ``SentenceEncoder`` wrapper and the saved format.

Saved-model layout (``OUT/final/``): a sentence-transformers folder, ``encoder.json`` version 2; see
:mod:`qt_hard.encoders.st_folder`. ``SentenceTransformer(OUT/final)`` and ``load_encoder(OUT/final)``
load it and encode alike.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from qt_hard.encoders.bow import BagOfWordsEncoder
from qt_hard.encoders.config import ModelConfig
from qt_hard.encoders.quick_thoughts import QuickThoughtsEncoder, pad
from qt_hard.encoders.st_folder import check_folder, read_weights, save_sentence_transformer
from qt_hard.errors import ModelCorruptError, ModelNotFoundError
from qt_hard.encoders.transformer import TransformerEncoder
from qt_hard.threads import torch_threads

FORMAT = "qt-hard-encoder"
VERSION = 2  # the sentence-transformers folder (encoder.json says which version wrote it)

# Torch threads of SentenceEncoder.encode on the CPU: QT_HARD_ENCODE_THREADS, else torch's setting.
DEFAULT_ENCODE_THREADS = int(os.environ.get("QT_HARD_ENCODE_THREADS", "0") or 0) or None


class WordFeaturizer:
    """Word tokens -> vocabulary ids -> padded (ids (B, L), lengths (B,)) batches. Pad id is 0.

    The ids come from a :class:`qt_hard.data.wordlevel.WordTokenizer` (the model's ``tokenizer.json``;
    built from ``vocab`` when none is given), so a batch of sentences is tokenized in one Rust call.
    """

    def __init__(self, vocab, lower: bool = True, max_len: int = 64, tokenizer=None):
        from qt_hard.data.wordlevel import WordTokenizer

        self.vocab = vocab
        self.lower = lower
        self.max_len = max_len
        self.tokenizer = tokenizer if tokenizer is not None else WordTokenizer.from_vocab(vocab, lower)

    def ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)[: self.max_len]

    def ids_many(self, texts: Sequence[str]) -> list[list[int]]:
        return [x[: self.max_len] for x in self.tokenizer.encode_batch(list(texts))]

    def collate(self, id_lists: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        lengths = [min(len(x), self.max_len) for x in id_lists]
        return {"ids": pad(id_lists, lengths)[0], "lengths": torch.as_tensor(lengths, dtype=torch.long)}


class HFFeaturizer:
    """The transformer's own tokenizer; batches are {input_ids, attention_mask} (B, L) long.

    ``ids`` gives the tokenizer's ids of one sentence (special tokens included, cut at
    ``max_len``); ``ids_many`` does the same for a list in one fast-tokenizer call. ``collate``
    pads with the tokenizer's pad id on its padding side; the attention mask marks real tokens.
    """

    def __init__(self, tokenizer, max_len: int = 128):
        self.tokenizer = tokenizer
        self.max_len = max_len

    def ids(self, text: str) -> list[int]:
        return self.tokenizer(text, truncation=True, max_length=self.max_len)["input_ids"]

    def ids_many(self, texts: Sequence[str]) -> list[list[int]]:
        if not texts:
            return []
        return self.tokenizer(list(texts), truncation=True, max_length=self.max_len)["input_ids"]

    def collate(self, id_lists: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        pad_id = self.tokenizer.pad_token_id
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        ids, mask = pad(id_lists, [len(x) for x in id_lists], 0 if pad_id is None else int(pad_id), left)
        return {"input_ids": ids, "attention_mask": mask}


def build_module(cfg: ModelConfig, vocab_size: int | None = None) -> nn.Module:
    """The bare nn.Module for ``cfg`` (vocab_size is needed by the word models)."""
    cfg.validate()
    if cfg.kind == "hf":
        return TransformerEncoder(cfg.hf_path)
    if not vocab_size:
        raise ValueError(f"model.kind {cfg.kind!r} needs a vocabulary size")
    if cfg.kind == "bow":
        return BagOfWordsEncoder(vocab_size, cfg.dim)
    return QuickThoughtsEncoder(vocab_size, cfg.encoder, cfg.embed_dim, cfg.hidden_dim)


def module_embed(module: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Evaluation representation of a collated batch: (B, dim). Quick-Thoughts gives concat(f, g)."""
    if isinstance(module, QuickThoughtsEncoder):
        return module.embed(batch["ids"], batch["lengths"])
    if isinstance(module, TransformerEncoder):
        return module(batch["input_ids"], batch["attention_mask"])
    return module(batch["ids"], batch["lengths"])


class SentenceEncoder:
    """A trained (or random) encoder that tokenizes raw strings itself.

    Attributes: ``config`` (ModelConfig), ``module`` (nn.Module), ``featurizer``, ``vocab``
    (word models; None for "hf"), ``dim`` (size of the vectors ``encode`` returns).
    """

    def __init__(self, config: ModelConfig, module: nn.Module, featurizer, vocab=None):
        self.config = config
        self.module = module
        self.featurizer = featurizer
        self.vocab = vocab
        self.dim = int(module.dim)

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 128,
        device: str | torch.device | None = None,
        show_progress: bool = False,
        num_threads: int | None = DEFAULT_ENCODE_THREADS,
    ) -> np.ndarray:
        """Encode raw sentences -> float32 array (n, dim), rows in input order.

        All sentences are tokenized first, then encoded in batches of ``batch_size`` sorted by
        token count (little padding; rows go back to input order), under ``torch.inference_mode``.
        ``num_threads``: torch CPU threads for the forward passes, restored afterwards (default
        ``$QT_HARD_ENCODE_THREADS``; None leaves torch's setting alone). On a small shared CPU pass
        1: a second thread that waits on a busy core made the Quick-Thoughts encode 2-8x slower
        (docs/benchmarks.md, encoding speed); the evaluation's ``EmbeddingCache`` does so by default.
        """
        if isinstance(sentences, str):
            raise TypeError("encode expects a list of sentences, not a single string")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        sentences = list(sentences)
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        if not sentences:
            return out
        device = torch.device(device) if device is not None else next(self.module.parameters()).device
        ids = self.featurizer.ids_many(sentences)
        # Length-sorted batches waste little compute on padding; rows go back in input order.
        order = np.argsort(np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids)), kind="stable")
        starts = range(0, len(order), batch_size)
        if show_progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="encode")
        was_training = self.module.training
        self.module.eval()
        try:
            with torch_threads(num_threads if device.type == "cpu" else None), torch.inference_mode():
                for start in starts:
                    rows = order[start : start + batch_size]
                    batch = {k: v.to(device) for k, v in self.featurizer.collate([ids[i] for i in rows]).items()}
                    out[rows] = module_embed(self.module, batch).float().cpu().numpy()
        finally:
            self.module.train(was_training)
        return out

    def save(self, path: str | Path, card: str | None = None) -> Path:
        """Write the model as a sentence-transformers folder (:mod:`qt_hard.encoders.st_folder`) into
        ``path``; ``card`` is its model card (README.md) markdown."""
        return save_sentence_transformer(self, path, card)


def make_encoder(cfg: ModelConfig, vocab=None, module: nn.Module | None = None, tokenizer=None) -> SentenceEncoder:
    """Wrap ``module`` (or a freshly initialized one) with the featurizer that ``cfg`` implies.

    Word models: ``tokenizer`` (a ``WordTokenizer``) gives the ids; ``vocab`` defaults to its view."""
    cfg.validate()
    if cfg.kind == "hf":
        from transformers import AutoTokenizer

        from qt_hard.encoders.transformer import resolve_model_path

        module = module if module is not None else build_module(cfg)
        tok = getattr(module, "tokenizer", None)  # the tokenizer of the model's Transformer module
        if tok is None:
            tok = AutoTokenizer.from_pretrained(resolve_model_path(cfg.hf_path), local_files_only=True)
        return SentenceEncoder(cfg, module, HFFeaturizer(tok, cfg.max_len))
    if vocab is None and tokenizer is not None:
        vocab = tokenizer.vocab()
    if vocab is None:
        raise ValueError(f"model.kind {cfg.kind!r} needs a vocabulary or a tokenizer")
    module = module if module is not None else build_module(cfg, len(vocab))
    return SentenceEncoder(cfg, module, WordFeaturizer(vocab, cfg.lower, cfg.max_len, tokenizer), vocab)


def model_config_from_dict(d: dict) -> ModelConfig:
    """ModelConfig from a plain dict; unknown keys are an error that names them."""
    known = {f.name for f in fields(ModelConfig)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise KeyError(f"unknown model config key(s) {unknown}; known: {sorted(known)}")
    return ModelConfig(**d)


def load_encoder(path: str | Path, device: str | torch.device = "cpu") -> SentenceEncoder:
    """Load a saved encoder from ``path`` (a ``final/`` folder, or a run folder holding one), in the
    sentence-transformers layout (``encoder.json`` version 2).

    Returns a ``SentenceEncoder``: ``.encode(list_of_str, batch_size=...) -> np.ndarray`` (float32,
    (n, dim)) and ``.dim``.
    """
    path = Path(path)
    if not (path / "encoder.json").is_file() and (path / "final" / "encoder.json").is_file():
        path = path / "final"
    meta_file = path / "encoder.json"
    if not meta_file.is_file():
        raise ModelNotFoundError(f"no saved encoder at {path}: encoder.json is missing")
    try:
        meta = json.loads(meta_file.read_text())
    except json.JSONDecodeError as err:
        raise ModelCorruptError(f"malformed {meta_file}: {err}") from None
    if meta.get("format") != FORMAT:
        raise ModelCorruptError(f"{meta_file} is not a qt-hard encoder (format={meta.get('format')!r})")
    cfg = model_config_from_dict(meta["model"])
    version = meta.get("version")
    if version != VERSION:
        raise ModelCorruptError(
            f"{meta_file}: unknown qt-hard encoder version {version!r} (this qt-hard reads {VERSION})"
        )
    enc = _load_folder(path, cfg)
    enc.module.to(device).eval()
    return enc


def _load_folder(path: Path, cfg: ModelConfig):
    """A ``SentenceEncoder`` from a version-2 (sentence-transformers) folder."""
    check_folder(path, cfg)
    if cfg.kind == "hf":
        cfg.hf_path = str(path)
        return make_encoder(cfg)
    from qt_hard.data.wordlevel import WordTokenizer

    tokenizer = WordTokenizer.load(path / "tokenizer.json")
    enc = make_encoder(cfg, tokenizer=tokenizer)
    weights = read_weights(path)
    module = enc.module
    try:
        if cfg.kind == "bow":
            module.bag.weight.data.copy_(weights["embedding.weight"])
        elif cfg.encoder == "bow":
            table = weights["embedding.weight"]
            e = module.f.embedding.weight.shape[1]
            if table.shape != (module.f.embedding.num_embeddings, 2 * e):
                raise ModelCorruptError(
                    f"{path / 'model.safetensors'}: embedding table of shape {tuple(table.shape)}, "
                    f"expected ({module.f.embedding.num_embeddings}, {2 * e})"
                )
            module.f.embedding.weight.data.copy_(table[:, :e])
            module.g.embedding.weight.data.copy_(table[:, e:])
        else:
            module.load_state_dict({k.removeprefix("qt."): v for k, v in weights.items()})
    except KeyError as err:
        raise ModelCorruptError(f"{path / 'model.safetensors'} lacks the tensor {err}") from None
    except RuntimeError as err:  # shape mismatches, missing / unexpected keys
        raise ModelCorruptError(f"{path / 'model.safetensors'} does not fit the model of encoder.json: {err}") from None
    return enc
