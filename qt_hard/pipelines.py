"""Registry of training pipelines: name -> module that defines ``PIPELINE``.

The config's top-level ``pipeline`` key picks one (default ``text``); a dotted module path that is
not a registered name is imported as is, so a pipeline outside this package needs no change here.
The interface a pipeline implements is ``qt_hard.training.pipeline``.
"""

from __future__ import annotations

import importlib

_REGISTRY: dict[str, str] = {
    "text": "qt_hard.text.pipeline",
    "graph": "qt_hard.graph.pipeline",
    "vision": "qt_hard.vision.pipeline",
}


def register_pipeline(name: str, module: str) -> None:
    """Make ``pipeline: name`` in a config load ``module`` (a dotted path defining ``PIPELINE``)."""
    _REGISTRY[name] = module


def pipeline_names() -> list[str]:
    return sorted(_REGISTRY)


def get_pipeline(name: str):
    """The ``PIPELINE`` object of a registered name or a dotted module path."""
    path = _REGISTRY.get(name, name)
    if name not in _REGISTRY and "." not in name:
        raise ValueError(f"unknown pipeline {name!r}; registered: {pipeline_names()} (or a dotted module path)")
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as err:
        if err.name and path.startswith(err.name):
            raise ValueError(f"pipeline {name!r}: module {path!r} not found") from None
        raise
    if not hasattr(module, "PIPELINE"):
        raise ValueError(f"pipeline module {path!r} defines no PIPELINE")
    return module.PIPELINE
