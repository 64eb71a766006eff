"""The k-versus-N ablation (``qt-hard grid run k-vs-n GRID.yaml``): Ash, Goel, Krishnamurthy, Misra
(AISTATS 2022), section 5, Fig. 3; App. D.1, Figs. 5-7.

    qt-hard grid run k-vs-n configs/k_vs_n.yaml --cache runs/k_vs_n/cache --plan      # cells + estimate
    qt-hard grid run k-vs-n configs/k_vs_n.yaml --cache runs/k_vs_n/cache \\
        --results runs/k_vs_n/results.csv --workers 4 --device cuda
    qt-hard grid run k-vs-n --results runs/k_vs_n/results.csv --summary-only --figures docs/figures
    qt-hard grid run k-vs-n configs/k_vs_n.yaml --cache runs/k_vs_n/cache --sampling --N 1000 --k 100,1000 --steps 80

* **grid**: a YAML of ``data``, ``train``, ``seeds`` and ``blocks`` (:func:`load_grid`); a block
  crosses lists of N (classes), k (negatives), B (batch) and collision modes; a :class:`Cell` is one
  combination with a seed, identified by the hash of everything that decides its result
  (:func:`cell_id`);
* **base config**: :func:`cell_tree`, App. D.1's bag of words on Wiki-N (or the synthetic corpus);
* **readout**: the pipeline's readouts (mean and linear classifier, diagnostics) in ``eval.json`` and
  the last epoch's loss in ``metrics.csv`` (:func:`cell_metrics`);
* **results**: the ledger ``NAME.jsonl`` beside ``--results NAME.csv`` (several grids share one
  folder, each its own ledger), the CSV and ``NAME.diag.jsonl`` derived from it
  (:func:`results_files`), the figures and the summary from the records alone;
* **the experiment** (:class:`KversusN`): the grid command's contract, each cell claimed as
  ``(NAME, cell id)`` and run in ``NAME.csv.cells/<cell id>/``;
* **sampling** (``--sampling``, in place of the cells): what plain, collision-free and shuffled
  sampling draw on the batches of the grid's cells (:mod:`qt_hard.experiments.specs.k_vs_n_sampling`).

Wiki-N is built by ``qt_hard.data.wiki.build_wiki`` from ``$QT_HARD_DATA/wikipedia`` (4,715 articles
with at least 200 sentences from a 2015 WikiExtractor dump), *not* the CURL release of Saunshi et al.
(2019) that the paper used: numbers are comparable in trend, not digit for digit. The cache folder is
built once before the cells (:func:`prepare`: the Wiki folder, tokenized whole), so a machine without
nltk runs the grid from a carried cache. Under ``accelerate launch`` every process runs the command
as an independent worker on the GPU of its ``LOCAL_RANK`` (a bag-of-words cell is far too small to
gain from data parallelism); rank 0 alone tokenizes and prints the plan, the others wait for it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import logging
import os
import socket
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from qt_hard.errors import ArgumentError
from qt_hard.experiments import report
from qt_hard.experiments.contract import Cell as GridCell
from qt_hard.experiments.contract import Experiment
from qt_hard.experiments.grid import seed_list
from qt_hard.experiments.ledger import Ledger, LedgerError, git_commit
from qt_hard.experiments.runner import estimate_line, read_eval, read_metrics, step_seconds, train_run
from qt_hard.training.config import ConfigError

log = logging.getLogger(__name__)

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

    kind: str = "wiki"
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
    optimizer: str = "adam"  # "adam" (D.1) | "sparse_adam" (lazy Adam, opt-in)


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
class Cell:
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
    """Read a grid YAML (sections data, train, seeds, blocks); CLI overrides replace values."""
    from qt_hard.training.config import read_yaml_mapping

    tree = read_yaml_mapping(Path(path), "grid")
    unknown = set(tree) - {"data", "train", "seeds", "blocks"}
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {sorted(unknown)} (data, train, seeds, blocks)")
    data = _spec(DataSpec, tree.get("data") or {}, "data")
    train = _spec(TrainSpec, tree.get("train") or {}, "train")
    if epochs is not None:
        train.epochs = epochs
    if linear_epochs is not None:
        train.linear_epochs = linear_epochs
    if optimizer is not None:
        train.optimizer = optimizer
    if train.optimizer not in ("adam", "sparse_adam"):
        raise ConfigError(f"train.optimizer must be adam | sparse_adam, got {train.optimizer!r}")
    if data.kind not in ("wiki", "synthetic"):
        raise ConfigError(f"data.kind must be wiki | synthetic, got {data.kind!r}")
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


def _spec(cls, d: dict, where: str):
    names = {f for f in cls.__dataclass_fields__}
    unknown = set(d) - names
    if unknown:
        raise ConfigError(f"unknown key(s) {sorted(unknown)} in {where!r}; known: {sorted(names)}")
    return cls(**d)


def expand(grid: Grid) -> tuple[list[Cell], list[str]]:
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
            cell = Cell(int(N), None if k is None else int(k), int(B), cf, int(seed))
            if cell not in seen:
                seen.add(cell)
                cells.append(cell)
    cells.sort(key=lambda c: (c.N, c.B, str(c.collision_free), -1 if c.k is None else c.k, c.seed))
    return cells, sorted(set(notes))


def cell_config(grid: Grid, cell: Cell) -> dict:
    """Everything that decides a cell's result (the cell id hashes it)."""
    return {**asdict(cell), "data": data_settings(grid.data), "train": asdict(grid.train)}


