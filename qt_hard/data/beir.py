"""Folders in BEIR's layout, read and checked: ``corpus.jsonl`` (one JSON object a line: ``_id``,
``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``) and ``qrels/SPLIT.tsv`` (a header, then
``query-id``, ``corpus-id``, ``score`` separated by tabs; BEIR ships CRLF line ends).

A document is read as ``(title + " " + text).strip()``; what reading checks, so that a damaged folder
fails before a model is loaded: docs/guides/evaluation.md (retrieval).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from qt_hard.errors import DataCorruptError, MissingFileError

__all__ = ["RetrievalData", "RetrievalDataError", "load_beir", "qrels_splits", "read_qrels"]


class RetrievalDataError(DataCorruptError):
    """A BEIR folder that cannot be evaluated: the message names the file and line."""


@dataclass
class RetrievalData:
    """A BEIR folder read and checked: the corpus in file order, the queries by id, and the
    judgements of the splits asked for (``qrels[split][query][doc] = score``)."""

    folder: Path
    doc_ids: list[str]
    doc_texts: list[str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    def judged_queries(self, split: str) -> list[str]:
        """The ids of the queries of ``split`` with a relevant document, in qrels order."""
        return [q for q, docs in self.qrels[split].items() if any(s > 0 for s in docs.values())]


def _read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file (a byte-order mark dropped), or a one-line error."""
    if not path.is_file():
        raise MissingFileError(f"{path}: not found (a BEIR folder holds corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise RetrievalDataError(f"{path}:{line}: not UTF-8 text (byte {data[err.start]:#04x})") from None
    return text.splitlines()


def _read_jsonl(path: Path, fields: Sequence[str]) -> tuple[list[str], list[dict]]:
    """(ids, objects) of a JSONL file whose objects have an ``_id`` and ``fields`` (strings); a
    duplicate id is an error naming both lines."""
    ids, objs, first = [], [], {}
    for no, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise RetrievalDataError(f"{path}:{no}: not a JSON object ({err.msg})") from None
        if not isinstance(obj, dict) or "_id" not in obj:
            raise RetrievalDataError(f"{path}:{no}: not a JSON object with an _id")
        bad = [f for f in fields if not isinstance(obj.get(f, ""), str)]
        if bad:
            raise RetrievalDataError(f"{path}:{no}: field {bad[0]!r} is not a string")
        key = str(obj["_id"])
        if key in first:
            raise RetrievalDataError(f"{path}:{no}: duplicate _id {key!r} (first on line {first[key]})")
        first[key] = no
        ids.append(key)
        objs.append(obj)
    return ids, objs


def qrels_splits(folder: str | os.PathLike) -> list[str]:
    """The splits a BEIR folder has judgements for (``qrels/*.tsv``), sorted."""
    return sorted(p.stem for p in (Path(folder) / "qrels").glob("*.tsv"))


def read_qrels(path: Path, queries: Mapping[str, str], docs: Mapping[str, int] | set) -> dict[str, dict[str, int]]:
    """``{query: {doc: score}}`` of one qrels file, every id checked against ``queries`` and ``docs``."""
    out: dict[str, dict[str, int]] = {}
    lines = _read_lines(path)
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if no == 1 and cols[0].strip() == "query-id":
            continue  # BEIR's header
        if len(cols) != 3:
            raise RetrievalDataError(f"{path}:{no}: expected query-id, corpus-id, score separated by tabs")
        qid, did, score = (c.strip() for c in cols)
        try:
            value = int(score)
        except ValueError:
            raise RetrievalDataError(f"{path}:{no}: score {score!r} is not an integer") from None
        if qid not in queries:
            raise RetrievalDataError(f"{path}:{no}: query-id {qid!r} is not in queries.jsonl")
        if did not in docs:
            raise RetrievalDataError(f"{path}:{no}: corpus-id {did!r} is not in corpus.jsonl")
        out.setdefault(qid, {})[did] = value
    if not any(s > 0 for docs_ in out.values() for s in docs_.values()):
        raise RetrievalDataError(f"{path}: no relevance judgements (no line with a score above 0)")
    return out


def load_beir(folder: str | os.PathLike, splits: Sequence[str] = ("test",)) -> RetrievalData:
    """Read and check a BEIR folder with the judgements of ``splits`` (see the module docstring)."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise MissingFileError(f"{folder}: not a folder (a BEIR folder holds corpus.jsonl, queries.jsonl, qrels/)")
    for split in splits:
        path = folder / "qrels" / f"{split}.tsv"
        if not path.is_file():
            have = ", ".join(qrels_splits(folder)) or "none"
            raise MissingFileError(f"{path}: no judgements for split {split!r} (splits with qrels: {have})")
    doc_ids, docs = _read_jsonl(folder / "corpus.jsonl", ("title", "text"))
    if not doc_ids:
        raise RetrievalDataError(f"{folder / 'corpus.jsonl'}: no documents")
    query_ids, queries = _read_jsonl(folder / "queries.jsonl", ("text",))
    query_text = {q: obj.get("text", "") for q, obj in zip(query_ids, queries)}
    index = {d: i for i, d in enumerate(doc_ids)}
    texts = [(obj.get("title", "") + " " + obj.get("text", "")).strip() for obj in docs]
    qrels = {s: read_qrels(folder / "qrels" / f"{s}.tsv", query_text, index) for s in splits}
    return RetrievalData(folder, doc_ids, texts, query_text, qrels)
