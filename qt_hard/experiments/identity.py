"""What a grid's records were made from (``made_from``): the content of its inputs, not their paths,
so that a config edited in place or a model folder replaced is refused on a rerun (docs/cli.md,
``qt-hard grid``). Records written before ``made_from`` existed carry none and are taken as they are.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from qt_hard.errors import UserError

__all__ = ["MADE_FROM", "InputsChangedError", "check_made_from", "made_from", "weights_sha256"]

MADE_FROM = "made_from"


class InputsChangedError(UserError, ValueError):
    """Records of a results folder made from another content of the inputs the command names."""


def _data_folder(cfg) -> Path | None:
    """The file or folder the config's data is read from: ``data.path``, else its place under the
    data root (the books, the Wikipedia dump, a TU or image set); None for data the config makes."""
    from qt_hard.paths import data_path

    d = cfg.data
    if getattr(d, "path", None):
        return Path(d.path).expanduser()
    if cfg.pipeline == "text":
        if d.kind == "wiki" and d.wiki_source:
            return Path(d.wiki_source).expanduser()
        dump = ("wikipedia", "enwiki_wikiextractor_ge200sent.txt.xz")  # Wiki-N's source, not what is built
        parts = {"books": ("books",), "wiki": dump, "bookcorpus": ("bookcorpus",)}.get(d.kind)
    else:
        parts = ("tu", d.name) if cfg.pipeline == "graph" else (d.name,)
    return None if parts is None else data_path(*parts, required=False)


def files_identity(path: Path) -> str:
    """A hash of the relative path, size and modification time of every file at or below ``path``
    (how the embedding caches key a model's weights): another or a changed file, another identity."""
    # Hidden files (a build's lock) are not the data.
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and p.name[0] != ".")
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f.relative_to(path) if f != path else f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def made_from(setup: dict) -> dict:
    """``{"config": sha256 of the resolved config, "data": identity of the files it reads, "model":
    weights identity}`` of a setup that names a ``config`` (with its ``overrides``) or a ``model``;
    {} for a setup that names neither; "data" is None for data not on disk."""
    made = {}
    if isinstance(setup.get("config"), str):
        from qt_hard.training.config import load_config, to_dict

        cfg = load_config(setup["config"], list(setup.get("overrides") or ()), check_pipeline=False)
        made["config"] = hashlib.sha256(json.dumps(to_dict(cfg), sort_keys=True, default=str).encode()).hexdigest()[:16]
        data = _data_folder(cfg) if getattr(cfg, "data", None) is not None else None
        made["data"] = files_identity(data) if data is not None and data.exists() else None
    if isinstance(setup.get("model"), str):
        try:
            made["model"] = weights_sha256(setup["model"])
        except (ImportError, OSError):  # a model that cannot be found fails where it is loaded
            made["model"] = None
    return made


def weights_sha256(spec: str) -> str | None:
    """The sha256 of the content of every file a model folder loads (its relative path, then its
    bytes, file by file), so that weights replaced in place under the same size and time are still
    another model; None for a ``random:`` model, which its seed and config make."""
    from qt_hard.evaluation.models import model_files, model_folder

    if spec.startswith("random:"):
        return None
    folder = model_folder(spec)
    h = hashlib.sha256()
    for f in model_files(folder):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def check_made_from(ledger, made: dict, redo: bool) -> None:
    """Refuse (:class:`InputsChangedError`, one line) a ledger whose newest records were made from
    another content of the inputs in ``made``, unless ``redo`` records the cells again apart."""
    if not made or redo:
        return
    changed: dict[str, tuple] = {}
    n = 0
    for rec in ledger.latest():
        old = rec.get(MADE_FROM)
        if not isinstance(old, dict):
            continue
        differ = {k: (old.get(k), v) for k, v in made.items() if old.get(k) != v}
        n += bool(differ)
        changed.update(differ)
    if changed:
        setup = ledger.setup or {}
        what = "; ".join(f"{k} {setup.get(k)}: {a} there, {b} now" for k, (a, b) in sorted(changed.items()))
        raise InputsChangedError(
            f"{ledger.path}: {n} record(s) were made from another {' and '.join(sorted(changed))} ({what}); "
            "rerun with --redo to record the cells again apart (the tables read the newest), or use another output"
        )