def cell_id(grid: Grid, cell: Cell) -> str:
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


def _prepared_marker(cache: Path, spec: DataSpec) -> Path:
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
    marker = _prepared_marker(cache, spec)
    if marker.exists():
        return marker
    if spec.kind == "wiki":
        from qt_hard.data.wiki import prepare_wiki

        prepare_wiki(wiki_dir(cache, spec), token_cache(cache), spec.articles, spec.min_sentences, max(Ns), spec.source)
    from qt_hard.files import write_text

    return write_text(marker, json.dumps({"data": asdict(spec), "Ns": sorted(set(Ns))}), "prepared marker")


# --------------------------------------------------------------------------------------------
# one cell: a run of the library's training loop


def cell_tree(grid: Grid, cell: Cell, cache: Path, out: Path, threads: int = 1, checkpoint_every: int = 0) -> dict:
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


# --------------------------------------------------------------------------------------------
# results: the ledger, and the CSV and diagnostics derived from it

COLUMNS = [
    "cell_id",
    "N",
    "k",
    "B",
    "collision_free",
    "seed",
    "dim",
    "temperature",
    "lr",
    "grad_clip",
    "epochs",
    "linear_epochs",
    "optimizer",
    "data_kind",
    "min_count",
    "split_seed",
    "articles",
    "mean_acc",
    "linear_acc",
    "linear_best_epoch",
    "final_loss",
    "steps",
    "vocab_size",
    "n_train",
    "n_test",
    "train_s",
    "eval_s",
    "wall_s",
    "sentences_per_s",
    "threads",
    "device",
    "host",
    "git_commit",
    "finished_at",
]
# What must match between an uninterrupted and a resumed grid (wall time and commit aside).
METRICS = ["mean_acc", "linear_acc", "linear_best_epoch", "final_loss", "steps"]
KEY = ("cell_id",)
# Columns that are text even when they look like numbers (a commit such as 1234567).
# The CSV columns that hold the grid's data and train settings (the others are not in the CSV).
DATA_COLUMNS = {"data_kind": "kind", "min_count": "min_count", "split_seed": "split_seed", "articles": "articles"}
TRAIN_COLUMNS = ("dim", "temperature", "lr", "grad_clip", "epochs", "linear_epochs", "optimizer")
# The fields of a diagnostics line that come from its cell's record rather than its diagnostics.
DIAG_CELL = ("cell_id", "N", "k", "B", "collision_free", "seed", "mean_acc")


def ledger_path(results: Path) -> Path:
    """The ledger of a results CSV: ``NAME.jsonl`` beside ``NAME.csv`` (one JSON line per finished
    cell, ``qt_hard.experiments.ledger``); the CSV and ``NAME.diag.jsonl`` are derived from it."""
    results = Path(results)
    if results.suffix != ".csv":
        raise LedgerError(f"{results}: the results are named by their CSV (NAME.csv; the ledger is NAME.jsonl)")
    return results.with_suffix(".jsonl")


def diagnostics_path(results: Path) -> Path:
    """The per-cell diagnostics beside a results CSV: ``NAME.diag.jsonl`` for ``NAME.csv``."""
    results = Path(results)
    return results.with_name(results.stem + ".diag.jsonl")


def setup_of(grid: Grid) -> dict:
    """What every cell of a results file shares: the grid's data and train settings (after the
    command line's overrides), flat, so that a mismatch names the setting. Seeds and blocks are
    not part of it: a grid grown by a seed or a block goes on in the same file."""
    return {
        **{f"data.{k}": v for k, v in data_settings(grid.data).items()},
        **{f"train.{k}": v for k, v in asdict(grid.train).items()},
    }


def open_results(results: Path, grid: Grid | None = None) -> Ledger:
    """The ledger of ``results`` (see :func:`ledger_path`); with ``grid`` for appending this grid's
    cells (a ledger of another setup is an error naming the settings), else read only. A CSV
    without its ledger is refused: its cells would be run again and the CSV rewritten without them."""
    path = ledger_path(results)
    if not path.is_file() and Path(results).is_file():
        raise LedgerError(f"{results} has no ledger {path.name} beside it; give the grid another --results")
    return Ledger(path.parent, KEY, None if grid is None else setup_of(grid), name=path.name)


def is_results_csv(path: Path) -> bool:
    """Whether ``path`` is a results CSV that :func:`export` wrote (its header is ``COLUMNS``)."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return next(csv.reader(fh), None) == list(COLUMNS)
    except (OSError, UnicodeDecodeError, csv.Error):
        return False


def read_results(results: Path) -> list[dict]:
    """One row per finished cell (its last record), the CSV's columns as the CSV writes them."""
    return [_csv_row(r) for r in open_results(results).latest()]


