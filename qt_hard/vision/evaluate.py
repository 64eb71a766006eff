"""Readouts of an image representation, the backbone's features h = f(x) (N, d), not the projection
g(f(x)), as in HCL's evaluation: the weighted kNN monitor of HCL's code (after Wu et al. 2018) and a
linear readout (HCL App. D.1); what each computes: docs/guides/images.md (Evaluation).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


@torch.no_grad()
def embed_chunks(module, fn, items, batch_size: int = 512) -> torch.Tensor:
    """``fn(items[i : i + batch_size])`` chunk by chunk with ``module`` in eval mode (its mode restored
    afterwards): the (N, d) rows in order, float32 on the CPU. ``items``: (N, 3, H, W) images."""
    was_training = module.training
    module.eval()
    try:
        out = [fn(items[i : i + batch_size]).float().cpu() for i in range(0, len(items), batch_size)]
    finally:
        module.train(was_training)
    return torch.cat(out) if out else torch.zeros(0, 0)


@torch.no_grad()
def knn_predict(
    bank: torch.Tensor,
    bank_labels: torch.Tensor,
    query: torch.Tensor,
    num_classes: int,
    k: int = 200,
    temperature: float = 0.5,
    chunk: int = 1024,
) -> torch.Tensor:
    """Weighted kNN labels (M,) of ``query`` (M, d) against ``bank`` (N, d) with labels (N,).

    Both sides are L2-normalised here; k is capped at N."""
    if bank.dim() != 2 or query.dim() != 2 or bank.shape[1] != query.shape[1]:
        raise ValueError(f"bank {tuple(bank.shape)} and query {tuple(query.shape)} must be (N, d), (M, d)")
    if bank_labels.shape != (bank.shape[0],):
        raise ValueError(f"{bank.shape[0]} bank rows but labels of shape {tuple(bank_labels.shape)}")
    if k < 1 or temperature <= 0:
        raise ValueError(f"k must be >= 1 and temperature > 0, got k={k}, temperature={temperature}")
    if bank_labels.numel() and (bank_labels.min() < 0 or bank_labels.max() >= num_classes):
        raise ValueError(f"bank labels must be in [0, {num_classes}); unlabeled images cannot be a kNN bank")
    bank = F.normalize(bank.float(), dim=1)
    query = F.normalize(query.float(), dim=1)
    k = min(k, bank.shape[0])
    preds = []
    for i in range(0, query.shape[0], chunk):
        sim = query[i : i + chunk] @ bank.T
        w, idx = sim.topk(k, dim=1)
        votes = torch.zeros(sim.shape[0], num_classes, dtype=w.dtype, device=w.device)
        votes.scatter_add_(1, bank_labels[idx], torch.exp(w / temperature))
        preds.append(votes.argmax(1))
    return torch.cat(preds)


def knn_accuracy(train_feats, train_labels, test_feats, test_labels, num_classes=None, k=200, temperature=0.5) -> float:
    """Top-1 accuracy (%) of the weighted kNN classifier (:func:`knn_predict`): ``k`` neighbours, votes
    ``exp(sim / temperature)``, ``num_classes`` from the labels when None."""
    ytr = torch.as_tensor(np.asarray(train_labels), dtype=torch.long)
    yte = torch.as_tensor(np.asarray(test_labels), dtype=torch.long)
    c = int(max(int(ytr.max()), int(yte.max())) + 1) if num_classes is None else num_classes
    pred = knn_predict(torch.as_tensor(train_feats), ytr, torch.as_tensor(test_feats), c, k, temperature)
    if pred.shape != yte.shape:
        raise ValueError(f"{pred.shape[0]} test features but {yte.shape[0]} test labels")
    return 100.0 * float((pred == yte).float().mean())


def linear_readout(train_feats, train_labels, test_feats, test_labels, num_classes: int | None = None, **train) -> dict:
    """Linear softmax readout on frozen features, standardised with the training split's mean/std, trained
    by ``linear_classifier`` with ``train`` (its epochs, lr, batch_size, seed; here 100 epochs of lr 1e-3 in
    batches of 256 unless given).

    Returns ``{"acc": top-1 % on the test split, "best_epoch", ...}`` (see ``linear_classifier``)."""
    from qt_hard.evaluation.probes import linear_classifier

    tr = np.asarray(train_feats, dtype=np.float64)
    te = np.asarray(test_feats, dtype=np.float64)
    mu, sd = tr.mean(0), tr.std(0) + 1e-6
    train = {"epochs": 100, "lr": 1e-3, "batch_size": 256, **train}
    return linear_classifier((tr - mu) / sd, train_labels, (te - mu) / sd, test_labels, num_classes, **train)
