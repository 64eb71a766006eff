"""``qt-hard data get`` / ``data list`` against a local server standing in for the original hosts.

Every source is served as a small archive in its original format (zip, tar.gz with CIFAR pickles,
plain text files, WikiExtractor files, Parquet for bookcorpus); the checksums the table pins for
the real files are replaced by those of the small files, so every check runs as it would on the
real bytes. No real host is contacted: ``QT_HARD_MIRROR`` sends every URL to 127.0.0.1.
"""

from __future__ import annotations

import csv
import hashlib
import io
import lzma
import pickle
import random
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from _http_server import LocalHosts
from qt_hard.cli import main
from qt_hard.data import catalog
from qt_hard.data.sources import senteval as senteval_source
from qt_hard.data.sources import sts as sts_source
from qt_hard.data.download import DownloadError, fetch, git_blob_sha1
from qt_hard.data.sources import bookcorpus, books, cifar10, nfcorpus, scifact, tu, wikipedia
from qt_hard.data.sources._beir_zip import BeirCounts
from qt_hard.data.sources._common import DOWNLOADS, Source

REPO = Path(__file__).resolve().parent.parent


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_VOCAB = [
    "good",
    "bad",
    "film",
    "plot",
    "actor",
    "the",
    "a",
    "is",
    "was",
    "very",
    "not",
    "story",
    "fun",
    "dull",
    "great",
    "poor",
    "and",
    "it",
    "of",
    "with",
]


def _words(rng, n):
    return " ".join(rng.choices(_VOCAB, k=n))


# ------------------------------------------------------------------------------------------------
# small archives in each original format


def serve_senteval(hosts: LocalHosts, monkeypatch) -> None:
    rng = random.Random(0)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for ours, member in senteval_source._SENTEVAL_ZIP_MEMBERS.items():
            lines = [f"{_words(rng, 6)} .\n".encode("latin-1") for _ in range(senteval_source.SENTEVAL_LINES[ours])]
            if ours.startswith("MR"):
                lines[3] = b"wait for it \x85 nothing .\n"  # the cp1252 ellipsis the copy replaces
            zf.writestr(f"data/{member}", b"".join(lines))
    hosts.put(senteval_source.SENTEVAL_BINCLASSIF, buf.getvalue())
    classes = ["DESC:manner", "ENTY:other", "HUM:ind", "LOC:city", "NUM:date", "ABBR:exp"]
    for name in ("train_5500.label", "TREC_10.label"):
        n = senteval_source.SENTEVAL_LINES[f"TREC/{name}"]
        hosts.put(
            f"{senteval_source.TREC_BASE}/{name}",
            "".join(f"{classes[i % 6]} what is {_words(rng, 4)} ?\n" for i in range(n)).encode("latin-1"),
        )
    head = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
    pairs = lambda n, base: "".join(  # noqa: E731
        f"{i % 2}\t{base + i}\t{base + n + i}\t{_words(rng, 7)} .\t{_words(rng, 7)} .\r\n" for i in range(n)
    )
    train = head + pairs(4076, 1000)
    test = head + pairs(1725, 90000)
    junk = "".join(f"1\t-1\t-1\tappended {i} .\tappended {i} .\r\n" for i in range(4))
    hosts.put(f"{senteval_source.MRPC_BASE}/msr_paraphrase_train.txt", (train + junk).encode("utf-8"))
    hosts.put(f"{senteval_source.MRPC_BASE}/msr_paraphrase_test.txt", test.encode("utf-8"))
    monkeypatch.setitem(
        senteval_source.SENTEVAL_OUTPUT_SHA256, "MRPC/msr_paraphrase_train.txt", _sha(train.encode("utf-8"))
    )
    monkeypatch.setitem(
        senteval_source.SENTEVAL_OUTPUT_SHA256, "MRPC/msr_paraphrase_test.txt", _sha(test.encode("utf-8"))
    )
    src = catalog.SOURCES["senteval"]
    monkeypatch.setitem(
        src,
        "msr_paraphrase_test.txt",
        Source(src["msr_paraphrase_test.txt"].url, sha256=_sha(test.encode("utf-8"))),
    )


def serve_books(hosts: LocalHosts, monkeypatch, n_books: int = 3, paragraphs: int = 60) -> list[dict]:
    """Project Gutenberg-style originals (CRLF, START/END markers) and the packaged list's rows."""
    rng = random.Random(1)
    rows = []
    for b in range(n_books):
        body = "\r\n\r\n\r\n\r\nProduced by Volunteer {0}\r\n\r\n\r\n\r\nBOOK {0}\r\n\r\n".format(b)
        body += (
            "\r\n\r\n".join(" ".join(f"{_words(rng, 9).capitalize()}." for _ in range(5)) for _ in range(paragraphs))
            + "\r\n"
        )
        stripped = body.encode("utf-8")
        original = (
            (
                f"The Project Gutenberg EBook of Book {b}\r\n\r\n*** START OF THIS PROJECT GUTENBERG "
                f"EBOOK BOOK {b} ***\r\n"
            ).encode()
            + stripped
            + (
                f"\r\n\r\n\r\nEnd of the Project Gutenberg EBook of Book {b}\r\n\r\n*** END OF THIS PROJECT "
                "GUTENBERG EBOOK ***\r\nlicense text\r\n"
            ).encode()
        )
        path = f"Author {b}, A./Book {b}; Or, A Tale.txt"
        hosts.put(f"{books.BASE}/{path}", original)
        rows.append(
            {
                "file": f"Author_{b}__Book_{b}.txt.xz",
                "author_dir": f"Author {b}, A.",
                "title": f"Book {b}",
                "original_path": path,
                "original_blob_sha1": git_blob_sha1(original),
                "original_bytes": str(len(original)),
                "txt_bytes": str(len(stripped)),
                "xz_bytes": "0",
                "pg_header_footer_stripped": "True",
                "approx_sentences": str(5 * paragraphs),
                "sha256_xz": _sha(lzma.compress(stripped, preset=9)),
                "txt_sha256": _sha(stripped),
                "head_hex": stripped[:48].hex(),
            }
        )
    monkeypatch.setattr(books, "books_index", lambda: [dict(r) for r in rows])
    return rows


