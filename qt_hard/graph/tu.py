"""A reader of the TU graph-classification format (Morris et al. 2020, https://chrsmrrs.github.io/datasets/),
as stored under ``$QT_HARD_DATA/tu/<DS>/`` (see its SOURCE.md):

    DS_A.txt               one line "i, j" per directed edge, 1-based *global* node ids
    DS_graph_indicator.txt one line per node: its graph id (1-based)
    DS_graph_labels.txt    one line per graph: its class label (any integers: {-1, 1}, {1..6}, ...)
    DS_node_labels.txt     optional, one integer per node
    DS_node_attributes.txt optional, one comma-separated float row per node

As PyG's ``read_tu_data`` does, self-loops are removed and duplicate edges merged (the IMDB files list
every pair twice); graph labels are remapped to 0..C-1 in sorted order. Node features follow InfoGraph /
the HCL code (PyG ``TUDataset`` defaults): node labels one-hot over ``label - min`` (range
``max - min + 1``), attributes appended only when asked; a dataset without node labels gets the one-hot
node degree (``OneHotDegree(max_degree)``, degree counted after merging duplicates). A missing or
malformed file is a ``TUFormatError`` naming the file and the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


class TUFormatError(ValueError):
    """A TU file is missing or malformed; the message names the file (and line)."""


@dataclass
class TUGraphs:
    """A TU dataset in flat arrays (N nodes, E directed edges, G graphs).

    edge_index: (2, E) int64, 0-based global node ids, both directions, no self-loops or duplicates.
    graph_of_node: (N,) int64 0-based graph of each node (sorted, as the format requires).
    y: (G,) int64 class in 0..C-1; classes: the original label of each class.
    x: (N, F) float32 node features.
    """

    name: str
    edge_index: np.ndarray
    graph_of_node: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    x: np.ndarray

    @property
    def num_graphs(self) -> int:
        return len(self.y)

    @property
    def num_features(self) -> int:
        return self.x.shape[1]

    @property
    def node_offsets(self) -> np.ndarray:
        """(G + 1,) node ids of graph g are ``node_offsets[g]:node_offsets[g+1]``."""
        return np.concatenate([[0], np.cumsum(np.bincount(self.graph_of_node, minlength=self.num_graphs))])


def _read_rows(path: Path, kind: type, width: int | None) -> np.ndarray:
    """Lines of comma-separated numbers; ``width`` numbers per line (None: any, but the same)."""
    if not path.is_file():
        raise TUFormatError(f"{path}: file not found")
    # Fast path: the whole file as one array; any doubt and the line-by-line pass below names the line.
    lines = path.read_text().strip().splitlines()
    if lines:
        w = width if width is not None else lines[0].count(",") + 1
        try:
            flat = np.array(" ".join(lines).replace(",", " ").split(), dtype=np.float64 if kind is float else np.int64)
            if flat.size == w * len(lines) and all(ln.count(",") == w - 1 for ln in lines):
                return flat.reshape(len(lines), w).astype(np.float32 if kind is float else np.int64)
        except ValueError:
            pass
    rows = []
    with path.open() as fh:
        for ln, line in enumerate(fh, 1):
            text = line.strip()
            if not text:
                raise TUFormatError(f"{path}, line {ln}: empty line")
            parts = [p.strip() for p in text.split(",")]
            try:
                vals = [kind(p) for p in parts] if kind is float else [int(p) for p in parts]
            except ValueError:
                raise TUFormatError(f"{path}, line {ln}: expected {kind.__name__} values, got {text!r}") from None
            want = width if width is not None else (len(rows[0]) if rows else len(vals))
            if len(vals) != want:
                raise TUFormatError(f"{path}, line {ln}: expected {want} value(s), got {len(vals)}")
            rows.append(vals)
    if not rows:
        raise TUFormatError(f"{path}: empty file")
    return np.asarray(rows, dtype=np.float32 if kind is float else np.int64)


def read_tu(root: str | Path, name: str, node_attributes: bool = False, degree_features: str = "auto") -> TUGraphs:
    """Read dataset ``name`` from ``root/name/name_*.txt``.

    Args:
        node_attributes: append DS_node_attributes.txt to the features (PyG's ``use_node_attr``).
        degree_features: "auto" (one-hot degree when there are no node labels), "always" or "never"
            (then a constant 1 feature for label-less graphs).
    """
    if degree_features not in ("auto", "always", "never"):
        raise ValueError(f"degree_features must be auto | always | never, got {degree_features!r}")
    folder = Path(root) / name
    if not folder.is_dir():
        raise TUFormatError(f"{folder}: no such dataset folder")
    f = lambda suffix: folder / f"{name}_{suffix}.txt"
    indicator = _read_rows(f("graph_indicator"), int, 1)[:, 0]
    labels = _read_rows(f("graph_labels"), int, 1)[:, 0]
    edges = _read_rows(f("A"), int, 2)
    n, g = len(indicator), len(labels)
    _check_graph_ids(indicator, g, f)
    graph_of_node = indicator - 1
    edge_index = _edge_index(edges, graph_of_node, f)
    feats = _node_features(f, n, edge_index, node_attributes, degree_features)
    classes, y = np.unique(labels, return_inverse=True)
    return TUGraphs(name, edge_index, graph_of_node, y.astype(np.int64), classes, np.concatenate(feats, axis=1))


def _check_graph_ids(indicator: np.ndarray, g: int, f) -> None:
    """Refuse graph ids (one per node) that are not sorted and 1..G without gaps, G the graph labels' count."""
    jumps = np.flatnonzero((np.diff(indicator) < 0) | (np.diff(indicator) > 1))
    if indicator.min() != 1 or jumps.size:
        bad = int(jumps[0]) + 2 if indicator.min() == 1 else int(np.argmin(indicator)) + 1
        raise TUFormatError(f"{f('graph_indicator')}, line {bad}: graph ids must be sorted and run 1..G without gaps")
    if indicator[-1] != g:
        raise TUFormatError(f"{f('graph_indicator')}: {indicator[-1]} graphs, but {f('graph_labels')} has {g} lines")


def _edge_index(edges: np.ndarray, graph_of_node: np.ndarray, f) -> np.ndarray:
    """(2, E) the edges of the (m, 2) 1-based rows of DS_A.txt, 0-based, in both directions, without
    self-loops and duplicates, sorted; refuses a node id out of range or an edge between two graphs."""
    n = len(graph_of_node)
    out = (edges < 1) | (edges > n)
    if out.any():
        ln = int(np.flatnonzero(out.any(axis=1))[0]) + 1
        raise TUFormatError(f"{f('A')}, line {ln}: node id outside 1..{n}")
    src, dst = edges[:, 0] - 1, edges[:, 1] - 1
    cross = graph_of_node[src] != graph_of_node[dst]
    if cross.any():
        ln = int(np.flatnonzero(cross)[0]) + 1
        raise TUFormatError(f"{f('A')}, line {ln}: edge joins two graphs")
    # Both directions, no self-loops, no duplicates (PyG's read_tu_data: remove_self_loops + coalesce).
    keep = src != dst
    key = np.unique(np.concatenate([src[keep] * n + dst[keep], dst[keep] * n + src[keep]]))
    return np.stack([key // n, key % n])


def _node_features(f, n: int, edge_index: np.ndarray, node_attributes: bool, degree_features: str) -> list[np.ndarray]:
    """The (n, *) feature blocks of the nodes, to be concatenated: one-hot node labels, the node
    attributes, one-hot degrees (as ``node_attributes`` and ``degree_features`` ask), or a constant 1."""
    feats = []
    has_labels = f("node_labels").is_file()
    if has_labels:
        nl = _read_rows(f("node_labels"), int, 1)[:, 0]
        if len(nl) != n:
            raise TUFormatError(f"{f('node_labels')}: {len(nl)} lines for {n} nodes")
        nl = nl - nl.min()
        feats.append(np.eye(int(nl.max()) + 1, dtype=np.float32)[nl])
    if node_attributes:
        attr = _read_rows(f("node_attributes"), float, None)
        if len(attr) != n:
            raise TUFormatError(f"{f('node_attributes')}: {len(attr)} lines for {n} nodes")
        feats.append(attr)
    if degree_features == "always" or (degree_features == "auto" and not has_labels):
        deg = np.bincount(edge_index[0], minlength=n)
        feats.append(np.eye(int(deg.max()) + 1, dtype=np.float32)[deg])
    if not feats:
        feats.append(np.ones((n, 1), dtype=np.float32))
    return feats
