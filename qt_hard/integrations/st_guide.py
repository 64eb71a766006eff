"""The frozen guide model of ``HardNegativesLoss`` (:mod:`qt_hard.integrations.sentence_transformers`):
its embeddings of a batch the model is trained on, the texts re-tokenized where the two models' vocabularies
or windows differ, as sentence-transformers' ``GISTEmbedLoss`` does."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn

try:  # sentence-transformers >= 5.x: one merged forward for like-width candidate columns.
    from sentence_transformers.base.losses.merged_forward import embed_columns as _st_embed_columns
except ImportError:  # older releases: one forward per column, as their own losses do.
    _st_embed_columns = None


def embed(model: nn.Module, sentence_features: Iterable[dict[str, Tensor]]) -> list[Tensor]:
    """One ``(B, d)`` ``sentence_embedding`` per input column, anchor column first."""
    features = list(sentence_features)
    if _st_embed_columns is not None:
        return _st_embed_columns(model, features)
    return [model(f)["sentence_embedding"] for f in features]


def _guide_needs_retokenizing(model: nn.Module, guide: nn.Module) -> bool:
    """Whether the guide must re-tokenize the texts (another vocabulary, or a shorter window), as
    ``GISTEmbedLoss`` decides it; both models need a ``transformers`` tokenizer, else ``ValueError``."""
    from transformers import PreTrainedTokenizerBase

    tok_model, tok_guide = getattr(model, "tokenizer", None), getattr(guide, "tokenizer", None)
    if not (isinstance(tok_model, PreTrainedTokenizerBase) and isinstance(tok_guide, PreTrainedTokenizerBase)):
        raise ValueError(
            "guide: the model and the guide must both have a transformers tokenizer (the guide reads the "
            "model's token ids, decoded and re-tokenized where the vocabularies differ, as GISTEmbedLoss does)"
        )
    model_len = getattr(model, "max_seq_length", None) or 0
    guide_len = getattr(guide, "max_seq_length", None) or 0
    return tok_model.get_vocab() != tok_guide.get_vocab() or guide_len < model_len


class Guide:
    """A frozen ``guide`` beside the trained ``model``: :meth:`embeddings` of the model's features."""

    def __init__(self, model: nn.Module, guide: nn.Module):
        self.model, self.guide = model, guide
        self.retokenize = _guide_needs_retokenizing(model, guide)

    @torch.no_grad()
    def embeddings(self, sentence_features: list[dict[str, Tensor]]) -> list[Tensor]:
        """The guide's ``(B, d)`` embeddings of every column, without gradients. The model writes its
        outputs into the dicts it is given, so the guide gets shallow copies; with another vocabulary
        the texts are decoded from the model's ``input_ids`` and re-tokenized by the guide."""
        if not self.retokenize:
            features = [dict(f) for f in sentence_features]
        else:
            from sentence_transformers.util import batch_to_device

            prepare = getattr(self.guide, "preprocess", None) or self.guide.tokenize
            features = []
            for f in sentence_features:
                ids = f["input_ids"]
                if "cu_seq_lens_q" in f:  # flattened (packed) batch: one sequence per cumulative range
                    flat, bounds = ids[0].tolist(), f["cu_seq_lens_q"].tolist()
                    ids = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
                texts = self.model.tokenizer.batch_decode(ids, skip_special_tokens=True)
                features.append(batch_to_device(prepare(texts), self.guide.device))
        return [e.detach() for e in embed(self.guide, features)]
