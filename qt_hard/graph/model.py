"""InfoGraph's model (Sun et al. 2020, section 3-4; the setup of Robinson et al. 2021, App. D.2):
a GIN encoder (Xu et al. 2019) and the local/global discriminator networks.

* :class:`GINEncoder`: K GINConv layers (each an MLP Linear-ReLU-Linear), ReLU then batch norm after
  each; node embedding = concat of the K layers' outputs (K * hidden, 96 for K = 3, hidden 32), graph
  embedding = concat of the K sum-pooled layers (``global_add_pool``), same width.
* :class:`Discriminator`: a 3-layer MLP (Linear-ReLU x 3) plus a linear shortcut; InfoGraph's local
  and global networks, whose outputs' inner product is the score T(h_u, H(G)).
* :class:`InfoGraph`: both, Xavier-uniform weights and zero biases as the InfoGraph code initializes
  them. ``forward(x, edge_index, batch, num_graphs) -> (local (n, D), global (g, D))``; the frozen
  embedding for evaluation is the encoder's graph embedding (:meth:`InfoGraph.embed`).
"""

from __future__ import annotations

import torch
from torch import nn


class GINEncoder(nn.Module):
    def __init__(self, num_features: int, hidden: int = 32, layers: int = 3, batch_norm: bool = True):
        super().__init__()
        from torch_geometric.nn import GINConv

        if num_features < 1 or hidden < 1 or layers < 1:
            raise ValueError(f"GIN needs num_features, hidden, layers >= 1, got {num_features}, {hidden}, {layers}")
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i in range(layers):
            mlp = nn.Sequential(
                nn.Linear(num_features if i == 0 else hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden)
            )
            self.convs.append(GINConv(mlp))
            self.norms.append(nn.BatchNorm1d(hidden) if batch_norm else nn.Identity())
        self.out_dim = hidden * layers

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor, num_graphs: int):
        """(graph embeddings (g, K*hidden), node embeddings (n, K*hidden))."""
        from torch_geometric.nn import global_add_pool

        outs = []
        for conv, norm in zip(self.convs, self.norms):
            x = norm(torch.relu(conv(x, edge_index)))
            outs.append(x)
        nodes = torch.cat(outs, dim=1)
        graphs = torch.cat([global_add_pool(h, batch, size=num_graphs) for h in outs], dim=1)
        return graphs, nodes


class Discriminator(nn.Module):
    """``block(x) + shortcut(x)``, block = 3 x (Linear, ReLU), all of width ``dim``."""

    def __init__(self, dim: int):
        super().__init__()
        self.block = nn.Sequential(
            nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU()
        )
        self.shortcut = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x) + self.shortcut(x)


class InfoGraph(nn.Module):
    def __init__(self, num_features: int, hidden: int = 32, layers: int = 3, batch_norm: bool = True):
        super().__init__()
        self.encoder = GINEncoder(num_features, hidden, layers, batch_norm)
        self.local_d = Discriminator(self.encoder.out_dim)
        self.global_d = Discriminator(self.encoder.out_dim)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x, edge_index, batch, num_graphs: int):
        graphs, nodes = self.encoder(x, edge_index, batch, num_graphs)
        return self.local_d(nodes), self.global_d(graphs)

    @torch.no_grad()
    def embed(self, x, edge_index, batch, num_graphs: int) -> torch.Tensor:
        """(g, K*hidden) frozen graph embeddings (the encoder's, as InfoGraph evaluates them)."""
        return self.encoder(x, edge_index, batch, num_graphs)[0]
