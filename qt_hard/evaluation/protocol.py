"""The classifier protocols on frozen embeddings (SentEval's and the skip-thoughts evaluators'),
each with a fast path and a plain reference path.

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

``max_iter`` (reference path only): scikit-learn's lbfgs iteration cap. SentEval runs the
default 100, which stops before convergence on unnormalized features, so ``max_iter=100`` with
``fast=False`` reproduces SentEval exactly; the fast path always solves to convergence (a
max-abs scaled gradient below ``FAST_TOL`` = 1e-6; ``max_iter=None`` gives the reference lbfgs
with ``tol=1e-8`` and up to 10,000 iterations, with which it agrees on every held-out prediction
of ``scripts/bench_eval.py senteval --check``).

Skip-thoughts protocol (Kiros et al. 2015, ``eval_classification.py``, ``eval_trec.py``,
``eval_msrp.py`` of ryankiros/skip-thoughts, which S2V's ``src/evaluate.py`` calls and which
produced the Quick-Thoughts (Logeswaran & Lee 2018) and hard-negatives (Robinson et al. 2021,
Table 2) numbers), see :func:`skipthoughts_nested_kfold` and :func:`skipthoughts_kfold`. Those
scripts import ``sklearn.cross_validation`` (scikit-learn < 0.20), whose ``LogisticRegression``
default was liblinear: the intercept is penalized like a weight and more than two classes are
fitted one-vs-rest; both paths here use exactly that objective.

Shapes: X (n, d) float; y (n,) int labels in [0, n_classes).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from threadpoolctl import threadpool_limits

from . import logreg
from .logreg import BatchedLogReg, decision_logreg, label_of

__all__ = [
    "INNER_REGS",
    "KFOLD_REGS",
    "SKIPTHOUGHTS_REGS",
    "inner_kfold",
    "kfold_train_test",
    "reference_fit",
    "skipthoughts_nested_kfold",
    "skipthoughts_kfold",
]

INNER_REGS = tuple(2.0**t for t in range(-2, 4))  # SentEval InnerKFoldClassifier, sklearn path
KFOLD_REGS = tuple(2.0**t for t in range(-1, 6))  # SentEval KFoldClassifier, sklearn path
INNER_SPLIT_SEED = 1111  # hard-coded in SentEval's InnerKFoldClassifier
SKIPTHOUGHTS_REGS = tuple(2.0**t for t in range(0, 9))  # skip-thoughts evaluators' scan
SKIPTHOUGHTS_SEED = 1234  # their default seed (data shuffle, MSRP folds)
# The fast path's stopping rule: max-abs gradient of scikit-learn's scaling of the objective
# (J / (C n)) below 1e-6, a hundredth of scikit-learn's own lbfgs default (tol=1e-4). From 1e-8:
# CR at 2,400-d took 397 instead of 574 CG steps (70 against 89 CPU s) with the same accuracy and
# chosen C; scripts/bench_eval.py senteval --check compares held-out predictions with lbfgs at tol=1e-8.
FAST_TOL = 1e-6


def _path_start(path, C):
    """Warm start for the fit at ``C`` from ``path``, the solutions so far as (C_j, W_j) in
    increasing C: None for the first, the last for the second, then ``W_k + t (W_k - W_{k-1})``
    with ``t = log(C / C_k) / log(C_k / C_{k-1})``. Near separability the weights grow about
    linearly in log C, so the extrapolation lands closer to the next optimum than the last
    solution does (2,400-d, one thread, CPU s from the last solution -> extrapolated, same outputs:
    TREC 69.4 -> 51.1, MPQA 31.3 -> 24.1, MRPC 26.8 -> 21.7, CR 16.4 -> 13.7 on random projections
    of an untrained bidirectional Quick-Thoughts pair). Only the starting point of Newton's method
    changes, not the optimum it converges to."""
    if not path:
        return None
    c1, W1 = path[-1]
    if len(path) < 2:
        return W1
    c0, W0 = path[-2]
    t = float(np.log(C / c1) / np.log(c1 / c0))
    return W1 + t * (W1 - W0)


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


def reference_fit(X, y, C, seed, max_iter=100, liblinear=False):
    """One scikit-learn fit: SentEval's ``LogisticRegression(C=C)`` (lbfgs; ``max_iter=None``:
    run to convergence) or, with ``liblinear``, the pre-0.22 default the skip-thoughts scripts got
    (liblinear, one-vs-rest for more than two classes, its default tol and iteration cap).

    Runs with as many BLAS / OpenMP threads as the fast path's solver (``logreg.DEFAULT_THREADS``,
    one by default), so that the two are timed alike: scikit-learn's default of one OpenMP thread
    per core cost 4-60x the CPU time of one thread on the shared two-core machine (TREC 64-d:
    13.1 against 0.21 CPU seconds for the same 62 lbfgs iterations; CR 2,400-d: 2.45 against 0.65)."""
    if liblinear:
        clf = LogisticRegression(C=C, solver="liblinear", random_state=seed)
        if len(np.unique(y)) > 2:
            clf = OneVsRestClassifier(clf)
    elif max_iter is None:
        clf = LogisticRegression(C=C, random_state=seed, tol=1e-8, max_iter=10000)
    else:
        clf = LogisticRegression(C=C, random_state=seed, max_iter=max_iter)
    with warnings.catch_warnings(), threadpool_limits(logreg.DEFAULT_THREADS):
        # SentEval runs with the default max_iter=100 and just lives with the warning.
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    return clf


class _PathSolver:
    """The fast path's view of the problems of one feature matrix: F fold problems fitted at
    once, each one model (lbfgs objective), or, with ``liblinear`` and K > 2 classes, K binary
    one-vs-rest columns per problem (column ``f * K + k``). Weights are (p, F, H) or (p, F*K, 1).

    Repeated (features, label) rows are merged into one row whose weight in each problem is the
    number of its copies that the problem trains on: the objective, a sum
    of per-row losses, is the same function of the weights, so the solution is too, with fewer
    rows in every product (MPQA's short phrases: 10,606 rows, 8,340 distinct). Masks and
    predictions stay in the original rows."""

    def __init__(self, X, y, n_classes, liblinear=False):
        self.ovr = liblinear and n_classes > 2
        self.K = n_classes
        self.inv = None  # original row -> merged row, when rows were merged
        Xt = torch.as_tensor(np.asarray(X, dtype=np.float64))
        keys = torch.cat([Xt, torch.as_tensor(np.asarray(y), dtype=torch.float64)[:, None]], dim=1)
        uniq, inv = torch.unique(keys, dim=0, return_inverse=True)
        if len(uniq) < len(keys):
            self.inv = inv
            # The first copy of each merged row (its features and label exactly).
            first = torch.full((len(uniq),), len(keys), dtype=torch.long).scatter_reduce(
                0, inv, torch.arange(len(keys)), reduce="amin"
            )
            X, y = np.asarray(X)[first.numpy()], np.asarray(y)[first.numpy()]
        if self.ovr:
            self.model = BatchedLogReg(X, np.zeros_like(y), 2, penalize_intercept=True)
            self.onehot = torch.nn.functional.one_hot(torch.as_tensor(y), n_classes).to(torch.float64)
        else:
            self.model = BatchedLogReg(X, y, n_classes, penalize_intercept=liblinear)

    def fit(self, masks, C, W0=None):
        if self.inv is not None:  # per merged row: how many of its copies each problem trains on
            masks = torch.as_tensor(masks, dtype=torch.float64)
            masks = torch.zeros(int(self.inv.max()) + 1, masks.shape[1], dtype=masks.dtype).index_add_(
                0, self.inv, masks
            )
        if not self.ovr:
            return self.model.fit(masks, C, W0=W0, tol=FAST_TOL)
        F = masks.shape[1]
        C = torch.as_tensor(C, dtype=torch.float64)
        C = C.repeat_interleave(self.K) if C.ndim else C
        return self.model.fit(
            masks.repeat_interleave(self.K, dim=1), C, W0=W0, tol=FAST_TOL, targets=self.onehot.repeat(1, F)
        )

    def columns(self, W, f: int):
        """Problem f's weights (as a one-problem W)."""
        return W[:, f * self.K : (f + 1) * self.K] if self.ovr else W[:, f : f + 1]

    def mean(self, W):
        """The average of all problems' weights (a warm start for a refit on all rows)."""
        if self.ovr:
            p = W.shape[0]
            return W.reshape(p, -1, self.K, 1).mean(dim=1)
        return W.mean(dim=1, keepdim=True)

    def _labels(self, Z):
        if self.ovr:  # one-vs-rest: the class whose binary model gives the largest logit
            return Z[..., 0].reshape(Z.shape[0], -1, self.K).argmax(dim=2)
        return label_of(Z)

    def predict(self, W, X=None) -> np.ndarray:
        """(m, F) labels of the training rows (X None) or of new rows X (m, d)."""
        if X is not None:
            return self._labels(decision_logreg(self.model, W, X)).numpy()
        labels = self._labels(self.model.decision(W))
        return (labels if self.inv is None else labels[self.inv]).numpy()


def _fold_masks(n, folds):
    masks = torch.zeros(n, len(folds), dtype=torch.float64)
    for c, (tr, _) in enumerate(folds):
        masks[torch.as_tensor(tr), c] = 1.0
    return masks


def _cv_path(solver, y, folds, regs, score, agg):
    """Fit every fold for each C (increasing, warm-started along the path); returns the per-C
    aggregated fold scores (list, in the order of ``regs``) and the weights per C index."""
    masks = _fold_masks(len(y), folds)
    path, W_by_reg, scores = [], {}, [0.0] * len(regs)
    for reg in sorted(range(len(regs)), key=lambda j: regs[j]):
        W = solver.fit(masks, regs[reg], W0=_path_start(path, regs[reg]))
        path.append((regs[reg], W))
        W_by_reg[reg] = W
        pred = solver.predict(W)
        scores[reg] = agg([score(pred[te, c], y[te]) for c, (_, te) in enumerate(folds)])
    return scores, W_by_reg


def _senteval_mean(vals):
    # SentEval: round(100 * mean, 2) per C, then the first maximum.
    return round(100 * float(np.mean(vals)), 2)


def _f1(pred, y):
    return float(f1_score(y, pred))


# --------------------------------------------------------------------------- InnerKFold
def inner_kfold(
    X,
    y,
    n_classes: int = 2,
    kfold: int = 10,
    seed: int = 1111,
    fast: bool = True,
    regs=INNER_REGS,
    max_iter: int | None = 100,
) -> dict:
    """SentEval's InnerKFoldClassifier (MR/CR/SUBJ/MPQA). Returns devacc, acc, per-fold C."""
    X, y = _check_xy(X, y, n_classes, kfold)
    outer = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=INNER_SPLIT_SEED)
    inner = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=INNER_SPLIT_SEED)
    outer_folds = list(outer.split(X, y))
    # inner folds in global row indices: inner_folds[o][i] = (train_rows, test_rows)
    inner_folds = [[(tr[itr], tr[ite]) for itr, ite in inner.split(X[tr], y[tr])] for tr, _ in outer_folds]
    fit_kw = dict(seed=seed, max_iter=max_iter)
    dev, test, chosen = _nested(X, y, n_classes, outer_folds, inner_folds, regs, _senteval_mean, fast, False, fit_kw)
    fold_acc = [round(100 * a, 2) for a in test]  # SentEval rounds each fold, then the mean
    return _nested_result(round(float(np.mean(dev)), 2), round(float(np.mean(fold_acc)), 2), fold_acc, chosen, len(y))


