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

from qt_hard.errors import DataMissingError, OutputLocationError


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


def refuse_link_loop(path: str | Path, what: str) -> None:
    """``DataMissingError`` naming ``what`` when ``path`` is (or passes through) a loop of symbolic
    links: ``exists()`` reads it as missing, so a command would try to create it and fail with a traceback."""
    import errno

    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise DataMissingError(f"{what} {path} is a loop of symbolic links; point it at a real folder") from None


def default_data_root() -> Path:
    """The root ``qt-hard data get`` writes to: the first of the two rules above (may not exist)."""
    env = os.environ.get("QT_HARD_DATA")
    if env:
        root = Path(env).expanduser()
        refuse_link_loop(root, "QT_HARD_DATA")
        if root.exists() and not root.is_dir():
            raise DataMissingError(f"QT_HARD_DATA={env!r} is not a directory")
        return root
    root = user_cache_root()
    refuse_link_loop(root, "the data root")
    return root


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
    refuse_link_loop(p, "data path")
    if not required:
        return p if root.is_dir() else None
    raise DataMissingError(f"{p} does not exist (data root {root}); {get_command(parts[0])}")


def get_command(dataset: str) -> str:
    """The sentence that tells a user how to fetch ``dataset`` into the current data root."""
    return f"fetch it with `qt-hard data get {dataset}`"


# Files that make a folder a saved model (qt-hard's or sentence-transformers'); an output never lands in
# one. (A weights file alone does not: an output beside a stray model.safetensors is harmless, and one
# on it is refused as a file of another kind.)
MODEL_FILES = ("encoder.json", "modules.json", "config_sentence_transformers.json")
# What ``qt-hard train`` writes into a run folder (``qt_hard.training.outdir.RUN_FILES`` and its caches):
# a run folder is one holding ``config.yaml`` and one of the others; its entries are never another
# command's output.
RUN_ENTRIES = ("config.yaml", "metrics.csv", "final", "checkpoints", "eval.json", "eval.csv", "logs", "cache")


def _real(path: Path) -> Path:
    """``path`` absolute with its existing symbolic links resolved (it need not exist)."""
    return Path(os.path.realpath(path.expanduser()))


def is_model_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a saved model (one of ``MODEL_FILES``)."""
    return folder.is_dir() and any((folder / name).is_file() for name in MODEL_FILES)


def is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a training run: its ``config.yaml`` and another entry a run writes."""
    return (folder / "config.yaml").is_file() and any((folder / n).exists() for n in RUN_ENTRIES[1:])


def is_result_file(path: Path) -> bool:
    """Whether ``path`` is a result file qt-hard wrote: a JSON object with ``kind`` and ``results``."""
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(1)
            if head != "{":
                return False
            data = json.loads(head + fh.read())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and "kind" in data and "results" in data


def guard_output(
    path: str | Path,
    flag: str,
    *,
    inputs: dict | None = None,
    replaceable=None,
    kind: str = "result file",
    folder: bool = False,
    may_hold_inputs: bool = False,
    owners: bool = True,
) -> Path:
    """Refuse, before any work, an output path that would destroy something: the one guard of every
    command's path flags (``flag`` names the option in the message). Refused are

    * an output equal to one of ``inputs`` (``{what: path}``: the model, the data, a source file),
      inside one of them, or (a ``folder`` output that is replaced whole, unless ``may_hold_inputs``)
      holding one;
    * (with ``owners``, as for a command's flags) an output inside a saved model folder
      (``MODEL_FILES``), or on a run folder's own entries (``RUN_ENTRIES``: its config, metrics,
      checkpoints, final model, caches); a run building its own cache leaves this out;
    * an existing file that is not a ``kind`` qt-hard wrote (``replaceable(path)`` is false; by
      default :func:`is_result_file`): a command writes over its own earlier output only.

    Returns the path (``~`` expanded). The caller checks that it can be created
    (:func:`check_output_file` does both for a file)."""
    from qt_hard.errors import OutputLocationError

    out = Path(path).expanduser()
    real = _real(out)
    for what, given in (inputs or {}).items():
        if given is None:
            continue
        src = _real(Path(given))
        if real == src:
            raise OutputLocationError(f"{flag} {out} is {what} {given}, which this command reads; write elsewhere")
        if src in real.parents:
            raise OutputLocationError(
                f"{flag} {out} is inside {what} {given}, which this command reads; write elsewhere"
            )
        if folder and not may_hold_inputs and real in src.parents:
            raise OutputLocationError(f"{flag} {out} holds {what} {given}, which this command reads; write elsewhere")
    candidates = ([real] if folder else []) + list(real.parents)
    for owner in candidates if owners else []:
        if is_model_folder(owner):
            where = "is a saved model" if owner == real else f"is inside the saved model {owner}"
            raise OutputLocationError(f"{flag} {out} {where}; write outside the model folder")
        if is_run_folder(owner) and owner != real:
            entry = real.relative_to(owner).parts[0]
            if entry in RUN_ENTRIES:
                raise OutputLocationError(
                    f"{flag} {out} is the run's own {owner / entry} (qt-hard train writes it); write elsewhere"
                )
    if not folder and out.is_file():
        ok = is_result_file if replaceable is None else replaceable
        if not ok(out):
            raise OutputLocationError(
                f"{flag} {out} exists and is not a {kind} qt-hard wrote; refused to write over it "
                "(remove it or pick another name)"
            )
    return out


