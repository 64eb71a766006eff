"""Run the six transfer tasks (MR, CR, SUBJ, MPQA, TREC, MRPC) on one encoder, under either of
two classifier protocols (``protocol=``):

* ``"senteval"``: SentEval's (Conneau & Kiela 2018, scikit-learn path): logistic regression on
  frozen sentence embeddings, stratified 10-fold cross-validation with nested C selection for
  the binary tasks, C by cross-validation on train then the test set for TREC and MRPC, MRPC
  features ``[|u - v|, u * v]`` (``senteval/mrpc.py``). This is how HCL-style SentEval tables
  are usually computed, and what published SentEval numbers mean.
* ``"skipthoughts"``: the skip-thoughts evaluators (Kiros et al. 2015;
  ``eval_classification.eval_nested_kfold``, ``eval_trec.evaluate``,
  ``eval_msrp.evaluate(use_feats=False)``) that S2V's ``src/evaluate.py`` runs, i.e. the protocol
  behind the Quick-Thoughts paper's (Logeswaran & Lee 2018) and the hard-negatives paper's
  (Robinson et al. 2021, Table 2) numbers: unit-L2-normalized embeddings (the encoders'
  ``use_norm=True``), rows in file order shuffled with ``RandomState(1234)`` (binary tasks; TREC
  via ``sklearn.utils.shuffle``), unshuffled ``KFold(10)`` (MSRP: shuffled with seed 1234),
  C in ``2**0 .. 2**8``, MSRP's C chosen by F1, liblinear's objective (penalized intercept,
  one-vs-rest). Known difference: their MSRP loader tokenizes with NLTK's ``word_tokenize``;
  here the sentences are split on white space as SentEval does (NLTK is not a dependency).
  S2V's ``evaluate.py`` prints ``np.mean(results[0])`` for the binary tasks; we report the mean
  of the outer folds, which is what ``eval_nested_kfold`` returns.

See :mod:`.tasks` for how files are read and :mod:`.protocol` for the classifier loops.

The similarity tasks (STS12-16, the STS Benchmark and SICK-R, :mod:`.similarity`) run through
:func:`run_senteval` too, on the same embedding cache (each distinct sentence is encoded once across
all tasks); they do not depend on ``protocol`` (the cosine ones use no classifier; the supervised
``STSBenchmark`` and ``SICKRelatedness`` are SentEval's regression and are refused under
``"skipthoughts"``, whose evaluators are not reproduced for them).

Results per task: ``devacc`` (MSRP under skip-thoughts: ``devf1``), ``acc`` (and ``f1`` for
MRPC), ``ndev``, ``ntest``, the chosen C, ``encode_seconds`` (new sentences encoded for this
task; the cache is shared between tasks), ``classify_seconds`` and ``seconds`` (their sum).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import numpy as np

from .models import EmbeddingCache
from .protocol import SKIPTHOUGHTS_SEED, inner_kfold, kfold_train_test, skipthoughts_kfold, skipthoughts_nested_kfold
from .similarity import SUPERVISED_TASKS, evaluate_similarity, pair_features
from .datasets import (
    TASKS,
    BinaryTask,
    MrpcTask,
    TrecTask,
    is_similarity,
    load_task,
    parse_tasks,
    task_sentences,
    words_to_text,
)

PROTOCOLS = ("senteval", "skipthoughts")

__all__ = [
    "TASKS",
    "PROTOCOLS",
    "parse_tasks",
    "skipthoughts_order",
    "default_senteval_dir",
    "evaluate_task",
    "check_protocol_tasks",
    "run_senteval",
    "task_sentences",
]


def default_senteval_dir() -> Path:
    from qt_hard.paths import data_path

    return data_path("senteval")


def _texts(words: list[list[str]]) -> list[str]:
    return [words_to_text(w) for w in words]


def _l2_normalize(X: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (skip-thoughts' ``use_norm=True``); an all-zero row stays 0."""
    norm = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norm > 0, norm, 1.0)