def _csv_value(value) -> str:
    """A record's value as the csv module writes it (None as an empty cell)."""
    return "" if value is None else str(value)


def _csv_row(record: dict) -> dict:
    return {c: _csv_value(record.get(c)) for c in COLUMNS}


def _diag_line(record: dict) -> dict:
    """A record's line of ``NAME.diag.jsonl``: its cell and mean accuracy, then its diagnostics."""
    return {**{k: record[k] for k in DIAG_CELL}, **record["diagnostics"]}


def results_files(records: list[dict], name: str) -> dict[str, str]:
    """From the records alone: ``NAME.csv`` (``COLUMNS``, one row per finished cell, its last record)
    and, when any record has them, the diagnostics lines ``NAME.diag.jsonl``."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS)
    w.writeheader()
    w.writerows(_csv_row(r) for r in records)
    files = {f"{name}.csv": buf.getvalue()}
    diag = [json.dumps(_diag_line(r), sort_keys=True) + "\n" for r in records if "diagnostics" in r]
    if diag:
        files[f"{name}.diag.jsonl"] = "".join(diag)
    return files


def _row(grid: Grid, cell: Cell, cid: str, metrics: dict, wall: float, device, threads: int, commit: str) -> dict:
    """A finished cell's record: ``COLUMNS`` (k None for all candidates) and ``diagnostics``."""
    return {
        "cell_id": cid,
        **asdict(cell),
        **{c: getattr(grid.data, n) for c, n in DATA_COLUMNS.items()},
        **{c: getattr(grid.train, c) for c in TRAIN_COLUMNS},
        **metrics,
        "wall_s": round(wall, 3),
        "threads": threads,
        "device": str(device),
        "host": socket.gethostname(),
        "git_commit": commit,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def cell_dir(results: Path, cid: str) -> Path:
    """A cell's run folder beside the results CSV; only its checkpoints (while it runs) and its
    config, metrics and readouts (after) are kept."""
    return Path(results).with_name(Path(results).name + ".cells") / cid


def _single_process(dev) -> None:
    """Every worker trains its cells alone on ``dev``: under ``accelerate launch`` the process
    group's variables are dropped (a cell is far too small for data parallelism) and the
    Accelerator is pointed at the worker's device."""
    import torch

    for var in (
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "ROLE_RANK",
        "ROLE_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TORCHELASTIC_RUN_ID",
    ):
        os.environ.pop(var, None)
    if dev.type == "cpu":
        os.environ["ACCELERATE_USE_CPU"] = "true"
    elif dev.type == "cuda" and dev.index is not None:  # a bare "cuda" is the current device already
        torch.cuda.set_device(dev)


def _device(name: str | None):
    import torch

    if name in (None, "auto"):
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and "LOCAL_RANK" in os.environ:
        name = f"cuda:{int(os.environ['LOCAL_RANK']) % max(torch.cuda.device_count(), 1)}"
    return torch.device(name)


# --------------------------------------------------------------------------------------------
# plan and time estimate


def estimate(grid: Grid, cells: list[Cell], cache: Path, device, probe_steps: int = 3) -> dict:
    """Seconds per cell from a few timed steps of the library's loop per (N, B)
    (:func:`qt_hard.experiments.runner.step_seconds`) and one linear-classifier epoch per N, scaled
    to the cell's epochs."""
    import shutil
    import tempfile

    import torch

    from qt_hard.evaluation.wiki import linear_classifier
    from qt_hard.text.build import build_run
    from qt_hard.training.config import config_from_dict

    _single_process(torch.device(device))
    step_s, lin_s, steps_per_epoch = {}, {}, {}
    tmp = Path(tempfile.mkdtemp(prefix="k_vs_n_probe_"))
    try:
        for N in sorted({c.N for c in cells}):
            for B in sorted({c.B for c in cells if c.N == N}):
                tree = cell_tree(grid, Cell(N, None, B, False, 0), cache, tmp / f"N{N}_B{B}", torch.get_num_threads())
                tree["train"].update(steps=probe_steps + 2, epochs=1.0)
                tree["eval"]["readouts"] = False
                step_s[(N, B)], steps_per_epoch[(N, B)] = step_seconds(config_from_dict(tree))
            tree["eval"]["readouts"] = True
            split = build_run(config_from_dict(tree), tmp / f"N{N}").split
            labels = split.train_labels
            n = min(len(labels), 20_000)
            x = np.random.default_rng(0).standard_normal((n, grid.train.dim)).astype(np.float32)
            t0 = time.perf_counter()
            linear_classifier(
                x,
                labels[:n],
                x[:10],
                labels[:10],
                split.num_classes,
                epochs=1,
                batch_size=grid.train.linear_batch,
                device=device,
                threads=torch.get_num_threads(),
            )
            lin_s[N] = (time.perf_counter() - t0) * len(labels) / n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_cell = []
    for c in cells:
        s = step_s[(c.N, c.B)] * steps_per_epoch[(c.N, c.B)] * grid.train.epochs
        per_cell.append(s + lin_s[c.N] * grid.train.linear_epochs)
    return {
        "per_cell_s": per_cell,
        "total_s": float(sum(per_cell)),
        "step_s": {f"N={n},B={b}": round(v, 4) for (n, b), v in step_s.items()},
        "linear_epoch_s": {f"N={n}": round(v, 3) for n, v in lin_s.items()},
    }


def print_plan(grid: Grid, cells: list[Cell], notes: list[str], done: set[str], est: dict | None, workers: int) -> None:
    ids = [cell_id(grid, c) for c in cells]
    todo = [c for c, i in zip(cells, ids) if i not in done]
    log.info(
        f"grid: {len(cells)} cells ({len(cells) - len(todo)} already finished, {len(todo)} to run); "
        f"epochs {grid.train.epochs} NCE + {grid.train.linear_epochs} linear, optimizer {grid.train.optimizer}, "
        f"seeds {grid.seeds}, data {grid.data.kind} (min count {grid.data.min_count})"
    )
    for name, b in grid.blocks.items():
        log.info(
            f"  block {name}: N={b['N']} k={b['k']} B={b.get('B', [1000])} "
            f"collision_free={b.get('collision_free', [False])}"
        )
    for n in notes:
        log.info(f"  note: {n}")
    if est is not None:
        log.info(f"  probe: seconds per step {est['step_s']}; per linear epoch {est['linear_epoch_s']}")
        log.info(estimate_line([s for s, i in zip(est["per_cell_s"], ids) if i not in done], workers))


# --------------------------------------------------------------------------------------------
# plots (from the results alone)


def _mean_by(rows, keys, metric):
    """{key tuple: (mean, spread, n)} of a metric over seeds; the spread is the report module's (the
    sample std, ddof 1), as on the pages; 0 for one seed."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(float(r[metric]))
    return {k: (*report.mean_spread(v), len(v)) for k, v in groups.items()}


def _parse(rows):
    out = []
    for r in rows:
        out.append(
            {
                "N": int(r["N"]),
                "k": int(r["k"]) if r["k"] not in ("", "None") else None,
                "B": int(r["B"]),
                "cf": _cf(r["collision_free"]),
                "seed": int(r["seed"]),
                "mean_acc": float(r["mean_acc"]),
                "linear_acc": float(r["linear_acc"]),
                "wall_s": float(r["wall_s"] or 0),
                "epochs": int(r["epochs"]),
                "linear_epochs": int(r["linear_epochs"]),
                "optimizer": r["optimizer"],
            }
        )
    return out


def _cf(value: str):
    """The CSV's collision_free column: False, True or SHUFFLED."""
    v = str(value).strip()
    return SHUFFLED if v == SHUFFLED else v in ("True", "true", "1")


def _kval(k, B):
    return 2 * (B - 1) if k is None else k


def _main_B(rows):
    Bs = [r["B"] for r in rows if r["cf"] is False]
    if 1000 in Bs:
        return 1000
    return max(set(Bs), key=Bs.count)


def summarize(rows: list[dict]) -> dict:
    """The numbers behind the three findings, per metric."""
    B0 = _main_B(rows)
    out = {"B": B0}
    for metric in ("mean_acc", "linear_acc"):
        m = {}
        grid = _mean_by([r for r in rows if r["B"] == B0 and r["cf"] is False], ["N", "k"], metric)
        best = {}
        for N in sorted({n for n, _ in grid}):
            row = {_kval(k, B0): v for (n, k), v in grid.items() if n == N}
            kb = max(row, key=lambda k: row[k][0])
            near = [k for k in row if row[k][0] >= 0.995 * row[kb][0]]
            best[N] = {
                "best_k": kb,
                "acc": round(row[kb][0], 2),
                "std": round(row[kb][1], 2),
                "k_range_0995": [min(near), max(near)],
                "acc_by_k": {k: round(row[k][0], 2) for k in sorted(row)},
            }
        m["best_k_by_N"] = best
        bk = _mean_by([r for r in rows if r["cf"] is False], ["N", "B", "k"], metric)
        per_n = {}
        for N in sorted({n for n, _, _ in bk}):
            Bs = sorted({b for n, b, _ in bk if n == N})
            if len(Bs) < 2:
                continue
            common = sorted(set.intersection(*[{_kval(k, b) for n, b2, k in bk if n == N and b2 == b} for b in Bs]))
            per_n[N] = {
                f"k={k}": {
                    f"B={b}": round(
                        next(v[0] for (n, b2, kk), v in bk.items() if n == N and b2 == b and _kval(kk, b) == k), 2
                    )
                    for b in Bs
                }
                for k in common
            }
        m["b_at_fixed_k"] = per_n
        cf = _mean_by([r for r in rows if r["B"] == B0], ["N", "k", "cf"], metric)
        for which, key in ((True, "collision_free_gain"), (SHUFFLED, "shuffled_control_gain")):
            gain = {}
            for (N, k, c), v in cf.items():
                if c == which and (N, k, False) in cf:  # c is False, True or SHUFFLED
                    gain.setdefault(N, {})[_kval(k, B0)] = round(v[0] - cf[(N, k, False)][0], 2)
            if gain:
                m[key] = {N: dict(sorted(g.items())) for N, g in sorted(gain.items())}
        out[metric] = m
    out["cells"] = len(rows)
    out["total_cell_hours"] = round(sum(r["wall_s"] for r in rows) / 3600, 2)
    return out


def _fig_n_by_k(plt, rows, B0, metric, title):
    """Fig. 3 left (Figs. 5, 6): N x k at B0, row-normalized, the best k of each N marked."""
    g = _mean_by([r for r in rows if r["B"] == B0 and r["cf"] is False], ["N", "k"], metric)
    if not g:
        return None
    Ns = sorted({n for n, _ in g})
    ks = sorted({_kval(k, B0) for _, k in g})
    raw = np.full((len(Ns), len(ks)), np.nan)
    for (n, k), v in g.items():
        raw[Ns.index(n), ks.index(_kval(k, B0))] = v[0]
    norm = raw / np.nanmax(raw, axis=1, keepdims=True)
    fig, ax = plt.subplots(figsize=(1.0 + 0.75 * len(ks), 0.9 + 0.5 * len(Ns)), dpi=110)
    best = set()
    for i in range(len(Ns)):
        row = norm[i]
        if np.all(np.isnan(row)):
            continue
        jb = int(np.nanargmax(row))
        best.add((i, jb))
        near = [j for j in range(len(ks)) if row[j] >= 0.995]
        for j in {min(near), max(near)} - {jb}:
            ax.plot(j, i, "o", color="black", alpha=0.35, ms=11)
        ax.plot(jb, i, "o", color="black", ms=11)
    what = f"{title}, B={B0}, row-normalized"
    report.heatmap(fig, ax, raw, norm, ks, Ns, "k (negatives)", "N (classes)", what, best)
    return fig


def _fig_b_by_k(plt, rows, B0, metric, title):
    """Fig. 3 center (Fig. 7): B x k for (up to) two N, globally normalized per panel."""
    bk = _mean_by([r for r in rows if r["cf"] is False], ["N", "B", "k"], metric)
    nB = {N: len({b for n, b, _ in bk if n == N}) for N in {n for n, _, _ in bk}}
    Ns2 = sorted([N for N, c in nB.items() if c >= 2], key=lambda N: (-nB[N], N))[:2]
    if not Ns2:
        return None
    fig, axes = plt.subplots(1, len(Ns2), figsize=(3.6 * len(Ns2), 2.6), dpi=110, squeeze=False)
    for ax, N in zip(axes[0], sorted(Ns2)):
        Bs = sorted({b for n, b, _ in bk if n == N})
        ks = sorted({_kval(k, b) for n, b, k in bk if n == N})
        raw = np.full((len(Bs), len(ks)), np.nan)
        for (n, b, k), v in bk.items():
            if n == N:
                raw[Bs.index(b), ks.index(_kval(k, b))] = v[0]
        report.heatmap(fig, ax, raw, raw / np.nanmax(raw), ks, Bs, "k", "B", f"{title}, N={N}, globally normalized")
    return fig


def _fig_collisions(plt, rows, B0, metric, title):
    """Fig. 3 right: accuracy vs k with (solid) and without (dotted) collisions, four N."""
    cf = _mean_by([r for r in rows if r["B"] == B0], ["N", "k", "cf"], metric)
    Nc = sorted({n for n, _, c in cf if c is True})
    if not Nc:
        return None
    fig, ax = plt.subplots(figsize=(4.2, 3.0), dpi=110)
    styles = ((False, "-", ""), (True, ":", " no collision"), (SHUFFLED, "--", " shuffled control"))
    for i, N in enumerate(Nc[:4]):
        for c, style, tag in styles:
            pts = sorted((_kval(k, B0), v[0]) for (n, k, cc), v in cf.items() if n == N and cc == c)
            if pts:
                ax.plot(*zip(*pts), style, marker="o", ms=3, color=f"C{i}", label=f"N={N}{tag}")
    ax.set_xscale("log")
    ax.set_xlabel("k")
    ax.set_ylabel("accuracy (%)")
    control = ", shuffled-label control (dashed)" if any(c == SHUFFLED for _, _, c in cf) else ""
    ax.set_title(f"{title}, B={B0}\ncollisions (solid), none (dotted){control}", fontsize=7)
    ax.legend(fontsize=5, ncol=2)
    return fig


def plot(records: list[dict], out_dir: Path) -> list[Path]:
    """Fig. 3 left / center / right (and App. Figs. 5-7) for both readouts from the ledger's records,
    as small PNGs, and the summary (:func:`summarize`) as JSON."""
    plt = report.pyplot()
    rows = _parse([_csv_row(r) for r in records])
    if not rows:
        raise ArgumentError("no finished cells to plot")
    out_dir.mkdir(parents=True, exist_ok=True)
    B0 = _main_B(rows)
    epochs = sorted({(r["epochs"], r["linear_epochs"]) for r in rows})
    seeds = len({r["seed"] for r in rows})
    caption = (
        f"Wiki-N from our 2015 dump (not the CURL release); {seeds} seed(s); "
        f"NCE/linear epochs {', '.join(f'{a}/{b}' for a, b in epochs)}"
    )
    written = []
    for metric, title in (("mean_acc", "mean classifier"), ("linear_acc", "linear classifier")):
        figures = (("k_vs_n", _fig_n_by_k, 0.03), ("b_by_k", _fig_b_by_k, 0.04), ("collisions", _fig_collisions, 0.03))
        for name, draw, bottom in figures:
            fig = draw(plt, rows, B0, metric, title)
            if fig is None:
                continue
            fig.text(0.01, 0.005, caption, fontsize=5)
            fig.tight_layout(rect=(0, bottom, 1, 1))
            fig.savefig(out_dir / f"{name}_{metric}.png")
            written.append(out_dir / f"{name}_{metric}.png")
            plt.close(fig)
    from qt_hard.files import write_text

    write_text(out_dir / "k_vs_n_summary.json", json.dumps(summarize(rows), indent=1, default=str) + "\n", "summary")
    return [*written, out_dir / "k_vs_n_summary.json"]


DIAG_COLUMNS = (
    ("mean_acc", "mean clf. (dot)"),
    ("mean_cos_acc", "mean clf. (cosine)"),
    ("linear_acc", "linear clf."),
    ("final_loss", "final loss"),
    ("same_class_mass", "same-class softmax mass"),
    ("same_class_share", "same-class share"),
    ("test_norm_mean", "norm"),
    ("test_norm_cv", "norm CV"),
)


def diagnose(records: list[dict]) -> str:
    """A markdown table of the cells that have diagnostics (their records' ``diagnostics``, also
    ``NAME.diag.jsonl``): per (N, k, B, collision_free), the mean ± std over seeds of both
    readouts, the cosine mean classifier, the final loss, the softmax mass and share of
    same-class candidates, and the embedding norms."""
    groups: dict = {}
    for rec in records:
        if "diagnostics" not in rec:  # a cell run before the readouts had diagnostics
            continue
        r = _csv_row(rec)
        key = (int(r["N"]), r["k"] or "all", int(r["B"]), str(_cf(r["collision_free"])))
        vals = {
            **_diag_line(rec),
            "linear_acc": float(r["linear_acc"]),
            "final_loss": float(r["final_loss"]),
            "mean_acc": float(r["mean_acc"]),
        }
        groups.setdefault(key, []).append(vals)
    if not groups:
        raise ArgumentError("--diagnose: no finished cell has diagnostics")
    order = {"False": 0, "True": 1, SHUFFLED: 2}
    head = "| N | k | B | collisions removed | seeds | " + " | ".join(t for _, t in DIAG_COLUMNS) + " |"
    out = [head, "|" + "---|" * (5 + len(DIAG_COLUMNS))]
    names = {"False": "none (plain)", "True": "same-class (collision-free)", SHUFFLED: "random, matched (shuffled)"}
    for key in sorted(groups, key=lambda k: (k[0], str(k[1]).zfill(6), k[2], order.get(k[3], 9))):
        g = groups[key]
        cells = []
        for col, _ in DIAG_COLUMNS:
            digits = 2 if col.endswith("acc") or col in ("final_loss", "test_norm_mean") else 4
            m, sd = report.mean_spread(x[col] for x in g)
            cells.append(f"{m:.{digits}f} ± {sd:.{digits}f}")
        out.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {names.get(key[3], key[3])} | {len(g)} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# the experiment: `qt-hard grid run k-vs-n GRID.yaml`


def grid_of(args) -> Grid:
    """The grid YAML of the command with its overrides (``--epochs``, ``--linear-epochs``,
    ``--optimizer``, ``--seeds``)."""
    seeds = seed_list(args.seeds) if args.seeds is not None else None
    return load_grid(args.grid, args.epochs, args.linear_epochs, args.optimizer, seeds)


def _threads(args) -> int:
    """Torch threads per worker: ``--threads``, else the CPU cores shared by the workers."""
    return args.threads or max(1, (os.cpu_count() or 1) // max(1, args.workers))


def prepare_cache(grid: Grid, cells: list[Cell], cache: Path, no_prepare: bool) -> None:
    """The cells' Wiki-N caches, built once (:func:`prepare`); under ``accelerate launch`` the
    processes of rank above 0 wait for rank 0 to build them."""
    marker = _prepared_marker(cache, grid.data)
    while not marker.exists() and int(os.environ.get("RANK", "0")) > 0:
        time.sleep(5)
    if not marker.exists():
        if no_prepare:
            raise ArgumentError(f"--no-prepare: no prepared Wiki folder under {cache}; run without it once")
        prepare(grid.data, [c.N for c in cells], cache)


def _add_options(parser) -> None:
    parser.add_argument("grid", nargs="?", help="grid YAML (configs/k_vs_n*.yaml); not needed with --summary-only")
    parser.add_argument(
        "--results",
        default="runs/k_vs_n/results.csv",
        help="results CSV NAME.csv, derived from its ledger NAME.jsonl beside it; cells are claimed in "
        "claims/ beside it (a claim of another host is never taken over, so results carried to a fresh "
        "machine travel without claims/)",
    )
    parser.add_argument("--cache", default="runs/k_vs_n/cache", help="Wiki-N token caches (built before the cells)")
    parser.add_argument("--epochs", type=int, help="NCE epochs, replacing the grid's (D.1: 50)")
    parser.add_argument("--linear-epochs", type=int, help="linear-classifier epochs, replacing the grid's (D.1: 50)")
    parser.add_argument("--optimizer", choices=["adam", "sparse_adam"], help="replacing the grid's")
    parser.add_argument("--seeds", help="comma-separated seeds, replacing the grid's")
    parser.add_argument("--threads", type=int, help="torch threads per worker (default: CPU cores / workers)")
    parser.add_argument(
        "--plan", action="store_true", help="build the caches, print the cells and the estimate, run none"
    )
    parser.add_argument("--no-estimate", action="store_true", help="skip the timing probe of the plan")
    parser.add_argument("--max-cells", type=int, help="stop after this many cells")
    parser.add_argument("--no-prepare", action="store_true", help="fail instead of building missing caches")
    parser.add_argument(
        "--checkpoint-every", type=int, default=0, help="steps between a cell's checkpoints (0: only on a signal)"
    )
    parser.add_argument(
        "--diagnose", action="store_true", help="also the table of the cells' diagnostics, NAME.diagnostics.md"
    )
    parser.add_argument("--figures", help="folder of the figures and k_vs_n_summary.json (default: none drawn)")
    parser.add_argument(
        "--sampling",
        action="store_true",
        help="build the caches, run no cell: print what plain, collision-free and shuffled sampling "
        "draw on the batches of the grid's cells (N, B) at each k, under its data and its first seed",
    )
    parser.add_argument("--N", type=int, default=1000, help="--sampling: the cells' N (default: 1000)")
    parser.add_argument("--B", type=int, default=1000, help="--sampling: the cells' B (default: 1000)")
    parser.add_argument("--k", default="100,1000", help="--sampling: the cells' k, comma-separated (default: 100,1000)")
    parser.add_argument("--steps", type=int, default=800, help="--sampling: the training steps measured (default: 800)")


def check_sampling(args, grid: Grid) -> None:
    """``--sampling``: Wiki-N's batches (kind wiki), each (N, k, B) a cell of the grid."""
    if args.plan:
        raise ArgumentError("--sampling runs in place of --plan: give one of them")
    if grid.data.kind != "wiki":
        raise ArgumentError(f"--sampling measures Wiki-N's batches; the grid's data.kind is {grid.data.kind}")
    if args.steps < 1:
        raise ArgumentError(f"--steps {args.steps}: give at least 1")
    cells = {(c.N, c.k, c.B) for c in expand(grid)[0]}
    for k in seed_list(args.k, "--k"):
        if (args.N, k, args.B) not in cells:
            raise ArgumentError(f"--sampling: N={args.N} k={k} B={args.B} is not a cell of the grid {args.grid}")


def sampling(grid: Grid, args) -> dict:
    """The measurement of ``--sampling`` (:mod:`qt_hard.experiments.specs.k_vs_n_sampling`), the
    caches built first (:func:`prepare_cache`)."""
    from qt_hard.experiments.specs.k_vs_n_sampling import measure

    cache = Path(args.cache)
    prepare_cache(grid, expand(grid)[0], cache, args.no_prepare)
    ks, seed = seed_list(args.k, "--k"), grid.seeds[0]
    return measure(wiki_dir(cache, grid.data), token_cache(cache), grid.data, args.N, args.B, ks, args.steps, seed)


class KversusN(Experiment):
    """Every cell one bag-of-words NCE training on Wiki-N with App. D.1's settings (768-d,
    temperature 1, unnormalized, no positive in the denominator, Adam lr 0.01, gradient clip 2.5,
    tokens seen fewer than 50 times -> UNK, 80/20 split per article), ``k`` negatives per anchor
    out of the 2(B-1) candidates of a batch of B pairs (optionally collision-free), then both
    readouts. The ledger's setup is the grid's data and train settings (after the overrides): a
    grid grown by a seed or a block goes on in the same file, another budget is refused."""

    name = "k-vs-n"
    help = "Ash et al.'s k versus N: bag-of-words NCE on Wiki-N over N, k, B and collision-free sampling"
    key = KEY
    seeds = ""  # the grid YAML's, or --seeds
    out_option = "--results"

    def add_arguments(self, parser) -> None:
        _add_options(parser)

    def location(self, args) -> tuple[Path, str]:
        from qt_hard.paths import check_output_file

        results = check_output_file(args.results, "--results", replaceable=is_results_csv, kind="results CSV")
        path = ledger_path(results)
        if not path.is_file() and results.is_file():
            raise LedgerError(f"{results} has no ledger {path.name} beside it; give the grid another --results")
        return path.parent, path.name

    def check(self, args) -> None:
        if args.grid is None:
            raise ArgumentError("give the grid YAML (only --summary-only reads the results alone)")
        for flag, value, least in (("--threads", args.threads, 1), ("--max-cells", args.max_cells, 0)):
            if value is not None and value < least:
                raise ArgumentError(f"{flag} {value}: give at least {least}")
        if args.checkpoint_every < 0:
            raise ArgumentError(f"--checkpoint-every {args.checkpoint_every}: give at least 0")
        grid = grid_of(args)
        expand(grid)
        if args.sampling:
            check_sampling(args, grid)
        cache = Path(args.cache)
        if grid.data.kind == "wiki" and not grid.data.source and not _prepared_marker(cache, grid.data).exists():
            if not wiki_dir(cache, grid.data).exists():
                from qt_hard.paths import data_path

                data_path("wikipedia")  # the dump the caches are built from

    def diagnostic(self, args) -> int | None:
        """``--sampling``: its JSON object and a line per k (``results/k_vs_n/sampling_1000.json``)."""
        if not args.sampling:
            return None
        from qt_hard.experiments.specs.k_vs_n_sampling import summary

        out = sampling(grid_of(args), args)
        print(json.dumps(out, indent=1))
        print("\n".join(summary(out)))
        return 0

    def setup(self, args, out: Path) -> dict:
        return setup_of(grid_of(args))

    def cells(self, args, rows, seeds) -> list[GridCell]:
        grid, name = grid_of(args), Path(args.results).stem
        return [GridCell((name, cid), ((cid,),)) for cid in (cell_id(grid, c) for c in expand(grid)[0])]

    def prepare(self, args, out: Path, todo: list[GridCell]) -> list[GridCell] | None:
        """The caches, then the plan (rank 0): the cells, what is done, the estimate."""
        import torch

        grid = grid_of(args)
        cells, notes = expand(grid)
        prepare_cache(grid, cells, Path(args.cache), args.no_prepare)
        torch.set_num_threads(_threads(args))
        if int(os.environ.get("RANK", "0")) == 0:
            est = None if args.no_estimate else estimate(grid, cells, Path(args.cache), _device(args.device))
            left = {c.keys[0][0] for c in todo}
            done = {cell_id(grid, c) for c in cells} - left
            print_plan(grid, cells, notes, done, est, args.workers)
        if args.plan:
            return []
        return None if args.max_cells is None else todo[: args.max_cells]

    def run(self, args, out: Path, setup: dict, cell: GridCell) -> dict:
        import shutil

        import torch

        grid, cid = grid_of(args), cell.keys[0][0]
        which = next(c for c in expand(grid)[0] if cell_id(grid, c) == cid)
        threads, dev = _threads(args), _device(args.device)
        torch.set_num_threads(threads)
        _single_process(dev)
        folder = cell_dir(Path(args.results), cid)
        t0 = time.perf_counter()
        metrics = run_cell(cell_tree(grid, which, Path(args.cache), folder, threads, args.checkpoint_every))
        if metrics is None:
            raise SystemExit(f"stopped by a signal in cell {cid}; run the same command again to resume it")
        for part in ("checkpoints", "final"):  # the table of a 768-d bag of words: not kept per cell
            shutil.rmtree(folder / part, ignore_errors=True)
        commit = git_commit(Path(__file__).resolve().parent)
        return _row(grid, which, cid, metrics, time.perf_counter() - t0, dev, threads, commit)

    def configure(self, args) -> None:
        self.results_name = Path(args.results).stem
        self.diagnose = args.diagnose

    def tables(self, records, setup, out: Path) -> dict[str, str]:
        if not records:  # a CSV without records would stand without its ledger (a plan writes none)
            return {}
        name = getattr(self, "results_name", "results")
        files = results_files(records, name)
        if getattr(self, "diagnose", False):
            files[f"{name}.diagnostics.md"] = diagnose(records)
        return files

    def figures(self, args, out: Path, records, setup) -> None:
        if args.figures:
            for path in plot(records, Path(args.figures)):
                print(path)
            print(json.dumps(summarize(_parse([_csv_row(r) for r in records])), default=str))

    def progress(self, record: dict) -> str:
        r = record
        return (
            f"N={r['N']} k={r['k']} B={r['B']} cf={r['collision_free']} seed={r['seed']}: "
            f"mean {r['mean_acc']:.2f} linear {r['linear_acc']:.2f} "
            f"({r['wall_s']:.1f}s, {r['sentences_per_s']:.0f} sent/s)"
        )


EXPERIMENTS = (KversusN(),)
