"""Every dataset qt-hard reads, where it comes from, and how ``qt-hard data get`` rebuilds it.

``SOURCES`` is the one table of original sources: each entry names its URL and the checksum it
is verified by. A checksum is either the one the source publishes (CIFAR-10's md5), or one
computed from a reference copy of the data where the bytes we write are
the original's after the documented normalization (MRPC, the books, the Wikipedia subset). Where
neither exists (SentEval's binary-classification zip, the TREC files, the TU zips, which publish
no checksum, and whose bytes our reference copy did not take from these URLs) the entry says so
and the extracted layout is checked instead: exact example, graph and node counts.

Each ``Dataset`` writes its folder under the data root in exactly the layout the loaders read
(the layout the reference copy's SOURCE.md files describe), through
``download.install`` (a temporary folder renamed into place), and leaves a ``SHA256SUMS`` there.
``status`` tells ``present`` / ``missing`` / ``corrupt`` from that manifest, or from the layout
check where a folder has no manifest (the reference copy).
"""

from __future__ import annotations

import csv
import hashlib
import lzma
import os
import pickle
import re
import shutil
import tarfile
import urllib.parse
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from qt_hard.data.download import DownloadError, MANIFEST, check_manifest, fetch, file_digest, git_blob_sha1, install

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


# ------------------------------------------------------------------------------------------------
# The table of sources

SENTEVAL_BINCLASSIF = "https://dl.fbaipublicfiles.com/senteval/senteval_data/datasmall_NB_ACL12.zip"
TREC_BASE = "https://cogcomp.seas.upenn.edu/Data/QA/QC"
MRPC_BASE = (
    "https://raw.githubusercontent.com/Pzeyang/Paraphrase_Identification/dc1755eb1a4755ca310f97209391f1f5c06e2fd1"
)
TU_BASE = "https://www.chrsmrrs.com/graphkerneldatasets"
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
BOOKS_BASE = "https://raw.githubusercontent.com/rcdm-uga/Gutenberg_Text/a0b16d35a9851168ce9ac649851c17b7ab08d48e"
WIKI_BASE = "https://raw.githubusercontent.com/jason-feng/wikiVisual/1c0fac92f29f17c1603bfffbe864e0dfdff66897/text"
WIKI_FILES = tuple(f"{part}/wiki_{i:02d}" for part in ("AA", "AB", "AC", "AD") for i in range(100))
BOOKCORPUS_HUB = "bookcorpus/bookcorpus"

_NO_SUM = "no published checksum, and the reference copy came from another mirror: layout checked"

SOURCES: dict[str, dict[str, Source]] = {
    "senteval": {
        # SentEval's data/downstream/get_transfer_data.bash fetches MR, CR, SUBJ and MPQA from this
        # zip (then at s3.amazonaws.com/senteval, now served from dl.fbaipublicfiles.com).
        "datasmall_NB_ACL12.zip": Source(SENTEVAL_BINCLASSIF, note=_NO_SUM + " (exact example counts)"),
        # SentEval's script names cogcomp.cs.illinois.edu/Data/QA/QC, which moved to upenn.edu.
        "train_5500.label": Source(f"{TREC_BASE}/train_5500.label", note=_NO_SUM),
        "TREC_10.label": Source(f"{TREC_BASE}/TREC_10.label", note=_NO_SUM),
        # MRPC: SentEval needs cabextract for Microsoft's .msi. This public mirror holds the two
        # text files; after dropping its 4 appended id -1 lines, both equal the reference copy.
        "msr_paraphrase_train.txt": Source(
            f"{MRPC_BASE}/msr_paraphrase_train.txt", note="verified after normalization (see SENTEVAL_OUTPUT_SHA256)"
        ),
        "msr_paraphrase_test.txt": Source(
            f"{MRPC_BASE}/msr_paraphrase_test.txt",
            sha256="51a1f197d8786712d2f0d97700f5be653b7488a96cde00e158159350d23e3d90",
        ),
    },
    "tu": {
        f"{ds}.zip": Source(f"{TU_BASE}/{ds}.zip", note="TU publishes no checksums: graph/node counts checked")
        for ds in ("MUTAG", "PTC_MR", "ENZYMES", "PROTEINS", "IMDB-BINARY", "IMDB-MULTI", "DD", "REDDIT-BINARY")
    },
    "cifar10": {
        # md5 published on https://www.cs.toronto.edu/~kriz/cifar.html
        "cifar-10-python.tar.gz": Source(CIFAR10_URL, md5="c58f30108f718f92721af3b95e74349a"),
    },
    "books": {
        # 352 files, one per book: ``BOOKS_BASE/<original_path>``, each verified by the git blob
        # sha1 in the packaged books_index.tsv (and the stripped, xz-compressed result by sha256).
        "<original_path>": Source(f"{BOOKS_BASE}/<original_path>", note="per-book git blob sha1 + output sha256"),
    },
    "wikipedia": {
        # 400 WikiExtractor files; the concatenated subset and its index are verified by sha256.
        "<text/XX/wiki_NN>": Source(f"{WIKI_BASE}/<XX/wiki_NN>", note="output sha256 (WIKI_OUTPUT_SHA256)"),
    },
    "bookcorpus": {
        "hub": Source(
            f"https://huggingface.co/datasets/{BOOKCORPUS_HUB}",
            note="through `datasets`; row count checked (74,004,228 sentences)",
        ),
    },
}

