"""SentEval's classifier protocol on frozen embeddings: a fast path and a plain reference path.

Conneau & Kiela (2018), SentEval, scikit-learn path of ``senteval/tools/validation.py``:

* ``InnerKFoldClassifier`` (MR, CR, SUBJ, MPQA): outer ``StratifiedKFold(kfold, shuffle=True,
  random_state=1111)``; on each outer training set an inner ``StratifiedKFold`` with the same
  settings picks C from ``[2**-2, ..., 2**3]`` by the inner mean accuracy, rounded
  ``round(100 * mean, 2)``, first maximum on ties; a model with that C is refit on the outer
  training set and scored on the outer test fold (``round(100 * acc, 2)``); the task's accuracy
  is ``round(mean over outer folds, 2)`` and its dev accuracy the rounded mean of the best inner
  scores. (SentEval fixes 1111 for these splits whatever its seed.)
* ``KFoldClassifier`` (TREC, MRPC): ``StratifiedKFold(kfold, shuffle=True, random_state=seed)``
  on the training set picks C from ``[2**-1, ..., 2**5]``; the model refit on the whole training
  set is scored on the test set; MRPC also reports ``round(100 * f1, 2)`` of the test predictions.

Every model is scikit-learn's ``LogisticRegression(C=C)`` (default lbfgs solver: binary sigmoid
for 2 classes, multinomial softmax otherwise, unpenalized intercept).

``fast=True`` solves all folds of one C at once with :class:`BatchedLogReg` (one matrix product
per pass over the data for all folds), warm-starting each C from the previous one, and the final
refits from the inner solutions. ``fast=False`` is the straightforward loop SentEval runs, one
``LogisticRegression`` per C per fold; it exists to check the fast path against.

Shapes: X (n, d) float; y (n,) int labels in [0, n_classes).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

from .logreg import BatchedLogReg, predict_logreg

__all__ = ["INNER_REGS", "KFOLD_REGS", "inner_kfold", "kfold_train_test"]

INNER_REGS = tuple(2.0**t for t in range(-2, 4))  # SentEval InnerKFoldClassifier, sklearn path
KFOLD_REGS = tuple(2.0**t for t in range(-1, 6))  # SentEval KFoldClassifier, sklearn path
INNER_SPLIT_SEED = 1111  # hard-coded in SentEval's InnerKFoldClassifier


def _check_xy(X, y, n_classes, kfold):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (n, d) with n = len(y) = {y.shape[0]}, got {X.shape}")
    if kfold < 2:
        raise ValueError(f"kfold must be at least 2, got {kfold}")
    counts = np.bincount(y, minlength=n_classes)
    if counts.min() < kfold:
        raise ValueError(
            f"every class needs at least kfold={kfold} examples for stratified folds, "
            f"got class counts {counts.tolist()}"
        )
    return X, y


def _acc(pred: np.ndarray, y: np.ndarray) -> float:
    # scikit-learn's score(): the mean of (pred == y), which is count / n as a float.
    return float(np.mean(pred == y))


def _sk_fit(X, y, C, seed):
    clf = LogisticRegression(C=C, random_state=seed)
    with warnings.catch_warnings():
        # SentEval runs with the default max_iter=100 and just lives with the warning.
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    return clf


# --------------------------------------------------------------------------- InnerKFold
def inner_kfold(X, y, n_classes: int = 2, kfold: int = 10, seed: int = 1111, fast: bool = True,
                regs=INNER_REGS) -> dict:
    """SentEval's InnerKFoldClassifier (MR/CR/SUBJ/MPQA). Returns devacc, acc, per-fold C."""
    X, y = _check_xy(X, y, n_classes, kfold)
    outer = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=INNER_SPLIT_SEED)
    inner = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=INNER_SPLIT_SEED)
    outer_folds = list(outer.split(X, y))
    # inner folds in global row indices: inner_folds[o][i] = (train_rows, test_rows)
    inner_folds = [
        [(tr[itr], tr[ite]) for itr, ite in inner.split(X[tr], y[tr])] for tr, _ in outer_folds
    ]
    if fast:
        dev, test, chosen = _inner_fast(X, y, n_classes, outer_folds, inner_folds, regs)
    else:
        dev, test, chosen = _inner_reference(X, y, outer_folds, inner_folds, regs, seed)
    return {
        "devacc": round(float(np.mean(dev)), 2),
        "acc": round(float(np.mean(test)), 2),
        "fold_acc": test,
        "chosen_C": chosen,
        "ndev": int(len(y)),
        "ntest": int(len(y)),
    }


def _cv_scores_reference(X, y, folds, regs, seed):
    """SentEval's model selection as is: one LogisticRegression per (C, fold), mean accuracy per C
    in percent, rounded to 2 decimals as SentEval does."""
    scores = []
    for reg in regs:
        accs = [_sk_fit(X[tr], y[tr], reg, seed).score(X[te], y[te]) for tr, te in folds]
        scores.append(round(100 * np.mean(accs), 2))
    return scores