def serve_cifar10(hosts: LocalHosts, monkeypatch, n: int = 20) -> bytes:
    rng = np.random.default_rng(2)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name in cifar10.FILES:
            if name == "batches.meta":
                obj = {
                    "label_names": [
                        "airplane",
                        "automobile",
                        "bird",
                        "cat",
                        "deer",
                        "dog",
                        "frog",
                        "horse",
                        "ship",
                        "truck",
                    ],
                    "num_vis": 3072,
                }
            else:
                obj = {
                    "batch_label": name,
                    "labels": rng.integers(0, 10, n).tolist(),
                    "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                }
            data = pickle.dumps(obj, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    archive = buf.getvalue()
    hosts.put(cifar10.URL, archive)
    monkeypatch.setitem(
        catalog.SOURCES["cifar10"],
        "cifar-10-python.tar.gz",
        Source(cifar10.URL, md5=hashlib.md5(archive).hexdigest()),
    )
    return archive


def serve_tu(hosts: LocalHosts, monkeypatch) -> None:
    counts = {}
    for i, ds in enumerate(tu.COUNTS):
        graphs, nodes_per = 4 + i, 3
        counts[ds] = (graphs, graphs * nodes_per)
        indicator = "".join(f"{g + 1}\n" for g in range(graphs) for _ in range(nodes_per))
        edges = "".join(f"{g * 3 + 1}, {g * 3 + 2}\n{g * 3 + 2}, {g * 3 + 1}\n" for g in range(graphs))
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(f"{ds}/{ds}_A.txt", edges)
            zf.writestr(f"{ds}/{ds}_graph_indicator.txt", indicator)
            zf.writestr(f"{ds}/{ds}_graph_labels.txt", "".join(f"{g % 2}\n" for g in range(graphs)))
            zf.writestr(f"{ds}/README.txt", f"{ds} readme\n")
        hosts.put(f"{tu.BASE}/{ds}.zip", buf.getvalue())
    monkeypatch.setattr(tu, "COUNTS", counts)


def serve_wikipedia(hosts: LocalHosts, monkeypatch) -> tuple[bytes, str]:
    """400 WikiExtractor files; articles 2k in each of the first files are long (>= 200 sentences)."""
    rng = random.Random(3)
    kept, index = [], ["page_id\ttitle\tn_sentences_simple_split\n"]
    for f, name in enumerate(wikipedia.FILES):
        docs = []
        for j in range(2 if f < 3 else 1):
            pid = 12 + 10 * f + j
            long = j == 0 and f < 3
            n = 10 * (20 + f) if long else 20  # sentences: 10 per paragraph, the heading not counted
            paras = [" ".join(f"{_words(rng, 6).capitalize()}." for _ in range(10)) for _ in range(n // 10)]
            text = "\n".join(["History.", *paras]) if long else "\n".join(paras)
            raw = (
                f'<doc id="{pid}" url="http://en.wikipedia.org/wiki?curid={pid}" title="A &amp; {pid}">\n'
                f"A & {pid}\n\n{text}\n</doc>\n"
            ).encode()
            docs.append(raw)
            if long:
                kept.append(raw)
                index.append(f"{pid}\tA & {pid}\t{n}\n")
        hosts.put(f"{wikipedia.BASE}/{name}", b"".join(docs))
    txt, idx = b"".join(kept), "".join(index).encode()
    monkeypatch.setattr(
        wikipedia,
        "OUTPUT_SHA256",
        {"enwiki_wikiextractor_ge200sent.txt": _sha(txt), "enwiki_wikiextractor_ge200sent_index.tsv": _sha(idx)},
    )
    return txt, idx.decode()


@pytest.fixture
def hosts(tmp_path, monkeypatch):
    with LocalHosts(tmp_path / "www") as h:
        monkeypatch.setenv("QT_HARD_MIRROR", h.url)
        yield h


@pytest.fixture
def root(tmp_path, monkeypatch):
    r = tmp_path / "data"
    monkeypatch.setenv("QT_HARD_DATA", str(r))
    return r


def _get(*names, extra=()):
    return main(["data", "get", *names, "--no-progress", *extra])


# ------------------------------------------------------------------------------------------------
# each source's full path


def test_senteval_get_list_and_corruption(hosts, root, monkeypatch, capsys):
    serve_senteval(hosts, monkeypatch)
    assert _get("senteval") == 0
    se = root / "senteval"
    mr = (se / "MR" / "rt-polarity.pos").read_bytes()
    assert b"\x85" not in mr and b"wait for it ... nothing ." in mr
    train = (se / "MRPC" / "msr_paraphrase_train.txt").read_text(encoding="utf-8-sig")
    assert "-1\t-1" not in train and len(train.splitlines()) == 4077
    assert not (root / DOWNLOADS / "senteval").exists()
    note = (se / "SOURCE.md").read_text()
    assert senteval_source.SENTEVAL_BINCLASSIF in note and "SHA256SUMS" in note
    # the evaluation's own task reader takes the folder as SentEval's layout
    from qt_hard.evaluation.datasets import load_task

    trec = load_task("TREC", se)
    assert trec is not None
    capsys.readouterr()

    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "senteval    present" in out and "books       missing" in out
    assert "qt-hard data get books" in out
    # a second get finds it intact and fetches nothing
    n = len(hosts.requests)
    assert _get("senteval") == 0 and len(hosts.requests) == n
    # one changed byte makes it corrupt; get repairs it
    p = se / "CR" / "custrev.neg"
    p.write_bytes(b"X" + p.read_bytes()[1:])
    assert main(["data", "list"]) == 1  # scripts can check it
    assert "senteval    corrupt  CR/custrev.neg does not match its sha256" in capsys.readouterr().out
    assert _get("senteval") == 0
    assert catalog.status("senteval", root).state == "present"


def test_corrupt_and_truncated_archives_are_rejected(hosts, root, monkeypatch, capsys):
    serve_senteval(hosts, monkeypatch)
    zpath = hosts.root / senteval_source.SENTEVAL_BINCLASSIF.split("://", 1)[1]
    good = zpath.read_bytes()
    zpath.write_bytes(good[: len(good) // 2])  # a truncated zip (no checksum is published for it)
    assert _get("senteval") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("qt-hard: error: datasmall_NB_ACL12.zip is not a valid zip archive") and "\n" not in err
    assert not (root / "senteval").exists()
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == []

    serve_cifar10(hosts, monkeypatch)
    tpath = hosts.root / cifar10.URL.split("://", 1)[1]
    tpath.write_bytes(tpath.read_bytes()[:-200])  # md5 pinned: caught before extraction
    assert _get("cifar10") == 2
    assert "md5 mismatch" in capsys.readouterr().err
    assert not (root / "cifar10").exists()
    assert not list((root / DOWNLOADS).rglob("*.tar.gz*"))  # the bad file is not kept to resume

    # without a checksum, a truncated tar.gz is still refused at extraction
    monkeypatch.setitem(catalog.SOURCES["cifar10"], "cifar-10-python.tar.gz", Source(cifar10.URL))
    assert _get("cifar10") == 2
    assert "is not a complete tar.gz archive" in capsys.readouterr().err
    assert not (root / "cifar10").exists()


def test_interrupted_download_leaves_nothing_and_resumes(hosts, root, monkeypatch, capsys):
    archive = serve_cifar10(hosts, monkeypatch, n=200)
    path = "/" + cifar10.URL.split("://", 1)[1]
    hosts.cut[path] = len(archive) // 3
    assert _get("cifar10") == 2
    assert "run the command again to resume" in capsys.readouterr().err
    assert not (root / "cifar10").exists()
    parts = list((root / DOWNLOADS).rglob("*.part"))
    assert len(parts) == 1 and parts[0].stat().st_size == len(archive) // 3
    assert catalog.status("cifar10", root).state == "missing"

    assert _get("cifar10") == 0
    assert hosts.requests[-1] == (path, f"bytes={len(archive) // 3}-")  # resumed, not restarted
    batch = pickle.load(open(root / "cifar10" / "cifar-10-batches-py" / "data_batch_3", "rb"), encoding="latin1")
    assert batch["data"].shape == (200, 3072)
    assert catalog.status("cifar10", root).state == "present"


def test_fetch_starts_over_after_416_and_reports_404(tmp_path):
    with LocalHosts(tmp_path / "www") as h:
        h.put("https://example.org/f.bin", b"0123456789" * 100)
        dest = tmp_path / "f.bin"
        # a .part longer than the file: the Range past the end gets 416, the file is fetched whole
        (tmp_path / "f.bin.part").write_bytes(b"x" * 2000)
        fetch("https://example.org/f.bin", dest, sha256=_sha(b"0123456789" * 100), progress=False, mirror=h.url)
        assert dest.read_bytes() == b"0123456789" * 100
        with pytest.raises(DownloadError, match="HTTP 404"):
            fetch("https://example.org/missing", tmp_path / "m", progress=False, mirror=h.url)


def test_tu_get_per_subset(hosts, root, monkeypatch, capsys):
    serve_tu(hosts, monkeypatch)
    assert _get("tu") == 0
    for ds in tu.COUNTS:
        assert (root / "tu" / ds / f"{ds}_graph_indicator.txt").is_file()
    # drop one subset: list says what is missing, get fetches only that one
    import shutil

    shutil.rmtree(root / "tu" / "DD")
    st = catalog.status("tu", root)
    assert st.state == "present" and "not here: DD" in st.detail
    n = len(hosts.requests)
    assert _get("tu") == 0
    assert [p for p, _ in hosts.requests[n:]] == ["/" + f"{tu.BASE}/DD.zip".split("://", 1)[1]]
    # a graph-label file that lost lines is corrupt even without a manifest
    (root / "tu" / "MUTAG" / "SHA256SUMS").unlink()
    lab = root / "tu" / "MUTAG" / "MUTAG_graph_labels.txt"
    lab.write_text("".join(lab.read_text().splitlines(keepends=True)[:-1]))
    assert catalog.status("tu", root).state == "corrupt"


def test_books_get_strips_and_verifies(hosts, root, monkeypatch):
    rows = serve_books(hosts, monkeypatch)
    assert _get("books") == 0
    from qt_hard.data.books import read_book_text

    for r in rows:
        text = read_book_text(root / "books" / r["file"])
        assert "START OF THIS PROJECT" not in text and "End of the Project Gutenberg" not in text
        assert text.lstrip().startswith("Produced by")
    with open(root / "books" / "INDEX.tsv", newline="") as fh:
        assert [r["file"] for r in csv.DictReader(fh, delimiter="\t")] == [r["file"] for r in rows]
    # an original whose bytes differ from the listed git blob is refused
    hosts.put(f"{books.BASE}/{rows[0]['original_path']}", b"tampered")
    rows[0]["original_bytes"] = str(len(b"tampered"))
    with pytest.raises(DownloadError, match="git blob sha1"):
        catalog.get("books", catalog.Options(root, progress=False), force=True)
    assert catalog.status("books", root).state == "present"  # the installed copy is untouched


def test_strip_gutenberg_marker_rule_and_mismatch():
    text = b"\r\n\r\nThe text.\r\n"
    original = (
        b"hdr\r\n*** START OF THIS PROJECT GUTENBERG EBOOK X ***\r\n"
        + text
        + b"\r\nEnd of the Project Gutenberg EBook of X\r\n*** END OF THIS PROJECT GUTENBERG EBOOK X ***\r\n"
    )
    row = {
        "pg_header_footer_stripped": "True",
        "txt_bytes": str(len(text)),
        "head_hex": "ffff",
        "txt_sha256": _sha(text),
        "file": "x",
    }
    assert books.strip_gutenberg(original, row) == text  # head not found: the marker rule
    with pytest.raises(DownloadError, match="does not match the recorded sha256"):
        books.strip_gutenberg(original, dict(row, txt_sha256=_sha(b"other")))


def test_wikipedia_get_matches_reference_layout(hosts, root, monkeypatch, tmp_path):
    txt, index = serve_wikipedia(hosts, monkeypatch)
    assert _get("wikipedia") == 0
    w = root / "wikipedia"
    assert lzma.open(w / "enwiki_wikiextractor_ge200sent.txt.xz").read() == txt
    assert (w / "enwiki_wikiextractor_ge200sent_index.tsv").read_text(encoding="utf-8") == index
    from qt_hard.data.wiki import build_wiki

    rep = build_wiki(
        w / "enwiki_wikiextractor_ge200sent.txt.xz", tmp_path / "wiki3", articles=3, sentences=150, progress=False
    )
    assert rep.articles_written == 3


def test_bookcorpus_through_datasets_parquet(root, tmp_path):
    from datasets import Dataset

    src = tmp_path / "bc"
    src.mkdir()
    rows = [f"sentence {i} of the corpus ." for i in range(30)]
    Dataset.from_dict({"text": rows[:20]}).to_parquet(str(src / "train-0.parquet"))
    Dataset.from_dict({"text": rows[20:]}).to_parquet(str(src / "train-1.parquet"))
    assert _get("bookcorpus", extra=["--source", str(src)]) == 0
    files = bookcorpus.bookcorpus_files(root / "bookcorpus")
    from qt_hard.data.books import load_hf_bookcorpus

    ds = load_hf_bookcorpus("parquet", data_files=files, cache_dir=tmp_path / "c", boundary_pattern=None)
    assert list(ds["text"]) == rows
    assert catalog.status("bookcorpus", root).state == "present"


def test_get_refuses_a_read_only_root(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert main(["data", "get", "senteval", "--root", str(ro), "--no-progress"]) == 2
    finally:
        ro.chmod(0o755)
    assert "cannot write under" in capsys.readouterr().err
    assert list(ro.iterdir()) == []
    assert main(["data", "get", "nosuch", "--root", str(ro)]) == 2
    assert "unknown dataset 'nosuch'" in capsys.readouterr().err


def test_loader_names_the_get_command(root):
    from qt_hard.errors import DataMissingError
    from qt_hard.paths import data_path

    root.mkdir()
    with pytest.raises(DataMissingError, match=r"`qt-hard data get books`"):
        data_path("books")


def test_default_root_falls_back_to_user_cache(monkeypatch, tmp_path):
    from qt_hard import paths

    monkeypatch.delenv("QT_HARD_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(paths.sys, "platform", "linux")
    assert paths.default_data_root() == tmp_path / "xdg" / "qt-hard"
    assert paths.data_root() is None  # not made until something is fetched


def test_real_reference_copy_passes_layout_checks():
    """The project's reference copy (when present) passes the same layout checks a download must."""
    import _data

    ref = _data.dataset("senteval").parent
    assert senteval_source._check_senteval(ref / "senteval") == []
    for ds in ("MUTAG", "PTC_MR", "ENZYMES", "PROTEINS", "IMDB-BINARY", "IMDB-MULTI"):
        assert tu.check_part(ref / "tu" / ds, ds) == []
    assert books.check(ref / "books") == []
    for rel, want in senteval_source.SENTEVAL_OUTPUT_SHA256.items():
        assert hashlib.sha256((ref / "senteval" / rel).read_bytes()).hexdigest() == want
    rows = books.books_index()
    assert len(rows) == 352
    r = rows[0]
    xz = (ref / "books" / r["file"]).read_bytes()
    assert hashlib.sha256(xz).hexdigest() == r["sha256_xz"]
    text = lzma.decompress(xz)
    assert hashlib.sha256(text).hexdigest() == r["txt_sha256"]
    assert lzma.compress(text, preset=9) == xz  # so the xz sha256 can verify what get writes
    # the one unstripped book is its original: the listed git blob sha1 holds for it
    (kept,) = [r for r in rows if r["pg_header_footer_stripped"] == "False"]
    original = lzma.decompress((ref / "books" / kept["file"]).read_bytes())
    assert git_blob_sha1(original) == kept["original_blob_sha1"]
    assert books.strip_gutenberg(original, kept) == original


@pytest.mark.slow
def test_real_wikipedia_subset_and_index_are_reproduced():
    """Selecting and indexing the reference text with the code's splitter gives the pinned sha256s
    (what `get wikipedia` checks after selecting from the 400 original files)."""
    import _data

    dump = _data.dataset("wikipedia", "enwiki_wikiextractor_ge200sent.txt.xz")
    txt, index = hashlib.sha256(), ["page_id\ttitle\tn_sentences_simple_split\n"]
    for page_id, raw in wikipedia.wiki_articles(lzma.open(dump).read()):
        lines = raw.decode("utf-8").split("\n")
        n = wikipedia.count_wiki_sentences(lines[2:-2])
        assert n >= 200
        txt.update(raw)
        index.append(f"{page_id}\t{lines[1]}\t{n}\n")
    assert txt.hexdigest() == wikipedia.OUTPUT_SHA256["enwiki_wikiextractor_ge200sent.txt"]
    assert _sha("".join(index).encode("utf-8")) == wikipedia.OUTPUT_SHA256["enwiki_wikiextractor_ge200sent_index.tsv"]


# ------------------------------------------------------------------------------------------------
# a machine with no data root runs the quick start end to end, fetching its data first


def test_main_job_end_to_end_from_local_hosts(hosts, root, monkeypatch, tmp_path, capsys):
    serve_senteval(hosts, monkeypatch)
    serve_books(hosts, monkeypatch, n_books=2, paragraphs=80)
    assert not root.exists()
    assert _get("books", "senteval") == 0
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                str(REPO / "configs" / "qt_books_smoke.yaml"),
                "--out",
                str(out),
                "train.steps=4",
                "train.checkpoint_every=0",
                "train.progress=false",
                "train.batch_size=16",
                "data.max_books=2",
                "train.trackers=[]",
            ]
        )
        == 0
    )
    assert (out / "final" / "encoder.json").is_file()
    capsys.readouterr()
    # the quick start evaluates all six tasks; one task with 2 folds keeps this test short
    assert (
        main(
            [
                "eval",
                "senteval",
                "--model",
                str(out / "final"),
                "--tasks",
                "TREC",
                "--kfold",
                "2",
                "--output",
                str(tmp_path / "qt.json"),
            ]
        )
        == 0
    )
    assert "TREC" in capsys.readouterr().out
    assert (tmp_path / "qt.json").is_file()


# ------------------------------------------------------------------------------------------------
# sts: STS12-16, the STS Benchmark and SICK from their original archives (small stand-ins)

_RAW = ["A man's dog, running.", "The woman isn't here", '"Yes," she said.', "Two DOGS play in the park"]


def serve_sts(hosts: LocalHosts, monkeypatch) -> dict:
    """The STS wiki's zips (each year's own folder, STS16's STS2016.* names), the STS Benchmark's
    tar.gz and SICK's three zips, with untokenized, cased sentences; the pinned digests replaced by
    those of these files. Returns the gold bytes written per installed path."""
    from _similarity import sizes, use_sizes

    use_sizes(monkeypatch, n=6)
    counts = sizes(6)
    rng = random.Random(3)
    gold_sums, golds = {}, {}
    for year, (path, folder) in sts_source.STS_ARCHIVES.items():
        prefix = "STS2016" if year == "STS16" else "STS"
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(f"{folder}/00-readme.txt", "the task's readme\n")
            for name, (lines, scored) in counts["STS_SETS"][year].items():
                inputs = "".join(f"{rng.choice(_RAW)}\t{rng.choice(_RAW)}\n" for _ in range(lines))
                gold = "".join(f"{i % 6}.000\n" if i % 3 != 2 or scored == lines else "\n" for i in range(lines))
                zf.writestr(f"{folder}/{prefix}.input.{name}.txt", inputs)
                zf.writestr(f"{folder}/{prefix}.gs.{name}.txt", gold)
                rel = f"STS/{year}-en-test/STS.gs.{name}.txt"
                gold_sums[rel] = _sha(gold.encode())
                golds[rel] = gold.encode()
        hosts.put(f"{sts_source.STS_WIKI}/{path}", buf.getvalue())
    monkeypatch.setattr(sts_source, "STS_GOLD_SHA256", gold_sums)
    buf = io.BytesIO()
    stsb_sums = {}
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for split, n in counts["STSB_LINES"].items():
            lines = [
                f"main-captions\tMSRvid\t2012test\t{i:04d}\t{i % 6}.000\t{rng.choice(_RAW)}\t{rng.choice(_RAW)}"
                + ("\tsource-a\tsource-b" if i == 0 else "")
                for i in range(n)
            ]
            data = ("\n".join(lines) + "\n").encode()
            info = tarfile.TarInfo(f"stsbenchmark/sts-{split}.csv")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
            stsb_sums[split] = sts_source.untokenized_digest(lines, (0, 1, 2, 3, 4))
    hosts.put(sts_source.STSB_ARCHIVE, buf.getvalue())
    monkeypatch.setattr(sts_source, "STSB_COLUMNS_SHA256", stsb_sums)
    sick_sums = {}
    for split, n in counts["SICK_LINES"].items():
        lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r"]
        lines += [f"{i + 1}\t{rng.choice(_RAW)}\t{rng.choice(_RAW)}\t{1 + i % 5}.0\tNEUTRAL\r" for i in range(n - 1)]
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(f"SICK_{split}.txt", "\n".join(lines) + "\n")
            zf.writestr("readme.txt", "SICK\n")
        hosts.put(f"{sts_source.SICK_BASE}/sick_{split}.zip", buf.getvalue())
        kept = [lines[0]] + ["\t".join(c[i] for i in (0, 3, 4)) for c in (x.split("\t") for x in lines[1:])]
        sick_sums[split] = sts_source.untokenized_digest(kept, (0, 1, 2, 3, 4))
    monkeypatch.setattr(sts_source, "SICK_COLUMNS_SHA256", sick_sums)
    return golds


def test_sts_get_installs_beside_senteval_and_survives_its_reinstall(hosts, root, monkeypatch, capsys):
    pytest.importorskip("sacremoses", reason="data get sts tokenizes with sacremoses (a dev dependency)")
    golds = serve_sts(hosts, monkeypatch)
    assert _get("sts") == 0
    assert f"sts: present in {root / 'senteval'}" in capsys.readouterr().out
    se = root / "senteval"
    for rel, gold in golds.items():
        assert (se / rel).read_bytes() == gold  # gold files copied unchanged
    first = (se / "STS" / "STS16-en-test" / "STS.input.headlines.txt").read_text().splitlines()[0]
    assert set(first.split("\t")) <= {
        "a man 's dog , running .",
        "the woman isn 't here",
        '" yes , " she said .',
        "two dogs play in the park",
    }  # Moses-tokenized and lower-cased, as SentEval's script leaves STS
    stsb = (se / "STS" / "STSBenchmark" / "sts-train.csv").read_text().splitlines()
    assert all(len(x.split("\t")) == 7 for x in stsb)  # cut -f1-5 dropped the source columns
    sick = (se / "SICK" / "SICK_train.txt").read_bytes().decode().split("\n")
    assert sick[0].startswith("pair_ID\tsentence_A") and sick[0].endswith("\r")  # the original's CRLF kept
    assert any("A man 's dog , running ." in x or "Two DOGS play" in x for x in sick[1:])  # SICK keeps its case
    assert (se / "STS" / "STS12-en-test" / "00-readme.txt").is_file()
    assert (se / "STS" / catalog.MANIFEST).is_file() and (se / "SICK" / "SOURCE.md").is_file()
    # the evaluation reads what was installed; data list shows it; senteval itself is still missing
    from qt_hard.evaluation.similarity import load_similarity

    assert len(load_similarity("STS15", se).sets["belief"].scores) == 4
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "sts         present" in out and "senteval    missing" in out
    # senteval installed (and forced) after sts leaves senteval/STS and senteval/SICK in place
    serve_senteval(hosts, monkeypatch)
    before = {p: p.read_bytes() for p in (se / "STS").rglob("*") if p.is_file()}
    assert _get("senteval") == 0 and _get("senteval", extra=("--force",)) == 0
    assert {p: p.read_bytes() for p in (se / "STS").rglob("*") if p.is_file()} == before
    assert catalog.status("sts", root).state == "present" and catalog.status("senteval", root).state == "present"
    assert "STS/" not in (se / catalog.MANIFEST).read_text()
    # a changed byte in a gold file: data list says so; get sts --force repairs it
    gold = se / "STS" / "STS13-en-test" / "STS.gs.FNWN.txt"
    gold.write_bytes(b"9" + gold.read_bytes()[1:])
    capsys.readouterr()
    assert main(["data", "list"]) == 1
    assert (
        "sts         corrupt  STS: STS13-en-test/STS.gs.FNWN.txt does not match its sha256" in capsys.readouterr().out
    )
    assert _get("sts", extra=("--force",)) == 0 and catalog.status("sts", root).state == "present"


def test_sts_get_refuses_a_changed_gold_file_and_a_missing_tokenizer(hosts, root, monkeypatch, capsys):
    import sys

    pytest.importorskip("sacremoses", reason="data get sts tokenizes with sacremoses (a dev dependency)")
    serve_sts(hosts, monkeypatch)
    rel = "STS/STS14-en-test/STS.gs.images.txt"
    monkeypatch.setitem(sts_source.STS_GOLD_SHA256, rel, "0" * 64)
    assert _get("sts") == 2
    err = capsys.readouterr().err
    assert err.startswith("qt-hard: error: STS2014-en-test.zip: STS.gs.images.txt has sha256") and err.count("\n") == 1
    assert not (root / "senteval" / "STS").exists()
    monkeypatch.setitem(sys.modules, "sacremoses", None)  # as if not installed
    assert _get("sts") == 2
    err = capsys.readouterr().err
    assert "install sacremoses" in err and err.count("\n") == 1


def test_real_sts_copy_passes_the_layout_checks():
    """The reference copy of STS/SICK passes the checks a download must, and its untokenized columns
    have the pinned digests."""
    import _data

    _data.dataset("senteval", "STS")  # absent: skipped here, a failure under CI
    se = _data.dataset("senteval")
    assert sts_source._check_sts_part(se / "STS", "STS") == [] and sts_source._check_sts_part(se / "SICK", "SICK") == []
    for rel, want in sts_source.STS_GOLD_SHA256.items():
        assert hashlib.sha256((se / rel).read_bytes()).hexdigest() == want
    for split, want in sts_source.STSB_COLUMNS_SHA256.items():
        lines = (se / "STS" / "STSBenchmark" / f"sts-{split}.csv").read_bytes().decode().split("\n")[:-1]
        assert sts_source.untokenized_digest(lines, (0, 1, 2, 3, 4)) == want


def serve_scifact(hosts: LocalHosts, monkeypatch, drop: str | None = None) -> bytes:
    """A small scifact.zip in BEIR's layout (3 abstracts, 3 claims, CRLF qrels), its md5 pinned and
    the expected counts set to its own; ``drop`` leaves that member out."""
    import json

    docs = [{"_id": str(i), "title": f"T{i}", "text": f"abstract {i}"} for i in (4, 7, 9)]
    claims = [{"_id": str(i), "text": f"claim {i}"} for i in (1, 2, 3)]
    members = {
        "corpus.jsonl": "".join(json.dumps(d) + "\n" for d in docs),
        "queries.jsonl": "".join(json.dumps(c) + "\n" for c in claims),
        "qrels/train.tsv": "query-id\tcorpus-id\tscore\r\n1\t4\t1\r\n2\t7\t1\r\n",
        "qrels/test.tsv": "query-id\tcorpus-id\tscore\r\n3\t9\t1\r\n",
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in members.items():
            if name != drop:
                zf.writestr(f"scifact/{name}", text)
    archive = buf.getvalue()
    hosts.put(scifact.URL, archive)
    src = Source(scifact.URL, md5=hashlib.md5(archive).hexdigest(), size=len(archive))
    monkeypatch.setitem(scifact.SCIFACT.sources, "scifact.zip", src)
    monkeypatch.setattr(scifact.SCIFACT, "counts", BeirCounts(corpus=3, queries=3, judgements={"train": 2, "test": 1}))
    return archive


def test_scifact_is_installed_in_beir_layout_and_listed(hosts, root, monkeypatch, capsys):
    from qt_hard.data.beir import load_beir

    serve_scifact(hosts, monkeypatch)
    assert catalog.status("scifact", root).state == "missing"
    assert _get("scifact") == 0
    folder = root / "beir" / "scifact"
    data = load_beir(folder, ("train", "test"))
    assert data.doc_ids == ["4", "7", "9"] and data.qrels["test"] == {"3": {"9": 1}}
    assert (folder / "SHA256SUMS").is_file() and scifact.URL in (folder / "SOURCE.md").read_text()
    capsys.readouterr()
    assert main(["data", "list"]) == 0
    assert any(ln.startswith("scifact") and "present" in ln for ln in capsys.readouterr().out.splitlines())
    assert _get("scifact") == 0  # present: nothing fetched again
    assert "nothing fetched" in capsys.readouterr().out


def test_scifact_with_a_wrong_checksum_or_a_missing_file_is_refused(hosts, root, monkeypatch, capsys):
    serve_scifact(hosts, monkeypatch)
    path = hosts.root / scifact.URL.split("://", 1)[1]
    path.write_bytes(path.read_bytes()[:-10] + b"0123456789")  # same size, other bytes
    assert _get("scifact") == 2
    assert "md5 mismatch" in capsys.readouterr().err
    assert not (root / "beir" / "scifact").exists()
    serve_scifact(hosts, monkeypatch, drop="qrels/test.tsv")
    assert _get("scifact") == 2
    err = capsys.readouterr().err.strip()
    assert "has no scifact/qrels/test.tsv" in err and "\n" not in err
    assert not (root / "beir" / "scifact").exists()


@pytest.fixture(scope="module")
def real_nfcorpus() -> Path:
    """The real ``beir/nfcorpus`` of the data root (skipped where absent, a failure under CI): of a
    wider scope than ``root``, so it is found before ``root`` points the data root elsewhere."""
    import _data

    return _data.dataset("beir", "nfcorpus")


def serve_nfcorpus(hosts: LocalHosts, monkeypatch, real: Path, replace: dict[str, bytes] | None = None) -> None:
    """BEIR's nfcorpus.zip rebuilt from the real files in ``real`` (the members are BEIR's bytes,
    the archive is not: its own size, md5 and sha256 are pinned in place of BEIR's); ``replace``
    puts other bytes in those members."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for rel in nfcorpus.NFCORPUS.counts.files:
            zf.writestr(f"nfcorpus/{rel}", (replace or {}).get(rel) or (real / rel).read_bytes())
    archive = buf.getvalue()
    hosts.put(nfcorpus.URL, archive)
    src = Source(nfcorpus.URL, sha256=_sha(archive), md5=hashlib.md5(archive).hexdigest(), size=len(archive))
    monkeypatch.setitem(nfcorpus.NFCORPUS.sources, "nfcorpus.zip", src)


def test_nfcorpus_is_installed_byte_for_byte_from_a_mirror_and_listed(real_nfcorpus, hosts, root, monkeypatch, capsys):
    serve_nfcorpus(hosts, monkeypatch, real_nfcorpus)
    assert catalog.status("nfcorpus", root).state == "missing"
    assert _get("nfcorpus") == 0
    folder = root / "beir" / "nfcorpus"
    for rel, want in nfcorpus.NFCORPUS.sha256.items():
        assert _sha((folder / rel).read_bytes()) == want == _sha((real_nfcorpus / rel).read_bytes()), rel
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == sorted(
        [*nfcorpus.NFCORPUS.sha256, "SHA256SUMS", "SOURCE.md"]
    )
    assert nfcorpus.URL in (folder / "SOURCE.md").read_text() and not (root / DOWNLOADS / "nfcorpus").exists()
    capsys.readouterr()
    assert main(["data", "list"]) == 0
    assert any(ln.split()[:2] == ["nfcorpus", "present"] for ln in capsys.readouterr().out.splitlines())
    n = len(hosts.requests)
    assert _get("nfcorpus") == 0 and len(hosts.requests) == n  # intact: nothing fetched again
    assert "nothing fetched" in capsys.readouterr().out


def test_nfcorpus_with_a_wrong_checksum_is_refused_in_one_line(real_nfcorpus, hosts, root, monkeypatch, capsys):
    serve_nfcorpus(hosts, monkeypatch, real_nfcorpus)
    size = nfcorpus.NFCORPUS.sources["nfcorpus.zip"].size
    published = Source(nfcorpus.URL, sha256=nfcorpus.NFCORPUS.sha256["corpus.jsonl"], size=size)
    monkeypatch.setitem(nfcorpus.NFCORPUS.sources, "nfcorpus.zip", published)  # the right size, other bytes
    assert _get("nfcorpus") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("qt-hard: error: ") and "sha256 mismatch" in err and "\n" not in err
    # no folder, no temporary one, no fetched file kept (the bad bytes are not resumed from)
    assert [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.name.startswith(".nfcorpus")] == []


def test_nfcorpus_with_a_member_other_than_beirs_is_refused(real_nfcorpus, hosts, root, monkeypatch, capsys):
    qrels = (real_nfcorpus / "qrels" / "test.tsv").read_bytes()
    one = qrels.replace(b"\t2\r\n", b"\t1\r\n", 1)  # one graded judgement made 1
    serve_nfcorpus(hosts, monkeypatch, real_nfcorpus, replace={"qrels/test.tsv": one})
    assert _get("nfcorpus") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("qt-hard: error: nfcorpus: qrels/test.tsv: sha256 ") and "\n" not in err
    assert not (root / "beir" / "nfcorpus").exists() and not list((root / "beir").iterdir())
    # with that file's sum pinned to the changed bytes, the counts still tell it: test uses scores 1 and 2
    ones = qrels.replace(b"\t2\r\n", b"\t1\r\n")
    monkeypatch.setitem(nfcorpus.NFCORPUS.sha256, "qrels/test.tsv", _sha(ones))
    serve_nfcorpus(hosts, monkeypatch, real_nfcorpus, replace={"qrels/test.tsv": ones})
    assert _get("nfcorpus") == 2
    assert "qrels/test.tsv uses the scores [1], expected [1, 2]" in capsys.readouterr().err


def test_get_help_names_every_dataset_of_the_table(capsys):
    with pytest.raises(SystemExit):
        main(["data", "get", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # the help's own line breaks undone
    assert {"scifact", "nfcorpus"} <= set(catalog.DATASETS)
    assert all(f"{name}," in text or f"{name};" in text for name in catalog.DATASETS), text


def test_each_source_module_registers_the_dataset_it_is_named_after(tmp_path, monkeypatch):
    from qt_hard.data import sources

    found = sources.registered()
    assert {"scifact", "nfcorpus", "tu"} <= set(found) and all(catalog.DATASETS[n] is d for n, d in found.items())
    assert all(catalog.SOURCES[n] is d.sources for n, d in found.items())
    for text, refusal in (
        ("X = 1\n", "declares no DATASET"),
        ("from qt_hard.data.sources.scifact import DATASET\n", "'scifact', not 'other'"),
    ):
        (tmp_path / "other.py").write_text(text)
        monkeypatch.setattr(sources, "__path__", [str(tmp_path)])
        monkeypatch.delitem(sys.modules, "qt_hard.data.sources.other", raising=False)
        with pytest.raises((TypeError, ValueError), match=refusal):
            sources.registered()
    sys.modules.pop("qt_hard.data.sources.other", None)  # the stand-in is no module of the package
