"""The similarity sets SentEval reads (STS12-16, the STS Benchmark, SICK), Moses-tokenized as SentEval's
script leaves them, into ``senteval/STS`` and ``senteval/SICK``: the sources, the build of each part and
the check the evaluation's loaders share (:func:`sts_file_problems`)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from qt_hard.data.download import DownloadError
from qt_hard.data.sources._common import Dataset, Options, Source, fetch_source, open_zip, safe_member, write_file
from qt_hard.data.sources._common import read_targz, refuse_problems, zip_member

# SentEval's data/downstream/get_transfer_data.bash: the STS wiki's archives and SICK's SemEval-2014 files.
STS_WIKI = "http://ixa2.si.ehu.es/stswiki/images"
STS_ARCHIVES = {  # year -> (archive path on the wiki, the folder it unpacks to)
    "STS12": ("4/40/STS2012-en-test.zip", "test-gold"),
    "STS13": ("2/2f/STS2013-en-test.zip", "test-gs"),
    "STS14": ("8/8c/STS2014-en-test.zip", "sts-en-test-gs-2014"),
    "STS15": ("d/da/STS2015-en-test.zip", "test_evaluation_task2a"),
    "STS16": ("9/98/STS2016-en-test.zip", "sts2016-english-with-gs-v1.0"),
}
STSB_ARCHIVE = f"{STS_WIKI}/4/48/Stsbenchmark.tar.gz"
SICK_BASE = "http://alt.qcri.org/semeval2014/task1/data/uploads"


SOURCES: dict[str, Source] = {
    **{
        Path(path).name: Source(
            f"{STS_WIKI}/{path}",
            note="no published checksum; gold files by the reference copy's sha256, pairs counted",
        )
        for path, _ in STS_ARCHIVES.values()
    },
    "Stsbenchmark.tar.gz": Source(
        STSB_ARCHIVE, note="no published checksum; ids and scores by the reference copy's sha256, pairs counted"
    ),
    **{
        f"sick_{split}.zip": Source(
            f"{SICK_BASE}/sick_{split}.zip",
            note="no published checksum; ids, scores and labels by the reference copy's sha256, pairs counted",
        )
        for split in ("train", "trial", "test_annotated")
    },
}

# STS12-16 as SentEval reads them (``senteval/sts.py``, its lists and order of sets): per set, the
# lines of its STS.input/STS.gs files, how many of those have a gold score (SentEval skips a pair
# whose gold line is empty) and the sha256 of the gold file (SentEval's script copies it from the
# archive unchanged; computed from the reference copy). STS13's SMT set is not distributed.
STS_SETS = {
    "STS12": {
        "MSRpar": (750, 750, "5526be59228bc34ccb3cb6f1f56c0d7278d3419b8886713ae016fd92b151f19c"),
        "MSRvid": (750, 750, "9c6096c6bcfb0144c8bbddb00900ca9198c88498630cd0c8f08d18365f1d7150"),
        "SMTeuroparl": (459, 459, "708530c4d006d06881f3289fce35d624d7efe562dcf0fe5f8aa0eec3a135f6d4"),
        "surprise.OnWN": (750, 750, "088d8ca22c0aa406e4a5d2e6e308a4f38b482b8e736c2445a38ffb6e4c4fb4fd"),
        "surprise.SMTnews": (399, 399, "aa6dfc868db333c43dc59be14d46fa6587c7ebddc0d497e717f647bf35121cf1"),
    },
    "STS13": {
        "FNWN": (189, 189, "8ca95b7228119578e2007839cf7969f22c4f1fd41fd610c4b7f9683072d98066"),
        "headlines": (750, 750, "f49f64089011436dd296ef384c07160219406feef7dc4b9fa2af52a519f32bc6"),
        "OnWN": (561, 561, "0cd497aaddb00a2fb6db25f77bccfc09e8aa012e11549b81b434bab1a27ad954"),
    },
    "STS14": {
        "deft-forum": (450, 450, "ba6dc76696b5c93985590a325b4d142449932cdf0d715b2bab1b1743fe3c488c"),
        "deft-news": (300, 300, "105c5b333abd50c274efb4dae9e3e0dab36ed63eee780cfb49955b1586bd62f2"),
        "headlines": (750, 750, "f243c34647255cd0b994565ed4f58dd31506e7d9c9d6250d1a6dd14095625832"),
        "images": (750, 750, "fc994ebacc7074c332626fa9e29542d7340a48a3cdb999b47cdb59c378523a62"),
        "OnWN": (750, 750, "1c80147df270ea4cfce14a47ed29f8a2f10d5dc016d02836077fd786ff7f535b"),
        "tweet-news": (750, 750, "0098c644bfeaa2d511a8297b1940771865900c372c9dd49a62726dc5ec02c9a3"),
    },
    "STS15": {
        "answers-forums": (2000, 375, "1644301a7540e5484da285002e9269062852efb2272be614cad99c9530f6a102"),
        "answers-students": (1500, 750, "028db213140f8c7aef7497c4ae38b6380938f20359852231669c83dce11c3701"),
        "belief": (2000, 375, "5736192faaccbdbecd0ef6b73ec04b24115cd2e48d55dc3b1b170da3d2a81c75"),
        "headlines": (1500, 750, "e8e432f769c8a94ddb62ae3343890ac24a9dd78a116d56c707313bc59413dd56"),
        "images": (1500, 750, "ed8878209098c77ca7f02ac413d3fd698f92ad3425999555e50fda89fc46012a"),
    },
    "STS16": {
        "answer-answer": (1572, 254, "332efd741b0cb247d20dd2a6cec854360c921c7e6b395f328f562d8d26057214"),
        "headlines": (1498, 249, "01e33a95996201a6e81e3cce9eda0f15048b77613ea64dce2929bb35479f7d85"),
        "plagiarism": (1271, 230, "29984944a91aaff484f2b2e5d4d434fc8a6f5ef6f578a880cccd2786f5142fdc"),
        "postediting": (3287, 244, "81947ed9dbe7f85b7bd249df68ed5c7b2f16f06390ad568eb5554b1e26bc5577"),
        "question-question": (1555, 209, "cf9ebf9d140191f73620cda0560947ad9283c910735d0d541b8a401a5e64afb0"),
    },
}
# Lines per file of the STS Benchmark (no header) and SICK (one header line), SentEval's splits.
STSB_LINES = {"train": 5749, "dev": 1500, "test": 1379}
SICK_LINES = {"train": 4501, "trial": 501, "test_annotated": 4928}
# The sha256 of each STS12-16 gold file, by its path under the SentEval folder.
STS_GOLD_SHA256 = {
    f"STS/{year}-en-test/STS.gs.{name}.txt": sha256
    for year, sets in STS_SETS.items()
    for name, (*_, sha256) in sets.items()
}
# sha256 of the untokenized columns (computed from the reference copy, see ``untokenized_digest``):
# the STS Benchmark's genre, file, year, id and score; SICK's header, pair id, score and label.
STSB_COLUMNS_SHA256 = {
    "train": "fc0073d69081e7fd61c4b5459ef895b64f3a496b4518f71ab5157800d8ded9ec",
    "dev": "b23e5846480b45bb9973de408d3e07fe1b8c1f7a5dcb079d7d62542202d7fd07",
    "test": "69dade45d0961e6f702453d958f099e00eceacdedf24054d6d775689a7d8f628",
}
SICK_COLUMNS_SHA256 = {
    "train": "e830332f654e162a57adabdf6ee32f6e6ab2cfc00d6401cf625ea85d270352ef",
    "trial": "6e7fc5ea9d0e3ceb82a816dd5613213165f265583d3517b2c3a61f918c06c3f7",
    "test_annotated": "b3695929ef7558aa8d8273fa36285747687948cf0f24060fb47ce1dc3fe4f345",
}


def sts_files() -> dict[str, tuple[int, int | None]]:
    """Every similarity file under the SentEval folder -> (lines, scored pairs or None): the
    STS12-16 inputs and gold files, the STS Benchmark's three splits, SICK's three files."""
    out: dict[str, tuple[int, int | None]] = {}
    for year, sets in STS_SETS.items():
        for name, (lines, scored, *_) in sets.items():
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


def sts_file_problems(folder: Path, rel: str, part_dir: Path | None = None) -> list[str]:
    """What is wrong with the similarity file ``folder/rel`` (a key of :func:`sts_files`): missing,
    not UTF-8, a line count other than SentEval's (lines as ``str.splitlines`` splits them, as
    SentEval reads STS12-16), a gold file with another number of scored pairs or a score outside
    0-5, an input line that is not two tab-separated sentences, an STS Benchmark or SICK row
    without its columns (the first such line is named). ``qt-hard data list`` and the loaders of
    ``qt_hard.evaluation.similarity`` both check with this; an empty list when the file is intact.
    ``part_dir``: read the file from this folder in place of ``folder/STS`` or ``folder/SICK`` (a
    folder being built)."""
    p = part_dir / rel.split("/", 1)[1] if part_dir is not None else folder / rel
    want_lines, want_scored = sts_files()[rel]
    if not p.is_file():
        return [f"{rel} is missing"]
    try:
        # A UTF-8 byte-order mark is text's signature, not a character: read as the loaders read it.
        lines = p.read_bytes().decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as err:
        return [f"{rel} is not UTF-8 text (byte {err.start})"]
    problems = []
    if len(lines) != want_lines:
        problems.append(f"{rel} has {len(lines)} lines, expected {want_lines}")
    name = rel.rsplit("/", 1)[1]
    start = 1
    if name.startswith("STS.input."):
        ok, what = (lambda line: len(line.split("\t")) == 2), "is not two tab-separated sentences"
    elif name.startswith("STS.gs."):
        scored = [line for line in lines if line != ""]
        if len(scored) != want_scored and len(lines) == want_lines:
            problems.append(f"{rel} has {len(scored)} scored pairs, expected {want_scored}")
        ok, what = (lambda line: line == "" or _score(line) is not None), "is not a score between 0 and 5"
    elif name.startswith("sts-"):  # genre, file, year, id, score, sentence 1, sentence 2 (+ sources)
        ok = lambda line: len(c := line.strip().split("\t")) >= 7 and _score(c[4]) is not None
        what = "is not 7 tab-separated columns with a score between 0 and 5 in the fifth"
    else:  # SICK: pair_ID, sentence_A, sentence_B, relatedness_score (1-5), entailment_judgment
        ok = lambda line: len(c := line.strip().split("\t")) >= 4 and _score(c[3]) is not None
        what, start = "is not pair_ID, sentence_A, sentence_B, a relatedness score between 0 and 5", 2
    bad = next((i for i, line in enumerate(lines[start - 1 :], start) if not ok(line)), None)
    if bad is not None:
        problems.append(f"{rel}:{bad} {what}")
    return problems


# What SentEval's get_transfer_data.bash does to these files, and so what this does (sacremoses' port of
# Moses, hence the tokenized sentences checked by counts, the rest byte for byte): docs/guides/data.md.
STS_PARTS = ("STS", "SICK")


def _moses():
    """(tokenize, lower): Moses' English tokenizer without escaping, and lower-casing."""
    try:
        from sacremoses import MosesTokenizer
    except ImportError:
        raise DownloadError(
            "data get sts tokenizes the sentences with the Moses tokenizer as SentEval's script does: "
            "install sacremoses (pip install sacremoses, or qt-hard[sts])"
        ) from None
    tok = MosesTokenizer(lang="en")
    return lambda text: tok.tokenize(text.strip(), escape=False, return_str=True), str.lower