def check_output_file(
    path: str | Path, flag: str, *, inputs: dict | None = None, replaceable=None, kind: str = "result file"
) -> Path:
    """Refuse, before any work, an output file (``flag`` names the option) that could not be written
    at the end, or that :func:`guard_output` refuses: a folder, a file under a file, a place the file
    system refuses, a model's or a run's own file, one of the command's ``inputs``, an existing file
    that is not a ``kind`` qt-hard wrote. A missing parent is fine (the writer creates it); a trial
    file or folder is created and removed, so nothing is left. Returns the path."""
    import tempfile

    from qt_hard.errors import OutputLocationError

    path = Path(path).expanduser()
    if path.is_dir():
        raise OutputLocationError(f"{flag} {path} is a folder; give a file name")
    guard_output(path, flag, inputs=inputs, replaceable=replaceable, kind=kind)
    parent = path.parent
    existing = nearest_existing(parent)
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


def nearest_existing(path: Path) -> Path:
    """``path`` itself when it exists, else its nearest ancestor that does (where creating it starts)."""
    existing = path
    while not existing.exists():
        existing = existing.parent
    return existing


def creation_refused(out: Path, existing: Path) -> str | None:
    """Create and remove the first missing folder of ``out`` under its nearest ``existing`` ancestor,
    leaving nothing behind: the reason the file system refuses it (``"<folder>: <strerror>"``), or None.
    Permissions do not tell every refusal (a superuser, a read-only or special file system)."""
    first = existing / out.relative_to(existing).parts[0]
    try:
        first.mkdir()
    except FileExistsError:
        # Another process (a second command on the same folder) made it meanwhile: it can be created.
        return None if first.is_dir() else f"{first}: a file appeared there"
    except OSError as err:
        return f"{first}: {err.strerror}"
    try:
        first.rmdir()
    except OSError:
        pass  # another process has begun to fill it: it stays, as that process needs it
    return None


def output_folder(path: str | Path, flag: str = "--out") -> Path:
    """Refuse, before anything is written, an output folder that is a file, cannot be created (a
    trial folder is made and removed, so nothing is left), or that ``qt_hard.paths.guard_output``
    refuses (a saved model, a run's own entry). Returns the path; it is not created."""
    out = Path(path).expanduser()
    # The one guard of every path flag: never inside a saved model or on a run's own entries.
    guard_output(out, flag, folder=True, may_hold_inputs=True)
    if out.exists():
        if not out.is_dir():
            raise OutputLocationError(f"{flag} {out} is a file, not a folder")
        if not os.access(out, os.W_OK | os.X_OK):
            raise OutputLocationError(f"{flag} {out} is not writable")
        return out
    existing = nearest_existing(out.parent)
    if not existing.is_dir():
        raise OutputLocationError(f"{flag} {out} cannot be created ({existing} is a file, not a folder)")
    refused = creation_refused(out, existing)
    if refused:
        raise OutputLocationError(f"{flag} {out} cannot be created ({refused})")
    return out


# The files a command wrote into a results folder: ``sha256  NAME`` lines (``sha256sum``'s format). A
# later write replaces such a file only while it still holds what qt-hard put there.
WRITTEN = ".qt-hard-written.sha256"


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _written_list(folder: Path) -> dict[str, str]:
    """{name: sha256} of the files qt-hard wrote into ``folder`` (:data:`WRITTEN`); {} without one."""
    try:
        lines = (folder / WRITTEN).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    return {name: digest for digest, _, name in (line.partition("  ") for line in lines) if name}


def note_written(folder: Path, names) -> None:
    """Add the files ``names`` of ``folder``, as they are now, to its list of what qt-hard wrote."""
    from qt_hard.files import write_text

    listed = {**_written_list(folder), **{n: _sha256(folder / n) for n in names}}
    write_text(folder / WRITTEN, "".join(f"{d}  {n}\n" for n, d in sorted(listed.items())), "list of written files")


def _same_kind(old: str, new: str, suffix: str) -> bool:
    """Whether ``old`` is a table of the kind ``new`` is, over whatever rows or columns (``--rows``,
    ``--datasets``): Markdown tables with the same first heading (the first cell of the first line that
    starts with ``|``), JSON objects sharing a key, else texts with the same first line (a CSV's header)."""
    import json

    if suffix == ".json":
        try:
            a, b = json.loads(old), json.loads(new)
        except ValueError:
            return False
        return isinstance(a, dict) and isinstance(b, dict) and bool(set(a) & set(b))

    def kind(text: str) -> str:
        lines = text.splitlines()
        rows = [x for x in lines if x.startswith("|")] if suffix == ".md" else []
        if rows:
            return rows[0].split("|")[1].strip()
        return lines[0] if lines else ""

    return kind(old) == kind(new)


def made_here(text: str | None = None):
    """A ``replaceable`` test for :func:`guard_output` of a file qt-hard writes into a results folder:
    true for a file that holds what qt-hard last wrote there (the folder's :data:`WRITTEN` list: a
    table whose columns changed since), or a table of the kind ``text`` is (:func:`_same_kind`: a
    folder written before that list, a write the list missed when a signal stopped it)."""

    def test(path: Path) -> bool:
        if _written_list(path.parent).get(path.name) == _sha256(path):
            return True
        if text is None:
            return False
        try:
            old = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return old == text or _same_kind(old, text, path.suffix)

    return test
