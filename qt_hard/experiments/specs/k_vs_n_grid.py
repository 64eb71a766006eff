"""The k-versus-N grid and its cells (:mod:`.k_vs_n`): a YAML of ``data``, ``train``, ``seeds`` and
``blocks`` (:func:`load_grid`), each block crossing lists of N (classes), k (negatives), B (batch) and
collision modes; a :class:`Point` is one combination with a seed, identified by the hash of everything
that decides its result (:func:`cell_id`). The Wiki-N folder and its tokenization are built once before
the cells (:func:`prepare`); a cell is App. D.1's bag of words on Wiki-N or the synthetic corpus
(:func:`cell_tree`), run through the library's loop (:func:`run_cell`) and read out (:func:`cell_metrics`)."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np

from qt_hard.errors import ArgumentError
from qt_hard.experiments.runner import read_eval, read_metrics, train_run
from qt_hard.training.config import ConfigError, config_from_dict, read_yaml_mapping


# --------------------------------------------------------------------------------------------
# the grid


@dataclass
class DataSpec:
    """Where Wiki-N comes from. kind "wiki": the real dump (``source`` default
    ``$QT_HARD_DATA/wikipedia/enwiki_wikiextractor_ge200sent.txt.xz``, built into ``articles``
    articles of >= ``min_sentences`` sentences); kind "synthetic": the latent-class corpus of
    ``qt_hard.data.synthetic`` (tests), N classes of ``sentences_per_class`` sentences.
    ``vocab_articles``: kind wiki: every Wiki-N's vocabulary is counted over the training split of
    the first ``vocab_articles`` articles (``data.vocab_classes``; ``articles`` for Wiki-3029's one
    vocabulary); left out (None), each N counts its own."""

    kind: Literal["wiki", "synthetic"] = "wiki"
    articles: int = 3029
    min_sentences: int = 200
    source: str | None = None
    min_count: int = 50
    split_seed: int = 0
    max_len: int = 128
    vocab_articles: int | None = None
    sentences_per_class: int = 40
    vocab_size: int = 200


# Settings added after results were recorded: left out of a cell's hash and of a results file's
# setup while at their default, so that the cells recorded before them keep their ids.
LATER_DEFAULTS = {"vocab_articles": None}


def data_settings(spec: DataSpec) -> dict:
    """``spec`` as a dict, without the settings of ``LATER_DEFAULTS`` that are at their default."""
    return {k: v for k, v in asdict(spec).items() if not (k in LATER_DEFAULTS and v == LATER_DEFAULTS[k])}


@dataclass
class TrainSpec:
    """App. D.1 / Table 1 settings; ``epochs`` and ``linear_epochs`` are the knobs to reduce."""

    dim: int = 768
    temperature: float = 1.0
    lr: float = 0.01
    grad_clip: float | None = 2.5
    epochs: int = 50
    linear_epochs: int = 50
    linear_batch: int = 1000
    optimizer: Literal["adam", "sparse_adam"] = "adam"  # "adam" (D.1) | "sparse_adam" (lazy Adam, opt-in)


@dataclass
class Grid:
    data: DataSpec
    train: TrainSpec
    seeds: list
    blocks: dict  # name -> {N: [...], k: [...], B: [...], collision_free: [...]}


# The control of collision-free sampling: each batch's labels are permuted among its pairs before
# the same-label mask is built, so every anchor loses as many candidates as a collision-free batch
# removes in total, but random ones instead of its own class's.
SHUFFLED = "shuffled"


@dataclass(frozen=True)
class Point:
    N: int
    k: int | None  # None: all 2(B-1) candidates
    B: int
    collision_free: bool | str  # False, True, or "shuffled" (the matched random-removal control)
    seed: int


def load_grid(
    path: str | Path,
    epochs: int | None = None,
    linear_epochs: int | None = None,
    optimizer: str | None = None,
    seeds: list | None = None,
) -> Grid:
    """Read a grid YAML (sections data, train, seeds, blocks; the sections through
    :func:`qt_hard.config_types.read_section`); CLI overrides replace values."""
    from qt_hard.config_types import read_section

    tree = read_yaml_mapping(Path(path), "grid")
    unknown = set(tree) - {"data", "train", "seeds", "blocks"}
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {sorted(unknown)} (data, train, seeds, blocks)")
    data = read_section(DataSpec, tree.get("data"), "data")
    overrides = {"epochs": epochs, "linear_epochs": linear_epochs, "optimizer": optimizer}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    train = replace(read_section(TrainSpec, tree.get("train"), "train"), **overrides)
    grid_seeds = list(seeds if seeds is not None else tree.get("seeds", [0]))
    blocks = tree.get("blocks") or {}
    if not blocks:
        raise ConfigError(f"{path}: no blocks (each block: N, k, B, collision_free lists)")
    for name, b in blocks.items():
        extra = set(b) - {"N", "k", "B", "collision_free"}
        if extra or "N" not in b or "k" not in b:
            raise ConfigError(
                f"{path}: block {name!r} needs N and k lists (B, collision_free optional); unknown keys {sorted(extra)}"
            )
    return Grid(data, train, grid_seeds, blocks)


def expand(grid: Grid) -> tuple[list[Point], list[str]]:
    """The grid's distinct cells, ordered by N (consecutive cells share their data), and the
    notes on cells left out (k > 2(B-1): a batch of B pairs has only 2(B-1) candidates)."""
    cells, notes, seen = [], [], set()
    for name, b in grid.blocks.items():
        Bs = b.get("B", [1000])
        cfs = b.get("collision_free", [False])
        for N, k, B, cf, seed in itertools.product(b["N"], b["k"], Bs, cfs, grid.seeds):
            if k is not None and k > 2 * (B - 1):
                notes.append(f"{name}: N={N} k={k} B={B} left out (k > 2(B-1) = {2 * (B - 1)})")
                continue
            if cf not in (False, True, SHUFFLED):
                raise ConfigError(f"block {name!r}: collision_free values are false, true or {SHUFFLED!r}, got {cf!r}")
            cell = Point(int(N), None if k is None else int(k), int(B), cf, int(seed))
            if cell not in seen:
                seen.add(cell)
                cells.append(cell)
    cells.sort(key=lambda c: (c.N, c.B, str(c.collision_free), -1 if c.k is None else c.k, c.seed))
    return cells, sorted(set(notes))


def cell_config(grid: Grid, cell: Point) -> dict:
    """Everything that decides a cell's result (the cell id hashes it)."""
    return {**asdict(cell), "data": data_settings(grid.data), "train": asdict(grid.train)}


