"""The training objectives, built only from ``qt_hard.losses`` (no private loss here).

* Quick-Thoughts (ordered sentences): ``ContextLoss`` on (f(s_i), g(s_j)) of B consecutive
  sentences, positives the +-c neighbours of the same document (Logeswaran & Lee 2018; Robinson
  et al. 2021, App. D.3: unnormalized embeddings, so hard weights name a ``clip`` reading; see ``HardWeighting``).
* Pairs (Wiki-N, synthetic): ``ContrastiveLoss`` in the two-view layout; with
  ``include_positive: false, temperature: 1, normalize: false`` it is Ash et al.'s App. D.1 loss,
  ``k`` negatives per anchor out of the 2(B-1) candidates, ``collision_free`` using labels.

Config values of ``objective.options`` that are mappings with a ``schedule`` key become
``qt_hard.schedules`` objects, driven by ``set_progress(step / total)``.

Mixed precision: the encoders run under the caller's autocast, the loss in float32 with autocast off
(docs/guides/text-training.md, "Mixed precision").

A transformer (model.kind "hf") has no f/g pair: on ordered sentences the one encoder serves as
both f and g (scores z_i . z_j, symmetric), as ``batches.two_views`` does for every non-QT model.
"""

from __future__ import annotations

import torch

from qt_hard.text.config import ObjectiveConfig
from qt_hard.text.batches import single_view, two_views
from qt_hard.training.pipeline import LossObjective


class Objective(LossObjective):
    """loss = objective(module, batch, generator); ``set_progress(p)`` before each step."""

    def __init__(self, cfg: ObjectiveConfig, pair_data: bool):
        from qt_hard.losses import ContextLoss, ContrastiveLoss

        self.pair_data = pair_data
        common = dict(temperature=cfg.temperature, k=cfg.k, normalize=cfg.normalize)
        common["include_positive"] = cfg.include_positive
        if pair_data:
            self.loss = ContrastiveLoss(cfg.chosen(), collision_free=cfg.collision_free, **common)
        else:
            if cfg.collision_free:
                raise ValueError("objective.collision_free needs class labels: use it with pair data (wiki, synthetic)")
            self.loss = ContextLoss(cfg.chosen(), context=cfg.context, **common)

    def __call__(self, module: torch.nn.Module, batch: dict, generator: torch.Generator | None = None) -> torch.Tensor:
        """Scalar float32 loss of one batch (encoders under the caller's autocast, loss in float32)."""
        self.loss.generator = generator
        if self.pair_data:
            z1 = single_view(module, batch["a"])
            z2 = single_view(module, batch["b"])
            with float32_loss(z1):
                return self.loss(z1.float(), z2.float(), labels=batch.get("labels"))
        f_emb, g_emb = two_views(module, batch["x"])
        with float32_loss(f_emb):
            return self.loss(f_emb.float(), g_emb.float(), doc_ids=batch["doc_ids"])


def float32_loss(like: torch.Tensor):
    """Context that turns autocast off on ``like``'s device, so the loss core (score matmul,
    weights, logsumexp over candidates) runs in the float32 of its inputs."""
    return torch.autocast(device_type=like.device.type, enabled=False)


def check_objective(cfg) -> None:
    """Build the objective of config ``cfg`` with the core's own builders and take one loss of
    each end of training (progress 0 and 1) on random embeddings of the config's global batch
    size, before any data is read.

    Whatever the core refuses (an unknown strategy, an option it does not read, ``tau_plus``
    outside [0, 1), a temperature <= 0, a ring band out of order, more negatives than a batch has
    candidates) is refused here as a ``ConfigError`` naming the objective, instead of after the
    data is prepared or at the first step. The embeddings are (B, 8) Gaussian; one document for
    ordered sentences (the fewest candidates per anchor), distinct labels for pairs."""
    from qt_hard.training.config import ConfigError

    obj = cfg.objective
    pair_data = cfg.data.kind in ("wiki", "synthetic")
    try:
        objective = Objective(obj, pair_data)
        gen = torch.Generator().manual_seed(0)
        B = cfg.train.batch_size
        z1, z2 = torch.randn(B, 8, generator=gen), torch.randn(B, 8, generator=gen)
        objective.loss.generator = gen
        with torch.no_grad():
            for progress in (0.0, 1.0):
                objective.set_progress(progress)
                if pair_data:
                    objective.loss(z1, z2, labels=torch.arange(B))
                else:
                    objective.loss(z1, z2, doc_ids=torch.zeros(B, dtype=torch.long))
    except (ValueError, TypeError) as err:
        raise ConfigError(
            f"config section 'objective' (negatives={obj.negatives!r}, temperature={obj.temperature}, "
            f"k={obj.k}, options={obj.options}): {err}"
        ) from None
