"""Import a file of ``scripts/`` as a module, for the tests of the experiment launchers
and benchmarks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str, folder: str = "scripts"):
    """``<folder>/<name>.py`` (``scripts/`` by default) as module ``name``, registered in
    ``sys.modules`` (worker processes that unpickle its functions find it there), with the folder on
    ``sys.path`` as running the script puts it there."""
    here = str(ROOT / folder)
    if here not in sys.path:  # as `python scripts/NAME.py` has it: the script's folder first (its helpers)
        sys.path.insert(0, here)
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def senteval_root_or_skip(task: str = "CR"):
    """The data root, or skip the calling test (fail it under CI) when it has no ``senteval/<task>``."""
    import _data

    return _data.dataset("senteval", task).parents[1]
