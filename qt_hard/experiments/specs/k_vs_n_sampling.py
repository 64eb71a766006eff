"""What plain, collision-free and shuffled-control sampling hand the loss on Wiki-N's real batches
(Ash et al., AISTATS 2022, section 5, Fig. 3 right; App. D.1's loss), on the batches of the k-versus-N
grid's cells (:func:`measure_grid`; its command is ``scripts/k_vs_n_sampling.py``).

For the batches a k-versus-N cell of the grid trains on (``data.classes: N``, B pairs, the pairs of
``train.seed`` every epoch, the shuffled control's label permutation of (seed, step)), it draws
each batch's k negatives per anchor out of the 2(B-1) candidates three ways, from one generator
state each (the training loop's seeding), and reports per k the ``candidates`` each mode may draw
from, the count ``drawn`` and whether the three modes' random streams stay ``paired``
(:func:`measure_sampling`; what they mean and what they found: docs/reproductions/k-vs-n.md, "What
else differs between the two samplings").

    python scripts/k_vs_n_sampling.py configs/k_vs_n.yaml --cache runs/k_vs_n/cache --N 1000 --k 100,1000 --steps 80

Prints one JSON object (:func:`measure`) and a one-line summary per k (:func:`summary`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qt_hard.errors import ArgumentError

__all__ = ["MODES", "measure", "measure_grid", "measure_sampling", "summary"]

MODES = ("plain", "collision_free", "shuffled")


def _scores(labels):
    """The scores of a batch with these ``labels`` (all zero: the draw depends on the labels alone)."""
    import torch

    from qt_hard.negatives.scores import two_view_scores

    z = torch.zeros(len(labels), 1)
    return two_view_scores(z, z, temperature=1.0, labels=labels, normalize=False)


def measure_sampling(labels: np.ndarray, tasks: dict, k: int, steps: int, seed: int) -> dict:
    """Over ``steps`` steps: ``candidates``, per anchor, how many candidates each mode may draw from
    (2(B-1) plain; fewer without collisions or in the control) and the same-article ones among them;
    ``drawn``, whether k enter the loss per anchor in every mode and, plain, the mean number of
    same-article ones drawn and the share of anchors that draw at least one; ``paired``, whether the
    three modes consume the generator alike (the state after every step the same) and the share of
    anchors whose collision-free draw is the plain draw with exactly its same-article candidates
    replaced (``tests/test_negatives_properties.py``)."""
    import torch  # here, not at the top: the grid command imports every spec module to find its experiments

    from qt_hard.negatives.strategy import NegativeStrategy

    gens = {m: torch.Generator().manual_seed(seed * 1009 + 17) for m in MODES}  # the loop's seeding
    strategies = {m: NegativeStrategy(k=k, collision_free=m != "plain", include_positive=False) for m in MODES}
    allowed = {m: [] for m in MODES}
    same_cands, drawn_same, any_same, drawn_n, replaced_only, states_equal = [], [], [], [], [], []
    for step in range(steps):
        own = torch.from_numpy(labels[tasks[False].label_rows(step)])
        shuffled = torch.from_numpy(labels[tasks[True].label_rows(step)])
        scores = {"plain": _scores(own), "collision_free": _scores(own), "shuffled": _scores(shuffled)}
        drawn = {}
        for m in MODES:
            drawn[m] = strategies[m].candidate_mask(scores[m], gens[m])
            allowed[m].append(float(strategies[m]._allowed(scores[m]).sum(1).double().mean()))
            drawn_n.append(int(drawn[m].sum(1).min()) == k == int(drawn[m].sum(1).max()))
        same = scores["plain"].same_label() & scores["plain"].neg_valid
        same_cands.append(float(same.sum(1).double().mean()))
        hits = (drawn["plain"] & same).sum(1)
        drawn_same.append(float(hits.double().mean()))
        any_same.append(float((hits > 0).double().mean()))
        # Collision-free = the plain draw less its same-article candidates, plus as many others.
        kept = (drawn["plain"] & drawn["collision_free"]).sum(1)
        replaced_only.append(float((kept == k - hits).double().mean()))
        states = [gens[m].get_state() for m in MODES]
        states_equal.append(all(torch.equal(states[0], s) for s in states[1:]))
    return {
        "k": k,
        "steps": steps,
        "candidates": {m: round(float(np.mean(allowed[m])), 3) for m in MODES}
        | {"same_article": round(float(np.mean(same_cands)), 3)},
        "drawn": {
            "k_in_every_mode": bool(all(drawn_n)),
            "same_article_per_anchor": round(float(np.mean(drawn_same)), 4),
            "anchors_with_one": round(float(np.mean(any_same)), 4),
        },
        "paired": {
            "generator_states_equal_every_step": bool(all(states_equal)),
            "anchors_replaced_only": round(float(np.mean(replaced_only)), 6),
        },
    }


def measure(wiki: Path, tokens: Path, spec, N: int, B: int, ks: list[int], steps: int, seed: int) -> dict:
    """The measurement of every k in ``ks`` (:func:`measure_sampling`) on the batches of B pairs of
    Wiki-N's training split (the Wiki folder ``wiki``, its tokens cached in ``tokens``, the grid's data
    settings ``spec``; the plain and shuffled label rows of ``PairTask``): the JSON object of
    ``results/k_vs_n/sampling_1000.json``."""
    from qt_hard.data.wiki import wiki_prefix
    from qt_hard.text.batches import PairTask

    wd = wiki_prefix(
        wiki,
        N,
        min_count=spec.min_count,
        seed=spec.split_seed,
        cache_dir=tokens,
        vocab_classes=spec.vocab_articles,
    )
    labels = np.asarray(wd.train_labels, dtype=np.int64)

    def pairs(epoch):
        return wd.positive_pair_indices(epoch, seed)[:, :2]

    tasks = {s: PairTask(None, labels, pairs, B, seed, shuffle_labels=s) for s in (False, True)}
    return {"N": N, "B": B, "seed": seed, "sampling": [measure_sampling(labels, tasks, k, steps, seed) for k in ks]}


def measure_grid(grid: Path, cache: Path, N: int, B: int, ks: list[int], steps: int) -> dict:
    """:func:`measure` on the batches of the cells (N, k, B), each k of ``ks``, of the grid YAML ``grid``
    (its data, its first seed), on the Wiki-N caches of ``cache`` built first where missing
    (:func:`~.k_vs_n_grid.prepare`); an ``ArgumentError`` where the grid's data is not Wiki-N or a
    (N, k, B) is none of its cells."""
    from .k_vs_n_grid import expand, load_grid, prepare, token_cache, wiki_dir

    spec = load_grid(grid)
    if spec.data.kind != "wiki":
        raise ArgumentError(f"the sampling is measured on Wiki-N's batches; the grid's data.kind is {spec.data.kind}")
    if steps < 1:
        raise ArgumentError(f"--steps {steps}: give at least 1")
    cells = expand(spec)[0]
    for k in ks:
        if (N, k, B) not in {(c.N, c.k, c.B) for c in cells}:
            raise ArgumentError(f"N={N} k={k} B={B} is not a cell of the grid {grid}")
    prepare(spec.data, [c.N for c in cells], cache)
    return measure(wiki_dir(cache, spec.data), token_cache(cache), spec.data, N, B, ks, steps, spec.seeds[0])


def summary(out: dict) -> list[str]:
    """One line per k of a :func:`measure` object."""
    return [
        f"N={out['N']} k={s['k']}: {s['drawn']['same_article_per_anchor']} same-article drawn per anchor "
        f"({s['drawn']['anchors_with_one']:.1%} of anchors), k drawn in every mode: "
        f"{s['drawn']['k_in_every_mode']}, streams paired: {s['paired']['generator_states_equal_every_step']}, "
        f"anchors differing only by the replaced ones: {s['paired']['anchors_replaced_only']:.4%}"
        for s in out["sampling"]
    ]