def _nested_result(devacc: float, acc: float, fold_acc: list, chosen_C: list, n: int) -> dict:
    """The record of a nested cross-validation over ``n`` rows (each row both a dev and a test row)."""
    return {"devacc": devacc, "acc": acc, "fold_acc": fold_acc, "chosen_C": chosen_C, "ndev": int(n), "ntest": int(n)}


def _cv_scores_reference(X, y, folds, regs, score, agg, fit_kw):
    """The model selection as the original loops run it: one scikit-learn fit per (C, fold)."""
    scores = []
    for reg in regs:
        vals = [score(reference_fit(X[tr], y[tr], reg, **fit_kw).predict(X[te]), y[te]) for tr, te in folds]
        scores.append(agg(vals))
    return scores


def _nested(X, y, n_classes, outer_folds, inner_folds, regs, agg, fast, liblinear, fit_kw):
    """Nested cross-validation: on each outer training set, C by ``agg`` of its inner folds'
    accuracies (first maximum); the model refit with that C is scored on the outer test fold.
    Returns (the chosen C's inner score, the test accuracy, the chosen C), one each per outer fold.

    ``fast``: every (outer, inner) fold trains together for a given C (:func:`_cv_path`), and the
    outer refits together, each warm-started from its first inner fold's solution at its C (trained
    on ~(k-1)/k of the same rows); otherwise one scikit-learn fit per (C, fold) (``fit_kw``)."""
    k_in = len(inner_folds[0])
    if fast:
        solver = _PathSolver(X, y, n_classes, liblinear)
        flat = [f for folds in inner_folds for f in folds]
        per_fold, W_by_reg = _cv_path(solver, y, flat, regs, _acc, list)
        scores = [
            [agg(per_fold[r][o * k_in : (o + 1) * k_in]) for r in range(len(regs))] for o in range(len(inner_folds))
        ]
    else:
        scores = [_cv_scores_reference(X, y, folds, regs, _acc, agg, fit_kw) for folds in inner_folds]
    best = [int(np.argmax(s)) for s in scores]
    if fast:
        C = torch.tensor([regs[b] for b in best], dtype=torch.float64)
        W0 = torch.cat([solver.columns(W_by_reg[b], o * k_in) for o, b in enumerate(best)], dim=1)
        pred = solver.predict(solver.fit(_fold_masks(len(y), outer_folds), C, W0=W0))
        test = [_acc(pred[te, o], y[te]) for o, (_, te) in enumerate(outer_folds)]
    else:
        fits = [reference_fit(X[tr], y[tr], regs[b], **fit_kw) for b, (tr, _) in zip(best, outer_folds)]
        test = [_acc(clf.predict(X[te]), y[te]) for clf, (_, te) in zip(fits, outer_folds)]
    return [np.max(s) for s in scores], test, [regs[b] for b in best]


