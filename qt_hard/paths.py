"""Where qt-hard finds its data.

The data root is a folder with one sub-folder per dataset (``senteval/``, ``books/``,
``wikipedia/``, ``tu/``, ``cifar10/``, ``bookcorpus/``), each in the layout
``qt-hard data get NAME`` writes. It is, in this order:

1. ``$QT_HARD_DATA`` when it is set (it must be a folder);
2. a per-user cache: ``$XDG_CACHE_HOME/qt-hard`` or ``~/.cache/qt-hard`` on Linux,
   ``~/Library/Caches/qt-hard`` on macOS, ``%LOCALAPPDATA%\\qt-hard\\Cache`` on Windows.

``qt-hard data get`` writes into that root; a loader that finds its dataset missing raises
``DataMissingError`` naming the command that fetches it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from qt_hard.errors import DataMissingError


def user_cache_root() -> Path:
    """The per-user data cache of this platform (it may not exist yet)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "qt-hard" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "qt-hard"
    xdg = os.environ.get("XDG_CACHE_HOME")
    # XDG says a relative XDG_CACHE_HOME is invalid and must be ignored.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "qt-hard"


def default_data_root() -> Path:
    """The root ``qt-hard data get`` writes to: the first of the two rules above (may not exist)."""
    env = os.environ.get("QT_HARD_DATA")
    if env:
        root = Path(env).expanduser()
        if root.exists() and not root.is_dir():
            raise DataMissingError(f"QT_HARD_DATA={env!r} is not a directory")
        return root
    return user_cache_root()


def data_root(required: bool = False) -> Path | None:
    """The data root when it exists, else None (or ``DataMissingError`` when ``required``)."""
    root = default_data_root()
    if root.is_dir():
        return root
    if required:
        raise DataMissingError(
            f"no data root at {root}: fetch the data with `qt-hard data get NAME` "
            "(`qt-hard data list` names the datasets) or set QT_HARD_DATA to a folder that has them"
        )
    return None


def data_path(*parts: str, required: bool = True) -> Path | None:
    """Path below the data root, e.g. ``data_path('senteval', 'MR')``.

    With ``required``, a missing path raises ``DataMissingError`` whose message names the exact
    ``qt-hard data get`` command for the dataset ``parts[0]``."""
    root = default_data_root()
    p = root.joinpath(*parts)
    if p.exists():
        return p
    if not required:
        return p if root.is_dir() else None
    raise DataMissingError(f"{p} does not exist (data root {root}); {get_command(parts[0])}")


def get_command(dataset: str) -> str:
    """The sentence that tells a user how to fetch ``dataset`` into the current data root."""
    return f"fetch it with `qt-hard data get {dataset}`"


def check_output_file(path: str | Path, flag: str) -> Path:
    """Refuse, before any work, an output file (``flag`` names the option) that could not be written
    at the end: a folder, a file under a file, a place the file system refuses. A missing parent is
    fine (the writer creates it); a trial file or folder is created and removed, so nothing is left.
    Returns the path."""
    import tempfile

    from qt_hard.errors import OutputLocationError

    path = Path(path).expanduser()
    if path.is_dir():
        raise OutputLocationError(f"{flag} {path} is a folder; give a file name")
    parent = path.parent
    existing = parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OutputLocationError(f"{flag} {path} cannot be written ({existing} is a file, not a folder)")
    try:
        if existing == parent:
            with tempfile.NamedTemporaryFile(dir=parent, prefix=".qt-hard-probe-"):
                pass
        else:
            first = existing / parent.relative_to(existing).parts[0]
            first.mkdir()
            first.rmdir()
    except OSError as err:
        raise OutputLocationError(f"{flag} {path} cannot be written ({err.strerror})") from None
    return path


def creation_refused(out: Path, existing: Path) -> str | None:
    """Create and remove the first missing folder of ``out`` under its nearest ``existing`` ancestor,
    leaving nothing behind: the reason the file system refuses it (``"<folder>: <strerror>"``), or None.
    Permissions do not tell every refusal (a superuser, a read-only or special file system)."""
    first = existing / out.relative_to(existing).parts[0]
    try:
        first.mkdir()
        first.rmdir()
    except OSError as err:
        return f"{first}: {err.strerror}"
    return None
