"""Writing files whole: a temporary file beside the target, flushed to disk, renamed over it.

Every file qt-hard writes that a later step reads (checkpoints, result files, embedding and token
caches, run configs) goes through :func:`atomic_path` or :func:`atomic_folder`, so that an
interrupted or failed write never leaves a half file under the real name and never replaces the
previous one:

* the content is written to ``.NAME.partial-XXXX`` (or a folder of that name) in the target's
  folder, so that the rename stays on one file system;
* it is ``fsync``-ed (every file of a folder, then the folder), renamed over the target, and the
  parent folder is ``fsync``-ed so that the rename itself survives a crash;
* on any failure the temporary file or folder is removed, and an ``OSError`` (a full disk, a
  quota, a read-only file system) becomes :class:`~qt_hard.errors.WriteFailedError`, one line
  naming what could not be written.

A cache that several processes may want at once (the ranks of one launch, or runs sharing a token
cache) is built under :func:`build_lock`: the first process builds it, the others wait and then
read the finished one; none reads or replaces a cache that another is building.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from qt_hard.errors import WriteFailedError

log = logging.getLogger(__name__)

__all__ = [
    "PARTIAL",
    "atomic_path",
    "atomic_folder",
    "file_key",
    "write_text",
    "write_failed",
    "sync_tree",
    "build_lock",
]

PARTIAL = ".partial-"


def write_failed(err: OSError, path: str | os.PathLike, what: str) -> WriteFailedError:
    """The one-line error of a failed write of ``what`` at ``path``."""
    reason = err.strerror or type(err).__name__
    return WriteFailedError(f"{what} {path} could not be written ({reason}); nothing earlier was replaced")


@contextmanager
def _named_write_failure(path: Path, what: str) -> Iterator[None]:
    """While the block runs, an ``OSError`` becomes :func:`write_failed` of ``what`` at ``path`` (one
    already a ``WriteFailedError`` goes on as it is)."""
    try:
        yield
    except WriteFailedError:
        raise
    except OSError as err:
        raise write_failed(err, path, what) from None


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_tree(folder: Path) -> None:
    """``fsync`` every file below ``folder``, then every folder of it, deepest first."""
    folders = [folder]
    for root, dirs, files in os.walk(folder):
        for name in files:
            _fsync_path(Path(root) / name)
        folders += [Path(root) / d for d in dirs]
    if os.name == "posix":
        for d in reversed(folders):
            _fsync_path(d, directory=True)


def _sync_parent(path: Path) -> None:
    if os.name == "posix":
        _fsync_path(path.parent, directory=True)


def _temporary_name(path: Path) -> str:
    # The target's suffix stays last: numpy appends ".npy"/".npz" to a name that lacks it.
    return f".{path.name}{PARTIAL}{os.getpid()}-{os.urandom(3).hex()}{path.suffix}"


@contextmanager
def atomic_path(path: str | os.PathLike, what: str = "file") -> Iterator[Path]:
    """A temporary path beside ``path`` for the caller to write the file to; on leaving the block
    it is flushed and renamed to ``path``. On an exception the temporary file is removed and
    ``path`` is left as it was; an ``OSError`` is raised as ``WriteFailedError`` naming ``what``."""
    path = Path(path)
    tmp = None
    try:
        with _named_write_failure(path, what):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(_temporary_name(path))
            yield tmp
            _fsync_path(tmp)
            os.replace(tmp, path)
            tmp = None
            _sync_parent(path)
    finally:
        if tmp is not None:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass


def csv_text(fields, rows, lineterminator: str = "\r\n", header: bool = True) -> str:
    """``rows`` (mappings) as CSV text: the header ``fields`` (unless ``header`` is False), then each
    row's values of ``fields`` (other keys ignored, missing ones empty), in ``csv``'s dialect. The one
    CSV writer of the library: metrics files, results tables, the appended tracker rows."""
    import csv
    import io

    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, list(fields), extrasaction="ignore", lineterminator=lineterminator)
    if header:
        w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def write_text(path: str | os.PathLike, text: str, what: str = "file") -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole (:func:`atomic_path`)."""
    with atomic_path(path, what) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


@contextmanager
def atomic_folder(path: str | os.PathLike, what: str = "folder", replace: bool = True) -> Iterator[Path]:
    """A temporary folder beside ``path`` for the caller to fill; on leaving the block its files are
    flushed and it is renamed to ``path`` (an existing ``path`` is removed first when ``replace``,
    else the existing one is kept and the new one dropped). On an exception the temporary folder is
    removed; an ``OSError`` is raised as ``WriteFailedError`` naming ``what``."""
    path = Path(path)
    tmp = None
    try:
        with _named_write_failure(path, what):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}{PARTIAL}", dir=path.parent))
            yield tmp
            sync_tree(tmp)
            old = None
            if path.exists():
                if not replace:
                    return
                # Moved aside, not deleted first: until the new folder is in place the old one is whole.
                old = path.with_name(f".{path.name}.old-{os.getpid()}-{os.urandom(3).hex()}")
                os.replace(path, old)
            os.replace(tmp, path)
            tmp = None
            _sync_parent(path)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def build_lock(path: str | os.PathLike, what: str = "cache") -> Iterator[None]:
    """Hold an exclusive lock on ``path``'s build while the block runs: one process at a time builds
    (or checks, then builds) the cache at ``path``; the others block here until it is done.

    The lock is an ``flock`` of ``.NAME.lock`` beside ``path`` (left in place after a build: removing it
    would let a waiting process and a newcomer lock two different files; a build that fails removes
    the lock it made and the folders made for it, so that a refused command leaves nothing). The caller checks for a finished
    ``path`` again inside the block, so a process that waited reads what the first one built
    instead of building it again. A process that has to wait says so once on stderr. Without
    ``fcntl`` (not POSIX) the block runs unlocked."""
    path = Path(path)
    try:
        import fcntl
    except ImportError:
        yield
        return
    made = [d for d in (path.parent, *path.parent.parents) if not d.exists()]  # deepest first
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")
    new_lock = not lock.exists()
    with _named_write_failure(lock, f"lock of {what}"):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process to finish the %s %s", what, path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    except BaseException:
        # A build refused (a bad book, a signal) leaves nothing behind: not the lock this process
        # made, nor the folders made for it (a process still waiting on the lock builds on its own).
        if new_lock:
            lock.unlink(missing_ok=True)
            for folder in made:
                try:
                    folder.rmdir()
                except OSError:
                    break
        raise
    finally:
        os.close(fd)  # closing drops the lock


def file_key(path: str | os.PathLike) -> str:
    """A short hash of a file's identity (its resolved path, size and modification time): the part of
    a cache's name that says which source it was made from, so that another or a changed source is
    never served an old build."""
    import hashlib

    p = Path(path).expanduser().resolve()
    st = p.stat()
    return hashlib.sha1(f"{p}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:10]
