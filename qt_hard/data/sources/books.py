"""The 352 public-domain Project Gutenberg books the Quick-Thoughts configs read, from a public
GitHub copy at a fixed commit: Project Gutenberg's header and footer stripped as the reference copy
has them, each book xz-compressed into ``books/``, with ``INDEX.tsv``."""

from __future__ import annotations

import csv
import hashlib
import lzma
import re
import urllib.parse
from pathlib import Path

from qt_hard.data.download import DownloadError, git_blob_sha1
from qt_hard.data.sources._common import Dataset, Options, Source, fetch_many

BASE = "https://raw.githubusercontent.com/rcdm-uga/Gutenberg_Text/a0b16d35a9851168ce9ac649851c17b7ab08d48e"
SOURCES = {
    # 352 files, one per book: ``BASE/<original_path>``, each verified by the git blob
    # sha1 in the packaged books_index.tsv (and the stripped, xz-compressed result by sha256).
    "<original_path>": Source(f"{BASE}/<original_path>", note="per-book git blob sha1 + output sha256"),
}


def books_index() -> list[dict[str, str]]:
    """The packaged list of the 352 books (INDEX.tsv's columns + ``txt_sha256`` and ``head_hex``,
    the first 48 bytes of the stripped text)."""
    path = Path(__file__).parent.parent / "books_index.tsv"  # package data of qt_hard.data
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


_PG_START = re.compile(
    rb"^\*\*\* ?START OF TH(?:IS|E) PROJECT GUTENBERG E(?:BOOK|TEXT).*$|"
    rb"^\*END\*THE SMALL PRINT!.*\*END\*.*$",
    re.M | re.I,
)
_PG_END = re.compile(
    rb"^(?:\*\*\* ?END OF TH(?:IS|E) PROJECT GUTENBERG|End of (?:the )?Project Gutenberg)", re.M | re.I
)


def strip_gutenberg(original: bytes, row: dict[str, str]) -> bytes:
    """The book text without Project Gutenberg's header and footer, as the reference copy has it.

    The copy kept the text between the START marker (``*** START OF THIS PROJECT GUTENBERG EBOOK``,
    or old-style ``*END*THE SMALL PRINT!...*END*``) and the ``End of (the) Project Gutenberg`` /
    ``*** END OF`` line. The packaged list holds each stripped text's length, sha256 and first 48
    bytes, so the exact cut is found where those bytes occur and confirmed by the sha256; the
    marker rule is the fallback. Raises ``DownloadError`` when neither gives the recorded text.
    """
    if row["pg_header_footer_stripped"] != "True":
        candidates = [original]
    else:
        n, head = int(row["txt_bytes"]), bytes.fromhex(row["head_hex"])
        candidates, at = [], original.find(head)
        while at >= 0:
            candidates.append(original[at : at + n])
            at = original.find(head, at + 1)
        start = _PG_START.search(original)
        if start:
            body = original[start.end() :]
            body = body[1:] if body.startswith(b"\n") else body[2:] if body.startswith(b"\r\n") else body
            end = _PG_END.search(body)
            candidates.append(body[: end.start()].rstrip() + b"\r\n" if end else body)
    for text in candidates:
        if hashlib.sha256(text).hexdigest() == row["txt_sha256"]:
            return text
    raise DownloadError(f"books/{row['file']}: the stripped text does not match the recorded sha256")


def build(tmp: Path, opts: Options) -> None:
    """Fetch every book of the list, verify it, strip and compress it as the reference copy has it."""
    rows = books_index()
    jobs = [
        (
            "books",
            Source(f"{BASE}/{urllib.parse.quote(r['original_path'])}", size=int(r["original_bytes"])),
            r["original_blob_sha1"] + ".txt",
        )
        for r in rows
    ]
    paths = fetch_many(opts, jobs, "books")
    for r, path in zip(rows, paths):
        original = path.read_bytes()
        if git_blob_sha1(original) != r["original_blob_sha1"]:
            path.unlink()
            raise DownloadError(
                f"books: {r['original_path']} has git blob sha1 {git_blob_sha1(original)}, "
                f"expected {r['original_blob_sha1']}; it was removed, run again"
            )
        xz = lzma.compress(strip_gutenberg(original, r), preset=9)
        if hashlib.sha256(xz).hexdigest() != r["sha256_xz"]:
            raise DownloadError(f"books/{r['file']}: xz sha256 differs from the reference copy")
        (tmp / r["file"]).write_bytes(xz)
    cols = [c for c in rows[0] if c not in ("txt_sha256", "head_hex")]
    with open(tmp / "INDEX.tsv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(cols)
        w.writerows([r[c] for c in cols] for r in rows)


def check(folder: Path) -> list[str]:
    """Every book of the list there."""
    rows = books_index()
    missing = [r["file"] for r in rows if not (folder / r["file"]).is_file()]
    if missing:
        return [f"{len(missing)} of {len(rows)} books missing (e.g. {missing[0]})"]
    return []


DATASET = Dataset(
    "books",
    "352 public-domain Project Gutenberg books, header/footer stripped, xz (45 MB)",
    "public domain in the USA (Project Gutenberg texts; PG trademark removed with the headers)",
    build,
    check,
    sources=SOURCES,
)
