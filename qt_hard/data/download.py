"""Downloading and installing datasets: streamed, resumable, verified, atomic (``fetch``, ``install``,
``write_manifest``/``check_manifest``; ``QT_HARD_MIRROR`` redirects every download): docs/guides/data.md.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable

from qt_hard.errors import UserError

MANIFEST = "SHA256SUMS"
_CHUNK = 1 << 20


class DownloadError(UserError):
    """A download or archive that cannot be used; the message says what failed and what to do."""


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in 1 MiB chunks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file's contents: sha1 of ``b"blob <len>\\0" + data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _check_file(path: Path, url: str, size: int | None, sha256: str | None, md5: str | None) -> None:
    """``DownloadError`` when ``path`` has another size or checksum than expected; the file is deleted
    first, so the next run fetches it afresh."""
    got_size = path.stat().st_size
    problem = f"{url}: expected {size} bytes, got {got_size}" if size is not None and got_size != size else None
    for algorithm, want in (("sha256", sha256), ("md5", md5)):
        if problem is None and want and (got := file_digest(path, algorithm)) != want.lower():
            problem = (
                f"{url}: {algorithm} mismatch (expected {want}, got {got}): the file is corrupt or the source changed"
            )
    if problem is not None:
        path.unlink()
        raise DownloadError(problem)


def fetch(
    url: str,
    dest: str | os.PathLike,
    *,
    size: int | None = None,
    sha256: str | None = None,
    md5: str | None = None,
    progress: bool = True,
    mirror: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """Download ``url`` to ``dest`` (resuming a ``dest.part``), check it, return ``dest``.

    ``size``/``sha256``/``md5``: what the finished file must have (each optional). An existing
    ``dest`` that passes the check is not downloaded again. Raises ``DownloadError`` for a network
    failure (the ``.part`` is kept, so running again resumes) or a failed check (the file is
    deleted).
    """
    dest = Path(dest)
    if dest.exists():
        try:
            _check_file(dest, url, size, sha256, md5)
            return dest
        except DownloadError:  # deleted: fetched again below
            pass
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    # The copy under the mirror (MIRROR/host/path) when there is one.
    mirror = mirror if mirror is not None else os.environ.get("QT_HARD_MIRROR")
    parts = urllib.parse.urlsplit(url)
    source = f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}" if mirror else url
    have = part.stat().st_size if part.exists() else 0
    try:
        _stream(source, part, have, progress, timeout, label=dest.name)
    except (urllib.error.URLError, http.client.HTTPException, OSError, TimeoutError) as err:
        reason = getattr(err, "reason", None) or err
        got = part.stat().st_size if part.exists() else 0
        raise DownloadError(
            f"download of {source} failed after {got} bytes ({reason}); run the command again to resume"
        ) from err
    _check_file(part, source, size, sha256, md5)
    os.replace(part, dest)
    return dest


def _stream(url: str, part: Path, have: int, progress: bool, timeout: float, label: str) -> None:
    from tqdm.auto import tqdm

    headers = {"User-Agent": "qt-hard"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:
            # The .part is as long as the file or longer: start over rather than guess.
            part.unlink()
            return _stream(url, part, 0, progress, timeout, label)
        raise DownloadError(f"{url}: HTTP {err.code} {err.reason}") from None
    with resp:
        resumed = have and resp.status == 206
        if have and not resumed:
            have = 0  # the server ignored Range: the whole file follows
        length = resp.headers.get("Content-Length")
        expected = int(length) if length is not None else None
        total = have + expected if expected is not None else None
        got = 0
        with (
            open(part, "ab" if resumed else "wb") as out,
            tqdm(
                total=total, initial=have, unit="B", unit_scale=True, desc=label, disable=not progress, leave=False
            ) as bar,
        ):
            while True:
                block = resp.read(_CHUNK)
                if not block:
                    break
                out.write(block)
                got += len(block)
                bar.update(len(block))
        if expected is not None and got < expected:
            raise http.client.IncompleteRead(b"", expected - got)


# ----------------------------------------------------------------------------------------------
# installing a folder atomically


# The errors of a write that no retry will mend: a full disk, a quota, a file too large, a read-only place.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def install(target: str | os.PathLike, build: Callable[[Path], None], keep: tuple[str, ...] = ()) -> Path:
    """Run ``build(tmp)`` on an empty temporary folder beside ``target``, then rename it to ``target``.

    An existing ``target`` is replaced only after ``build`` has succeeded; if ``build`` raises, the
    temporary folder is removed and ``target`` is left as it was. ``keep``: entries of an existing
    ``target`` that belong to another dataset installed inside it (``senteval/STS``, ``senteval/SICK``);
    they are moved into the new folder once it is in place (its manifest does not list them).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        try:
            build(tmp)
            write_manifest(tmp)
        except OSError as err:
            if err.errno in WRITE_ERRNOS:  # a full disk or a quota: one line, the old copy kept
                from qt_hard.files import write_failed

                raise write_failed(err, target, "dataset folder") from None
            raise
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, old / target.name)
            os.replace(tmp, target)
            # The kept folders move from the old copy once the new one is in place; should a move
            # fail, the old copy (and what it still holds) is not deleted.
            for name in keep:
                if (old / target.name / name).exists() and not (target / name).exists():
                    os.replace(old / target.name / name, target / name)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def write_manifest(folder: str | os.PathLike) -> Path:
    """Write ``folder/SHA256SUMS`` over every file below ``folder`` (sorted, ``sha256sum`` format)."""
    folder = Path(folder)
    lines = [
        f"{file_digest(p)}  {p.relative_to(folder).as_posix()}\n"
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    ]
    out = folder / MANIFEST
    out.write_text("".join(lines), encoding="utf-8")
    return out


def check_manifest(folder: str | os.PathLike) -> list[str] | None:
    """Problems found by re-hashing the files ``folder/SHA256SUMS`` lists; None without a manifest."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    problems = []
    for line in manifest.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif file_digest(path) != digest:
            problems.append(f"{name} does not match its sha256")
    return problems
