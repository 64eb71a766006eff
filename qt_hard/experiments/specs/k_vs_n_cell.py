"""One k-versus-N cell (:mod:`.k_vs_n`): the Wiki-N folder and its tokenization, built once before the
cells (:func:`prepare`), the cell's config, App. D.1's bag of words on Wiki-N or the synthetic corpus
(:func:`cell_tree`), its run through the library's loop (:func:`run_cell`) and its readouts
(:func:`cell_metrics`)."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from qt_hard.experiments.runner import read_eval, read_metrics, train_run

from .k_vs_n_grid import SHUFFLED, Point, DataSpec, Grid, data_settings

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Wiki-N: the folder and its tokenization (the only step that tokenizes)


def wiki_dir(cache: Path, spec: DataSpec) -> Path:
    """The Wiki folder built for ``spec``; a given ``source`` adds its identity (path, size, time) to
    the name, so that another dump never reuses an old build (the default dump keeps the plain name
    its caches were made under)."""
    if spec.source:
        from qt_hard.files import file_key

        return cache / f"wiki_{spec.articles}_{spec.min_sentences}_{file_key(spec.source)}"
    return cache / f"wiki_{spec.articles}_{spec.min_sentences}"


def token_cache(cache: Path) -> Path:
    return cache / "tokens"


def prepared_marker(cache: Path, spec: DataSpec) -> Path:
    # The vocabulary is made per cell from the tokens: it does not change what prepare writes.
    key = hashlib.sha1(
        json.dumps(data_settings(replace(spec, vocab_articles=None)), sort_keys=True).encode()
    ).hexdigest()[:10]
    return cache / f"prepared_{spec.kind}_{key}.json"


def prepare(spec: DataSpec, Ns, cache: Path) -> Path:
    """Build the Wiki folder and tokenize all of it once (kind wiki, :func:`qt_hard.data.wiki.prepare_wiki`);
    every cell's Wiki-N is then a prefix of those tokens with its own split and vocabulary. The
    synthetic corpus is made by the library from the grid's settings and needs nothing here.
    Returns the marker file that says the cache is ready (other processes wait for it)."""
    if spec.kind == "wiki" and not spec.source and not wiki_dir(cache, spec).exists():
        from qt_hard.paths import data_path

        data_path("wikipedia")  # a missing dump is refused before the cache folder is made
    cache.mkdir(parents=True, exist_ok=True)
    marker = prepared_marker(cache, spec)
    if marker.exists():
        return marker
    if spec.kind == "wiki":
        from qt_hard.data.wiki import prepare_wiki

        prepare_wiki(wiki_dir(cache, spec), token_cache(cache), spec.articles, spec.min_sentences, max(Ns), spec.source)
    from qt_hard.files import write_text

    return write_text(marker, json.dumps({"data": asdict(spec), "Ns": sorted(set(Ns))}), "prepared marker")


# --------------------------------------------------------------------------------------------
# one cell: a run of the library's training loop


def cell_tree(grid: Grid, cell: Point, cache: Path, out: Path, threads: int = 1, checkpoint_every: int = 0) -> dict:
    """The ``qt-hard train`` config of a cell (pipeline text): the bag of words of D.1 on Wiki-N
    (``data.classes: N`` of the prepared Wiki folder) or on the synthetic corpus, App. D.1's
    loss (uniform negatives, k of the 2(B-1) candidates, two-sided, no positive in the
    denominator), collision-free as ``objective.collision_free`` and its shuffled control as
    ``data.shuffle_labels``, the readouts as the pipeline's evaluation (``eval.readouts``)."""
    d, t = grid.data, grid.train
    if d.kind == "wiki":
        data = {
            "kind": "wiki",
            "path": str(wiki_dir(cache, d)),
            "classes": cell.N,
            "token_cache": str(token_cache(cache)),
        }
        if d.vocab_articles is not None:
            data["vocab_classes"] = d.vocab_articles
    else:
        data = {
            "kind": "synthetic",
            "num_classes": cell.N,
            "sentences_per_class": d.sentences_per_class,
            "vocab_size": d.vocab_size,
            "min_length": 5,
            "max_length": 15,
        }
    data.update(min_count=d.min_count, seed=d.split_seed, shuffle_labels=cell.collision_free == SHUFFLED)
    return {
        "out_dir": str(out),
        "model": {"kind": "bow", "dim": t.dim, "max_len": d.max_len},
        "data": data,
        "objective": {
            "negatives": "uniform",
            "temperature": t.temperature,
            "k": cell.k,
            "normalize": False,
            "include_positive": False,
            "collision_free": cell.collision_free is not False,
        },
        "eval": {"readouts": True, "linear_epochs": t.linear_epochs, "linear_lr": t.lr, "linear_batch": t.linear_batch},
        # log_every 1: the reported loss is the mean over the last epoch's steps (metrics.csv).
        "train": {
            "batch_size": cell.B,
            "epochs": t.epochs,
            "lr": t.lr,
            "grad_clip": t.grad_clip,
            "optimizer": t.optimizer,
            "seed": cell.seed,
            "log_every": 1,
            "trackers": ["csv"],
            "progress": False,
            "num_threads": threads,
            "checkpoint_every": checkpoint_every,
            "keep_checkpoints": 1,
        },
    }


def run_cell(tree: dict, on_step=None) -> dict | None:
    """Train one cell through the library's loop (resuming from its checkpoint when a killed run
    left one) and return its metric columns, or None when a signal stopped it."""
    from qt_hard.training.config import config_from_dict

    out = train_run(config_from_dict(tree), on_step=on_step, must_finish=False)
    return None if out is None else cell_metrics(out)


def cell_metrics(out: Path) -> dict:
    """The CSV's metric columns of a finished cell's run folder: the readouts (``eval.json``) and
    the mean loss of the last epoch's steps (``metrics.csv``, one row per step)."""
    ev = read_eval(out)
    rows = read_metrics(out)
    steps = int(rows[-1]["step"])
    per_epoch = max(1, round(steps / float(rows[-1]["epoch"])))
    last = [float(r["loss"]) for r in rows if int(r["step"]) > steps - per_epoch]
    train_s = float(rows[-1]["elapsed_s"])
    diag = {
        k: ev[k]
        for k in ("mean_cos_acc", "test_norm_mean", "test_norm_cv", "same_class_share", "same_class_mass")
        if k in ev
    }
    return {
        "mean_acc": ev["mean_acc"],
        "linear_acc": ev["linear_acc"],
        "linear_best_epoch": ev["linear_best_epoch"],
        "final_loss": round(float(np.mean(last)), 6),
        "steps": steps,
        "train_s": round(train_s, 3),
        "eval_s": ev["eval_s"],
        "vocab_size": ev.get("vocab_size", ""),
        "sentences_per_s": round(float(rows[-1]["sentences_per_s"]), 1),
        "n_train": ev["n_train"],
        "n_test": ev["n_test"],
        "diagnostics": diag,
    }