def skipthoughts_order(n: int, seed: int = SKIPTHOUGHTS_SEED) -> np.ndarray:
    """The row order of the skip-thoughts loaders: ``RandomState(seed).shuffle(arange(n))``
    (``dataset_handler.shuffle_data``; ``sklearn.utils.shuffle`` draws the same permutation)."""
    idx = np.arange(n)
    np.random.RandomState(seed).shuffle(idx)
    return idx


def evaluate_task(
    task,
    cache: EmbeddingCache,
    kfold: int = 10,
    seed: int = 1111,
    fast: bool = True,
    protocol: str = "senteval",
    max_iter: int | None = 100,
) -> dict:
    """Embed one loaded task through the cache and run its classifier under ``protocol``.

    For ``"skipthoughts"`` the task must have been loaded with ``sort=False`` (file order);
    ``seed`` and ``max_iter`` (the lbfgs cap of SentEval's reference path) are SentEval's only.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    st = protocol == "skipthoughts"
    emb = (lambda texts: _l2_normalize(cache.embed(texts))) if st else cache.embed
    classify = {BinaryTask: _classify_binary, TrecTask: _classify_trec, MrpcTask: _classify_mrpc}.get(type(task))
    if classify is None:
        raise TypeError(f"not a SentEval task: {type(task).__name__}")
    enc_before = cache.seconds
    res, t0 = classify(task, emb, st, kfold, seed, fast, max_iter)
    res["classify_seconds"] = round(time.perf_counter() - t0, 3)
    res["encode_seconds"] = round(cache.seconds - enc_before, 3)
    res["seconds"] = round(res["classify_seconds"] + res["encode_seconds"], 3)
    res.pop("fold_acc", None)
    return res


# Each task's step of evaluate_task: embed with ``emb``, then classify (skip-thoughts' protocol when
# ``st``); returns the classifier's result and the perf_counter time its classification started.


def _classify_binary(task, emb, st: bool, kfold: int, seed: int, fast: bool, max_iter: int | None):
    """A binary task (MR, CR, SUBJ, MPQA): nested k-fold cross-validation on its sentences."""
    if st:
        order = skipthoughts_order(len(task.labels))
        X = emb(_texts([task.samples[i] for i in order]))
        t0 = time.perf_counter()
        res = skipthoughts_nested_kfold(X, task.labels[order], kfold=kfold, fast=fast)
    else:
        X = emb(task.texts())
        t0 = time.perf_counter()
        res = inner_kfold(X, task.labels, 2, kfold=kfold, seed=seed, fast=fast, max_iter=max_iter)
    return res, t0


def _classify_trec(task, emb, st: bool, kfold: int, seed: int, fast: bool, max_iter: int | None):
    """TREC: six classes, k-fold model selection on the train split, then the test split."""
    order = skipthoughts_order(len(task.train_labels)) if st else np.arange(len(task.train_labels))
    Xtr, ytr = emb(_texts([task.train[i] for i in order])), task.train_labels[order]
    Xte = emb(_texts(task.test))
    return _train_test(Xtr, ytr, Xte, task.test_labels, 6, st, kfold, seed, fast, max_iter)


def _classify_mrpc(task, emb, st: bool, kfold: int, seed: int, fast: bool, max_iter: int | None):
    """MRPC: paraphrase pairs as np.c_[|u - v|, u * v] (in both protocols), accuracy and F1 on the
    test split."""
    Ftr = pair_features(emb(_texts(task.train_a)), emb(_texts(task.train_b)))
    Fte = pair_features(emb(_texts(task.test_a)), emb(_texts(task.test_b)))
    return _train_test(Ftr, task.train_labels, Fte, task.test_labels, 2, st, kfold, seed, fast, max_iter, f1=True)


def _train_test(Xtr, ytr, Xte, yte, n_classes: int, st: bool, kfold, seed, fast, max_iter, f1: bool = False):
    """C chosen by k-fold cross-validation on the training rows, the test rows scored (F1 too with
    ``f1``: MRPC, whose skip-thoughts folds are shuffled and choose C by F1)."""
    t0 = time.perf_counter()
    if st:
        shuffle_seed = SKIPTHOUGHTS_SEED if f1 else None
        res = skipthoughts_kfold(
            Xtr, ytr, Xte, yte, n_classes, kfold=kfold, fast=fast, f1=f1, shuffle_seed=shuffle_seed
        )
    else:
        res = kfold_train_test(
            Xtr, ytr, Xte, yte, n_classes, kfold=kfold, seed=seed, fast=fast, f1=f1, max_iter=max_iter
        )
    return res, t0


def check_protocol_tasks(tasks: Sequence[str], protocol: str) -> None:
    """Refuse an unknown protocol, and the supervised similarity tasks under another protocol than
    SentEval's (``ArgumentError``, one line)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    supervised = [t for t in tasks if t in SUPERVISED_TASKS]
    if protocol != "senteval" and supervised:
        from qt_hard.errors import ArgumentError

        raise ArgumentError(
            f"--tasks {','.join(supervised)}: SentEval's supervised similarity protocol runs under --protocol "
            "senteval only (the cosine tasks STS12-16, STSBenchmark-cos, SICKRelatedness-cos run under either)"
        )


