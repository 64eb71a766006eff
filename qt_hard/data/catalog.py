"""Every dataset qt-hard reads (``DATASETS``, one module of ``qt_hard.data.sources`` each), the table
of their original sources and checksums (``SOURCES``), the status listing and the install of
``qt-hard data get``: docs/guides/data.md describes each source, its check and the layout written.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from qt_hard.data.download import DownloadError, MANIFEST, check_manifest, install
from qt_hard.data.sources import registered
from qt_hard.data.sources._common import Dataset, Options, Source

# The data sets of qt_hard.data.sources, one module each, and the table of their original sources.
DATASETS: dict[str, Dataset] = registered()
SOURCES: dict[str, dict[str, Source]] = {name: ds.sources for name, ds in DATASETS.items()}

# ------------------------------------------------------------------------------------------------
# Status: whether a folder is there and intact


@dataclass
class Status:
    name: str
    state: str  # present | missing | corrupt
    detail: str


def _dataset(name: str) -> Dataset:
    if name not in DATASETS:
        raise DownloadError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    return DATASETS[name]


def status(name: str, root: Path) -> Status:
    """Whether ``root/name`` is present and intact (manifest re-hashed, else layout checked)."""
    ds = _dataset(name)
    folder = root / (ds.home or name)
    if not folder.is_dir():
        return Status(name, "missing", f"fetch it with `qt-hard data get {name}`")
    if ds.parts:
        states = [_part_state(ds, folder, p) for p in ds.parts]
        missing = [p for p, s in zip(ds.parts, states) if s[0] == "missing"]
        bad = [f"{p}: {s[1]}" for p, s in zip(ds.parts, states) if s[0] == "corrupt"]
        if bad:
            return Status(name, "corrupt", "; ".join(bad))
        if len(missing) == len(ds.parts):
            return Status(name, "missing", f"fetch it with `qt-hard data get {name}`")
        if missing and ds.every_part:
            return Status(name, "corrupt", f"{', '.join(missing)} missing (`qt-hard data get {name}` adds it)")
        detail = f"{len(ds.parts) - len(missing)}/{len(ds.parts)} subsets"
        if missing:
            detail += f" (not here: {', '.join(missing)}; `qt-hard data get {name}` adds them)"
        return Status(name, "present", detail)
    if ds.keep and not any(p.name not in ds.keep for p in folder.iterdir()):
        # only the folders of another dataset (senteval/STS, senteval/SICK of `data get sts`)
        return Status(name, "missing", f"fetch it with `qt-hard data get {name}`")
    state, detail = _folder_state(folder, ds.check)
    return Status(name, state, detail)


def _part_state(ds: Dataset, folder: Path, part: str) -> tuple[str, str]:
    return _folder_state(folder / part, lambda f: ds.part_check(f, part))


def _folder_state(folder: Path, check: Callable[[Path], list[str]]) -> tuple[str, str]:
    if not folder.is_dir():
        return "missing", ""
    problems = check_manifest(folder)
    how = "sha256 of every file checked"
    if problems is None:
        problems, how = check(folder), f"layout checked, no {MANIFEST}"
    elif not problems:
        problems = check(folder)
    if problems:
        return "corrupt", "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
    return "present", how


def _write_source_note(folder: Path, ds: Dataset, sources: dict[str, Source]) -> None:
    """A SOURCE.md beside the data: what it is, where each file came from, how it was checked."""
    import datetime

    lines = [
        f"# {ds.name}: {ds.summary}",
        "",
        f"Fetched by `qt-hard data get {ds.name}` on {datetime.date.today().isoformat()}; "
        f"every file written is listed with its sha256 in {MANIFEST}.",
        "",
        "| file | source | checked by |",
        "|---|---|---|",
    ]
    for key, src in sources.items():
        check = (f"sha256 {src.sha256}" if src.sha256 else f"md5 {src.md5}" if src.md5 else "") or src.note
        lines.append(f"| {key} | {src.url} | {check} |")
    lines += ["", f"License: {ds.license}.", ""]
    (folder / "SOURCE.md").write_text("\n".join(lines), encoding="utf-8")


def _with_note(build, ds: Dataset, opts: Options, sources: dict[str, Source]) -> Callable[[Path], None]:
    def run(tmp: Path) -> None:
        build(tmp, opts)
        _write_source_note(tmp, ds, sources)

    return run


def _require_writable(root: Path) -> None:
    from qt_hard.paths import nearest_existing

    probe = nearest_existing(root)
    # The mode bits too: root passes os.access everywhere, but a folder marked read-only (like
    # this project's reference copy) must not be written into.
    if not os.access(probe, os.W_OK) or not probe.stat().st_mode & 0o222:
        raise DownloadError(f"cannot write under {root}: pass --root DIR or set QT_HARD_DATA to a writable folder")


def get(name: str, opts: Options, force: bool = False) -> Status:
    """Fetch, verify and install ``name`` under ``opts.root`` unless it is already intact."""
    ds = _dataset(name)
    before = status(name, opts.root)
    if before.state == "present" and not force and not (ds.parts and "not here" in before.detail):
        return Status(name, "present", f"already there, {before.detail}; nothing fetched")
    _require_writable(opts.root)
    if ds.parts:
        for part in ds.parts:
            if _part_state(ds, opts.root / (ds.home or name), part)[0] != "present" or force:
                # a part with an archive of its own (tu) notes that one, else the dataset's files
                own = f"{part}.zip"
                sources = {own: SOURCES[name][own]} if own in SOURCES[name] else SOURCES[name]
                install(opts.root / (ds.home or name) / part, _with_note(ds.part_build(part), ds, opts, sources))
    else:
        install(opts.root / (ds.home or name), _with_note(ds.build, ds, opts, SOURCES[name]), keep=ds.keep)
    shutil.rmtree(opts.downloads / name, ignore_errors=True)
    after = status(name, opts.root)
    if after.state != "present":
        raise DownloadError(f"{name} was installed but fails its check: {after.detail}")
    return after