# --------------------------------------------------------------------------- KFold
def _check_test(Xtr, Xte, yte):
    Xte = np.asarray(Xte, dtype=np.float64)
    yte = np.asarray(yte, dtype=np.int64)
    if Xte.ndim != 2 or Xte.shape[1] != Xtr.shape[1] or len(Xte) != len(yte) or len(yte) == 0:
        raise ValueError(f"test features {Xte.shape} / labels {yte.shape} do not match train {Xtr.shape}")
    return Xte, yte


def _select_and_test(Xtr, ytr, Xte, yte, n_classes, kfold, split, regs, score, agg, fast, liblinear, fit_kw):
    """C by cross-validation on train (``split``'s folds, first maximum of ``agg`` of the fold
    scores), then the model refit on all of train predicts the test rows. Returns the chosen C's
    cross-validation score, the test record (accuracy in percent, ``chosen_C``, the numbers of
    training and test rows), and the test predictions and labels."""
    Xtr, ytr = _check_xy(Xtr, ytr, n_classes, kfold)
    Xte, yte = _check_test(Xtr, Xte, yte)
    folds = list(split.split(Xtr, ytr))
    if fast:
        solver = _PathSolver(Xtr, ytr, n_classes, liblinear)
        scores, W_by_reg = _cv_path(solver, ytr, folds, regs, score, agg)
        best = int(np.argmax(scores))
        # The refit on all rows starts from the mean of the fold solutions at that C.
        Wf = solver.fit(torch.ones(len(ytr), 1, dtype=torch.float64), regs[best], W0=solver.mean(W_by_reg[best]))
        yhat = solver.predict(Wf, Xte)[:, 0]
    else:
        scores = _cv_scores_reference(Xtr, ytr, folds, regs, score, agg, fit_kw)
        best = int(np.argmax(scores))
        yhat = reference_fit(Xtr, ytr, regs[best], **fit_kw).predict(Xte)
    acc = round(100 * _acc(yhat, yte), 2)
    return float(np.max(scores)), {"acc": acc, "chosen_C": regs[best], "ndev": len(ytr), "ntest": len(yte)}, yhat, yte


