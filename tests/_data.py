"""The real datasets some tests read, found through the library's data root (``qt_hard.paths``).

A dataset missing from the data root skips the test that needs it, except under ``CI=true``, where
it fails the test: a green CI run cannot hide a dataset that was never there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qt_hard.paths import data_root


def in_ci() -> bool:
    """Whether the tests run under CI (``CI`` set to true, 1 or yes, as CI services and ``.ci/run`` do)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(what: str):
    """Skip the calling test because ``what`` is not under the data root, or fail it under CI."""
    message = f"no {what} under the data root (set QT_HARD_DATA, or fetch it with `qt-hard data get`)"
    if in_ci():
        pytest.fail(f"{message}; under CI=true a missing dataset is a failure", pytrace=False)
    pytest.skip(message)


def dataset(*parts: str) -> Path:
    """``<data root>/<parts...>``, which must exist (else :func:`missing`)."""
    root = data_root()
    path = root.joinpath(*parts) if root is not None else None
    if path is None or not path.exists():
        missing("/".join(parts) if parts else "data root")
    return path
