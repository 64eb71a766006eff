"""The k-versus-N grid (:mod:`.k_vs_n`): a YAML of ``data``, ``train``, ``seeds`` and ``blocks``
(:func:`load_grid`), each block crossing lists of N (classes), k (negatives), B (batch) and collision
modes; a :class:`Point` is one combination with a seed, identified by the hash of everything that
decides its result (:func:`cell_id`)."""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path


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