# sha256 of files we write whose bytes equal the reference copy's (computed from that copy).
SENTEVAL_OUTPUT_SHA256 = {
    "MRPC/msr_paraphrase_train.txt": "f3d26d73bb3510032f80836e2e81cf32c71863f8dd6151aa80a125c2c799a557",
    "MRPC/msr_paraphrase_test.txt": "51a1f197d8786712d2f0d97700f5be653b7488a96cde00e158159350d23e3d90",
}
WIKI_OUTPUT_SHA256 = {
    "enwiki_wikiextractor_ge200sent.txt": "657719bef659ef8cf1c3479451fef34850c36fa00d48663a7020f4a8b0babf93",
    "enwiki_wikiextractor_ge200sent_index.tsv": "279f49e2c546f08e8634513918c2f73665bb4ffd876f357f7be97a8b572b4d02",
}
BOOKCORPUS_ROWS = 74_004_228  # the hub copy's train split

# Examples per file (SentEval's task sizes; read with str.splitlines like SentEval).
SENTEVAL_LINES = {
    "MR/rt-polarity.pos": 5331,
    "MR/rt-polarity.neg": 5331,
    "CR/custrev.pos": 2407,
    "CR/custrev.neg": 1368,
    "SUBJ/subj.subjective": 5000,
    "SUBJ/subj.objective": 5000,
    "MPQA/mpqa.pos": 3312,
    "MPQA/mpqa.neg": 7294,
    "TREC/train_5500.label": 5452,
    "TREC/TREC_10.label": 500,
    "MRPC/msr_paraphrase_train.txt": 4077,
    "MRPC/msr_paraphrase_test.txt": 1726,  # + header line
}
# STS12-16 as SentEval reads them (``senteval/sts.py``, its lists and order of sets): per set, the
# lines of its STS.input/STS.gs files and how many of those have a gold score (SentEval skips a
# pair whose gold line is empty). STS13's SMT set is not distributed.
STS_SETS = {
    "STS12": {
        "MSRpar": (750, 750),
        "MSRvid": (750, 750),
        "SMTeuroparl": (459, 459),
        "surprise.OnWN": (750, 750),
        "surprise.SMTnews": (399, 399),
    },
    "STS13": {"FNWN": (189, 189), "headlines": (750, 750), "OnWN": (561, 561)},
    "STS14": {
        "deft-forum": (450, 450),
        "deft-news": (300, 300),
        "headlines": (750, 750),
        "images": (750, 750),
        "OnWN": (750, 750),
        "tweet-news": (750, 750),
    },
    "STS15": {
        "answers-forums": (2000, 375),
        "answers-students": (1500, 750),
        "belief": (2000, 375),
        "headlines": (1500, 750),
        "images": (1500, 750),
    },
    "STS16": {
        "answer-answer": (1572, 254),
        "headlines": (1498, 249),
        "plagiarism": (1271, 230),
        "postediting": (3287, 244),
        "question-question": (1555, 209),
    },
}
# Lines per file of the STS Benchmark (no header) and SICK (one header line), SentEval's splits.
STSB_LINES = {"train": 5749, "dev": 1500, "test": 1379}
SICK_LINES = {"train": 4501, "trial": 501, "test_annotated": 4928}


