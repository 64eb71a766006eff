"""A resumable results ledger: one JSON line per finished cell of an experiment grid, below a first
line naming the setup every record of the folder shares (``{"ledger": 1, "setup": {...}}``). How a
folder refuses another setup, skips the cells it holds and shares them between processes (a
``flock`` for appends, claim files for cells): docs/cli.md (``qt-hard grid``) and
docs/reproductions/k-vs-n.md. Each record is ``fsync``-ed before ``append`` returns, so a crash loses
at most the cell that was running; a writer killed in the middle of a write (where appends are not
atomic) leaves a last line without its newline, which readers ignore and the next ``append`` cuts
off first. A bad line anywhere else is an error naming the file and the line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from qt_hard.errors import UserError

__all__ = [
    "VERSIONED",
    "Ledger",
    "LedgerError",
    "git_commit",
    "library_versions",
    "measurement_stamp",
    "provenance",
]

FORMAT = 1


class LedgerError(UserError, ValueError):
    """A results folder that cannot be used as asked: another setup, or a damaged file."""


def _canonical(obj):
    """``obj`` as JSON reads it back (tuples become lists, keys strings), for comparisons."""
    return json.loads(json.dumps(obj, sort_keys=True))


class Ledger:
    """The records of one results folder (see the module docstring).

    Args:
        folder: the folder; ``results.jsonl`` (``name``) lives in it. Created when missing.
        key: the record fields that identify a cell, e.g. ``("row", "dataset", "repeat")``.
        setup: what all records of the folder share (JSON-serializable). Written with the first
            record; a folder holding another setup raises :class:`LedgerError`. ``None`` opens
            the folder as it is, for reading only (:attr:`setup` is then the stored one).
        name: the file name.
        fields: the fields every record must have besides the key (what the tables read); a record
            without one is a damaged ledger, refused naming its line.
        check: what else a record must hold (a task in its results, say): ``check(record)`` says what
            it lacks, or None; a record that lacks something is refused as one without a field is.
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        key: Sequence[str],
        setup: dict | None = None,
        name: str = "results.jsonl",
        fields: Sequence[str] = (),
        check: Callable[[dict], str | None] | None = None,
    ):
        if not key:
            raise ValueError("a ledger needs at least one key field")
        self.folder = Path(folder)
        self.path = self.folder / name
        self.key = tuple(key)
        self.fields = tuple(fields)
        self.check = check
        self._read_only = setup is None
        stored = self._stored_setup()
        if setup is None:
            self.setup = stored
            return
        self.setup = _canonical(setup)
        if stored is not None and stored != self.setup:
            differ = sorted(k for k in set(stored) | set(self.setup) if stored.get(k) != self.setup.get(k))
            detail = "; ".join(f"{k}: {stored.get(k)!r} there, {self.setup.get(k)!r} here" for k in differ)
            raise LedgerError(f"{self.path} holds results of another setup ({detail}); use another output folder")

    # ------------------------------------------------------------------ reading
    def _lines(self) -> list[str]:
        """The complete lines of the file (a last line without its newline is left out); a line that
        is not UTF-8 text is a ``LedgerError`` naming it."""
        if not self.path.is_file():
            return []
        raw = self.path.read_bytes()
        lines = raw[: raw.rfind(b"\n") + 1].split(b"\n")[:-1]
        out = []
        for no, line in enumerate(lines, start=1):
            try:
                out.append(line.decode("utf-8"))
            except UnicodeDecodeError as err:
                raise LedgerError(
                    f"{self.path}:{no}: not UTF-8 text (byte {err.start} of the line); the ledger is damaged"
                ) from None
        return out

    def _stored_setup(self) -> dict | None:
        lines = self._lines()
        if not lines:
            return None
        try:
            head = json.loads(lines[0])
        except json.JSONDecodeError:
            head = None
        if not isinstance(head, dict) or head.get("ledger") != FORMAT or not isinstance(head.get("setup"), dict):
            raise LedgerError(
                f'{self.path}:1 is not a results ledger header ({{"ledger": {FORMAT}, "setup": {{...}}}})'
            )
        return head["setup"]

    def records(self) -> list[dict]:
        """Every complete record, in the order they were appended (a cell may appear more than
        once when it was run again; :meth:`latest` keeps its last record)."""
        return self._parse(self._lines())

    def _parse(self, lines: list[str]) -> list[dict]:
        """The records of the file's complete ``lines`` (the header first), each checked as :meth:`records` says."""
        out = []
        for no, line in enumerate(lines[1:], start=2):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise LedgerError(f"{self.path}:{no}: not a JSON record ({err.msg})") from None
            if not isinstance(rec, dict):
                raise LedgerError(f"{self.path}:{no}: not a JSON object")
            missing = [k for k in (*self.key, *self.fields) if k not in rec]
            problem = f"the record lacks the field(s) {missing}" if missing else self.check and self.check(rec)
            if problem:
                raise LedgerError(f"{self.path}:{no}: {problem}; the ledger is damaged")
            out.append(rec)
        return out

    def key_of(self, record: dict) -> tuple:
        """The cell key of ``record``: its ``key`` fields, as JSON reads them back."""
        missing = [k for k in self.key if k not in record]
        if missing:
            raise LedgerError(f"record lacks the key field(s) {missing}: {record!r}")
        return tuple(_canonical([record[k] for k in self.key]))

    def done(self) -> set[tuple]:
        """The keys of the cells that have a record."""
        return {self.key_of(r) for r in self.records()}

    def latest(self) -> list[dict]:
        """One record per cell, the last one appended, in the order the cells first appeared."""
        merged: dict[tuple, dict] = {}
        for r in self.records():
            merged[self.key_of(r)] = r
        return list(merged.values())

    # ------------------------------------------------------------------ writing
    def append(self, record: dict) -> None:
        """Add one finished cell's record: one ``O_APPEND`` write of a whole line (the setup
        header first when the file is new), ``fsync``-ed, under an exclusive lock of the file."""
        if self._read_only:
            raise LedgerError(f"{self.path} was opened without a setup (read only)")
        self.key_of(record)
        missing = [k for k in self.fields if k not in record]
        if missing:
            raise LedgerError(f"record lacks the field(s) {missing}: {record!r}")
        line = json.dumps(record, sort_keys=True) + "\n"
        if "\n" in line[:-1]:  # json.dumps escapes newlines inside strings; this cannot happen
            raise LedgerError("a record must serialize to one line")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = self._open_locked()
        except OSError as err:  # a full disk or a quota where the ledger is created: one line
            raise LedgerError(f"{self.path}: the record could not be appended ({err.strerror or err})") from None
        try:
            size = self._cut_torn_tail(fd, os.fstat(fd).st_size)
            if size:
                # Another process may have created the file since this ledger was opened.
                stored = self._stored_setup()
                if stored is not None and stored != self.setup:
                    raise LedgerError(f"{self.path} holds results of another setup; use another output folder")
            else:
                line = json.dumps({"ledger": FORMAT, "setup": self.setup}, sort_keys=True) + "\n" + line
            self._write_whole(fd, size, line.encode("utf-8"))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _open_locked(self) -> int:
        """The file at :attr:`path` (created when missing), opened for appending and held under an exclusive
        lock; opened again when a :meth:`rewrite` replaced it while this waited for the lock."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            if self._still_the_file(fd):
                return fd
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _still_the_file(self, fd: int) -> bool:
        """Whether ``fd`` is the file now at :attr:`path` (not one :meth:`rewrite` has replaced)."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)

    def rewrite(self, transform: Callable[[dict], dict]) -> int:
        """Replace every record by ``transform(record)`` (a change of form, such as packing a field;
        the keys must stay), keeping the header: the new file is written whole beside the old, ``fsync``-ed
        and renamed over it under the file's exclusive lock, so a reader sees the old file or the new one and
        an :meth:`append` waiting for the lock appends to the new one. Refused while a cell is claimed (a
        process of this machine running it, or one of another machine), since that process's record is
        the last line it expects to append to. Returns the records rewritten."""
        if self._read_only:
            raise LedgerError(f"{self.path} was opened without a setup (read only)")
        held = self._live_claims()
        if held:
            raise LedgerError(f"{self.path}: cells are being run ({', '.join(held[:3])}); rewrite it when they end")
        fd = os.open(self.path, os.O_RDONLY)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.rewrite")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            lines = self._lines()
            records = self._parse(lines)
            new = [transform(dict(r)) for r in records]
            for old, rec in zip(records, new):
                if self.key_of(rec) != self.key_of(old):
                    raise LedgerError(f"rewrite changed a record's key {self.key_of(old)} to {self.key_of(rec)}")
            body = "".join(json.dumps(r, sort_keys=True) + "\n" for r in new)
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(lines[0] + "\n" + body)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        return len(new)

    def _live_claims(self) -> list[str]:
        """The names of the claims in ``claims/`` whose process is not known to be gone."""
        claims = self.folder / "claims"
        if not claims.is_dir():
            return []
        host = socket.gethostname()
        return sorted(p.name for p in claims.iterdir() if not p.name.startswith(".") and not self._stale(p, host))

    def _write_whole(self, fd: int, size: int, data: bytes) -> None:
        """Append ``data`` (whole lines) at ``size`` and ``fsync``; should the write fail (a full disk,
        a quota), the file is cut back to ``size``, so that no part of the record stays, and the
        failure is a ``LedgerError`` (a one-line refusal) naming the file."""
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]  # a short write continues where it stopped
            os.fsync(fd)
        except OSError as err:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass  # the torn tail is cut by the next append and ignored by readers
            raise LedgerError(
                f"{self.path}: the record could not be appended ({err.strerror or err}); the ledger holds "
                "the records before it, and a rerun runs this cell again"
            ) from None

    @staticmethod
    def _cut_torn_tail(fd: int, size: int) -> int:
        """Truncate a last line that lacks its newline (a writer died mid-write); the new size."""
        if size == 0:
            return 0
        block = min(size, 1 << 16)
        tail = os.pread(fd, block, size - block)
        if tail.endswith(b"\n"):
            return size
        nl = tail.rfind(b"\n")
        while nl < 0 and block < size:  # a torn line longer than the block read
            block = min(size, block * 4)
            tail = os.pread(fd, block, size - block)
            nl = tail.rfind(b"\n")
        size = size - block + nl + 1
        os.ftruncate(fd, size)
        return size

    # ------------------------------------------------------------------ sharing cells
    @contextlib.contextmanager
    def claim(self, key: Sequence) -> Iterator[bool]:
        """Hold cell ``key`` while running it: yields True when this process got it, False when
        a live process (on this machine, or any process on another one) holds it. The claim is a
        file in ``claims/`` naming host and pid, put in place whole (a hard link of a written
        file, which fails when the claim exists); a claim whose process on this machine is gone
        is taken over; the claim is removed on leaving the block."""
        from qt_hard.files import write_failed

        claims = self.folder / "claims"
        path = claims / re.sub(r"[^A-Za-z0-9._=-]+", "_", "__".join(str(k) for k in _canonical(list(key))))
        host = socket.gethostname()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        got = False
        try:
            claims.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"host": host, "pid": os.getpid(), "since": time.time()}))
            for _ in range(2):  # a stale claim is removed once, then taken
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    if not self._stale(path, host):
                        break
                    path.unlink(missing_ok=True)
                    continue
                got = True
                break
        except OSError as err:  # a full disk, a quota: one line, and no half claim left in claims/
            raise write_failed(err, path, "claim of the cell") from None
        finally:
            tmp.unlink(missing_ok=True)
        try:
            yield got
        finally:
            if got:
                path.unlink(missing_ok=True)

    @staticmethod
    def _stale(path: Path, host: str) -> bool:
        """Whether a claim's process is known to be gone: only a process of this machine can be
        checked (signal 0 checks without sending); a claim that vanished meanwhile counts as gone,
        so the next try takes the cell."""
        try:
            info = json.loads(path.read_text())
            pid = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return True  # released meanwhile, or not a claim this module wrote
        if info.get("host") != host:
            return False
        if pid <= 0:
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except (PermissionError, OverflowError):
            pass  # another user's process, or an id no process can have: left alone
        return False


