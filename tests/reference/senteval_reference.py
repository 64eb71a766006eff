"""Fast path versus SentEval's own loop, on the same embeddings of real SentEval data.

The reference is the straightforward protocol of SentEval's scikit-learn path
(``senteval/tools/validation.py``): one ``LogisticRegression(C=reg, random_state=seed)`` with
scikit-learn's defaults per C per (inner) fold. Both paths see identical embeddings (encoded
once through one cache), so the printed differences are the classifier's alone.

    python tests/reference/senteval_reference.py --model random:bow --tasks CR
    python tests/reference/senteval_reference.py --model minilm --tasks MR --output /tmp/ref_mr.json

``--model hashbow:DIM`` is a fixed random bag of words defined here (mean of per-word Gaussian
vectors seeded by an md5 of the word) that needs no other part of the library.
The last line printed is the largest absolute difference (points) and the speedup.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np

from qt_hard.evaluation.models import EmbeddingCache, load_model
from qt_hard.evaluation.report import save_results
from qt_hard.evaluation.senteval import default_senteval_dir, evaluate_task, parse_tasks, task_sentences
from qt_hard.evaluation.datasets import load_task


class HashBagOfWords:
    """Fixed random bag of words: each word's vector is drawn from a generator seeded by its md5."""

    def __init__(self, dim: int):
        self.dim = dim
        self._vecs: dict[str, np.ndarray] = {}

    def _vec(self, w: str) -> np.ndarray:
        v = self._vecs.get(w)
        if v is None:
            seed = int.from_bytes(hashlib.md5(w.encode("utf-8")).digest()[:8], "little")
            v = self._vecs[w] = np.random.default_rng(seed).normal(size=self.dim)
        return v

    def encode(self, sentences, batch_size: int = 64) -> np.ndarray:
        return np.stack([np.mean([self._vec(w) for w in s.split()] or [np.zeros(self.dim)], axis=0) for s in sentences])


def encoder_projections(texts, width: int, encoder: str = "bigru", hidden: int = 1200, seed: int = 0) -> np.ndarray:
    """(len(texts), width) Gaussian random projections of a fixed model's features, the
    wide-evaluation benchmarks' second kind of embedding (random projections of a fixed model's
    features, correlated as sentence embeddings are): an untrained, seeded Quick-Thoughts encoder pair at S2V's sizes
    (300-d words; ``encoder`` "gru": 1,200-d f and g, 2,400-d; "bigru": 4,800-d, the
    bidirectional model), vocabulary from ``texts``, its features times one seeded Gaussian matrix
    of which width ``d`` takes the first ``d`` columns (so the widths are one model, full rank up
    to the model's width), scaled by one factor so that the mean squared row norm equals
    :class:`HashBagOfWords`'s at the model's width, hence about equal at every width (both grow
    linearly with it; the same C then regularizes both kinds about equally). Unlike a bag of words, whose rows that share no word are
    nearly orthogonal, an encoder's features are correlated, as sentence embeddings are."""
    import torch

    from qt_hard.encoders import random_encoder

    full = hidden * (4 if encoder == "bigru" else 2)
    if width > full:
        raise ValueError(f"{encoder} features are {full}-d; width {width} would not be full rank")
    uniq = list(dict.fromkeys(texts))
    enc = random_encoder(
        {"model": {"kind": "qt", "encoder": encoder, "embed_dim": 300, "hidden_dim": hidden}}, uniq, seed=seed
    )
    with torch.no_grad():
        F = np.asarray(enc.encode(uniq, batch_size=256), dtype=np.float64)
    # The whole (full, full) matrix is drawn whatever the width, so width d is always its first d
    # columns, and the scale is fixed at the full width: one model for every call.
    P = F @ (np.random.default_rng(seed).standard_normal((full, full)) / np.sqrt(full))
    index = {t: i for i, t in enumerate(uniq)}
    rows = [index[t] for t in texts]
    target = (HashBagOfWords(full).encode(uniq)[rows] ** 2).sum(axis=1).mean()
    P *= np.sqrt(target / (P[rows] ** 2).sum(axis=1).mean())
    return P[rows, :width]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="hashbow:300")
    ap.add_argument("--tasks", default="CR")
    ap.add_argument("--data", default=None)
    ap.add_argument("--kfold", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1111)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)

    tasks = parse_tasks(args.tasks)
    data_dir = args.data or default_senteval_dir()
    if args.model.startswith("hashbow:"):
        encoder = HashBagOfWords(int(args.model.split(":", 1)[1]))
    else:
        encoder = load_model(args.model, sentences=lambda: task_sentences(tasks, data_dir))
    cache = EmbeddingCache(encoder)
    report = {"model": args.model, "kfold": args.kfold, "seed": args.seed, "tasks": {}}
    worst, t_fast, t_ref = 0.0, 0.0, 0.0
    for name in tasks:
        task = load_task(name, data_dir)
        fast = evaluate_task(task, cache, kfold=args.kfold, seed=args.seed, fast=True)
        ref = evaluate_task(task, cache, kfold=args.kfold, seed=args.seed, fast=False)
        keys = [k for k in ("acc", "devacc", "f1") if k in fast]
        diff = {k: round(fast[k] - ref[k], 2) for k in keys}
        worst = max([worst] + [abs(v) for v in diff.values()])
        t_fast += fast["classify_seconds"]
        t_ref += ref["classify_seconds"]
        report["tasks"][name] = {
            "fast": fast,
            "reference": ref,
            "difference": diff,
            "speedup": round(ref["classify_seconds"] / max(fast["classify_seconds"], 1e-9), 2),
        }
        print(
            f"{name}: fast "
            + " ".join(f"{k} {fast[k]:.2f}" for k in keys)
            + f" ({fast['classify_seconds']:.1f}s) | reference "
            + " ".join(f"{k} {ref[k]:.2f}" for k in keys)
            + f" ({ref['classify_seconds']:.1f}s) | C fast {fast['chosen_C']} ref {ref['chosen_C']}",
            flush=True,
        )
    report["max_abs_difference"] = worst
    report["speedup"] = round(t_ref / max(t_fast, 1e-9), 2)
    if args.output:
        save_results(args.output, {"kind": "reference_check", "results": report})
    print(json.dumps({k: report[k] for k in ("model", "max_abs_difference", "speedup")}))
    print(f"max |fast - reference| = {worst:.2f} points; classifier speedup {report['speedup']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
