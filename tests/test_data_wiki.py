"""Wiki-N: building the CURL layout from a WikiExtractor dump, loading it, split, UNK, pairs."""

import lzma

import numpy as np
import pytest

from _nltk_reference import word_tokenize
from qt_hard.data import wiki as W
from qt_hard.data.wiki import WikiData, build_wiki, iter_wiki_articles, load_wiki


def doc(page_id, title, paragraphs):
    return (
        f'<doc id="{page_id}" url="http://en.wikipedia.org/wiki?curid={page_id}" title="{title}">\n'
        f"{title}\n\n" + "\n".join(paragraphs) + "\n</doc>\n"
    )


def sentences(topic, n):
    return " ".join(f"The {topic} fact number {i} is stated here." for i in range(n))


DUMP = (
    doc(12, "Alpha", [sentences("alpha", 4), "History.", sentences("alpha", 2)])  # 6 sentences
    + doc(25, "Beta", [sentences("beta", 2)])  # 2: too short
    + doc(30, "Gamma &amp; Co", ["Early life.", sentences("gamma", 5)])  # 5
    + doc(31, "Delta", [sentences("delta", 3)])  # 3
)


@pytest.fixture
def dump(tmp_path):
    p = tmp_path / "dump.txt"
    p.write_text(DUMP, encoding="utf-8")
    return p


def test_iter_articles_plain_and_xz(tmp_path, dump):
    arts = list(iter_wiki_articles(dump))
    assert [a.title for a in arts] == ["Alpha", "Beta", "Gamma & Co", "Delta"]
    assert [a.page_id for a in arts] == ["12", "25", "30", "31"]
    assert arts[0].paragraphs[1] == "History."  # kept as a paragraph, dropped as a heading
    assert len(arts[0].sentences()) == 6 and len(arts[2].sentences()) == 5
    xz = tmp_path / "dump.txt.xz"
    with lzma.open(xz, "wt", encoding="utf-8") as f:
        f.write(DUMP)
    assert [a.sentences() for a in iter_wiki_articles(xz)] == [a.sentences() for a in arts]


def test_build_layout(tmp_path, dump):
    out = tmp_path / "wiki"
    r = build_wiki(dump, out, articles=2, sentences=3)
    assert (r.articles_written, r.articles_scanned, r.articles_too_short) == (2, 3, 1)
    files = sorted(p.name for p in out.iterdir())
    assert files == ["0000.txt", "0001.txt", "index.tsv"]
    a0 = (out / "0000.txt").read_text().splitlines()
    assert a0 == [f"The alpha fact number {i} is stated here." for i in range(3)]  # first M sentences
    assert len((out / "0001.txt").read_text().splitlines()) == 3
    index = (out / "index.tsv").read_text().splitlines()
    assert index[1].split("\t") == ["0", "12", "Alpha", "6", "3", "0000.txt"]
    assert index[2].split("\t")[2] == "Gamma & Co"
    with pytest.raises(FileExistsError, match="not empty"):
        build_wiki(dump, out, articles=2, sentences=3)
    r = build_wiki(dump, out, articles=3, sentences=3, keep_all=True, overwrite=True)
    assert [len((out / f"000{i}.txt").read_text().splitlines()) for i in range(3)] == [6, 5, 3]


def test_build_streams_only_what_it_needs(tmp_path, dump):
    # garbage after the needed articles is never read
    p = tmp_path / "d2.txt"
    p.write_text(doc(1, "One", [sentences("one", 3)]) + "this is not a doc block\n" * 3)
    build_wiki(p, tmp_path / "w", articles=1, sentences=3)
    with pytest.raises(ValueError, match="text outside a <doc> block"):
        build_wiki(p, tmp_path / "w2", articles=2, sentences=3)


def test_build_bad_input(tmp_path, dump):
    with pytest.raises(ValueError, match="only 3 of 4 articles have >= 3 sentences"):
        build_wiki(dump, tmp_path / "w", articles=5, sentences=3)
    assert not (tmp_path / "w").exists()  # nothing half-written
    with pytest.raises(FileNotFoundError, match="no such WikiExtractor dump"):
        build_wiki(tmp_path / "missing.txt", tmp_path / "w")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b'<doc id="1" url="u" title="T">\nT\n\xff\xfe bytes\n</doc>\n')
    with pytest.raises(ValueError, match=r"bad\.txt: not valid UTF-8"):
        build_wiki(bad, tmp_path / "w", articles=1, sentences=1)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.txt: no <doc> blocks"):
        build_wiki(empty, tmp_path / "w", articles=1, sentences=1)
    unclosed = tmp_path / "unclosed.txt"
    unclosed.write_text('<doc id="9" url="u" title="T">\nT\nSome text here.\n')
    with pytest.raises(ValueError, match="has no </doc>"):
        build_wiki(unclosed, tmp_path / "w", articles=2, sentences=1)


def make_archive(tmp_path, n_articles=4, n_sent=20, names=None):
    """An archive in the original layout: one file per article, one sentence per line."""
    d = tmp_path / "arch"
    d.mkdir()
    names = names or [f"{i:04d}.txt" for i in range(n_articles)]
    for c, name in enumerate(names):
        lines = [f"topic{c} common word{j % 3} rare{c}x{j} ." for j in range(n_sent)]
        (d / name).write_text("\n".join(lines) + "\n")
    return d