def _inner_reference(X, y, outer_folds, inner_folds, regs, seed):
    dev, test, chosen = [], [], []
    for (tr, te), folds in zip(outer_folds, inner_folds):
        scores = _cv_scores_reference(X, y, folds, regs, seed)
        best = int(np.argmax(scores))
        dev.append(np.max(scores))
        chosen.append(regs[best])
        clf = _sk_fit(X[tr], y[tr], regs[best], seed)
        test.append(round(100 * clf.score(X[te], y[te]), 2))
    return dev, test, chosen


def _inner_fast(X, y, n_classes, outer_folds, inner_folds, regs):
    n = len(y)
    k_out, k_in = len(outer_folds), len(inner_folds[0])
    model = BatchedLogReg(X, y, n_classes)
    # One column per (outer, inner) fold: all of them train together for a given C.
    masks = torch.zeros(n, k_out * k_in, dtype=torch.float64)
    tests = []
    for o, folds in enumerate(inner_folds):
        for i, (itr, ite) in enumerate(folds):
            masks[torch.as_tensor(itr), o * k_in + i] = 1.0
            tests.append(ite)
    W = None
    W_by_reg = {}
    inner_acc = np.zeros((len(regs), k_out * k_in))
    for r, reg in enumerate(sorted(range(len(regs)), key=lambda j: regs[j])):
        # Increasing C: each solution warm-starts the next, less regularized one.
        W = model.fit(masks, regs[reg], W0=W)
        W_by_reg[reg] = W
        pred = model.predict(W).numpy()
        for col, ite in enumerate(tests):
            inner_acc[reg, col] = _acc(pred[ite, col], y[ite])
    dev, chosen_idx = [], []
    for o in range(k_out):
        scores = [round(100 * np.mean(list(inner_acc[r, o * k_in:(o + 1) * k_in])), 2)
                  for r in range(len(regs))]
        best = int(np.argmax(scores))
        dev.append(np.max(scores))
        chosen_idx.append(best)
    # Final refits: one column per outer fold, each with its own C, warm-started from the first
    # inner fold's solution at that C (trained on ~(k-1)/k of the same rows).
    final_masks = torch.zeros(n, k_out, dtype=torch.float64)
    for o, (tr, _) in enumerate(outer_folds):
        final_masks[torch.as_tensor(tr), o] = 1.0
    C = torch.tensor([regs[b] for b in chosen_idx], dtype=torch.float64)
    W0 = torch.stack([W_by_reg[b][:, o * k_in, :] for o, b in enumerate(chosen_idx)], dim=1)
    Wf = model.fit(final_masks, C, W0=W0)
    pred = model.predict(Wf).numpy()
    test = [round(100 * _acc(pred[te, o], y[te]), 2) for o, (_, te) in enumerate(outer_folds)]
    return dev, test, [regs[b] for b in chosen_idx]


# --------------------------------------------------------------------------- KFold
def kfold_train_test(Xtr, ytr, Xte, yte, n_classes: int, kfold: int = 10, seed: int = 1111,
                     fast: bool = True, f1: bool = False, regs=KFOLD_REGS) -> dict:
    """SentEval's KFoldClassifier (TREC, MRPC): C by k-fold CV on train, score on test."""
    Xtr, ytr = _check_xy(Xtr, ytr, n_classes, kfold)
    Xte = np.asarray(Xte, dtype=np.float64)
    yte = np.asarray(yte, dtype=np.int64)
    if Xte.ndim != 2 or Xte.shape[1] != Xtr.shape[1] or len(Xte) != len(yte) or len(yte) == 0:
        raise ValueError(f"test features {Xte.shape} / labels {yte.shape} do not match train {Xtr.shape}")
    folds = list(StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed).split(Xtr, ytr))
    if fast:
        model = BatchedLogReg(Xtr, ytr, n_classes)
        masks = torch.zeros(len(ytr), kfold, dtype=torch.float64)
        for c, (tr, _) in enumerate(folds):
            masks[torch.as_tensor(tr), c] = 1.0
        W, W_by_reg, scores = None, {}, [0.0] * len(regs)
        for reg in sorted(range(len(regs)), key=lambda j: regs[j]):
            W = model.fit(masks, regs[reg], W0=W)
            W_by_reg[reg] = W
            pred = model.predict(W).numpy()
            scanscores = [_acc(pred[te, c], ytr[te]) for c, (_, te) in enumerate(folds)]
            scores[reg] = round(100 * np.mean(scanscores), 2)
        best = int(np.argmax(scores))
        # The refit on all rows starts from the mean of the fold solutions at that C.
        W0 = W_by_reg[best].mean(dim=1, keepdim=True)
        Wf = model.fit(torch.ones(len(ytr), 1, dtype=torch.float64), regs[best], W0=W0)
        yhat = predict_logreg(model, Wf, Xte)[:, 0]
    else:
        scores = _cv_scores_reference(Xtr, ytr, folds, regs, seed)
        best = int(np.argmax(scores))
        clf = _sk_fit(Xtr, ytr, regs[best], seed)
        yhat = clf.predict(Xte)
    out = {
        "devacc": float(np.max(scores)),
        "acc": round(100 * _acc(yhat, yte), 2),
        "chosen_C": regs[best],
        "ndev": int(len(ytr)),
        "ntest": int(len(yte)),
    }
    if f1:
        out["f1"] = round(100 * float(f1_score(yte, yhat)), 2)
    return out
