"""The data sets ``qt-hard data get`` builds, one module each (docs/architecture.md, "Data"): a module
declares its ``Dataset`` as ``DATASET``; a module whose name starts with ``_`` holds shared helpers.
"""

from __future__ import annotations

import importlib
import pkgutil

from qt_hard.data.sources._common import Dataset


def registered() -> dict[str, Dataset]:
    """Every source module's ``DATASET`` by name (the module's), in the order of the names."""
    found: dict[str, Dataset] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        ds = getattr(module, "DATASET", None)
        if not isinstance(ds, Dataset):
            raise TypeError(f"{module.__name__} declares no DATASET (a helper module's name starts with _)")
        if ds.name != info.name:
            raise ValueError(f"{module.__name__} declares the data set {ds.name!r}, not {info.name!r}")
        found[ds.name] = ds
    return found