def git_commit(where: str | os.PathLike) -> str:
    """Short commit of the checkout holding ``where`` (``+dirty`` with uncommitted changes to
    tracked files outside ``results/``: a grid appending to its committed ledger still ran the
    committed code), for a record's provenance; ``QT_HARD_GIT_COMMIT`` names it where the code
    travelled without its ``.git`` (a copied tree); "unknown" without git."""
    import subprocess

    if os.environ.get("QT_HARD_GIT_COMMIT"):
        return os.environ["QT_HARD_GIT_COMMIT"]

    def git(*args):
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=where, timeout=10)

    try:
        head = git("rev-parse", "--short", "HEAD")
        if head.returncode != 0:
            return "unknown"
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ":(top,exclude)results").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty else "")


# The libraries whose versions a measurement depends on, as their distributions are named.
VERSIONED = ("torch", "transformers", "sentence-transformers", "numpy")


def library_versions() -> dict:
    """{distribution: version} of :data:`VERSIONED` as installed (read from the package metadata,
    nothing imported); "not installed" for one that is not."""
    from importlib import metadata

    out = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def provenance(where: str | os.PathLike) -> dict:
    """Where, when and with what a record was measured: the machine, the UTC time, the code's commit
    (:func:`git_commit` of ``where``) and the versions of the libraries it ran on
    (:func:`library_versions`)."""
    import platform
    from datetime import datetime, timezone

    return {
        "machine": f"{platform.machine()} {os.cpu_count()} cores {platform.processor() or ''}".strip(),
        "utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": git_commit(where),
        "versions": library_versions(),
    }


def measurement_stamp(where: str | os.PathLike, argv: list[str] | None = None) -> dict:
    """A benchmark row's context: :func:`provenance`, torch's version and thread count, the system's
    1-minute load average at the time and the command that produced it (``argv``, default ``sys.argv``)."""
    import shlex
    import sys

    import torch

    argv = sys.argv if argv is None else argv
    return {
        **provenance(where),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "command": shlex.join(["python", *argv]),
    }
