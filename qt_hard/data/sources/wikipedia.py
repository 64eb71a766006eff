"""The English Wikipedia articles of 200 sentences or more, selected from the 400 WikiExtractor
files of a public GitHub copy at a fixed commit, into ``wikipedia/`` as one xz-compressed text and
its index (the source of Wiki-N)."""

from __future__ import annotations

import hashlib
import lzma
import re
import shutil
from pathlib import Path

from qt_hard.data.download import DownloadError, file_digest
from qt_hard.data.sources._common import Dataset, Options, Source, fetch_many

BASE = "https://raw.githubusercontent.com/jason-feng/wikiVisual/1c0fac92f29f17c1603bfffbe864e0dfdff66897/text"
FILES = tuple(f"{part}/wiki_{i:02d}" for part in ("AA", "AB", "AC", "AD") for i in range(100))
SOURCES = {
    # 400 WikiExtractor files; the concatenated subset and its index are verified by sha256.
    "<text/XX/wiki_NN>": Source(f"{BASE}/<XX/wiki_NN>", note="output sha256 (OUTPUT_SHA256)"),
}
# sha256 of the files we write, equal to the reference copy's (computed from that copy).
OUTPUT_SHA256 = {
    "enwiki_wikiextractor_ge200sent.txt": "657719bef659ef8cf1c3479451fef34850c36fa00d48663a7020f4a8b0babf93",
    "enwiki_wikiextractor_ge200sent_index.tsv": "279f49e2c546f08e8634513918c2f73665bb4ffd876f357f7be97a8b572b4d02",
}


_SENT_SPLIT = re.compile(r"(?<=[.?!])\s+")


def count_wiki_sentences(lines: list[str]) -> int:
    """Sentences in an article's paragraph lines (the title line excluded), by the reference copy's
    simple splitter: split at whitespace after ``.``, ``?`` or ``!``; skip heading lines (8 words or
    fewer, ending in ``.``, no other ``.?!``: :func:`qt_hard.data.wiki.is_heading`)."""
    from qt_hard.data.wiki import is_heading

    n = 0
    for line in lines:
        s = line.strip()
        if s and not is_heading(s):
            n += sum(1 for part in _SENT_SPLIT.split(s) if part.strip())
    return n


_DOC_HEAD = re.compile(rb'^<doc id="(\d+)"')


def wiki_articles(data: bytes):
    """(page_id, raw bytes of the article from ``<doc`` through ``</doc>\\n``) in file order."""
    start = None
    for m in re.finditer(rb"^<doc [^\n]*\n|^</doc>\n", data, re.M):
        if m.group().startswith(b"<doc"):
            start = m.start()
        elif start is not None:
            raw = data[start : m.end()]
            head = _DOC_HEAD.match(raw)
            if head is None:
                raise DownloadError(f"unreadable WikiExtractor header: {raw[:100]!r}")
            yield head.group(1).decode(), raw
            start = None


def build(tmp: Path, opts: Options, min_sentences: int = 200) -> None:
    """Fetch the 400 files, keep the articles of ``min_sentences`` or more, verify the text and its
    index by sha256, write the text xz-compressed."""
    jobs = [("wikipedia", Source(f"{BASE}/{f}"), f.replace("/", "_")) for f in FILES]
    paths = fetch_many(opts, jobs, "wikipedia")
    txt = tmp / "enwiki_wikiextractor_ge200sent.txt"
    digest = hashlib.sha256()
    index = ["page_id\ttitle\tn_sentences_simple_split\n"]
    with open(txt, "wb") as out:
        for path in paths:
            for page_id, raw in wiki_articles(path.read_bytes()):
                lines = raw.decode("utf-8").split("\n")  # <doc ...>, title, paragraphs, </doc>, ""
                n = count_wiki_sentences(lines[2:-2])
                if n >= min_sentences:
                    out.write(raw)
                    digest.update(raw)
                    index.append(f"{page_id}\t{lines[1]}\t{n}\n")
    (tmp / "enwiki_wikiextractor_ge200sent_index.tsv").write_text("".join(index), encoding="utf-8")
    got = {
        txt.name: digest.hexdigest(),
        "enwiki_wikiextractor_ge200sent_index.tsv": file_digest(tmp / "enwiki_wikiextractor_ge200sent_index.tsv"),
    }
    for name, want in OUTPUT_SHA256.items():
        if want and got[name] != want:
            raise DownloadError(f"wikipedia/{name}: sha256 {got[name]} differs from the reference copy's {want}")
    with open(txt, "rb") as src, lzma.open(txt.with_suffix(".txt.xz"), "wb", preset=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    txt.unlink()


def check(folder: Path) -> list[str]:
    """The compressed text and its index there."""
    need = ["enwiki_wikiextractor_ge200sent.txt.xz", "enwiki_wikiextractor_ge200sent_index.tsv"]
    return [f"{n} is missing" for n in need if not (folder / n).is_file()]


DATASET = Dataset(
    "wikipedia",
    "4,715 English Wikipedia articles with >= 200 sentences, WikiExtractor text (54 MB)",
    "CC BY-SA 3.0 / GFDL (Wikipedia); attribute Wikipedia",
    build,
    check,
    sources=SOURCES,
)
