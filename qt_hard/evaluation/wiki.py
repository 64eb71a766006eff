"""Wiki-N evaluation: mean classifier and trained linear classifier on frozen embeddings.

Ash, Goel, Krishnamurthy, Misra (AISTATS 2022), section 3 and Appendix D.1:

* mean classifier: ``mu_c`` = mean of f(x) over the training sentences of article c; a test
  sentence x' gets ``argmax_c f(x') . mu_c`` (Sec. 3, "loss of the mean classifier"; D.1).
* linear classifier: ``W`` (d x N, no bias, as in D.1's loss ``-log softmax(W^T f(x))_c``)
  trained with Adam (lr 0.01) on mini-batches of the whole training set for a fixed number of
  epochs (50 in their Table 1); after every epoch the classifier is saved with the epoch's
  aggregate training loss, and the one with the smallest aggregate loss is reported.

Both report top-1 accuracy (in %) on the test sentences.

Data comes from ``qt_hard.data.wiki.load_wiki(dir, classes=N)`` when that loader exists; otherwise
:func:`read_wiki_dir` reads the simple layout "one file per article, one sentence per line" and
splits each article 80/20 at random (D.1/Sec. 5: 80% of each article's sentences for training).

Shapes: train_emb (n, d), train_labels (n,) in [0, N), test_emb (m, d), test_labels (m,).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

__all__ = ["WikiSplit", "read_wiki_dir", "load_wiki_data", "mean_classifier", "linear_classifier", "run_wiki"]


@dataclass
class WikiSplit:
    train_sentences: list[str]
    train_labels: np.ndarray
    test_sentences: list[str]
    test_labels: np.ndarray


def read_wiki_dir(path, classes: int, test_fraction: float = 0.2, seed: int = 0) -> WikiSplit:
    """The first ``classes`` article files of ``path`` (sorted by name), one sentence per line;
    each article's sentences split at random into train (1 - test_fraction) and test."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"Wiki folder {path} does not exist")
    skip = re.compile(r"^(?:\..*|index\.tsv|readme.*|source.*|.*\.json)$", re.IGNORECASE)
    # label order = natural sort of the file names ("2" before "10"), as qt_hard.data.wiki does
    files = sorted((p for p in path.iterdir() if p.is_file() and not skip.match(p.name)),
                   key=lambda p: [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", p.name)])
    if classes < 2:
        raise ValueError(f"classes must be at least 2, got {classes}")
    if len(files) < classes:
        raise ValueError(f"{path} has {len(files)} article files, fewer than classes={classes}")
    rng = np.random.default_rng(seed)
    tr_s, tr_y, te_s, te_y = [], [], [], []
    for c, f in enumerate(files[:classes]):
        sents = [s.strip() for s in f.read_text(encoding="utf-8").splitlines() if s.strip()]
        if len(sents) < 2:
            raise ValueError(f"article {f} has {len(sents)} sentences; need at least 2 to split")
        order = rng.permutation(len(sents))
        n_test = min(len(sents) - 1, max(1, int(round(test_fraction * len(sents)))))
        for j, i in enumerate(order):
            (te_s if j < n_test else tr_s).append(sents[i])
            (te_y if j < n_test else tr_y).append(c)
    return WikiSplit(tr_s, np.array(tr_y), te_s, np.array(te_y))


def load_wiki_data(path, classes: int, seed: int = 0) -> WikiSplit:
    """Use ``qt_hard.data.wiki.load_wiki`` when present, else :func:`read_wiki_dir`."""
    try:
        from qt_hard.data.wiki import load_wiki
    except ModuleNotFoundError as err:
        if err.name not in ("qt_hard.data.wiki",):
            raise
        return read_wiki_dir(path, classes, seed=seed)
    data = load_wiki(path, classes=classes, seed=seed)
    return WikiSplit(list(data.train_sentences), np.asarray(data.train_labels),
                     list(data.test_sentences), np.asarray(data.test_labels))


def _check(train_emb, train_labels, test_emb, test_labels):
    train_emb = np.asarray(train_emb, dtype=np.float64)
    test_emb = np.asarray(test_emb, dtype=np.float64)
    train_labels = np.asarray(train_labels, dtype=np.int64)
    test_labels = np.asarray(test_labels, dtype=np.int64)
    if train_emb.ndim != 2 or len(train_emb) != len(train_labels) or len(train_emb) == 0:
        raise ValueError(f"train embeddings {train_emb.shape} / labels {train_labels.shape} mismatch or empty")
    if test_emb.ndim != 2 or test_emb.shape[1] != train_emb.shape[1] or len(test_emb) != len(test_labels):
        raise ValueError(f"test embeddings {test_emb.shape} / labels {test_labels.shape} do not match train")
    return train_emb, train_labels, test_emb, test_labels


def mean_classifier(train_emb, train_labels, test_emb, test_labels, n_classes: int | None = None,
                    device: str | torch.device = "cpu") -> dict:
    """Top-1 accuracy (%) of argmax_c f(x) . mu_c (Ash et al. Sec. 3, D.1), in float64 on
    ``device`` (a GPU for Wiki-3029: the (m, d) x (d, N) product is 0.3 TFLOP)."""
    Xtr, ytr, Xte, yte = _check(train_emb, train_labels, test_emb, test_labels)
    N = int(max(ytr.max(), yte.max())) + 1 if n_classes is None else n_classes
    counts = np.bincount(ytr, minlength=N)
    if (counts == 0).any():
        raise ValueError(f"classes {np.flatnonzero(counts == 0).tolist()} have no training sentence")
    dev = torch.device(device)
    mu = torch.zeros((N, Xtr.shape[1]), dtype=torch.float64, device=dev)
    mu.index_add_(0, torch.as_tensor(ytr, device=dev), torch.as_tensor(Xtr, device=dev))
    mu /= torch.as_tensor(counts, dtype=torch.float64, device=dev)[:, None]
    pred = (torch.as_tensor(Xte, device=dev) @ mu.T).argmax(dim=1).cpu().numpy()
    return {"acc": round(100.0 * float(np.mean(pred == yte)), 2), "n_train": len(ytr), "n_test": len(yte)}


def linear_classifier(train_emb, train_labels, test_emb, test_labels, n_classes: int | None = None,
                      epochs: int = 50, lr: float = 0.01, batch_size: int = 1000, seed: int = 0,
                      threads: int | None = None, device: str | torch.device = "cpu") -> dict:
    """Top-1 accuracy (%) of a linear softmax classifier trained with Adam (Ash et al. D.1).

    Keeps the epoch whose aggregate (summed over its mini-batches) training loss is smallest.
    ``threads``: torch threads (default: the evaluation solver's, 1 unless QT_HARD_EVAL_THREADS).
    ``device``: where the classifier trains (a GPU for Wiki-3029: n x d x N per epoch); the
    mini-batch order and the initial weights are drawn on the CPU, so they do not depend on it.
    """
    from .logreg import DEFAULT_THREADS, torch_threads

    with torch_threads(DEFAULT_THREADS if threads is None else threads):
        return _train_linear(train_emb, train_labels, test_emb, test_labels, n_classes, epochs, lr,
                             batch_size, seed, torch.device(device))


def _train_linear(train_emb, train_labels, test_emb, test_labels, n_classes, epochs, lr,
                  batch_size, seed, device) -> dict:
    Xtr, ytr, Xte, yte = _check(train_emb, train_labels, test_emb, test_labels)
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    N = int(max(ytr.max(), yte.max())) + 1 if n_classes is None else n_classes
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
            idx = perm[i:i + batch_size]
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
    return {"acc": round(100.0 * float(np.mean(pred == yte)), 2), "best_epoch": best_epoch + 1,
            "best_train_loss": best_loss / len(y), "epochs": epochs,
            "train_loss_per_epoch": [h / len(y) for h in history]}


def run_wiki(encoder, data: WikiSplit, classes: int, epochs: int = 50, lr: float = 0.01,
             batch_size: int = 1000, seed: int = 0, cache=None) -> dict:
    """Embed a Wiki-N split and report both classifiers; ``cache`` an :class:`EmbeddingCache`."""
    from .models import EmbeddingCache

    cache = cache if cache is not None else EmbeddingCache(encoder)
    t0 = time.perf_counter()
    tr = cache.embed(data.train_sentences)
    te = cache.embed(data.test_sentences)
    enc = time.perf_counter() - t0
    t1 = time.perf_counter()
    mc = mean_classifier(tr, data.train_labels, te, data.test_labels, classes)
    t2 = time.perf_counter()
    lin = linear_classifier(tr, data.train_labels, te, data.test_labels, classes, epochs=epochs,
                            lr=lr, batch_size=batch_size, seed=seed)
    t3 = time.perf_counter()
    mc["seconds"] = round(t2 - t1, 3)
    lin["seconds"] = round(t3 - t2, 3)
    return {"classes": classes, "encode_seconds": round(enc, 3), "mean_classifier": mc, "linear": lin}
