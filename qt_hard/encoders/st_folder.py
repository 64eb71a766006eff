"""Every trained model as a sentence-transformers folder: ``SentenceTransformer(OUT/final)`` loads it.

Layout of ``OUT/final/`` (what sentence-transformers writes, plus ``encoder.json`` for qt-hard)::

    modules.json, config_sentence_transformers.json   sentence-transformers' module list and config
    README.md            model card: the training config, data, objective and its papers, SentEval
    encoder.json         {"format": "qt-hard-encoder", "version": 2, "layout": "sentence-transformers",
                          "model": ModelConfig fields, "vocab_size": V}: what ``load_encoder``
                         (:mod:`qt_hard.encoders.text`) reads
    bow, qt + bow        sentence-transformers' own ``StaticEmbedding`` (mean of token vectors):
                         model.safetensors ("embedding.weight", (V, d)) and tokenizer.json
    qt + gru / bigru     ``qt_hard.encoders.st_module.QuickThoughtsModule``, a module class that
                         sentence-transformers imports by its path (needs qt-hard installed): quick_thoughts_config.json,
                         model.safetensors, tokenizer.json
    hf                   the Transformer at the root (config.json, model.safetensors, tokenizer files,
                         sentence_bert_config.json), then the Pooling / Normalize / ... folders of the
                         model it started from

Word models' ``tokenizer.json`` truncates at ``model.max_len`` (:func:`truncating_backend`); which folders
load without qt-hard installed: docs/guides/text-training.md (Using a trained model).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from qt_hard.encoders.config import ModelConfig
from qt_hard.encoders.quick_thoughts import QT_CONFIG, contiguous_state
from qt_hard.errors import ModelCorruptError, ModelNotFoundError

ST_FILES = ("modules.json", "config_sentence_transformers.json")


def truncating_backend(tokenizer, max_len: int):
    """A copy of a word tokenizer's ``tokenizers.Tokenizer`` that cuts every sentence at ``max_len``
    tokens (what ``WordFeaturizer`` does), so that sentence-transformers gets the ids qt-hard gets."""
    from tokenizers import Tokenizer

    backend = Tokenizer.from_str(tokenizer.backend.to_str())
    backend.enable_truncation(max_length=int(max_len))
    backend.no_padding()
    return backend


# ------------------------------------------------------------------------------------------ save
def st_modules(encoder) -> list:
    """The sentence-transformers modules that compute ``encoder.encode`` (a ``SentenceEncoder``)."""
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    cfg: ModelConfig = encoder.config
    module = encoder.module
    if cfg.kind == "hf":
        if module.pipeline is None:
            raise ValueError(
                "a bare transformer (TransformerEncoder(model=...)) has no sentence-transformers pipeline to save"
            )
        module.pipeline[0].max_seq_length = cfg.max_len  # cut sentences where HFFeaturizer does
        return list(module.pipeline)
    backend = truncating_backend(encoder.featurizer.tokenizer, cfg.max_len)
    if cfg.kind == "bow":
        table = module.bag.weight.detach().to("cpu", copy=True)
        return [StaticEmbedding(backend, embedding_weights=table)]
    if cfg.encoder == "bow":
        # mean over tokens of [f_t | g_t] = [mean f_t | mean g_t] = concat(f(s), g(s)).
        table = torch.cat([module.f.embedding.weight, module.g.embedding.weight], dim=1).detach().to("cpu")
        return [StaticEmbedding(backend, embedding_weights=table.contiguous())]
    from qt_hard.encoders.st_module import QuickThoughtsModule

    qt = QuickThoughtsModule(backend, module.f.embedding.num_embeddings, cfg.encoder, cfg.embed_dim, cfg.hidden_dim)
    qt.qt.load_state_dict(contiguous_state(module))
    return [qt]


def save_sentence_transformer(encoder, folder: str | Path, card=None) -> Path:
    """Write ``encoder`` (a ``SentenceEncoder``) as a sentence-transformers folder (module docstring).

    ``card``: the model card's markdown (README.md), or a function of the saved modules' class names
    that returns it; None writes a short card of the model alone."""
    from dataclasses import asdict

    from sentence_transformers import SentenceTransformer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    modules = st_modules(encoder)
    device = next(encoder.module.parameters()).device
    model = SentenceTransformer(modules=modules, device=str(device))
    model.similarity_fn_name = "cosine"
    model.save(str(folder), create_model_card=False, safe_serialization=True)
    meta = {
        "format": "qt-hard-encoder",
        "version": 2,
        "layout": "sentence-transformers",
        "model": asdict(encoder.config),
        "vocab_size": len(encoder.vocab) if encoder.vocab is not None else None,
        "modules": [type(m).__name__ for m in modules],
    }
    if encoder.config.kind == "hf":
        meta["model"]["hf_path"] = "."  # the folder itself is the transformer
    (folder / "encoder.json").write_text(json.dumps(meta, indent=2) + "\n")
    names = meta["modules"]
    if callable(card):
        card = card(names)
    if card is None:
        card = (
            f"---\nlibrary_name: sentence-transformers\ntags:\n- sentence-transformers\n- qt-hard\n---\n\n"
            f"# qt-hard {encoder.config.kind} encoder\n\nModules: {' -> '.join(names)}; "
            f"model config: `{json.dumps(meta['model'])}`.\n"
        )
    (folder / "README.md").write_text(card, encoding="utf-8")
    return folder


# ------------------------------------------------------------------------------------------ load
def check_folder(path: Path, cfg: ModelConfig) -> None:
    """Refuse a folder without a file that the model of ``cfg`` is read from."""
    need = ("config.json",) if cfg.kind == "hf" else ("tokenizer.json", "model.safetensors")
    if cfg.kind == "qt" and cfg.encoder != "bow":
        need += (QT_CONFIG,)
    missing = [name for name in ST_FILES + need if not (path / name).is_file()]
    if missing:
        raise ModelNotFoundError(f"incomplete model folder {path}: {', '.join(missing)} missing")


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path / "model.safetensors"))
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelCorruptError(
            f"{path / 'model.safetensors'} is corrupted or not a safetensors file ({err})"
        ) from None