def run_senteval(
    encoder,
    tasks: Sequence[str] = TASKS,
    data_dir=None,
    kfold: int = 10,
    seed: int = 1111,
    fast: bool = True,
    batch_size: int = 64,
    cache: EmbeddingCache | None = None,
    log=None,
    protocol: str = "senteval",
    max_iter: int | None = 100,
) -> dict:
    """Evaluate ``encoder`` (anything with ``.encode(list_of_str)``) on the tasks under
    ``protocol`` (``"senteval"`` or ``"skipthoughts"``, see the module docstring).

    Returns ``{task: result}`` (see module docstring), in the order given.
    """
    tasks = parse_tasks(tasks)
    check_protocol_tasks(tasks, protocol)
    data_dir = Path(data_dir) if data_dir is not None else default_senteval_dir()
    if not data_dir.is_dir():
        raise FileNotFoundError(f"SentEval data folder {data_dir} does not exist")
    cache = cache if cache is not None else EmbeddingCache(encoder, batch_size=batch_size)
    results = {}
    for name in tasks:
        if is_similarity(name):
            results[name] = evaluate_similarity(name, data_dir, cache, seed=seed)
        else:
            task = load_task(name, data_dir, sort=protocol != "skipthoughts")
            results[name] = evaluate_task(
                task, cache, kfold=kfold, seed=seed, fast=fast, protocol=protocol, max_iter=max_iter
            )
        if log:
            log(_progress_line(name, results[name]))
    return results


def _progress_line(name: str, r: dict) -> str:
    """One progress line for a task's result (a transfer task's, or a similarity task's)."""
    if "acc" in r:
        extra = f" f1 {r['f1']:.2f}" if "f1" in r else ""
        dev = r.get("devacc", r.get("devf1"))
        return (
            f"{name}: acc {r['acc']:.2f}{extra} (dev {dev:.2f}) "
            f"encode {r['encode_seconds']:.1f}s classify {r['classify_seconds']:.1f}s"
        )
    if "sets" in r:
        extra = f" (weighted by pairs: spearman {r['spearman_wmean']:.2f} pearson {r['pearson_wmean']:.2f})"
    elif "devspearman" in r:
        extra = f" (dev spearman {r['devspearman']:.2f})"
    else:
        extra = f" (dev pearson {r['devpearson']:.2f}, kept after {r['epochs']} epochs)"
    return (
        f"{name}: spearman {r['spearman']:.2f} pearson {r['pearson']:.2f}{extra} "
        f"encode {r['encode_seconds']:.1f}s score {r['score_seconds']:.1f}s"
    )
