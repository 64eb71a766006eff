"""facebookresearch/SentEval's own engine as a second evaluator of qt-hard models.

Published SentEval numbers (Conneau & Kiela 2018) came from SentEval's engine
(``senteval.engine.SE``), which is not on the package index: a user clones it. SentEval asks
the encoder for two functions, documented in its README ("How to use SentEval"):

* ``prepare(params, samples)``: called once per task with every sentence of the task;
* ``batcher(params, batch) -> (len(batch), d) numpy array``: one batch of sentences, each a list
  of words (SentEval's loaders ``.split()`` every line).

:func:`prepare` and :func:`batcher` here are those two functions for any encoder that
:func:`qt_hard.evaluation.models.load_model` returns (qt-hard models, sentence-transformers
folders, ``minilm``, ``random:CONFIG``). They find the encoder in ``params`` (the dotdict SentEval
passes around) under ``qt_hard_cache``: an :class:`~qt_hard.evaluation.models.EmbeddingCache`,
so a sentence reaches the encoder as ``' '.join(words)`` (``'.'`` when empty, as SentEval's
``examples/bow.py`` does) exactly as on the fast path, and each distinct sentence is encoded once.
:func:`senteval_params` builds that dict with SentEval's README "default config" (the one it
calls comparable to the literature): ``kfold`` 10 and the classifier ``{'nhid': 0, 'optim':
'adam', 'batch_size': 64, 'tenacity': 5, 'epoch_size': 4}``.

Which classifier SentEval trains is ``usepytorch``: ``True`` (the default config) trains its
PyTorch logistic regression with early stopping, L2 in ``10**-5 .. 10**-2``, and puts every
tensor on CUDA (``senteval/tools/classifier.py`` calls ``.cuda()``): it needs a GPU.
``False`` fits scikit-learn's ``LogisticRegression(C)`` with C in ``2**-2 .. 2**3`` (MR, CR,
SUBJ, MPQA) or ``2**-1 .. 2**5`` (TREC, MRPC): the path that ``qt-hard eval senteval``'s fast
solver (and its ``--reference`` loop) reproduce on the same folds.

Usage with a SentEval checkout at ``DIR`` (what ``qt-hard eval senteval --engine senteval``
does)::

    senteval = import_senteval("DIR")
    with task_path("DIR/data", ["CR", "MRPC"]) as where:
        params = senteval_params(encoder, where, usepytorch=False)
        results = senteval.engine.SE(params, batcher, prepare).eval(["CR", "MRPC"])
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from qt_hard.errors import UserError

from . import logreg
from .models import EmbeddingCache
from .datasets import words_to_text

__all__ = [
    "CUDA_ONLY",
    "DEFAULT_CLASSIFIER",
    "ENGINE_FOLDERS",
    "SentEvalImportError",
    "SentEvalNotFoundError",
    "batcher",
    "check_checkout",
    "checkout_commit",
    "from_senteval",
    "import_senteval",
    "prepare",
    "run_engine",
    "senteval_params",
    "task_path",
]

# SentEval README, "Parameters": the default config, "to produce results that are comparable to
# the literature" (its prototyping config is kfold 5, rmsprop, batch 128, tenacity 3, epoch_size 2).
DEFAULT_KFOLD = 10
DEFAULT_CLASSIFIER = {"nhid": 0, "optim": "adam", "batch_size": 64, "tenacity": 5, "epoch_size": 4}

# The params key under which prepare/batcher find the encoder (SentEval copies params into its
# dotdict and hands that same object to both functions).
CACHE_KEY = "qt_hard_cache"


class SentEvalNotFoundError(UserError, FileNotFoundError):
    """No usable SentEval checkout (or its task files) where the user pointed."""


class SentEvalImportError(UserError, ImportError):
    """SentEval's code needs a package that is not installed."""


def _cache(params) -> EmbeddingCache:
    cache = params.get(CACHE_KEY) if hasattr(params, "get") else None
    if cache is None:
        raise ValueError(
            f"SentEval params carry no encoder: build them with senteval_params(encoder, ...) (the key {CACHE_KEY!r})"
        )
    return cache


def _texts(batch: Sequence) -> list[str]:
    """SentEval's tokenized sentences (lists of words) as the strings our encoders read."""
    return [words_to_text(list(words)) for words in batch]


def prepare(params, samples) -> None:
    """SentEval's ``prepare``: encode every distinct sentence of the task once, in order of length
    (the cache's batches), so that :func:`batcher` only looks rows up.

    ``samples``: every sentence of the task, each a list of words."""
    _cache(params).embed(_texts(samples))


def batcher(params, batch) -> np.ndarray:
    """SentEval's ``batcher``: ``(len(batch), d)`` float64 embeddings of a batch of tokenized
    sentences (lists of words), rows in the batch's order."""
    if len(batch) == 0:
        raise ValueError("SentEval passed an empty batch")
    return _cache(params).embed(_texts(batch))