def sts_files() -> dict[str, tuple[int, int | None]]:
    """Every similarity file under the SentEval folder -> (lines, scored pairs or None): the
    STS12-16 inputs and gold files, the STS Benchmark's three splits, SICK's three files."""
    out: dict[str, tuple[int, int | None]] = {}
    for year, sets in STS_SETS.items():
        for name, (lines, scored) in sets.items():
            out[f"STS/{year}-en-test/STS.input.{name}.txt"] = (lines, None)
            out[f"STS/{year}-en-test/STS.gs.{name}.txt"] = (lines, scored)
    for split, n in STSB_LINES.items():
        out[f"STS/STSBenchmark/sts-{split}.csv"] = (n, n)
    for split, n in SICK_LINES.items():
        out[f"SICK/SICK_{split}.txt"] = (n, n - 1)
    return out


def _score(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.0 <= value <= 5.0 else None


def sts_file_problems(folder: Path, rel: str) -> list[str]:
    """What is wrong with the similarity file ``folder/rel`` (a key of :func:`sts_files`): missing,
    not UTF-8, a line count other than SentEval's (lines as ``str.splitlines`` splits them, as
    SentEval reads STS12-16), a gold file with another number of scored pairs or a score outside
    0-5, an input line that is not two tab-separated sentences, an STS Benchmark or SICK row
    without its columns (the first such line is named). ``qt-hard data list`` and the loaders of
    ``qt_hard.evaluation.similarity`` both check with this; an empty list when the file is intact."""
    p = folder / rel
    want_lines, want_scored = sts_files()[rel]
    if not p.is_file():
        return [f"{rel} is missing"]
    try:
        lines = p.read_bytes().decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        return [f"{rel} is not UTF-8 text (byte {err.start})"]
    problems = []
    if len(lines) != want_lines:
        problems.append(f"{rel} has {len(lines)} lines, expected {want_lines}")
    name = rel.rsplit("/", 1)[1]
    bad = None
    if name.startswith("STS.input."):
        bad = next((i for i, line in enumerate(lines, 1) if len(line.split("\t")) != 2), None)
        what = "is not two tab-separated sentences"
    elif name.startswith("STS.gs."):
        scored = [line for line in lines if line != ""]
        if len(scored) != want_scored and len(lines) == want_lines:
            problems.append(f"{rel} has {len(scored)} scored pairs, expected {want_scored}")
        bad = next((i for i, line in enumerate(lines, 1) if line != "" and _score(line) is None), None)
        what = "is not a score between 0 and 5"
    elif name.startswith("sts-"):  # genre, file, year, id, score, sentence 1, sentence 2 (+ sources)
        bad = next(
            (i for i, line in enumerate(lines, 1) if len(c := line.strip().split("\t")) < 7 or _score(c[4]) is None),
            None,
        )
        what = "is not 7 tab-separated columns with a score between 0 and 5 in the fifth"
    else:  # SICK: pair_ID, sentence_A, sentence_B, relatedness_score (1-5), entailment_judgment
        bad = next(
            (
                i
                for i, line in enumerate(lines[1:], 2)
                if len(c := line.strip().split("\t")) < 4 or _score(c[3]) is None
            ),
            None,
        )
        what = "is not pair_ID, sentence_A, sentence_B, a relatedness score between 0 and 5"
    if bad is not None:
        problems.append(f"{rel}:{bad} {what}")
    return problems


def _check_sts(folder: Path) -> list[str]:
    """``folder`` is the SentEval folder holding STS/ and SICK/."""
    return [problem for rel in sts_files() for problem in sts_file_problems(folder, rel)]


# (graphs, nodes) per TU dataset, the published TUDataset statistics; None where only the graph
# count is checked.
TU_COUNTS = {
    "MUTAG": (188, 3371),
    "PTC_MR": (344, 4915),
    "ENZYMES": (600, 19580),
    "PROTEINS": (1113, 43471),
    "IMDB-BINARY": (1000, 19773),
    "IMDB-MULTI": (1500, 19502),
    "DD": (1178, None),
    "REDDIT-BINARY": (2000, None),
}
CIFAR10_FILES = (
    "data_batch_1",
    "data_batch_2",
    "data_batch_3",
    "data_batch_4",
    "data_batch_5",
    "test_batch",
    "batches.meta",
)


# ------------------------------------------------------------------------------------------------
# Dataset: how one folder is built and checked


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
    """A folder under the data root: ``build(tmp, opts)`` writes it, ``check(folder)`` lists problems."""

    name: str
    summary: str
    license: str
    build: Callable[[Path, Options], None]
    check: Callable[[Path], list[str]]
    parts: tuple[str, ...] = field(default=())  # installed one by one (tu), else the whole folder


@dataclass
class Status:
    name: str
    state: str  # present | missing | corrupt
    detail: str


def _fetch(opts: Options, key: str, src: Source, dest_name: str | None = None, progress=None) -> Path:
    return fetch(
        src.url,
        opts.downloads / key / (dest_name or Path(urllib.parse.urlsplit(src.url).path).name),
        size=src.size,
        sha256=src.sha256,
        md5=src.md5,
        mirror=opts.mirror,
        progress=opts.progress if progress is None else progress,
    )


def _fetch_many(opts: Options, jobs: list[tuple[str, Source, str]], desc: str) -> list[Path]:
    """Fetch many small files with a few threads and one progress bar over files."""
    from tqdm.auto import tqdm

    def one(job):
        key, src, name = job
        return _fetch(opts, key, src, name, progress=False)

    with (
        ThreadPoolExecutor(max(1, opts.workers)) as pool,
        tqdm(total=len(jobs), unit="file", desc=desc, disable=not opts.progress) as bar,
    ):
        out = []
        for path in pool.map(one, jobs):
            out.append(path)
            bar.update(1)
    return out


def _open_zip(path: Path) -> zipfile.ZipFile:
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


def _safe_member(name: str) -> bool:
    p = Path(name)
    return not p.is_absolute() and ".." not in p.parts


# ------------------------------------------------------------------------------------------------
# senteval

_SENTEVAL_ZIP_MEMBERS = {  # our file -> the zip member's last two path parts
    "MR/rt-polarity.pos": "rt10662/rt-polarity.pos",
    "MR/rt-polarity.neg": "rt10662/rt-polarity.neg",
    "CR/custrev.pos": "customerr/custrev.pos",
    "CR/custrev.neg": "customerr/custrev.neg",
    "SUBJ/subj.subjective": "subj/subj.subjective",
    "SUBJ/subj.objective": "subj/subj.objective",
    "MPQA/mpqa.pos": "mpqa/mpqa.pos",
    "MPQA/mpqa.neg": "mpqa/mpqa.neg",
}


def normalize_latin1_lines(data: bytes) -> bytes:
    """Replace the byte 0x85 (cp1252's ellipsis, which ``str.splitlines`` takes for a line break in
    latin-1 text) by ``...``, as the reference copy's SOURCE.md documents, so every line is one
    example however the file is split."""
    return data.replace(b"\x85", b"...")


def drop_mrpc_appended(data: bytes) -> bytes:
    """Remove the mirror's non-corpus lines (both sentence ids ``-1``) from the MRPC train file."""
    lines = data.splitlines(keepends=True)
    return b"".join(line for line in lines if line.split(b"\t")[1:3] != [b"-1", b"-1"])


def _build_senteval(tmp: Path, opts: Options) -> None:
    src = SOURCES["senteval"]
    with _open_zip(_fetch(opts, "senteval", src["datasmall_NB_ACL12.zip"])) as zf:
        names = [n for n in zf.namelist() if _safe_member(n)]
        for ours, suffix in _SENTEVAL_ZIP_MEMBERS.items():
            hits = [n for n in names if n.endswith("/" + suffix) or n == suffix]
            if len(hits) != 1:
                raise DownloadError(
                    f"datasmall_NB_ACL12.zip: expected one member ending in {suffix}, found {len(hits)}"
                )
            _write(tmp / ours, normalize_latin1_lines(zf.read(hits[0])))
    for name in ("train_5500.label", "TREC_10.label"):
        _write(tmp / "TREC" / name, normalize_latin1_lines(_fetch(opts, "senteval", src[name]).read_bytes()))
    train = _fetch(opts, "senteval", src["msr_paraphrase_train.txt"]).read_bytes()
    _write(tmp / "MRPC" / "msr_paraphrase_train.txt", drop_mrpc_appended(train))
    shutil.copyfile(_fetch(opts, "senteval", src["msr_paraphrase_test.txt"]), tmp / "MRPC" / "msr_paraphrase_test.txt")
    for rel, want in SENTEVAL_OUTPUT_SHA256.items():
        got = file_digest(tmp / rel)
        if got != want:
            raise DownloadError(f"senteval/{rel}: sha256 {got} differs from the reference copy's {want}")
    problems = _check_senteval(tmp)
    if problems:
        raise DownloadError("senteval: " + "; ".join(problems))


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# Bytes no SentEval text file holds (C0 controls other than tab and line ends, DEL): random bytes
# or a binary file read in their place. MRPC is UTF-8 and holds one 0x12, so it is checked for
# undecodable bytes instead.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f]")


def senteval_file_problems(folder: Path, rel: str) -> list[str]:
    """What is wrong with the SentEval file ``folder/rel`` (``rel`` a key of ``SENTEVAL_LINES``,
    e.g. ``CR/custrev.pos``): missing, a line count other than SentEval's (lines as ``str.splitlines``
    splits them, the way SentEval reads them), or the first line holding bytes no text file of the
    task holds, named by its line number. ``qt-hard data list`` and the task loaders
    (``qt_hard.evaluation.tasks``) both check with this; an empty list when the file is intact."""
    p = folder / rel
    if not p.is_file():
        return [f"{rel} is missing"]
    utf8 = rel.startswith("MRPC")
    text = p.read_bytes().decode("utf-8-sig" if utf8 else "latin-1", errors="replace")
    lines = text.splitlines()
    problems = []
    want = SENTEVAL_LINES[rel]
    if len(lines) != want:
        problems.append(f"{rel} has {len(lines)} lines, expected {want}")
    bad = re.compile("\ufffd") if utf8 else _CONTROL
    for lineno, line in enumerate(lines, 1):
        hit = bad.search(line)
        if hit:
            what = "bytes that are not UTF-8" if utf8 else f"the control byte {hit.group()!r}"
            problems.append(f"{rel}:{lineno} holds {what}, not text")
            break
    return problems


def _check_senteval(folder: Path) -> list[str]:
    return [problem for rel in SENTEVAL_LINES for problem in senteval_file_problems(folder, rel)]


# ------------------------------------------------------------------------------------------------
# tu


def _build_tu_part(ds: str) -> Callable[[Path, Options], None]:
    def build(tmp: Path, opts: Options) -> None:
        with _open_zip(_fetch(opts, "tu", SOURCES["tu"][f"{ds}.zip"])) as zf:
            members = [
                n
                for n in zf.namelist()
                if _safe_member(n) and n.startswith(f"{ds}/") and not n.endswith("/") and "__MACOSX" not in n
            ]
            if not members:
                raise DownloadError(f"{ds}.zip holds no {ds}/ folder")
            for n in members:
                _write(tmp / n[len(ds) + 1 :], zf.read(n))
        problems = _check_tu_part(tmp, ds)
        if problems:
            raise DownloadError(f"tu/{ds}: " + "; ".join(problems))

    return build


def _count_lines(path: Path) -> tuple[int, int]:
    """(lines, largest integer on a line) of a TU indicator/label file."""
    n, top = 0, None
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                n += 1
                v = int(line.split(b",")[0])
                top = v if top is None or v > top else top
    return n, top or 0


def _check_tu_part(folder: Path, ds: str) -> list[str]:
    need = [f"{ds}_A.txt", f"{ds}_graph_indicator.txt", f"{ds}_graph_labels.txt"]
    missing = [f for f in need if not (folder / f).is_file()]
    if missing:
        return [f"{ds}: missing {', '.join(missing)}"]
    graphs, nodes = TU_COUNTS[ds]
    n_labels, _ = _count_lines(folder / f"{ds}_graph_labels.txt")
    n_nodes, top = _count_lines(folder / f"{ds}_graph_indicator.txt")
    problems = []
    if n_labels != graphs or top != graphs:
        problems.append(f"{ds}: {n_labels} graph labels and graph ids up to {top}, expected {graphs}")
    if nodes is not None and n_nodes != nodes:
        problems.append(f"{ds}: {n_nodes} nodes, expected {nodes}")
    return problems


# ------------------------------------------------------------------------------------------------
# cifar10


def _build_cifar10(tmp: Path, opts: Options) -> None:
    archive = _fetch(opts, "cifar10", SOURCES["cifar10"]["cifar-10-python.tar.gz"])
    prefix = "cifar-10-batches-py/"
    try:
        with tarfile.open(archive, "r:gz") as tf:
            for m in tf:
                if not m.isfile() or not m.name.startswith(prefix) or not _safe_member(m.name):
                    continue
                _write(tmp / m.name, tf.extractfile(m).read())
    except (tarfile.TarError, EOFError, OSError, zlib.error) as err:
        archive.unlink(missing_ok=True)
        raise DownloadError(
            f"{archive.name} is not a complete tar.gz archive ({err}); it was removed, run again"
        ) from None
    problems = _check_cifar10(tmp, deep=True)
    if problems:
        raise DownloadError("cifar10: " + "; ".join(problems))


def _check_cifar10(folder: Path, deep: bool = False) -> list[str]:
    base = folder / "cifar-10-batches-py"
    missing = [f for f in CIFAR10_FILES if not (base / f).is_file()]
    if missing:
        return [f"cifar-10-batches-py: missing {', '.join(missing)}"]
    if not deep:
        return []
    problems = []
    for name in CIFAR10_FILES[:-1]:
        try:
            with open(base / name, "rb") as fh:
                batch = pickle.load(fh, encoding="latin1")
            n = len(batch["labels"])
            if batch["data"].shape != (n, 3072) or str(batch["data"].dtype) != "uint8":
                problems.append(f"{name}: data {batch['data'].shape} {batch['data'].dtype}, labels {n}")
        except Exception as err:  # noqa: BLE001 - any unreadable batch is a corrupt dataset
            problems.append(f"{name} cannot be read ({type(err).__name__}: {err})")
    return problems


# ------------------------------------------------------------------------------------------------
# books


def books_index() -> list[dict[str, str]]:
    """The packaged list of the 352 books (INDEX.tsv's columns + ``txt_sha256`` and ``head_hex``,
    the first 48 bytes of the stripped text)."""
    path = Path(__file__).with_name("books_index.tsv")
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


def _build_books(tmp: Path, opts: Options) -> None:
    rows = books_index()
    jobs = [
        (
            "books",
            Source(f"{BOOKS_BASE}/{urllib.parse.quote(r['original_path'])}", size=int(r["original_bytes"])),
            r["original_blob_sha1"] + ".txt",
        )
        for r in rows
    ]
    paths = _fetch_many(opts, jobs, "books")
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


def _check_books(folder: Path) -> list[str]:
    rows = books_index()
    missing = [r["file"] for r in rows if not (folder / r["file"]).is_file()]
    if missing:
        return [f"{len(missing)} of {len(rows)} books missing (e.g. {missing[0]})"]
    return []


# ------------------------------------------------------------------------------------------------
# wikipedia

_SENT_SPLIT = re.compile(r"(?<=[.?!])\s+")
_INNER_STOP = re.compile(r"[.?!]")


def count_wiki_sentences(lines: list[str]) -> int:
    """Sentences in an article's paragraph lines (the title line excluded), by the reference copy's
    simple splitter: split at whitespace after ``.``, ``?`` or ``!``; skip heading lines (8 words or
    fewer, ending in ``.``, no other ``.?!``)."""
    n = 0
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if len(s.split()) <= 8 and s.endswith(".") and not _INNER_STOP.search(s[:-1]):
            continue
        n += sum(1 for part in _SENT_SPLIT.split(s) if part.strip())
    return n


_DOC_HEAD = re.compile(rb'^<doc id="(\d+)"')


def _wiki_articles(data: bytes):
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


def _build_wikipedia(tmp: Path, opts: Options, min_sentences: int = 200) -> None:
    jobs = [("wikipedia", Source(f"{WIKI_BASE}/{f}"), f.replace("/", "_")) for f in WIKI_FILES]
    paths = _fetch_many(opts, jobs, "wikipedia")
    txt = tmp / "enwiki_wikiextractor_ge200sent.txt"
    digest = hashlib.sha256()
    index = ["page_id\ttitle\tn_sentences_simple_split\n"]
    with open(txt, "wb") as out:
        for path in paths:
            for page_id, raw in _wiki_articles(path.read_bytes()):
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
    for name, want in WIKI_OUTPUT_SHA256.items():
        if want and got[name] != want:
            raise DownloadError(f"wikipedia/{name}: sha256 {got[name]} differs from the reference copy's {want}")
    with open(txt, "rb") as src, lzma.open(txt.with_suffix(".txt.xz"), "wb", preset=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    txt.unlink()


def _check_wikipedia(folder: Path) -> list[str]:
    need = ["enwiki_wikiextractor_ge200sent.txt.xz", "enwiki_wikiextractor_ge200sent_index.tsv"]
    return [f"{n} is missing" for n in need if not (folder / n).is_file()]


# ------------------------------------------------------------------------------------------------
# bookcorpus (through `datasets`)


def _build_bookcorpus(tmp: Path, opts: Options, rows_per_file: int = 1_000_000) -> None:
    from datasets import load_dataset

    source = opts.source or BOOKCORPUS_HUB
    if Path(source).is_dir():
        files = sorted(str(p) for p in Path(source).rglob("*.parquet"))
        if not files:
            raise DownloadError(f"{source} holds no .parquet files")
        ds = load_dataset("parquet", data_files=files, split="train")
    else:
        ds = load_dataset(source, split="train")
    if "text" not in ds.column_names:
        raise DownloadError(f"{source}: expected a 'text' column, found {ds.column_names}")
    if source == BOOKCORPUS_HUB and len(ds) != BOOKCORPUS_ROWS:
        raise DownloadError(f"{source}: {len(ds)} rows, expected {BOOKCORPUS_ROWS}")
    ds = ds.select_columns(["text"])
    shards = max(1, -(-len(ds) // rows_per_file))
    for i in range(shards):
        ds.shard(shards, i, contiguous=True).to_parquet(str(tmp / f"train-{i:05d}-of-{shards:05d}.parquet"))


def _check_bookcorpus(folder: Path) -> list[str]:
    return [] if any(folder.glob("*.parquet")) else ["no .parquet files"]


def bookcorpus_files(folder: Path) -> list[str]:
    """The Parquet shards ``qt-hard data get bookcorpus`` wrote, in corpus order."""
    return sorted(str(p) for p in Path(folder).glob("*.parquet"))


# ------------------------------------------------------------------------------------------------
# the registry


DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in (
        Dataset(
            "senteval",
            "MR, CR, SUBJ, MPQA, TREC, MRPC in SentEval's layout (~5 MB on disk)",
            "research use; cite Pang & Lee 2004/2005, Hu & Liu 2004, Wiebe et al. 2005, Li & Roth 2002, "
            "Dolan et al. 2004 (MRPC: Microsoft Research Paraphrase Corpus license)",
            _build_senteval,
            _check_senteval,
        ),
        Dataset(
            "books",
            "352 public-domain Project Gutenberg books, header/footer stripped, xz (45 MB)",
            "public domain in the USA (Project Gutenberg texts; PG trademark removed with the headers)",
            _build_books,
            _check_books,
        ),
        Dataset(
            "wikipedia",
            "4,715 English Wikipedia articles with >= 200 sentences, WikiExtractor text (54 MB)",
            "CC BY-SA 3.0 / GFDL (Wikipedia); attribute Wikipedia",
            _build_wikipedia,
            _check_wikipedia,
        ),
        Dataset(
            "tu",
            "TU Dortmund graph datasets: MUTAG, PTC_MR, ENZYMES, PROTEINS, IMDB-BINARY, IMDB-MULTI, DD, "
            "REDDIT-BINARY, original text format",
            "no license stated; research use with citation of TUDataset (Morris et al. 2020) and each source",
            None,
            None,
            parts=tuple(TU_COUNTS),
        ),
        Dataset(
            "cifar10",
            "CIFAR-10 python version, the official archive (163 MB)",
            "no formal license; cite Krizhevsky 2009",
            _build_cifar10,
            lambda f: _check_cifar10(f, deep=True),
        ),
        Dataset(
            "bookcorpus",
            "BookCorpus (74 M sentences) through `datasets`, written as Parquet shards",
            "see the Hugging Face dataset card (Smashwords books; research use)",
            _build_bookcorpus,
            _check_bookcorpus,
        ),
    )
}


def _unknown(name: str) -> DownloadError:
    return DownloadError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")


def status(name: str, root: Path) -> Status:
    """Whether ``root/name`` is present and intact (manifest re-hashed, else layout checked)."""
    if name not in DATASETS:
        raise _unknown(name)
    ds = DATASETS[name]
    folder = root / name
    if not folder.is_dir():
        return Status(name, "missing", f"fetch it with `qt-hard data get {name}`")
    if ds.parts:
        states = [_folder_state(folder / p, lambda f, p=p: _check_tu_part(f, p)) for p in ds.parts]
        missing = [p for p, s in zip(ds.parts, states) if s[0] == "missing"]
        bad = [f"{p}: {s[1]}" for p, s in zip(ds.parts, states) if s[0] == "corrupt"]
        if bad:
            return Status(name, "corrupt", "; ".join(bad))
        if len(missing) == len(ds.parts):
            return Status(name, "missing", f"fetch it with `qt-hard data get {name}`")
        detail = f"{len(ds.parts) - len(missing)}/{len(ds.parts)} subsets"
        if missing:
            detail += f" (not here: {', '.join(missing)}; `qt-hard data get {name}` adds them)"
        return Status(name, "present", detail)
    state, detail = _folder_state(folder, ds.check)
    return Status(name, state, detail)


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
    probe = root
    while not probe.exists():
        probe = probe.parent
    # The mode bits too: root passes os.access everywhere, but a folder marked read-only (like
    # this project's reference copy) must not be written into.
    if not os.access(probe, os.W_OK) or not probe.stat().st_mode & 0o222:
        raise DownloadError(f"cannot write under {root}: pass --root DIR or set QT_HARD_DATA to a writable folder")


def get(name: str, opts: Options, force: bool = False) -> Status:
    """Fetch, verify and install ``name`` under ``opts.root`` unless it is already intact."""
    if name not in DATASETS:
        raise _unknown(name)
    ds = DATASETS[name]
    before = status(name, opts.root)
    if before.state == "present" and not force and not (ds.parts and "not here" in before.detail):
        return Status(name, "present", f"already there, {before.detail}; nothing fetched")
    _require_writable(opts.root)
    if ds.parts:
        for part in ds.parts:
            target = opts.root / name / part
            state, _ = _folder_state(target, lambda f, p=part: _check_tu_part(f, p))
            if state != "present" or force:
                install(
                    target, _with_note(_build_tu_part(part), ds, opts, {f"{part}.zip": SOURCES[name][f"{part}.zip"]})
                )
    else:
        install(opts.root / name, _with_note(ds.build, ds, opts, SOURCES[name]))
    shutil.rmtree(opts.downloads / name, ignore_errors=True)
    after = status(name, opts.root)
    if after.state != "present":
        raise DownloadError(f"{name} was installed but fails its check: {after.detail}")
    return after