def kfold_train_test(
    Xtr,
    ytr,
    Xte,
    yte,
    n_classes: int,
    kfold: int = 10,
    seed: int = 1111,
    fast: bool = True,
    f1: bool = False,
    regs=KFOLD_REGS,
    max_iter: int | None = 100,
) -> dict:
    """SentEval's KFoldClassifier (TREC, MRPC): C by k-fold CV on train, score on test."""
    split = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed)
    fit_kw = dict(seed=seed, max_iter=max_iter)
    dev, out, yhat, yte = _select_and_test(
        Xtr, ytr, Xte, yte, n_classes, kfold, split, regs, _acc, _senteval_mean, fast, False, fit_kw
    )
    out = {"devacc": dev, **out}
    if f1:
        out["f1"] = round(100 * _f1(yhat, yte), 2)
    return out


# --------------------------------------------------------------------------- skip-thoughts
def _mean(vals):
    return float(np.mean(vals))


def skipthoughts_nested_kfold(X, y, kfold: int = 10, fast: bool = True, regs=SKIPTHOUGHTS_REGS) -> dict:
    """``eval_nested_kfold`` of the skip-thoughts evaluators (MR, CR, SUBJ, MPQA).

    The rows must already be in the evaluator's order (its loader shuffles them with
    ``RandomState(1234)``, see :func:`qt_hard.evaluation.senteval.skipthoughts_order`). Outer
    ``KFold(kfold)`` *without* shuffling (its ``random_state`` has no effect then); on each outer
    training set an inner unshuffled ``KFold(kfold)`` picks C from ``2**0 .. 2**8`` by the mean
    inner accuracy (unrounded, first maximum); the model refit with that C on the outer training
    set is scored on the outer test fold; the task's accuracy is the mean over outer folds.
    Classifier: liblinear's objective (penalized intercept). Returns acc and devacc in percent.
    """
    X, y = _check_xy(X, y, 2, kfold)
    outer_folds = list(KFold(n_splits=kfold).split(X))
    inner_folds = [[(tr[itr], tr[ite]) for itr, ite in KFold(n_splits=kfold).split(tr)] for tr, _ in outer_folds]
    fit_kw = dict(seed=None, liblinear=True)
    dev, test, chosen = _nested(X, y, 2, outer_folds, inner_folds, regs, _mean, fast, True, fit_kw)
    return _nested_result(
        round(100 * float(np.mean(dev)), 2), round(100 * float(np.mean(test)), 2), test, chosen, len(y)
    )


