"""SentEval's classification tasks (MR, CR, SUBJ, MPQA, TREC, MRPC) in SentEval's layout, into
``senteval``: the sources, the build (the zip's members, TREC's files, MRPC from a public mirror with
its appended lines dropped) and the check the evaluation's loaders share (:func:`senteval_file_problems`:
SentEval's line counts, no control bytes)."""

from __future__ import annotations

import codecs
import re
import shutil
from pathlib import Path

from qt_hard.data.download import DownloadError, file_digest
from qt_hard.data.sources._common import Dataset, Options, Source, fetch_source, open_zip, write_file
from qt_hard.data.sources._common import refuse_problems, zip_member

SENTEVAL_BINCLASSIF = "https://dl.fbaipublicfiles.com/senteval/senteval_data/datasmall_NB_ACL12.zip"
TREC_BASE = "https://cogcomp.seas.upenn.edu/Data/QA/QC"
MRPC_BASE = (
    "https://raw.githubusercontent.com/Pzeyang/Paraphrase_Identification/dc1755eb1a4755ca310f97209391f1f5c06e2fd1"
)
_NO_SUM = "no published checksum, and the reference copy came from another mirror: layout checked"

SOURCES: dict[str, Source] = {
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
}

# sha256 of files we write whose bytes equal the reference copy's (computed from that copy).
SENTEVAL_OUTPUT_SHA256 = {
    "MRPC/msr_paraphrase_train.txt": "f3d26d73bb3510032f80836e2e81cf32c71863f8dd6151aa80a125c2c799a557",
    "MRPC/msr_paraphrase_test.txt": "51a1f197d8786712d2f0d97700f5be653b7488a96cde00e158159350d23e3d90",
}

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
# The zip's folder of each task it holds: our file TASK/NAME is the member ending in FOLDER/NAME.
_ZIP_FOLDERS = {"MR": "rt10662", "CR": "customerr", "SUBJ": "subj", "MPQA": "mpqa"}
_SENTEVAL_ZIP_MEMBERS = {  # our file -> the zip member's last two path parts
    rel: f"{_ZIP_FOLDERS[task]}/{name}"
    for rel in SENTEVAL_LINES
    for task, name in [rel.split("/")]
    if task in _ZIP_FOLDERS
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
    src = SOURCES
    with open_zip(fetch_source(opts, "senteval", src["datasmall_NB_ACL12.zip"])) as zf:
        for ours, suffix in _SENTEVAL_ZIP_MEMBERS.items():
            data = zip_member(zf, "datasmall_NB_ACL12.zip", suffix, f"ending in {suffix}")
            write_file(tmp / ours, normalize_latin1_lines(data))
    for name in ("train_5500.label", "TREC_10.label"):
        write_file(tmp / "TREC" / name, normalize_latin1_lines(fetch_source(opts, "senteval", src[name]).read_bytes()))
    train = fetch_source(opts, "senteval", src["msr_paraphrase_train.txt"]).read_bytes()
    write_file(tmp / "MRPC" / "msr_paraphrase_train.txt", drop_mrpc_appended(train))
    shutil.copyfile(
        fetch_source(opts, "senteval", src["msr_paraphrase_test.txt"]), tmp / "MRPC" / "msr_paraphrase_test.txt"
    )
    for rel, want in SENTEVAL_OUTPUT_SHA256.items():
        got = file_digest(tmp / rel)
        if got != want:
            raise DownloadError(f"senteval/{rel}: sha256 {got} differs from the reference copy's {want}")
    refuse_problems("senteval", _check_senteval(tmp))


# Bytes no SentEval text file holds (C0 controls other than tab and line ends, DEL): random bytes
# or a binary file read in their place. MRPC is UTF-8 and holds one 0x12, so it is checked for
# undecodable bytes instead.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f]")


def senteval_file_problems(folder: Path, rel: str) -> list[str]:
    """What is wrong with the SentEval file ``folder/rel`` (``rel`` a key of ``SENTEVAL_LINES``,
    e.g. ``CR/custrev.pos``): missing, a line count other than SentEval's (lines as ``str.splitlines``
    splits them, the way SentEval reads them), or the first line holding bytes no text file of the
    task holds, named by its line number. ``qt-hard data list`` and the task loaders
    (``qt_hard.evaluation.datasets``) both check with this; an empty list when the file is intact."""
    p = folder / rel
    if not p.is_file():
        return [f"{rel} is missing"]
    utf8 = rel.startswith("MRPC")
    raw = p.read_bytes()
    text = raw.decode("utf-8-sig" if utf8 else "latin-1", errors="replace")
    lines = text.splitlines()
    problems = []
    if not utf8 and raw.startswith(codecs.BOM_UTF8):
        # SentEval reads these files as latin-1, where the mark is three characters glued to the first
        # word: a file re-saved with it would score differently without a word said.
        problems.append(f"{rel} starts with a UTF-8 byte-order mark (SentEval's latin-1 file has none)")
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


DATASET = Dataset(
    "senteval",
    "MR, CR, SUBJ, MPQA, TREC, MRPC in SentEval's layout (~5 MB on disk)",
    "research use; cite Pang & Lee 2004/2005, Hu & Liu 2004, Wiebe et al. 2005, Li & Roth 2002, "
    "Dolan et al. 2004 (MRPC: Microsoft Research Paraphrase Corpus license)",
    _build_senteval,
    _check_senteval,
    sources=SOURCES,
    keep=("STS", "SICK"),  # the folders of `data get sts` inside senteval/
)