def _text_lines(data: bytes, name: str) -> list[str]:
    """Lines as ``cut`` and the Moses scripts see them: split at ``\\n`` only (a ``\\r`` stays in
    the last field), the final line break not starting a line."""
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise DownloadError(f"{name} is empty")
    return lines


def untokenized_digest(lines: list[str], columns: tuple[int, ...]) -> str:
    """sha256 of the given tab-separated columns of each line (joined by tabs, a line break after each)."""
    h = hashlib.sha256()
    for line in lines:
        cols = line.split("\t")
        h.update(("\t".join(cols[c] for c in columns if c < len(cols)) + "\n").encode("utf-8"))
    return h.hexdigest()


def _build_sts_part(tmp: Path, opts: Options) -> None:
    """``senteval/STS``: STS12-16 and the STS Benchmark, as SentEval's script leaves them."""
    tokenize, lower = _moses()
    src = SOURCES
    for year, (path, folder) in STS_ARCHIVES.items():
        archive = Path(path).name
        out = tmp / f"{year}-en-test"
        with open_zip(fetch_source(opts, "sts", src[archive])) as zf:
            prefix = "STS2016" if year == "STS16" else "STS"
            for name in STS_SETS[year]:
                gold = zip_member(zf, archive, f"{folder}/{prefix}.gs.{name}.txt")
                rel = f"STS/{year}-en-test/STS.gs.{name}.txt"
                got = hashlib.sha256(gold).hexdigest()
                if got != STS_GOLD_SHA256[rel]:
                    raise DownloadError(
                        f"{archive}: {prefix}.gs.{name}.txt has sha256 {got}, expected {STS_GOLD_SHA256[rel]}"
                    )
                write_file(out / f"STS.gs.{name}.txt", gold)
                rows = []
                for line in _text_lines(zip_member(zf, archive, f"{folder}/{prefix}.input.{name}.txt"), archive):
                    cols = line.split("\t")
                    rows.append("\t".join(lower(tokenize(c)) for c in (cols[0], cols[1] if len(cols) > 1 else "")))
                write_file(out / f"STS.input.{name}.txt", ("\n".join(rows) + "\n").encode("utf-8"))
            for n in zf.namelist():  # the readme and license files SentEval leaves beside the data
                base = n.rsplit("/", 1)[-1]
                if safe_member(n) and f"/{folder}/" in f"/{n}" and re.search(r"readme|license", base, re.I):
                    write_file(out / base, zf.read(n))
    with read_targz(fetch_source(opts, "sts", src["Stsbenchmark.tar.gz"])) as tf:
        members = {m.name.rsplit("/", 1)[-1]: m for m in tf if m.isfile() and safe_member(m.name)}
        for split in STSB_LINES:
            name = f"sts-{split}.csv"
            if name not in members:
                raise DownloadError(f"Stsbenchmark.tar.gz holds no {name}")
            lines = _text_lines(tf.extractfile(members[name]).read(), name)
            if untokenized_digest(lines, (0, 1, 2, 3, 4)) != STSB_COLUMNS_SHA256[split]:
                raise DownloadError(f"Stsbenchmark.tar.gz: {name}'s ids and scores differ from the reference copy")
            rows = []
            for line in lines:
                cols = line.split("\t") + [""] * 7
                rows.append("\t".join(cols[:5] + [lower(tokenize(cols[5])), lower(tokenize(cols[6]))]))
            write_file(tmp / "STSBenchmark" / name, ("\n".join(rows) + "\n").encode("utf-8"))
        for base, m in members.items():
            if re.search(r"readme|license", base, re.I):
                write_file(tmp / "STSBenchmark" / base, tf.extractfile(m).read())
    refuse_problems("sts", _check_sts_part(tmp, "STS"), most=3)


