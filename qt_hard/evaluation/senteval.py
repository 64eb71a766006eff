"""Run SentEval's six transfer tasks (MR, CR, SUBJ, MPQA, TREC, MRPC) on one encoder.

The protocol is SentEval's (Conneau & Kiela 2018) as the Quick-Thoughts (Logeswaran & Lee 2018)
and hard-negatives (Robinson et al. 2021, Table 2) papers used it: logistic regression on frozen
sentence embeddings, 10-fold cross-validation with nested C selection for the binary tasks,
C by cross-validation on train then the test set for TREC and MRPC, MRPC features
``[|u - v|, u * v]`` (``senteval/mrpc.py``). See :mod:`.tasks` for how files are read and
:mod:`.protocol` for the classifier loop.

Results per task: ``devacc``, ``acc`` (and ``f1`` for MRPC), ``ndev``, ``ntest``, the chosen C,
``encode_seconds`` (new sentences encoded for this task; the cache is shared between tasks),
``classify_seconds`` and ``seconds`` (their sum).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import numpy as np

from .models import EmbeddingCache
from .protocol import inner_kfold, kfold_train_test
from .tasks import TASKS, BinaryTask, MrpcTask, TrecTask, load_task, words_to_text

__all__ = ["TASKS", "parse_tasks", "default_senteval_dir", "evaluate_task", "run_senteval", "task_sentences"]


def default_senteval_dir() -> Path:
    from qt_hard.paths import data_path

    return data_path("senteval")


def parse_tasks(spec: str | Sequence[str]) -> list[str]:
    """``"MR,CR"`` or a list -> canonical task names (MSRP is accepted for MRPC)."""
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    out = []
    for name in names:
        if not name:
            continue
        key = "MRPC" if name.upper() == "MSRP" else name.upper()
        if key not in TASKS:
            raise ValueError(f"unknown SentEval task {name!r}; known tasks: {', '.join(TASKS)}")
        if key not in out:
            out.append(key)
    if not out:
        raise ValueError("no tasks given")
    return out


def task_sentences(tasks: Sequence[str], data_dir) -> list[str]:
    """Union of the (encoder-ready) sentences of the given tasks, e.g. for a random model's vocab."""
    seen: dict[str, None] = {}
    for name in tasks:
        for t in load_task(name, data_dir).texts():
            seen.setdefault(t, None)
    return list(seen)


def _texts(words: list[list[str]]) -> list[str]:
    return [words_to_text(w) for w in words]


def evaluate_task(task, cache: EmbeddingCache, kfold: int = 10, seed: int = 1111, fast: bool = True) -> dict:
    """Embed one loaded task through the cache and run its SentEval classifier."""
    enc_before = cache.seconds
    if isinstance(task, BinaryTask):
        X = cache.embed(task.texts())
        t0 = time.perf_counter()
        res = inner_kfold(X, task.labels, 2, kfold=kfold, seed=seed, fast=fast)
    elif isinstance(task, TrecTask):
        Xtr, Xte = cache.embed(_texts(task.train)), cache.embed(_texts(task.test))
        t0 = time.perf_counter()
        res = kfold_train_test(Xtr, task.train_labels, Xte, task.test_labels, 6, kfold=kfold,
                               seed=seed, fast=fast)
    elif isinstance(task, MrpcTask):
        A, B = cache.embed(_texts(task.train_a)), cache.embed(_texts(task.train_b))
        tA, tB = cache.embed(_texts(task.test_a)), cache.embed(_texts(task.test_b))
        # SentEval's MRPC features: np.c_[|u - v|, u * v].
        Ftr = np.c_[np.abs(A - B), A * B]
        Fte = np.c_[np.abs(tA - tB), tA * tB]
        t0 = time.perf_counter()
        res = kfold_train_test(Ftr, task.train_labels, Fte, task.test_labels, 2, kfold=kfold,
                               seed=seed, fast=fast, f1=True)
    else:
        raise TypeError(f"not a SentEval task: {type(task).__name__}")
    res["classify_seconds"] = round(time.perf_counter() - t0, 3)
    res["encode_seconds"] = round(cache.seconds - enc_before, 3)
    res["seconds"] = round(res["classify_seconds"] + res["encode_seconds"], 3)
    res.pop("fold_acc", None)
    return res


def run_senteval(encoder, tasks: Sequence[str] = TASKS, data_dir=None, kfold: int = 10,
                 seed: int = 1111, fast: bool = True, batch_size: int = 64,
                 cache: EmbeddingCache | None = None, log=None) -> dict:
    """Evaluate ``encoder`` (anything with ``.encode(list_of_str)``) on SentEval tasks.

    Returns ``{task: result}`` (see module docstring), in the order given.
    """
    tasks = parse_tasks(tasks)
    data_dir = Path(data_dir) if data_dir is not None else default_senteval_dir()
    if not data_dir.is_dir():
        raise FileNotFoundError(f"SentEval data folder {data_dir} does not exist")
    cache = cache if cache is not None else EmbeddingCache(encoder, batch_size=batch_size)
    results = {}
    for name in tasks:
        task = load_task(name, data_dir)
        results[name] = evaluate_task(task, cache, kfold=kfold, seed=seed, fast=fast)
        if log:
            r = results[name]
            extra = f" f1 {r['f1']:.2f}" if "f1" in r else ""
            log(f"{name}: acc {r['acc']:.2f}{extra} (dev {r['devacc']:.2f}) "
                f"encode {r['encode_seconds']:.1f}s classify {r['classify_seconds']:.1f}s")
    return results
