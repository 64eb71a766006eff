"""Probes of frozen embeddings: the mean classifier and a trained linear classifier.

Ash, Goel, Krishnamurthy, Misra (AISTATS 2022), section 3 and Appendix D.1:

* mean classifier: ``mu_c`` = mean of f(x) over the training examples of class c; a test
  example x' gets ``argmax_c f(x') . mu_c`` (Sec. 3, "loss of the mean classifier"; D.1).
* linear classifier: ``W`` (d x N, no bias, as in D.1's loss ``-log softmax(W^T f(x))_c``)
  trained with Adam on mini-batches of the whole training set for a fixed number of epochs (50,
  lr 0.01 in their Table 1); after every epoch the classifier is saved with the epoch's aggregate
  training loss, and the one with the smallest aggregate loss is reported (the test split chooses
  nothing). The same classifier is HCL's linear readout of image features (Robinson et al. 2021,
  App. D.1), see ``qt_hard.vision.evaluate``.

Both report top-1 accuracy (in %) on the test examples; nothing here knows where the embeddings
came from (Wiki-N sentences, images, graphs).

Shapes: train_emb (n, d), train_labels (n,) in [0, N), test_emb (m, d), test_labels (m,).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["linear_classifier", "mean_classifier"]


def _check(train_emb, train_labels, test_emb, test_labels, n_classes: int | None):
    """The embeddings as float64 and the labels as int64 arrays, checked, and the number of classes
    (``n_classes``, or one more than the largest label)."""
    train_emb = np.asarray(train_emb, dtype=np.float64)
    test_emb = np.asarray(test_emb, dtype=np.float64)
    train_labels = np.asarray(train_labels, dtype=np.int64)
    test_labels = np.asarray(test_labels, dtype=np.int64)
    if train_emb.ndim != 2 or len(train_emb) != len(train_labels) or len(train_emb) == 0:
        raise ValueError(f"train embeddings {train_emb.shape} / labels {train_labels.shape} mismatch or empty")
    if test_emb.ndim != 2 or test_emb.shape[1] != train_emb.shape[1] or len(test_emb) != len(test_labels):
        raise ValueError(f"test embeddings {test_emb.shape} / labels {test_labels.shape} do not match train")
    N = int(max(train_labels.max(), test_labels.max())) + 1 if n_classes is None else n_classes
    return train_emb, train_labels, test_emb, test_labels, N


def mean_classifier(
    train_emb, train_labels, test_emb, test_labels, n_classes: int | None = None, device: str | torch.device = "cpu"
) -> dict:
    """Top-1 accuracy (%) of argmax_c f(x) . mu_c (Ash et al. Sec. 3, D.1), in float64 on
    ``device`` (a GPU for many classes: Wiki-3029's (m, d) x (d, N) product is 0.3 TFLOP)."""
    Xtr, ytr, Xte, yte, N = _check(train_emb, train_labels, test_emb, test_labels, n_classes)
    counts = np.bincount(ytr, minlength=N)
    if (counts == 0).any():
        raise ValueError(f"classes {np.flatnonzero(counts == 0).tolist()} have no training sentence")
    dev = torch.device(device)
    mu = torch.zeros((N, Xtr.shape[1]), dtype=torch.float64, device=dev)
    mu.index_add_(0, torch.as_tensor(ytr, device=dev), torch.as_tensor(Xtr, device=dev))
    mu /= torch.as_tensor(counts, dtype=torch.float64, device=dev)[:, None]
    pred = (torch.as_tensor(Xte, device=dev) @ mu.T).argmax(dim=1).cpu().numpy()
    return {"acc": round(100.0 * float(np.mean(pred == yte)), 2), "n_train": len(ytr), "n_test": len(yte)}


def linear_classifier(
    train_emb,
    train_labels,
    test_emb,
    test_labels,
    n_classes: int | None = None,
    epochs: int = 50,
    lr: float = 0.01,
    batch_size: int = 1000,
    seed: int = 0,
    threads: int | None = None,
    device: str | torch.device = "cpu",
) -> dict:
    """Top-1 accuracy (%) of a linear softmax classifier trained with Adam (Ash et al. D.1).

    Keeps the epoch whose aggregate (summed over its mini-batches) training loss is smallest.
    ``threads``: torch threads (default: the evaluation solver's, 1 unless QT_HARD_EVAL_THREADS).
    ``device``: where the classifier trains (a GPU for many classes: n x d x N per epoch); the
    mini-batch order and the initial weights are drawn on the CPU, so they do not depend on it.
    """
    from .logreg import DEFAULT_THREADS, torch_threads

    checked = _check(train_emb, train_labels, test_emb, test_labels, n_classes)
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    with torch_threads(DEFAULT_THREADS if threads is None else threads):
        return _train_linear(*checked, epochs, lr, batch_size, seed, torch.device(device))


def _train_linear(Xtr, ytr, Xte, yte, N, epochs, lr, batch_size, seed, device) -> dict:
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # default PyTorch initialization of the layer, reproducibly
    layer = torch.nn.Linear(Xtr.shape[1], N, bias=False).to(device)
    opt = torch.optim.Adam(layer.parameters(), lr=lr)
    X = torch.as_tensor(Xtr, dtype=torch.float32, device=device)
    y = torch.as_tensor(ytr, device=device)
    best_loss, best_state, best_epoch = float("inf"), None, -1
    history = []
    for epoch in range(epochs):
        perm = torch.randperm(len(y), generator=gen).to(device)
        # Summed on the device and read once per epoch: a .item() per batch stalls a GPU.
        total_t = torch.zeros((), dtype=torch.float64, device=device)
        for i in range(0, len(y), batch_size):
            idx = perm[i : i + batch_size]
            loss = torch.nn.functional.cross_entropy(layer(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total_t += loss.detach().double() * len(idx)
        total = float(total_t)
        history.append(total)
        if total < best_loss:
            best_loss, best_epoch = total, epoch
            best_state = layer.weight.detach().clone()
    with torch.no_grad():
        pred = (torch.as_tensor(Xte, dtype=torch.float32, device=device) @ best_state.T).argmax(dim=1).cpu().numpy()
    return {
        "acc": round(100.0 * float(np.mean(pred == yte)), 2),
        "best_epoch": best_epoch + 1,
        "best_train_loss": best_loss / len(y),
        "epochs": epochs,
        "train_loss_per_epoch": [h / len(y) for h in history],
    }