def _build_sick_part(tmp: Path, opts: Options) -> None:
    """``senteval/SICK``: SICK's three files, sentences Moses-tokenized (not lower-cased)."""
    tokenize, _ = _moses()
    for split in SICK_LINES:
        archive = f"sick_{split}.zip"
        name = f"SICK_{split}.txt"
        with open_zip(fetch_source(opts, "sts", SOURCES[archive])) as zf:
            lines = _text_lines(zip_member(zf, archive, name), name)
        kept = [lines[0]] + [
            "\t".join(c[i] for i in (0, 3, 4) if i < len(c)) for c in (x.split("\t") for x in lines[1:])
        ]
        if untokenized_digest(kept, (0, 1, 2, 3, 4)) != SICK_COLUMNS_SHA256[split]:
            raise DownloadError(f"{archive}: {name}'s ids, scores and labels differ from the reference copy")
        rows = [lines[0]]
        for line in lines[1:]:
            cols = line.split("\t")
            rows.append("\t".join([cols[0], tokenize(cols[1]), tokenize(cols[2]), *cols[3:]]))
        write_file(tmp / name, ("\n".join(rows) + "\n").encode("utf-8"))
    refuse_problems("sts", _check_sts_part(tmp, "SICK"), most=3)


def _check_sts_part(folder: Path, part: str) -> list[str]:
    """``folder`` holds the files of ``senteval/STS`` or ``senteval/SICK`` (``part``)."""
    return [
        p for rel in sts_files() if rel.startswith(f"{part}/") for p in sts_file_problems(folder.parent, rel, folder)
    ]


DATASET = Dataset(
    "sts",
    "STS12-16, STS Benchmark and SICK in SentEval's layout, Moses-tokenized (into senteval/STS, senteval/SICK)",
    "research use; cite Agirre et al. 2012-2016 (SemEval STS; see each year's readme), Cer et al. 2017 "
    "(STS Benchmark), Marelli et al. 2014 (SICK, CC BY-NC-SA 3.0)",
    None,
    None,
    parts=STS_PARTS,
    home="senteval",
    part_build=lambda part: _build_sts_part if part == "STS" else _build_sick_part,
    part_check=_check_sts_part,
    every_part=True,
    sources=SOURCES,
)
