"""SentEval protocol: file readers, fast path vs the plain SentEval loop, runner, real CR."""

import hashlib
import json

import numpy as np
import pytest

from qt_hard.evaluation import protocol
from qt_hard.evaluation.models import EmbeddingCache
from qt_hard.evaluation.protocol import inner_kfold, kfold_train_test
from qt_hard.evaluation.report import compare_table, load_results, save_results, senteval_table
from qt_hard.evaluation.senteval import parse_tasks, run_senteval
from qt_hard.evaluation.datasets import load_task
from _synthetic import linear_multiclass


class HashBoW:
    """A fixed random bag-of-words encoder: mean of per-word Gaussian vectors seeded by the
    word's hash (deterministic across runs and processes)."""

    def __init__(self, dim=16):
        self.dim = dim
        self.calls = 0
        self.seen = []

    def _vec(self, w):
        seed = int.from_bytes(hashlib.md5(w.encode()).digest()[:4], "little")
        return np.random.default_rng(seed).normal(size=self.dim)

    def encode(self, sentences, batch_size=64):
        self.calls += 1
        self.seen.extend(sentences)
        return np.stack([np.mean([self._vec(w) for w in s.split()], axis=0) for s in sentences])


# ---------------------------------------------------------------- synthetic files
POS_WORDS = ["good", "great", "fine", "nice", "love"]
NEG_WORDS = ["bad", "awful", "poor", "hate", "worst"]
FILLER = ["the", "a", "movie", "plot", "it", "was", "and", "this", "film", "story"]


def _sentence(rng, polar, n_polar=1):
    words = list(rng.choice(FILLER, size=rng.integers(2, 7)))
    for _ in range(n_polar):
        words.insert(int(rng.integers(0, len(words) + 1)), str(rng.choice(polar)))
    return " ".join(words)


def write_senteval(root, n=60, seed=0):
    """Tiny files in SentEval's own formats and names."""
    rng = np.random.default_rng(seed)
    for folder, a, b in [
        ("MR", "rt-polarity.pos", "rt-polarity.neg"),
        ("CR", "custrev.pos", "custrev.neg"),
        ("SUBJ", "subj.objective", "subj.subjective"),
        ("MPQA", "mpqa.pos", "mpqa.neg"),
    ]:
        (root / folder).mkdir(parents=True)
        (root / folder / a).write_bytes(
            "\n".join(_sentence(rng, POS_WORDS) for _ in range(n)).encode("latin-1") + b"\n"
        )
        # a latin-1 byte (e-acute) must survive as in SentEval
        neg = [_sentence(rng, NEG_WORDS) for _ in range(n - 1)] + ["caf\xe9 bad"]
        (root / folder / b).write_bytes("\n".join(neg).encode("latin-1") + b"\n")
    (root / "TREC").mkdir()
    classes = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    cue = {"ABBR": "stand", "DESC": "how", "ENTY": "what", "HUM": "who", "LOC": "where", "NUM": "many"}
    for fname, m in [("train_5500.label", 30), ("TREC_10.label", 8)]:
        lines = []
        for i in range(m * 6):
            c = classes[i % 6]
            lines.append(f"{c}:fine {cue[c]} " + " ".join(rng.choice(FILLER, size=rng.integers(1, 5))) + " ?")
        (root / "TREC" / fname).write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    (root / "MRPC").mkdir()
    for fname, m in [("msr_paraphrase_train.txt", 80), ("msr_paraphrase_test.txt", 30)]:
        rows = ["\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        for i in range(m):
            s1 = _sentence(rng, POS_WORDS + NEG_WORDS, 2)
            label = i % 2
            s2 = s1 if label else _sentence(rng, POS_WORDS + NEG_WORDS, 2)
            rows.append(f"{label}\t{i}\t{i + 1000}\t{s1}\t{s2}")
        (root / "MRPC" / fname).write_bytes("\r\n".join(rows).encode("utf-8") + b"\r\n")
    return root


def fixture_lines(n=60) -> dict:
    """Lines per file of ``write_senteval(root, n)``, in the shape of ``senteval_source.SENTEVAL_LINES``
    (the loaders refuse a file whose count differs from SentEval's: these files are smaller)."""
    from qt_hard.data.sources.senteval import SENTEVAL_LINES

    sizes = {
        "TREC/train_5500.label": 180,
        "TREC/TREC_10.label": 48,
        "MRPC/msr_paraphrase_train.txt": 81,
        "MRPC/msr_paraphrase_test.txt": 31,
    }
    return {rel: sizes.get(rel, n) for rel in SENTEVAL_LINES}


@pytest.fixture(autouse=True)
def tiny_senteval_sizes(request, monkeypatch):
    """Tests on the ``senteval_dir`` files: the loaders' count check is told their sizes."""
    if "senteval_dir" in request.fixturenames:
        from qt_hard.data.sources import senteval as senteval_source

        monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines())


