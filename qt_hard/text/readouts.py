"""Readouts of a pair-data run (Wiki-N, synthetic) on its own held-out split: the pipeline's
``evaluate`` when ``eval.readouts`` is on (``qt_hard.text.pipeline``).

Ash et al. (AISTATS 2022), App. D.1: embed every training and held-out sentence with the trained
encoder, then

* ``mean_acc``: the mean classifier, argmax_c f(x) . mu_c with mu_c the mean training embedding
  of class c (``qt_hard.evaluation.wiki.mean_classifier``);
* ``linear_acc``: a linear softmax classifier trained ``eval.linear_epochs`` epochs with Adam on the
  training embeddings, the epoch of the smallest training loss kept (``linear_classifier``).

Collision diagnostics (``eval.diagnostics``; the other meanings of "diagnostics": ``qt_hard.diagnostics``),
of how collisions act on the loss:

* ``mean_cos_acc``: the mean classifier on L2-normalized embeddings (the paper's reads the norms too);
* ``test_norm_mean`` / ``test_norm_cv``: the held-out embeddings' norms, their mean and spread
  (standard deviation over mean, population form);
* ``same_class_share`` / ``same_class_mass``: over the first batch of the run (B pairs, both
  views, 2B embeddings), the fraction of an anchor's 2(B-1) candidates that share its class,
  and the share of the softmax mass e^{s/t} over those candidates that they hold, averaged
  over anchors.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from qt_hard.text.batches import single_view


def embed_rows(module: torch.nn.Module, batcher, n, device, chunk: int = 8192) -> np.ndarray:
    """(n, d) float32 embeddings of the batcher's sentences 0..n-1 (or of the rows ``n``, an array),
    ``chunk`` at a time."""
    rows = np.arange(n) if np.isscalar(n) else np.asarray(n)
    out = []
    with torch.no_grad():
        for start in range(0, len(rows), chunk):
            batch = batcher.batch(rows[start : start + chunk])
            batch = {k: v.to(device) for k, v in batch.items()}
            out.append(single_view(module, batch).float().cpu())
    return torch.cat(out).numpy()


def collision_mass(z_a: torch.Tensor, z_b: torch.Tensor, labels: torch.Tensor, temperature: float) -> dict:
    """``same_class_share`` and ``same_class_mass`` of one batch of pairs (module doc): z_a, z_b
    (B, d) the two views, labels (B,) the pairs' classes."""
    z = torch.cat([z_a, z_b]).double()
    y = labels.repeat(2)
    n = len(y)
    idx = torch.arange(n, device=z.device)
    cand = torch.ones(n, n, dtype=torch.bool, device=z.device)
    cand[idx, idx] = False
    cand[idx, (idx + n // 2) % n] = False  # the anchor's positive (its other view)
    same = (y[:, None] == y[None, :]) & cand
    logits = (z @ z.T / temperature).masked_fill(~cand, float("-inf"))
    p = torch.softmax(logits, dim=1)
    return {
        "same_class_share": round(float(same.sum(1).double().mean() / cand.sum(1).double().mean()), 6),
        "same_class_mass": round(float((p * same).sum(1).mean()), 6),
    }


def make_readouts(cfg, split, task):
    """``evaluate(module, step) -> dict`` over ``split`` (``qt_hard.text.build.Split``); ``task``
    gives the first batch for the diagnostics. The global RNG is left as it was found (the linear
    classifier seeds its own initialization)."""
    from qt_hard.evaluation.wiki import linear_classifier, mean_classifier

    e = cfg.eval

    def evaluate(module: torch.nn.Module, step: int) -> dict:
        t0 = time.perf_counter()
        device = next(module.parameters()).device
        if split.test.device != device:
            split.test.to(device)
        was_training = module.training
        module.eval()
        forked = [device] if device.type == "cuda" else []
        try:
            with torch.random.fork_rng(devices=forked):
                train_emb = embed_rows(module, split.train, len(split.train_labels), device)
                test_emb = embed_rows(module, split.test, len(split.test_labels), device)
                C = split.num_classes
                mc = mean_classifier(train_emb, split.train_labels, test_emb, split.test_labels, C, device=device)
                lin = linear_classifier(
                    train_emb,
                    split.train_labels,
                    test_emb,
                    split.test_labels,
                    C,
                    epochs=e.linear_epochs,
                    lr=e.linear_lr,
                    batch_size=e.linear_batch,
                    seed=cfg.train.seed,
                    threads=torch.get_num_threads(),
                    device=device,
                )
                out = {
                    "mean_acc": mc["acc"],
                    "linear_acc": lin["acc"],
                    "linear_best_epoch": lin["best_epoch"],
                    "n_train": len(split.train_labels),
                    "n_test": len(split.test_labels),
                }
                tables = [m for m in module.modules() if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))]
                if tables:  # a word model: its vocabulary size
                    out["vocab_size"] = tables[0].num_embeddings
                if e.diagnostics:
                    out.update(
                        _collision_diagnostics(
                            module, split, task, train_emb, test_emb, cfg.objective.temperature, device
                        )
                    )
        finally:
            module.train(was_training)
        out["eval_s"] = round(time.perf_counter() - t0, 3)
        return out

    return evaluate


def _collision_diagnostics(module, split, task, train_emb, test_emb, temperature: float, device) -> dict:
    from qt_hard.evaluation.wiki import mean_classifier

    def unit(x):
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    cos = mean_classifier(
        unit(train_emb), split.train_labels, unit(test_emb), split.test_labels, split.num_classes, device=device
    )
    norms = np.linalg.norm(test_emb.astype(np.float64), axis=1)
    rows = task.global_rows(0)
    views = [torch.from_numpy(embed_rows(module, split.train, rows[:, i], device)).to(device) for i in (0, 1)]
    labels = torch.as_tensor(split.train_labels[rows[:, 0]], device=device)
    return {
        "mean_cos_acc": cos["acc"],
        "test_norm_mean": round(float(norms.mean()), 4),
        "test_norm_cv": round(float(norms.std() / max(norms.mean(), 1e-12)), 4),
        **collision_mass(views[0], views[1], labels, temperature),
    }
