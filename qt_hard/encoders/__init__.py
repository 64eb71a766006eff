"""Sentence encoders: bag of words (Ash et al.), Quick-Thoughts f/g pair, Hugging Face transformer.

Public entry points:

* ``load_encoder(path)``: a saved model (``OUT/final/``) as a ``SentenceEncoder``.
* ``random_encoder(config, sentences)``: the same kind of object, untrained, with a vocabulary
  built from ``sentences`` (a baseline for evaluation: ``--model random:CONFIG``).

This package stands alone: it reads configs and model folders itself and imports nothing of
``qt_hard.training`` (a saved model loads with the encoders alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from qt_hard import lazy_exports
from qt_hard.encoders.config import ModelConfig

if TYPE_CHECKING:
    from qt_hard.encoders.text import SentenceEncoder

# The modules that need torch load on first use, not with the package: a config (whose ``model``
# section is a ``ModelConfig``) is read and checked without importing torch.
_HOMES = {
    "BagOfWordsEncoder": "bow",
    "QuickThoughtsEncoder": "quick_thoughts",
    "SentenceRNN": "quick_thoughts",
    "SentenceEncoder": "text",
    "load_encoder": "text",
    "make_encoder": "text",
    "model_config_from_dict": "text",
    "TransformerEncoder": "transformer",
}


__getattr__ = lazy_exports(__name__, _HOMES)


__all__ = ["ModelConfig", *_HOMES, "random_encoder", "BUILTIN_CONFIGS"]

# Built-in configs for random baselines ("bow", "qt"): YAML files shipped inside the package
# (``qt_hard/configs/``), read through importlib.resources so that they are found in an installed wheel.
_BUILTIN = resources.files("qt_hard") / "configs"
BUILTIN_CONFIGS = tuple(sorted(p.name[: -len(".yaml")] for p in _BUILTIN.iterdir() if p.name.endswith(".yaml")))


@dataclass
class EncoderSpec:
    """What an untrained encoder needs from a config: its model section, the vocabulary options of its
    data section (``min_count``, ``max_vocab``) and the seed (``train.seed``). Read from the config tree
    directly, so that the encoders need nothing of ``qt_hard.training``."""

    model: ModelConfig
    min_count: int = 1
    max_vocab: int | None = None
    seed: int = 0


def _spec_from_tree(tree: dict, origin: str) -> EncoderSpec:
    from qt_hard.encoders.text import model_config_from_dict

    if not isinstance(tree, dict):
        raise ValueError(f"{origin}: a config must be a mapping, got {type(tree).__name__}")
    if "model" not in tree:
        return EncoderSpec(model_config_from_dict(tree))  # only a model section
    if tree.get("pipeline", "text") != "text":
        raise ValueError(f"{origin}: pipeline {tree['pipeline']!r} has no sentence encoder")
    data = tree.get("data") or {}
    train = tree.get("train") or {}
    model = model_config_from_dict(dict(tree["model"] or {}))
    model.validate()
    return EncoderSpec(model, int(data.get("min_count", 1)), data.get("max_vocab"), int(train.get("seed", 0)))


def _resolve_config(config) -> EncoderSpec:
    if isinstance(config, ModelConfig):
        return EncoderSpec(config)
    if isinstance(config, dict):
        return _spec_from_tree(config, "config dict")
    if config in BUILTIN_CONFIGS:
        path = _BUILTIN / f"{config}.yaml"
    else:
        # A file, or a name in ./configs/ (the repository's training configs, from its root).
        path = Path(config)
        if not path.is_file() and (Path("configs") / f"{config}.yaml").is_file():
            path = Path("configs") / f"{config}.yaml"
        if not path.is_file():
            raise FileNotFoundError(
                f"random encoder config {config!r}: not a built-in ({', '.join(BUILTIN_CONFIGS)}), "
                f"not a file and not configs/{config}.yaml"
            )
    import yaml

    from qt_hard.config_types import load_yaml

    try:
        tree = load_yaml(path.read_text(encoding="utf-8"), str(path)) or {}
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML ({err})") from None
    return _spec_from_tree(tree, f"built-in {config!r}" if config in BUILTIN_CONFIGS else str(path))


def random_encoder(config, sentences: Sequence[str] = (), seed: int | None = None, tokenizer=None) -> SentenceEncoder:
    """An untrained encoder of the kind a config describes; it needs only the model's own config.

    Args:
        config: a ``ModelConfig``; a dict (a whole training config tree or only its model section); a
            training YAML path or a name in ``./configs/`` (e.g. "bow_wiki" from the repository's
            root), of which the ``model`` section, ``data.min_count`` / ``data.max_vocab`` and
            ``train.seed`` are read; or a built-in name (``BUILTIN_CONFIGS``: "bow", "qt", shipped in
            the package).
        sentences: raw sentences to fit a word vocabulary on (with the config's ``data.min_count`` /
            ``data.max_vocab``) when no ``tokenizer`` is given; ignored for kind "hf". Fitting it on
            the sentences to be evaluated lets the baseline see every test word: a control row of a
            trained model should pass that model's tokenizer instead.
        seed: initialization seed (default: the config's ``train.seed``, else 0).
        tokenizer: a :class:`qt_hard.data.wordlevel.WordTokenizer` (e.g. a trained model's
            ``tokenizer.json``) whose vocabulary the random encoder uses.
    """
    import torch

    from qt_hard.encoders.text import make_encoder

    spec = _resolve_config(config)
    torch.manual_seed(spec.seed if seed is None else seed)
    if spec.model.kind == "hf":
        return make_encoder(spec.model)
    from qt_hard.data.wordlevel import WordTokenizer

    if tokenizer is None:
        sentences = list(sentences)
        if not sentences:
            raise ValueError("random_encoder needs a tokenizer or at least one sentence for its vocabulary")
        tokenizer = WordTokenizer.train(
            sentences, min_count=spec.min_count, max_size=spec.max_vocab, lower=spec.model.lower
        )
    enc = make_encoder(spec.model, tokenizer=tokenizer)
    enc.module.eval()
    return enc