def skipthoughts_kfold(
    Xtr,
    ytr,
    Xte,
    yte,
    n_classes: int,
    kfold: int = 10,
    fast: bool = True,
    f1: bool = False,
    shuffle_seed: int | None = None,
    regs=SKIPTHOUGHTS_REGS,
) -> dict:
    """``eval_kfold`` + the test step of the skip-thoughts ``eval_trec.py`` / ``eval_msrp.py``.

    C from ``2**0 .. 2**8`` by ``KFold(kfold)`` cross-validation on the training rows (in the
    order given): unshuffled folds for TREC (whose rows the script shuffled beforehand), and for
    MSRP (``f1=True``) ``KFold(kfold, shuffle=True, random_state=shuffle_seed)`` folds scored by
    F1 instead of accuracy; the model refit on all training rows is scored on the test rows
    (accuracy, and F1 for MSRP). liblinear's objective, one-vs-rest for TREC's six classes.
    """
    split = KFold(n_splits=kfold) if shuffle_seed is None else KFold(kfold, shuffle=True, random_state=shuffle_seed)
    score, fit_kw = (_f1 if f1 else _acc), dict(seed=None, liblinear=True)
    dev, out, yhat, yte = _select_and_test(
        Xtr, ytr, Xte, yte, n_classes, kfold, split, regs, score, _mean, fast, True, fit_kw
    )
    if not f1:
        return {"devacc": round(100 * dev, 2), **out}
    return {**out, "devf1": round(100 * dev, 2), "f1": round(100 * _f1(yhat, yte), 2)}
