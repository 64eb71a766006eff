"""The text pipeline behind ``pipeline: text`` (the default), per ``qt_hard.training.pipeline``: its
config sections, build, save and readouts; the modules it draws on: docs/architecture.md (``qt_hard/text/``).
"""

from __future__ import annotations

from pathlib import Path

from qt_hard.encoders.config import ModelConfig
from qt_hard.text.config import DataConfig, EvalConfig, ObjectiveConfig
from qt_hard.training.pipeline import Pipeline, PipelineRun


class TextPipeline(Pipeline):
    sections = {"model": ModelConfig, "data": DataConfig, "objective": ObjectiveConfig, "eval": EvalConfig}

    def validate(self, cfg) -> None:
        """Refuse a bad objective and missing data paths before any data is read."""
        from qt_hard.sizes import refuse_unallocatable
        from qt_hard.text.build import check_data_paths
        from qt_hard.text.config import memory_needs
        from qt_hard.text.objectives import check_objective

        refuse_unallocatable(memory_needs(cfg))  # before the objective's probe allocates a batch's scores
        check_objective(cfg)
        check_data_paths(cfg)
        if cfg.eval.readouts and cfg.data.kind not in ("wiki", "synthetic"):
            raise ValueError(f"eval.readouts needs labelled pair data (wiki, synthetic), not {cfg.data.kind!r}")

    def ddp_kwargs(self, cfg) -> dict:
        # AutoModel's pooler is not used by mean pooling: DDP must expect parameters without grads.
        return {"find_unused_parameters": True} if cfg.model.kind == "hf" else {}

    def build(self, cfg, out: Path) -> PipelineRun:
        from qt_hard.text.objectives import Objective
        from qt_hard.text.build import build_run

        run = build_run(cfg, out)

        def save(module, folder: Path) -> None:
            # A sentence-transformers folder (qt_hard.encoders.st_folder) with the run's model card.
            from qt_hard.text.card import model_card

            run.make_encoder(module).save(folder, card=lambda modules: model_card(cfg, modules))

        evaluate = None
        if cfg.eval.readouts:
            from qt_hard.text.readouts import make_readouts

            evaluate = make_readouts(cfg, run.split, run.task)
        return PipelineRun(
            run.module, run.task, Objective(cfg.objective, run.pair_data), save, evaluate, cfg.eval.every
        )


PIPELINE = TextPipeline()
