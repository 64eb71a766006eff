"""The graph pipeline behind ``pipeline: graph`` (``qt_hard.training.pipeline``): InfoGraph on a TU dataset
with any negatives of the core (Sun et al. 2020; Robinson et al. 2021, section 5.2 and App. B, D.2;
Jiang et al. 2022, Table II; Jiang, Ishwar & Aeron 2023, Table V). Its objective (the core's
``LocalGlobalLoss``, in float32 with autocast off), saved files and SVM readout: docs/guides/graphs.md;
``OUT/final/model.json`` holds the sizes and the feature count.

Batches: the graphs in a permutation drawn from (seed, epoch), cut into batches of ``train.batch_size``
graphs, the last one shorter (as the papers' DataLoader); process r of W takes the r-th of W near-equal
parts of a batch. Importable without ``datasets``, ``nltk`` or ``transformers``; needs ``torch_geometric``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

from qt_hard.errors import ConfigError
from qt_hard.graph.config import GraphDataConfig, GraphEvalConfig, GraphModelConfig, GraphObjectiveConfig
from qt_hard.training.pipeline import LossObjective, Pipeline, PipelineRun


def _data_list(graphs):
    """One torch_geometric ``Data`` per graph (features, local edge ids, label)."""
    from torch_geometric.data import Data

    offsets = graphs.node_offsets
    # Edges are sorted by source node and a graph's nodes are contiguous: a graph's edges are a slice.
    edge_ptr = np.searchsorted(graphs.edge_index[0], offsets)
    x, ei, y = torch.from_numpy(graphs.x), torch.from_numpy(graphs.edge_index), torch.from_numpy(graphs.y)
    return [
        Data(
            x=x[offsets[g] : offsets[g + 1]],
            edge_index=ei[:, edge_ptr[g] : edge_ptr[g + 1]] - int(offsets[g]),
            y=y[g : g + 1],
        )
        for g in range(graphs.num_graphs)
    ]


def collate(data_list) -> dict:
    """A torch_geometric ``Batch`` of the graphs as the loop's batch dict."""
    from torch_geometric.data import Batch

    b = Batch.from_data_list(data_list)
    return {"x": b.x, "edge_index": b.edge_index, "batch": b.batch, "y": b.y, "num_graphs": int(b.num_graphs)}


class GraphTask:
    """Batches of graphs as a pure function of (seed, step)."""

    sentences_per_row = 1

    def __init__(self, data_list, batch_size: int, seed: int):
        if len(data_list) < batch_size:
            raise ConfigError(f"{len(data_list)} graphs, fewer than train.batch_size={batch_size}")
        self.data, self.batch_size, self.seed = data_list, batch_size, seed
        self._epoch, self._perm = None, None

    def batches_per_epoch(self) -> int:
        return math.ceil(len(self.data) / self.batch_size)

    def global_rows(self, step: int) -> np.ndarray:
        nb = self.batches_per_epoch()
        epoch, pos = divmod(step, nb)
        if self._epoch != epoch:
            self._epoch, self._perm = epoch, np.random.default_rng([self.seed, epoch, 7]).permutation(len(self.data))
        return self._perm[pos * self.batch_size : (pos + 1) * self.batch_size]

    def local_batch(self, step: int, rank: int, world: int) -> dict:
        rows = np.array_split(self.global_rows(step), world)[rank]
        return collate([self.data[i] for i in rows])


class GraphObjective(LossObjective):
    """loss = objective(module, batch, generator): LocalGlobalLoss on (local, global) discriminator outputs."""

    def __init__(self, cfg: GraphObjectiveConfig):
        from qt_hard.losses import LocalGlobalLoss

        self.loss = LocalGlobalLoss(cfg.chosen(), temperature=cfg.temperature, normalize=cfg.normalize, k=cfg.k)

    def __call__(self, module, batch: dict, generator=None) -> torch.Tensor:
        self.loss.generator = generator
        local, glob = module(batch["x"], batch["edge_index"], batch["batch"], batch["num_graphs"])
        with torch.autocast(device_type=local.device.type, enabled=False):
            return self.loss(local.float(), glob.float(), batch["batch"], labels=batch["y"])


def embed_all(module, data_list, batch_size: int = 128) -> np.ndarray:
    """(G, D) frozen graph embeddings in dataset order, eval mode (batch norm's running statistics);
    the module's mode is restored afterwards."""
    was_training = module.training
    module.eval()
    device = next(module.parameters()).device
    out = []
    try:
        for start in range(0, len(data_list), batch_size):
            b = collate(data_list[start : start + batch_size])
            out.append(
                module.embed(b["x"].to(device), b["edge_index"].to(device), b["batch"].to(device), b["num_graphs"])
                .float()
                .cpu()
                .numpy()
            )
    finally:
        module.train(was_training)
    return np.concatenate(out)


class GraphPipeline(Pipeline):
    sections = dict(model=GraphModelConfig, data=GraphDataConfig, objective=GraphObjectiveConfig, eval=GraphEvalConfig)

    def validate(self, cfg) -> None:
        """Build the objective with the core's builder before any graph is read, so that a strategy
        or option the core refuses is a config error at once."""
        try:
            GraphObjective(cfg.objective)
        except (ValueError, TypeError) as err:
            raise ConfigError(
                f"config section 'objective' (negatives={cfg.objective.negatives!r}, "
                f"options={cfg.objective.options}): {err}"
            ) from None

    def build(self, cfg, out: Path) -> PipelineRun:
        from qt_hard.graph.evaluate import svm_accuracy
        from qt_hard.graph.model import InfoGraph
        from qt_hard.graph.tu import read_tu
        from qt_hard.paths import data_path

        d = cfg.data
        graphs = read_tu(d.path or str(data_path("tu")), d.name, d.node_attributes, d.degree_features)
        data_list = _data_list(graphs)
        m = cfg.model
        module = InfoGraph(graphs.num_features, m.hidden, m.layers, m.batch_norm)
        task = GraphTask(data_list, cfg.train.batch_size, cfg.train.seed)
        labels = graphs.y

        def save(module, folder: Path) -> None:
            folder.mkdir(parents=True, exist_ok=True)
            torch.save(module.state_dict(), folder / "model.pt")
            meta = {
                "format": "qt-hard-infograph",
                "version": 1,
                "num_features": graphs.num_features,
                "model": {"hidden": m.hidden, "layers": m.layers, "batch_norm": m.batch_norm},
                "data": cfg.data.name,
            }
            (folder / "model.json").write_text(json.dumps(meta, indent=1) + "\n")
            np.save(folder / "embeddings.npy", embed_all(module, data_list))
            np.save(folder / "labels.npy", labels)

        e = cfg.eval

        # Folds differ between repeats (train.seed) but not between the evaluations of one run.
        svm = dict(folds=e.folds, inner_folds=e.inner_folds, C=e.C, seed=cfg.train.seed * 1000 + e.seed)

        def evaluate(module, step: int) -> dict:
            res = svm_accuracy(embed_all(module, data_list), labels, **svm)
            return {**res, "epoch": round(step / task.batches_per_epoch(), 4)}

        return PipelineRun(
            module,
            task,
            GraphObjective(cfg.objective),
            save,
            evaluate if (e.final or e.every_epochs) else None,
            eval_every=e.every_epochs * task.batches_per_epoch(),
        )


PIPELINE = GraphPipeline()