def senteval_params(
    encoder,
    task_path,
    usepytorch: bool = True,
    kfold: int = DEFAULT_KFOLD,
    seed: int = 1111,
    batch_size: int = 64,
    cache: EmbeddingCache | None = None,
) -> dict:
    """The ``params`` dict for ``senteval.engine.SE``: ``task_path`` (the folder holding
    ``downstream/``), ``usepytorch``, ``kfold``, ``seed``, ``batch_size`` (sentences per
    :func:`batcher` call), the README's default ``classifier``, and the encoder's cache."""
    return {
        "task_path": str(task_path),
        "usepytorch": bool(usepytorch),
        "kfold": int(kfold),
        "seed": int(seed),
        "batch_size": int(batch_size),
        "classifier": dict(DEFAULT_CLASSIFIER),
        CACHE_KEY: cache if cache is not None else EmbeddingCache(encoder, batch_size=batch_size),
    }


def check_checkout(path) -> Path:
    """The SentEval checkout at ``path`` (a folder holding ``senteval/engine.py``), resolved;
    :class:`SentEvalNotFoundError` naming what is missing otherwise."""
    if not path:
        raise SentEvalNotFoundError(
            "--engine senteval needs --senteval-path DIR: a clone of github.com/facebookresearch/SentEval"
        )
    root = Path(path).expanduser()
    if not root.is_dir():
        raise SentEvalNotFoundError(
            f"--senteval-path {path}: no such folder (clone github.com/facebookresearch/SentEval there)"
        )
    if not (root / "senteval" / "engine.py").is_file():
        raise SentEvalNotFoundError(
            f"--senteval-path {path} is not a SentEval checkout: it has no "
            "senteval/engine.py (give the clone's top folder)"
        )
    return root.resolve()


