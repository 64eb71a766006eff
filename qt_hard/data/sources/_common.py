"""What every source of ``qt-hard data get`` is made of: a ``Source`` (a file on its original host
and the checksum it is verified by), the ``Options`` a build receives, the ``Dataset`` that says how
one folder is built and checked, and the helpers that fetch files and read archives."""

from __future__ import annotations

import contextlib
import tarfile
import urllib.parse
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from qt_hard.data.download import DownloadError, fetch

DOWNLOADS = ".qt-hard-downloads"  # below the data root: fetched files kept for resuming


@dataclass(frozen=True)
class Source:
    """One file fetched from its original host.

    ``sha256``/``md5``/``size``: what the fetched bytes must have; ``None`` where the source
    publishes nothing and our reference copy did not come from these bytes (``note`` says so and
    what is checked instead)."""

    url: str
    sha256: str | None = None
    md5: str | None = None
    size: int | None = None
    note: str = ""


@dataclass
class Options:
    """What ``qt-hard data get`` passes to a builder."""

    root: Path
    progress: bool = True
    mirror: str | None = None
    source: str | None = None  # bookcorpus: a hub id or a local folder of Parquet files
    workers: int = 8

    @property
    def downloads(self) -> Path:
        return self.root / DOWNLOADS


@dataclass
class Dataset:
    """A folder under the data root: ``build(tmp, opts)`` writes it, ``check(folder)`` lists problems.

    ``sources``: the files it is built from, by name (a module of ``qt_hard.data.sources`` declares
    them here; the datasets still defined in ``qt_hard.data.catalog`` keep theirs in its table)."""

    name: str
    summary: str
    license: str
    build: Callable[[Path, Options], None]
    check: Callable[[Path], list[str]]
    parts: tuple[str, ...] = field(default=())  # installed one by one (tu, sts), else the whole folder
    home: str = ""  # the folder under the root the parts go to (sts: senteval), default the name
    part_build: Callable[[str], Callable[[Path, Options], None]] | None = None
    part_check: Callable[[Path, str], list[str]] | None = None
    every_part: bool = False  # present only with every part (sts), else with any (tu)
    keep: tuple[str, ...] = ()  # folders of other datasets inside this one, kept when it is reinstalled
    sources: dict[str, Source] = field(default_factory=dict)


def fetch_source(opts: Options, key: str, src: Source, dest_name: str | None = None, progress=None) -> Path:
    """``src`` fetched (resumably) into the downloads folder of dataset ``key``, verified."""
    return fetch(
        src.url,
        opts.downloads / key / (dest_name or Path(urllib.parse.urlsplit(src.url).path).name),
        size=src.size,
        sha256=src.sha256,
        md5=src.md5,
        mirror=opts.mirror,
        progress=opts.progress if progress is None else progress,
    )


def fetch_many(opts: Options, jobs: list[tuple[str, Source, str]], desc: str) -> list[Path]:
    """Fetch many small files with a few threads and one progress bar over files."""
    from tqdm.auto import tqdm

    with (
        ThreadPoolExecutor(max(1, opts.workers)) as pool,
        tqdm(total=len(jobs), unit="file", desc=desc, disable=not opts.progress) as bar,
    ):
        out = []
        for path in pool.map(lambda job: fetch_source(opts, *job, progress=False), jobs):  # (key, source, name)
            out.append(path)
            bar.update(1)
    return out


def open_zip(path: Path) -> zipfile.ZipFile:
    """A zip whose every member passes its CRC check, else ``DownloadError``."""
    try:
        zf = zipfile.ZipFile(path)
        bad = zf.testzip()
    except (zipfile.BadZipFile, EOFError, OSError) as err:
        path.unlink(missing_ok=True)
        raise DownloadError(f"{path.name} is not a valid zip archive ({err}); it was removed, run again") from None
    if bad is not None:
        zf.close()
        path.unlink(missing_ok=True)
        raise DownloadError(f"{path.name}: member {bad} fails its CRC check; the archive was removed, run again")
    return zf


def zip_member(zf: zipfile.ZipFile, archive: str, suffix: str, what: str | None = None) -> bytes:
    """The one member of ``zf`` named ``suffix`` or ending in ``/suffix``; ``DownloadError`` naming
    ``archive`` and ``what`` (default ``suffix``) when there is not exactly one."""
    hits = [n for n in zf.namelist() if safe_member(n) and (n == suffix or n.endswith("/" + suffix))]
    if len(hits) != 1:
        raise DownloadError(f"{archive}: expected one member {what or suffix}, found {len(hits)}")
    return zf.read(hits[0])


@contextlib.contextmanager
def read_targz(archive: Path):
    """The tar.gz ``archive`` open for reading; one that breaks while it is read is removed and
    refused (``DownloadError``)."""
    try:
        with tarfile.open(archive, "r:gz") as tf:
            yield tf
    except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
        archive.unlink(missing_ok=True)
        raise DownloadError(
            f"{archive.name} is not a complete tar.gz archive ({err}); it was removed, run again"
        ) from None


def refuse_problems(what: str, problems: list[str], most: int | None = None) -> None:
    """``DownloadError`` "what: problem; problem" when a check found problems (the first ``most``)."""
    if problems:
        raise DownloadError(f"{what}: " + "; ".join(problems[:most]))


def safe_member(name: str) -> bool:
    """Whether an archive member's name stays inside the folder it is extracted to."""
    p = Path(name)
    return not p.is_absolute() and ".." not in p.parts


def write_file(path: Path, data: bytes) -> None:
    """``data`` written to ``path``, its folders made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
