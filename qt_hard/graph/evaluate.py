"""The graph papers' readout (InfoGraph, Sun et al. 2020, section 4.2; HCL, Robinson et al. 2021, App.
D.2; H-SCL; the OT paper): frozen graph embeddings -> nested-CV SVM accuracy, as docs/guides/graphs.md
describes. Spread over repeats (independent trainings) is computed by the caller.
"""

from __future__ import annotations

import numpy as np

C_GRID = (1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3)


def svm_accuracy(
    x: np.ndarray, y: np.ndarray, *, folds: int = 10, inner_folds: int = 5, C=C_GRID, seed: int = 0
) -> dict:
    """Nested-CV SVM accuracy of embeddings ``x`` (n, d) with labels ``y`` (n,).

    Returns ``{"svm_acc": mean over outer folds, "svm_acc_std": their std, "svm_C": chosen C per fold}``.
    """
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import SVC

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y)
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"x must be (n, d) and y (n,), got {x.shape} and {y.shape}")
    if not np.isfinite(x).all():
        raise ValueError("embeddings hold NaN or inf")
    outer = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    accs, chosen = [], []
    for train, test in outer.split(x, y):
        search = GridSearchCV(
            SVC(), {"C": list(C)}, cv=StratifiedKFold(inner_folds, shuffle=True, random_state=seed), scoring="accuracy"
        )
        search.fit(x[train], y[train])
        accs.append(float((search.predict(x[test]) == y[test]).mean()))
        chosen.append(float(search.best_params_["C"]))
    return {"svm_acc": float(np.mean(accs)), "svm_acc_std": float(np.std(accs)), "svm_C": chosen}
