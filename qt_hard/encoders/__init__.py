"""Sentence encoders: bag of words (Ash et al.), Quick-Thoughts f/g pair, Hugging Face transformer.

Public entry points:

* ``load_encoder(path)``: a saved model (``OUT/final/``) as a ``SentenceEncoder``.
* ``random_encoder(config, sentences)``: the same kind of object, untrained, with a vocabulary
  built from ``sentences`` (a baseline for evaluation: ``--model random:CONFIG``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from qt_hard.encoders.bow import BagOfWordsEncoder
from qt_hard.encoders.config import ModelConfig
from qt_hard.encoders.quick_thoughts import QuickThoughtsEncoder, SentenceRNN
from qt_hard.encoders.text import SentenceEncoder, load_encoder, make_encoder
from qt_hard.encoders.transformer import TransformerEncoder

__all__ = [
    "BagOfWordsEncoder", "ModelConfig", "QuickThoughtsEncoder", "SentenceRNN", "SentenceEncoder",
    "TransformerEncoder", "load_encoder", "make_encoder", "random_encoder", "BUILTIN_CONFIGS",
]

# Built-in model sections for random baselines: "bow" is Ash et al.'s Table 1 bag of words,
# "qt" the CPU-sized Quick-Thoughts GRU pair of this library's defaults.
BUILTIN_CONFIGS = {
    "bow": {"model": {"kind": "bow", "dim": 768}, "data": {"min_count": 1}},
    "qt": {"model": {"kind": "qt", "encoder": "gru"}, "data": {"min_count": 1}},
}

_CONFIG_DIR = Path(__file__).resolve().parent.parent.parent / "configs"


def _resolve_config(config: str | dict):
    from qt_hard.training.config import config_from_dict, load_config

    if isinstance(config, dict):
        # Either a whole training config or just its model section.
        tree = config if "model" in config else {"model": config}
        return config_from_dict(tree)
    if config in BUILTIN_CONFIGS:
        return config_from_dict(BUILTIN_CONFIGS[config])
    path = Path(config)
    if not path.is_file() and (_CONFIG_DIR / f"{config}.yaml").is_file():
        path = _CONFIG_DIR / f"{config}.yaml"
    if not path.is_file():
        raise FileNotFoundError(
            f"random encoder config {config!r}: not a built-in ({sorted(BUILTIN_CONFIGS)}), "
            f"not a file and not configs/{config}.yaml"
        )
    return load_config(path)


def random_encoder(config: str | dict, sentences: Sequence[str] = (), seed: int | None = None,
                   tokenizer=None) -> SentenceEncoder:
    """An untrained encoder of the kind a training config describes.

    Args:
        config: a training YAML path, a name in ``configs/`` (e.g. "bow_wiki"), a built-in name
            ("bow", "qt"), or a dict (a whole training config or only its model section).
        sentences: raw sentences to fit a word vocabulary on (with the config's ``data.min_count`` /
            ``data.max_vocab``) when no ``tokenizer`` is given; ignored for kind "hf". Fitting it on
            the sentences to be evaluated lets the baseline see every test word: a control row of a
            trained model should pass that model's tokenizer instead.
        seed: initialization seed (default: the config's ``train.seed``).
        tokenizer: a :class:`qt_hard.data.wordlevel.WordTokenizer` (e.g. a trained model's
            ``tokenizer.json``) whose vocabulary the random encoder uses.
    """
    import torch

    cfg = _resolve_config(config)
    torch.manual_seed(cfg.train.seed if seed is None else seed)
    if cfg.model.kind == "hf":
        return make_encoder(cfg.model)
    from qt_hard.data.wordlevel import WordTokenizer

    if tokenizer is None:
        sentences = list(sentences)
        if not sentences:
            raise ValueError("random_encoder needs a tokenizer or at least one sentence for its vocabulary")
        tokenizer = WordTokenizer.train(sentences, min_count=cfg.data.min_count, max_size=cfg.data.max_vocab,
                                        lower=cfg.model.lower)
    enc = make_encoder(cfg.model, tokenizer=tokenizer)
    enc.module.eval()
    return enc