def cell_id(grid: Grid, cell: Point) -> str:
    return hashlib.sha1(json.dumps(cell_config(grid, cell), sort_keys=True).encode()).hexdigest()[:16]


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


def prepare(spec: DataSpec, Ns, cache: Path, no_prepare: bool = False) -> Path:
    """Build the Wiki folder and tokenize all of it once (kind wiki, :func:`qt_hard.data.wiki.prepare_wiki`);
    every cell's Wiki-N is then a prefix of those tokens with its own split and vocabulary. The
    synthetic corpus is made by the library from the grid's settings and needs nothing here.
    Returns the marker file that says the cache is ready: under ``accelerate launch`` the processes
    of rank above 0 wait for rank 0 to write it; a machine without nltk runs the grid from a carried
    cache (``no_prepare``: a missing one is refused, not built)."""
    marker = prepared_marker(cache, spec)
    while not marker.exists() and int(os.environ.get("RANK", "0")) > 0:
        time.sleep(5)
    if marker.exists():
        return marker
    if no_prepare:
        raise ArgumentError(f"--no-prepare: no prepared Wiki folder under {cache}; run without it once")
    if spec.kind == "wiki" and not spec.source and not wiki_dir(cache, spec).exists():
        from qt_hard.paths import data_path

        data_path("wikipedia")  # a missing dump is refused before the cache folder is made
    cache.mkdir(parents=True, exist_ok=True)
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
