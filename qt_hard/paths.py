"""Where qt-hard finds its data.

``QT_HARD_DATA`` points at a data root laid out like ``../shared/data`` (``senteval/``, ``books/``,
``wikipedia/``, ``tu/``, ``cifar10/``). When it is unset, ``../shared/data`` next to the project
checkout is used if it exists.
"""

from __future__ import annotations

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent


def data_root(required: bool = False) -> Path | None:
    """Return the data root, or None when there is none (raise if ``required``)."""
    env = os.environ.get("QT_HARD_DATA")
    if env:
        root = Path(env).expanduser()
        if not root.is_dir():
            raise FileNotFoundError(f"QT_HARD_DATA={env!r} is not a directory")
        return root
    default = _REPO.parent / "shared" / "data"
    if default.is_dir():
        return default
    if required:
        raise FileNotFoundError(
            "no data root: set QT_HARD_DATA to a folder laid out like ../shared/data "
            "(senteval/, books/, wikipedia/, tu/, cifar10/)"
        )
    return None


def data_path(*parts: str, required: bool = True) -> Path | None:
    """Path below the data root, e.g. ``data_path('senteval', 'MR')``."""
    root = data_root(required=required)
    if root is None:
        return None
    p = root.joinpath(*parts)
    if required and not p.exists():
        raise FileNotFoundError(f"{p} does not exist (data root {root})")
    return p