@pytest.fixture(scope="module")
def senteval_dir(tmp_path_factory):
    return write_senteval(tmp_path_factory.mktemp("senteval"))


# ---------------------------------------------------------------- readers
def test_binary_reader_order_labels_and_sort(senteval_dir):
    task = load_task("SUBJ", senteval_dir)
    assert len(task.samples) == 120
    # SentEval gives label 1 to the *objective* file (its first argument).
    obj = [l.split() for l in (senteval_dir / "SUBJ" / "subj.objective").read_text("latin-1").splitlines()]
    lengths = [len(s) for s in task.samples]
    assert lengths == sorted(lengths)
    keys = list(zip(lengths, task.labels.tolist()))
    assert keys == sorted(keys)
    # stable sort: among the shortest label-1 sentences, file order is kept
    shortest = min(len(s) for s in obj)
    first_obj = [s for s in obj if len(s) == shortest]
    got = [s for s, l in zip(task.samples, task.labels) if l == 1 and len(s) == shortest]
    assert got == first_obj
    cr = load_task("CR", senteval_dir)
    assert ["caf\xe9", "bad"] in cr.samples


def test_trec_reader(senteval_dir):
    t = load_task("TREC", senteval_dir)
    assert len(t.train) == 180 and len(t.test) == 48
    assert sorted(set(t.train_labels.tolist())) == list(range(6))
    # the coarse label and the fine label are stripped: the question starts with its cue word
    i = t.train_labels.tolist().index(3)
    assert t.train[i][0] == "who"


def test_mrpc_reader_header_bom_crlf(senteval_dir):
    t = load_task("MSRP", senteval_dir)
    assert len(t.train_a) == 80 and len(t.test_a) == 30
    assert set(t.train_labels.tolist()) == {0, 1}
    assert all(not w.endswith("\r") for s in t.train_b for w in s)
    assert not any("Quality" in " ".join(s) for s in t.train_a)
    # label 1 rows are copies in this synthetic file
    assert all(a == b for a, b, l in zip(t.train_a, t.train_b, t.train_labels) if l == 1)


def test_reader_errors_name_the_problem(tmp_path):
    (tmp_path / "TREC").mkdir()
    (tmp_path / "TREC" / "train_5500.label").write_text("FOO:bar what is it ?\n", encoding="latin-1")
    (tmp_path / "TREC" / "TREC_10.label").write_text("HUM:ind who ?\n", encoding="latin-1")
    with pytest.raises(ValueError, match="unknown TREC class 'FOO'"):
        load_task("TREC", tmp_path)
    (tmp_path / "MR").mkdir()
    (tmp_path / "MR" / "rt-polarity.pos").write_text("", encoding="latin-1")
    (tmp_path / "MR" / "rt-polarity.neg").write_text("bad\n", encoding="latin-1")
    with pytest.raises(ValueError, match="is empty"):
        load_task("MR", tmp_path)
    with pytest.raises(FileNotFoundError, match="custrev.pos"):
        load_task("CR", tmp_path)
    (tmp_path / "MRPC").mkdir()
    (tmp_path / "MRPC" / "msr_paraphrase_train.txt").write_text("h\th\th\th\th\nx\t1\t2\tonly four\n")
    with pytest.raises(ValueError, match="5 tab-separated columns"):
        load_task("MRPC", tmp_path)
    with pytest.raises(ValueError, match="unknown SentEval task 'STS'"):
        parse_tasks("MR,STS")


