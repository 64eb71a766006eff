"""Real data from the data root; skipped where it is absent (a failure under CI=true: tests/_data.py)."""

import csv
from pathlib import Path

import _data
import numpy as np


def test_two_real_books(tmp_path):
    from qt_hard.data.books import books_metadata, dataset_column, load_books

    BOOKS = _data.dataset("books", "INDEX.tsv").parent

    ds = load_books(BOOKS, max_books=2, cache_dir=tmp_path)
    meta = books_metadata(ds)
    with open(BOOKS / "INDEX.tsv", newline="") as f:
        approx = {r["file"]: int(r["approx_sentences"]) for r in csv.DictReader(f, delimiter="\t")}
    for path, n in zip(meta["files"], meta["sentences_per_book"]):
        # INDEX.tsv counts with a cruder splitter (headings included, every "?"/"!" a boundary)
        ref = approx[Path(path).name]
        assert 0.6 * ref <= n <= 1.1 * ref, (path, n, ref)
    doc = dataset_column(ds, "doc_id", numpy=True)
    assert sorted(set(doc.tolist())) == [0, 1] and np.all(np.diff(doc) >= 0)
    lengths = np.array([len(s.split()) for s in dataset_column(ds, "text")])
    assert 8 <= lengths.mean() <= 40 and lengths.min() >= 1


def test_real_wiki5(tmp_path):
    from qt_hard.data.wiki import build_wiki, load_wiki

    DUMP = _data.dataset("wikipedia", "enwiki_wikiextractor_ge200sent.txt.xz")

    r = build_wiki(DUMP, tmp_path / "wiki5", articles=5, sentences=200)
    assert r.articles_written == 5 and r.articles_scanned <= 10  # streamed: stops after 5 good ones
    files = sorted((tmp_path / "wiki5").glob("*.txt"))
    assert len(files) == 5
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 200 and all(line.strip() for line in lines)
    w = load_wiki(tmp_path / "wiki5", min_count=5, cache_dir=tmp_path / "c")
    assert w.num_classes == 5 and len(w.train_sentences) == 800 and len(w.test_sentences) == 200
    assert w.titles[0] == "Anarchism"
    test_ids = np.concatenate(w.test_ids)
    assert 0.0 < np.mean(test_ids == w.vocab.unk_id) < 0.5  # min_count=5 on 800 sentences