def checkout_commit(path) -> str | None:
    """The git commit of the SentEval checkout at ``path`` (for a result file's metadata); None
    when ``path`` is not the top of a git clone (a folder inside another repository is not) or git
    is not installed."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--show-toplevel", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != Path(path).resolve():
        return None
    return lines[1]


def import_senteval(path):
    """Import the ``senteval`` package of the checkout at ``path`` (put first on ``sys.path``,
    as SentEval's examples do) and return it with its ``engine`` module loaded.

    A ``senteval`` already imported from another folder is an error rather than silently used."""
    root = check_checkout(path)
    loaded = sys.modules.get("senteval")
    if loaded is not None:
        where = Path(getattr(loaded, "__file__", "") or ".").resolve().parent.parent
        if where != root:
            raise SentEvalNotFoundError(
                f"a senteval package from {where} is already imported; cannot also import the one at {root}"
            )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("senteval")
        importlib.import_module("senteval.engine")
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] == "senteval":
            raise
        raise SentEvalImportError(
            f"SentEval's code at {root} imports {err.name!r}, which is not installed "
            f"(pip install {err.name.split('.')[0]})"
        ) from err
    return module


# Where SentEval's engine reads each task below ``downstream/`` (senteval/engine.py).
ENGINE_FOLDERS = {
    **{y: f"STS/{y}-en-test" for y in ("STS12", "STS13", "STS14", "STS15", "STS16")},
    "STSBenchmark": "STS/STSBenchmark",
    "SICKRelatedness": "SICK",
}
# SentEval's supervised similarity tasks, whose regression (senteval/tools/relatedness.py) asserts CUDA.
CUDA_ONLY = ("STSBenchmark", "SICKRelatedness")


class _RaggedArrays:
    """The ``numpy`` that SentEval's ``senteval/sts.py`` was written against: its STS reader calls
    ``np.array([s.split() for s in sent1])`` on sentences of different lengths, which NumPy before
    1.24 turned into an object array of lists (with a warning) and NumPy 1.24 and later refuse
    (``ValueError: ... inhomogeneous shape``). This stands in for ``numpy`` in that one module:
    every name is numpy's, and ``array`` of a ragged list gives the object array it used to."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def array(obj, *args, **kwargs):
        try:
            return np.array(obj, *args, **kwargs)
        except ValueError:
            if args or kwargs or not isinstance(obj, list):
                raise
            out = np.empty(len(obj), dtype=object)
            for i, item in enumerate(obj):
                out[i] = item
            return out


def ragged_sts_reader(senteval) -> None:
    """Let SentEval's STS12-16 reader run under NumPy >= 1.24 (:class:`_RaggedArrays`); a no-op
    when its ``sts`` module is not loaded or already adapted."""
    sts = sys.modules.get(f"{senteval.__name__}.sts")
    if sts is not None and getattr(sts, "np", None) is np:
        sts.np = _RaggedArrays()


def from_senteval(name: str, res: dict) -> dict:
    """SentEval's result dict of one task in qt-hard's form: the transfer tasks' as they are; the
    STS12-16 ones (per set ``(r, p)`` tuples and an ``all`` entry) and the supervised relatedness
    ones (its test predictions ``yhat`` dropped) as :mod:`.similarity` reports them, correlations
    x100."""
    res = dict(res)
    if "all" in res:  # STS12-16
        summary = res.pop("all")
        sets = {
            k: {
                "pearson": 100 * float(v["pearson"][0]),
                "spearman": 100 * float(v["spearman"][0]),
                "npairs": int(v["nsamples"]),
            }
            for k, v in res.items()
        }
        return {
            "pearson": 100 * float(summary["pearson"]["mean"]),
            "spearman": 100 * float(summary["spearman"]["mean"]),
            "pearson_wmean": 100 * float(summary["pearson"]["wmean"]),
            "spearman_wmean": 100 * float(summary["spearman"]["wmean"]),
            "npairs": sum(v["npairs"] for v in sets.values()),
            "sets": sets,
        }
    if "devpearson" in res:  # SICKRelatedness, STSBenchmark
        return {
            "pearson": 100 * float(res["pearson"]),
            "spearman": 100 * float(res["spearman"]),
            "mse": float(res["mse"]),
            "devpearson": 100 * float(res["devpearson"]),
            "ndev": int(res["ndev"]),
            "ntest": int(res["ntest"]),
        }
    return res


@contextmanager
def task_path(data_dir, tasks: Sequence[str] = ()):
    """Context manager giving the folder to pass SentEval as ``task_path`` for the task files in
    ``data_dir``.

    SentEval reads ``task_path + '/downstream/CR'``; ``data_dir`` may be such a folder (a
    checkout's ``data/``) or one holding the task folders itself (a checkout's
    ``data/downstream``, or qt-hard's ``$QT_HARD_DATA/senteval``). In the second case it yields a
    temporary folder whose ``downstream`` is a link to ``data_dir`` (nothing is copied), removed
    on exit. Every task of ``tasks`` must have its folder: :class:`SentEvalNotFoundError`
    otherwise, raised before anything is yielded."""
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise SentEvalNotFoundError(f"SentEval data folder {data_dir} does not exist")
    downstream = root / "downstream"
    linked = not downstream.is_dir()
    if linked:
        downstream = root
    missing = [t for t in tasks if not (downstream / ENGINE_FOLDERS.get(t, t)).is_dir()]
    if missing:
        raise SentEvalNotFoundError(
            f"SentEval data folder {downstream} has no task folder "
            f"{', '.join(ENGINE_FOLDERS.get(t, t) for t in missing)} "
            "(run the SentEval checkout's data/downstream/get_transfer_data.bash, or pass --data FOLDER)"
        )
    if not linked:
        yield root
        return
    with tempfile.TemporaryDirectory(prefix="qt-hard-senteval-") as tmp:
        (Path(tmp) / "downstream").symlink_to(downstream.resolve(), target_is_directory=True)
        yield Path(tmp)


def run_engine(encoder, tasks: Sequence[str], senteval_path, data_dir=None, log=None, **params) -> dict:
    """Evaluate ``encoder`` with the SentEval checkout at ``senteval_path``, one ``SE.eval`` per
    task, on the task files of ``data_dir`` (default: the checkout's ``data/``), under the
    :func:`senteval_params` of ``params`` (usepytorch, kfold, seed, batch_size, cache).

    Returns ``{task: SentEval's result dict}`` (``devacc``, ``acc``, ``ndev``, ``ntest``; MRPC
    also ``f1``), each with ``encode_seconds`` (new sentences encoded for it) and ``seconds``
    (wall time of its ``eval``, encoding included) added."""
    senteval = import_senteval(senteval_path)
    ragged_sts_reader(senteval)
    results = {}
    with task_path(data_dir if data_dir is not None else Path(senteval_path) / "data", tasks) as where:
        params = senteval_params(encoder, where, **params)
        engine = senteval.engine.SE(params, batcher, prepare)
        cache = params[CACHE_KEY]
        for name in tasks:
            enc_before, start = cache.seconds, time.perf_counter()
            # The fast engine's thread count ($QT_HARD_EVAL_THREADS, 1 by default) for SentEval's
            # scikit-learn fits too: on a busy 2-core CPU, BLAS's default threads made its CR and
            # MRPC fits take 583 s of CPU instead of 30 s (1,560 s of wall time for CR instead of
            # 37 s), with the same results.
            with threadpool_limits(logreg.DEFAULT_THREADS):
                res = from_senteval(name, engine.eval(name))
            res["encode_seconds"] = round(cache.seconds - enc_before, 3)
            res["seconds"] = round(time.perf_counter() - start, 3)
            results[name] = res
            if log:
                if "acc" in res:
                    f1 = f" f1 {res['f1']:.2f}" if "f1" in res else ""
                    what = f"acc {res['acc']:.2f}{f1} (dev {res['devacc']:.2f})"
                else:
                    what = f"spearman {res['spearman']:.2f} pearson {res['pearson']:.2f}"
                log(f"{name}: {what} [SentEval engine, {res['seconds']:.1f}s]")
    return results