def test_load_split_and_labels(tmp_path):
    d = make_archive(tmp_path, n_articles=4, n_sent=20)
    w = load_wiki(d, min_count=2, cache_dir=tmp_path / "c")
    assert w.num_classes == 4 and len(w.titles) == 4
    assert len(w.train_sentences) == 4 * 16 and len(w.test_sentences) == 4 * 4
    assert np.bincount(w.train_labels).tolist() == [16] * 4 and np.bincount(w.test_labels).tolist() == [4] * 4
    for s, y in zip(w.train_sentences + w.test_sentences, w.train_labels + w.test_labels):
        assert s.startswith(f"topic{y} ")
    assert not set(w.train_sentences) & set(w.test_sentences)
    w3 = load_wiki(d, classes=3, min_count=2, cache_dir=tmp_path / "c")
    assert w3.num_classes == 3 and set(w3.test_labels) == {0, 1, 2}
    # the split depends on the seed only
    again = load_wiki(d, min_count=2, cache_dir=False)
    assert again.train_sentences == w.train_sentences
    other = load_wiki(d, min_count=2, seed=1, cache_dir=False)
    assert other.train_sentences != w.train_sentences


def test_unk_threshold_counts_training_split_only(tmp_path):
    d = make_archive(tmp_path, n_articles=3, n_sent=20)
    w = load_wiki(d, min_count=5, cache_dir=False)
    counts = {}
    for s in w.train_sentences:
        for t in word_tokenize(s):
            counts[t] = counts.get(t, 0) + 1
    kept = {t for t, c in counts.items() if c >= 5}
    assert set(w.vocab.itos[2:]) == kept
    assert "common" in kept and not any(t.startswith("rare") for t in kept)
    for s, ids in zip(w.test_sentences, w.test_ids):
        toks = word_tokenize(s)
        assert ids.tolist() == [w.vocab.stoi.get(t, w.vocab.unk_id) for t in toks]
    assert w.encode("topic0 never-seen-token") == [w.vocab["topic0"], w.vocab.unk_id]


def test_positive_pairs_stay_in_one_article(tmp_path):
    d = make_archive(tmp_path, n_articles=5, n_sent=21)
    w = load_wiki(d, min_count=1, cache_dir=False)
    labels = np.asarray(w.train_labels)
    p0 = w.positive_pair_indices(epoch=0, seed=0)
    assert p0.shape[1] == 3
    assert np.all(labels[p0[:, 0]] == p0[:, 2]) and np.all(labels[p0[:, 1]] == p0[:, 2])
    assert np.all(p0[:, 0] != p0[:, 1])
    # every training sentence used at most once per epoch; 17 train sentences -> 8 pairs per article
    assert len(np.unique(p0[:, :2])) == p0[:, :2].size and len(p0) == 5 * 8
    assert len(set(p0[:10, 2].tolist())) > 1  # mixed across classes
    assert np.array_equal(p0, w.positive_pair_indices(epoch=0, seed=0))  # reproducible
    assert not np.array_equal(p0, w.positive_pair_indices(epoch=1, seed=0))  # redrawn per epoch
    s = w.train_sentences
    for i, j, y in w.positive_pair_indices(epoch=3):
        assert s[i].startswith(f"topic{y} ") and s[j].startswith(f"topic{y} ") and s[i] != s[j]


def test_original_layout_natural_order_and_cache(tmp_path, monkeypatch):
    d = make_archive(tmp_path, names=["1", "2", "10"], n_sent=10)
    (d / "README").write_text("not an article\n")
    calls = []
    real = W.word_tokens
    monkeypatch.setattr(W, "word_tokens", lambda s, lower=True: calls.append(1) or real(s, lower))
    w = load_wiki(d, min_count=1, cache_dir=tmp_path / "c")
    assert w.num_classes == 3 and w.titles == ["1", "2", "10"]
    assert all(s.startswith("topic2 ") for s, y in zip(w.train_sentences, w.train_labels) if y == 2)
    n = len(calls)
    assert n == 30
    w2 = load_wiki(d, min_count=1, cache_dir=tmp_path / "c")
    assert len(calls) == n  # tokens came from the cache
    assert w2.train_sentences == w.train_sentences and w2.vocab == w.vocab


def test_load_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such Wiki-N folder"):
        load_wiki(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no article files"):
        load_wiki(tmp_path / "empty")
    d = make_archive(tmp_path, n_articles=2, n_sent=5)
    with pytest.raises(ValueError, match="3 classes were asked"):
        load_wiki(d, classes=3, cache_dir=False)
    (d / "0001.txt").write_text("only one sentence .\n")
    with pytest.raises(ValueError, match=r"0001\.txt: an article needs at least 2 sentences"):
        load_wiki(d, cache_dir=False)
    (d / "0001.txt").write_bytes(b"caf\xe9 .\nok .\n")
    with pytest.raises(ValueError, match=r"0001\.txt: not valid UTF-8"):
        load_wiki(d, cache_dir=False)


def test_from_sentences_validates():
    with pytest.raises(ValueError, match="train_fraction"):
        WikiData.from_sentences(["a b", "c d"], [0, 0], train_fraction=1.0)
    with pytest.raises(ValueError, match="2 sentences but 1 labels"):
        WikiData.from_sentences(["a b", "c d"], [0])