# ---------------------------------------------------------------- fast vs SentEval's loop
def _binary_data(n, d, seed, signal=0.8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (signal * X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.3).astype(int)
    return X, y


def test_inner_kfold_fast_agrees_with_reference_loop():
    X, y = _binary_data(180, 6, seed=0)
    fast = inner_kfold(X, y, 2, kfold=3, fast=True)
    ref = inner_kfold(X, y, 2, kfold=3, fast=False)
    assert abs(fast["acc"] - ref["acc"]) <= 1.0
    assert abs(fast["devacc"] - ref["devacc"]) <= 1.0
    assert fast["acc"] > 65  # it learned something: chance is ~50-60 here


def test_kfold_multiclass_and_f1_agree_with_reference_loop():
    X, y, Xt, yt = linear_multiclass(1, 6, 4, 200, 80)
    fast = kfold_train_test(X, y, Xt, yt, 4, kfold=4, fast=True)
    ref = kfold_train_test(X, y, Xt, yt, 4, kfold=4, fast=False)
    assert abs(fast["acc"] - ref["acc"]) <= 1.0 and abs(fast["devacc"] - ref["devacc"]) <= 1.0
    Xb, yb = _binary_data(200, 5, seed=2)
    Xbt, ybt = _binary_data(80, 5, seed=3)
    fast = kfold_train_test(Xb, yb, Xbt, ybt, 2, kfold=4, fast=True, f1=True)
    ref = kfold_train_test(Xb, yb, Xbt, ybt, 2, kfold=4, fast=False, f1=True)
    assert abs(fast["f1"] - ref["f1"]) <= 1.0 and abs(fast["acc"] - ref["acc"]) <= 1.0


def test_fast_path_is_exact_against_converged_sklearn():
    """With scikit-learn run to full convergence (max_iter=None), the fast path gives identical
    numbers: any remaining gap to SentEval is lbfgs stopping early (max_iter=100), not protocol."""
    X, y = _binary_data(150, 5, seed=4, signal=0.4)
    fast = inner_kfold(X, y, 2, kfold=3, fast=True)
    ref = inner_kfold(X, y, 2, kfold=3, fast=False, max_iter=None)
    assert fast["acc"] == ref["acc"] and fast["devacc"] == ref["devacc"]
    assert fast["chosen_C"] == ref["chosen_C"]


def test_repeated_rows_merged_same_outputs(monkeypatch):
    """Repeated (features, label) rows, some also repeated with the other label, are solved as
    weighted merged rows: the solver sees only the distinct rows, and the protocols' outputs equal
    those of the reference path, one converged scikit-learn fit per fold on the rows as given."""
    from qt_hard.evaluation import protocol

    X, y = _binary_data(90, 4, seed=5, signal=0.4)
    rng = np.random.default_rng(0)
    rep = rng.integers(0, 90, size=60)
    flip = rng.integers(0, 90, size=8)
    X = np.r_[X, X[rep], X[flip]]
    y = np.r_[y, y[rep], 1 - y[flip]]
    order = rng.permutation(len(y))
    X, y = X[order], y[order]
    seen = []
    init = protocol._PathSolver.__init__
    monkeypatch.setattr(
        protocol._PathSolver,
        "__init__",
        lambda self, *a, **k: (init(self, *a, **k), seen.append(self.model.X.shape[0]))[0],
    )
    fast = inner_kfold(X, y, 2, kfold=3, fast=True)
    assert seen == [len(np.unique(np.c_[X, y], axis=0))] and seen[0] < len(y)
    ref = inner_kfold(X, y, 2, kfold=3, fast=False, max_iter=None)
    for key in ("acc", "devacc", "fold_acc", "chosen_C"):
        assert fast[key] == ref[key]
    fast = kfold_train_test(X[:120], y[:120], X[120:], y[120:], 2, kfold=3, fast=True)
    ref = kfold_train_test(X[:120], y[:120], X[120:], y[120:], 2, kfold=3, fast=False, max_iter=None)
    assert (fast["acc"], fast["devacc"], fast["chosen_C"]) == (ref["acc"], ref["devacc"], ref["chosen_C"])
    # Multi-class, one-vs-rest (liblinear) and multinomial columns on repeated rows.
    Xm, ym, Xmt, ymt = linear_multiclass(1, 5, 3, 120, 40)
    Xm, ym = np.r_[Xm, Xm[:50]], np.r_[ym, ym[:50]]
    fast = kfold_train_test(Xm, ym, Xmt, ymt, 3, kfold=3, fast=True)
    ref = kfold_train_test(Xm, ym, Xmt, ymt, 3, kfold=3, fast=False, max_iter=None)
    assert (fast["acc"], fast["devacc"], fast["chosen_C"]) == (ref["acc"], ref["devacc"], ref["chosen_C"])
    fast = protocol.skipthoughts_kfold(Xm, ym, Xmt, ymt, 3, kfold=3, regs=(1.0, 8.0))
    ref = protocol.skipthoughts_kfold(Xm, ym, Xmt, ymt, 3, kfold=3, regs=(1.0, 8.0), fast=False)
    assert (fast["acc"], fast["devacc"], fast["chosen_C"]) == (ref["acc"], ref["devacc"], ref["chosen_C"])


def test_protocol_rejects_too_few_per_class():
    X, y = _binary_data(30, 3, seed=0)
    y[:] = 0
    y[:3] = 1
    with pytest.raises(ValueError, match="at least kfold=10"):
        inner_kfold(X, y, 2, kfold=10)


# ---------------------------------------------------------------- runner, tables, JSON
def test_run_senteval_end_to_end(senteval_dir, tmp_path):
    enc = HashBoW(dim=12)
    cache = EmbeddingCache(enc, batch_size=50)
    res = run_senteval(enc, "MR,CR,SUBJ,MPQA,TREC,MRPC", senteval_dir, kfold=3, cache=cache)
    assert list(res) == ["MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC"]
    # the polarity words make the binary tasks learnable; the cue words make TREC learnable
    for t in ("MR", "CR", "SUBJ", "MPQA"):
        assert res[t]["acc"] > 75, (t, res[t])
    assert res["TREC"]["acc"] > 60
    assert 0 <= res["MRPC"]["f1"] <= 100
    # each distinct sentence encoded once although the binary tasks repeat vocabulary
    assert len(enc.seen) == len(set(enc.seen)) == cache.n_encoded
    table = senteval_table({"hashbow": res})
    assert "| MR | CR | SUBJ | MPQA | TREC | MSRP (Acc) | MSRP (F1) |" in table
    assert f"{res['MRPC']['f1']:.1f}" in table
    out = tmp_path / "r.json"
    save_results(out, {"kind": "senteval", "name": "a", "results": res})
    back = load_results(out)
    assert back["results"]["CR"]["acc"] == res["CR"]["acc"]
    other = json.loads(out.read_text())
    other["results"]["CR"]["acc"] += 2.5
    cmp = compare_table(back, other)
    assert "| CR |" in cmp and "+2.50" in cmp


def test_load_results_rejects_other_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    with pytest.raises(ValueError, match="not a qt-hard result file"):
        load_results(p)
    p.write_text("{oops")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_results(p)


# ---------------------------------------------------------------- real data
def test_real_cr_with_fixed_random_encoder():
    import _data

    root = _data.dataset("senteval", "CR").parents[1]
    task = load_task("CR", root / "senteval")
    assert len(task.samples) == 3775 and int(task.labels.sum()) == 2407  # SOURCE.md counts
    res = run_senteval(HashBoW(dim=100), ["CR"], root / "senteval", kfold=10)["CR"]
    majority = 100 * 2407 / 3775
    # a random bag of words carries some sentiment signal (about 69 measured): clearly above the
    # majority class, and far below what a trained sentence encoder reaches (80+)
    assert majority + 2 < res["acc"] < 80, res
    assert len(res["chosen_C"]) == 10


def test_embedding_cache_file_roundtrip(tmp_path):
    enc = HashBoW(dim=4)
    cache = EmbeddingCache(enc)
    X = cache.embed(["a b", "c", "a b"])
    path = tmp_path / "emb.npz"
    cache.save(path, "hash4")
    fresh_enc = HashBoW(dim=4)
    fresh = EmbeddingCache(fresh_enc)
    assert fresh.load(path, "hash4") == 2
    np.testing.assert_array_equal(fresh.embed(["a b", "c", "a b"]), X)
    assert fresh_enc.calls == 0  # nothing re-encoded
    with pytest.raises(ValueError, match="written for model 'hash4', not 'other'"):
        EmbeddingCache(enc).load(path, "other")


def test_embedding_cache_encodes_with_the_eval_thread_count():
    # The encoder runs with the solver's torch thread count ($QT_HARD_EVAL_THREADS, 1 by default;
    # two threads on a shared 2-core CPU made the QT encode 2-8x slower), restored afterwards.
    import torch

    from qt_hard.evaluation.logreg import DEFAULT_THREADS

    class Probe:
        def encode(self, sentences, batch_size=64):
            self.threads = torch.get_num_threads()
            return np.zeros((len(sentences), 2))

    before = torch.get_num_threads()
    torch.set_num_threads(DEFAULT_THREADS + 1)  # so that the check below is not automatic
    try:
        probe = Probe()
        EmbeddingCache(probe).embed(["a b", "c"])
        assert probe.threads == DEFAULT_THREADS
        assert torch.get_num_threads() == DEFAULT_THREADS + 1
    finally:
        torch.set_num_threads(before)


def test_path_warm_start_extrapolates_in_log_c():
    """``_path_start``: nothing for the first C, the last solution for the second, then a linear
    prediction in log C; it moves only Newton's starting point, so the protocol's outputs equal those
    of converged scikit-learn fits."""
    import torch

    a, b = torch.tensor([1.0, 0.0]), torch.tensor([3.0, 1.0])
    assert protocol._path_start([], 0.5) is None
    assert protocol._path_start([(1.0, a)], 2.0) is a
    assert torch.allclose(protocol._path_start([(1.0, a), (2.0, b)], 4.0), torch.tensor([5.0, 2.0]))
    assert torch.allclose(protocol._path_start([(1.0, a), (2.0, b)], 8.0), torch.tensor([7.0, 3.0]))
    X, y, Xt, yt = linear_multiclass(1, 6, 4, 200, 80)
    Xb, yb = _binary_data(180, 6, seed=0)
    ref = (
        kfold_train_test(X, y, Xt, yt, 4, kfold=4, fast=False, max_iter=None),
        inner_kfold(Xb, yb, 2, kfold=3, fast=False, max_iter=None),
    )
    extrap = (kfold_train_test(X, y, Xt, yt, 4, kfold=4), inner_kfold(Xb, yb, 2, kfold=3))
    for p, e in zip(ref, extrap):
        assert (p["acc"], p["devacc"], p["chosen_C"]) == (e["acc"], e["devacc"], e["chosen_C"])


def test_damaged_task_files_are_refused(tmp_path):
    """A truncated file or a line appended to a real task file is refused with data list's check,
    naming the file; an intact copy loads."""
    import shutil

    from qt_hard.errors import DataCorruptError

    import _data

    root = _data.dataset("senteval", "CR", "custrev.pos").parents[2]
    shutil.copytree(root / "senteval" / "CR", tmp_path / "CR")
    assert len(load_task("CR", tmp_path).samples) == 2407 + 1368
    neg = tmp_path / "CR" / "custrev.neg"
    intact = neg.read_bytes()
    neg.write_bytes(intact + b"garbage appended\n")
    with pytest.raises(DataCorruptError, match="custrev.neg has 1369 lines, expected 1368"):
        load_task("CR", tmp_path)
    neg.write_bytes(intact)
    pos = tmp_path / "CR" / "custrev.pos"
    with open(pos, "r+b") as fh:
        fh.truncate(100)
    with pytest.raises(DataCorruptError, match="custrev.pos has 2 lines, expected 2407"):
        load_task("CR", tmp_path)
