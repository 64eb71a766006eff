"""SentEval's engine as a second evaluator: prepare/batcher against a stand-in ``senteval`` package
that follows facebookresearch/SentEval's interface (``senteval.engine.SE(params, batcher,
prepare).eval(tasks)``), and ``qt-hard eval senteval --engine senteval``."""

import json
import sys
import textwrap

import numpy as np
import pytest
from test_eval_senteval import HashBoW, fixture_lines, write_senteval

from qt_hard.cli import main
from qt_hard.evaluation import senteval_engine as se
from qt_hard.evaluation.models import EmbeddingCache

# A stand-in for SentEval's engine, written as SentEval's is used: params become an attribute
# dict, each task reads <task_path>/downstream/<TASK>, calls prepare with every tokenized
# sentence, then batcher batch by batch (params.batch_size), and returns SentEval's result keys.
# Its "classifier" is a nearest class mean on the embeddings, so the numbers depend on them.
STAND_IN_ENGINE = textwrap.dedent("""
    import io
    import os

    import numpy as np

    CALLS = []  # (kind, argument, output) in call order
    PARAMS = []


    class dotdict(dict):
        __getattr__ = dict.get
        __setattr__ = dict.__setitem__


    def _lines(path, encoding):
        with io.open(path, "r", encoding=encoding) as f:
            return f.read().splitlines()


    def _binary(folder):
        pos = [l.split() for l in _lines(os.path.join(folder, "custrev.pos"), "latin-1")]
        neg = [l.split() for l in _lines(os.path.join(folder, "custrev.neg"), "latin-1")]
        return pos + neg, np.array([1] * len(pos) + [0] * len(neg))


    def _mrpc(folder):
        rows = [l.split("\\t") for l in _lines(os.path.join(folder, "msr_paraphrase_train.txt"), "utf-8")][1:]
        return [r[3].split() for r in rows], [r[4].split() for r in rows], np.array([int(r[0]) for r in rows])


    def _mean_class_acc(X, y):
        means = np.stack([X[y == c].mean(0) for c in (0, 1)])
        pred = np.argmin(((X[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
        return pred, round(100 * float(np.mean(pred == y)), 2)


    class SE(object):
        def __init__(self, params, batcher, prepare=None):
            self.params = dotdict(params)
            self.params.batch_size = self.params.batch_size or 128
            self.batcher, self.prepare = batcher, prepare or (lambda p, s: None)
            PARAMS.append(self.params)

        def _embed(self, sentences):
            out = []
            for i in range(0, len(sentences), self.params.batch_size):
                batch = sentences[i:i + self.params.batch_size]
                emb = self.batcher(self.params, batch)
                CALLS.append(("batcher", batch, emb))
                out.append(emb)
            return np.vstack(out)

        def eval(self, name):
            if isinstance(name, list):
                return {x: self.eval(x) for x in name}
            folder = os.path.join(self.params.task_path, "downstream", name)
            if name == "CR":
                samples, y = _binary(folder)
                CALLS.append(("prepare", samples, None))
                self.prepare(self.params, samples)
                pred, acc = _mean_class_acc(self._embed(samples), y)
                return {"devacc": acc, "acc": acc, "ndev": len(y), "ntest": len(y)}
            if name == "MRPC":
                a, b, y = _mrpc(folder)
                CALLS.append(("prepare", a + b, None))
                self.prepare(self.params, a + b)
                A, B = self._embed(a), self._embed(b)
                pred, acc = _mean_class_acc(np.c_[np.abs(A - B), A * B], y)
                tp = float(np.sum((pred == 1) & (y == 1)))
                f1 = round(100 * 2 * tp / (np.sum(pred == 1) + np.sum(y == 1)), 2)
                return {"devacc": acc, "acc": acc, "f1": f1, "ndev": len(y), "ntest": len(y)}
            raise AssertionError(name + " is not in the stand-in engine")
""")


def _sizes(monkeypatch, n):
    """The loaders check SentEval's line counts: tell them those of ``write_senteval(..., n)``."""
    from qt_hard.data.sources import senteval as senteval_source

    monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines(n))


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """A checkout folder holding the stand-in ``senteval`` package, with the tasks in its
    ``data/downstream``; ``senteval`` is forgotten again after the test."""
    root = tmp_path / "SentEval"
    (root / "senteval").mkdir(parents=True)
    (root / "senteval" / "__init__.py").write_text("from senteval.engine import SE\n")
    (root / "senteval" / "engine.py").write_text(STAND_IN_ENGINE)
    write_senteval(root / "data" / "downstream", n=30)
    _sizes(monkeypatch, 30)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [m for m in sys.modules if m == "senteval" or m.startswith("senteval.")]:
        monkeypatch.delitem(sys.modules, name)
    yield root
    for name in [m for m in sys.modules if m == "senteval" or m.startswith("senteval.")]:
        del sys.modules[name]


def test_batcher_gets_token_lists_and_returns_our_encoders_rows(stand_in):
    enc = HashBoW(dim=8)
    res = se.run_engine(enc, ["CR", "MRPC"], stand_in, usepytorch=False, batch_size=7)
    engine = sys.modules["senteval.engine"]
    kinds = [k for k, _, _ in engine.CALLS]
    # prepare once per task, before that task's batches
    assert kinds[0] == "prepare" and kinds.count("prepare") == 2
    assert kinds.index("prepare", 1) > kinds.index("batcher")
    reference = HashBoW(dim=8)
    for kind, batch, emb in engine.CALLS:
        if kind != "batcher":
            continue
        assert 0 < len(batch) <= 7 and all(isinstance(w, list) for w in batch)
        assert isinstance(emb, np.ndarray) and emb.dtype == np.float64 and emb.shape == (len(batch), 8)
        np.testing.assert_allclose(emb, reference.encode([" ".join(w) for w in batch]), rtol=0, atol=1e-12)
    # prepare encoded each distinct sentence once; the batches were only looked up
    assert len(enc.seen) == len(set(enc.seen))
    assert set(res) == {"CR", "MRPC"}
    assert {"devacc", "acc", "ndev", "ntest", "seconds", "encode_seconds"} <= set(res["CR"])
    assert "f1" in res["MRPC"] and res["CR"]["ndev"] == 60
    params = engine.PARAMS[0]
    assert params.usepytorch is False and params.kfold == 10 and params.seed == 1111
    assert params.classifier == se.DEFAULT_CLASSIFIER and params.batch_size == 7


def test_empty_sentence_reaches_the_encoder_as_a_full_stop():
    enc = HashBoW(dim=4)
    params = se.senteval_params(enc, "unused", usepytorch=False)
    out = se.batcher(params, [[], ["bad", "film"]])
    np.testing.assert_allclose(out, HashBoW(dim=4).encode([".", "bad film"]))
    with pytest.raises(ValueError, match="senteval_params"):
        se.batcher({"task_path": "x"}, [["a"]])


def test_task_path_links_a_folder_of_task_folders(tmp_path):
    data = write_senteval(tmp_path / "senteval", n=10)
    with se.task_path(data, ["CR", "MRPC"]) as where:
        assert (where / "downstream" / "CR" / "custrev.pos").is_file()
        assert where != data
    assert not where.exists()
    (tmp_path / "checkout" / "data" / "downstream").mkdir(parents=True)
    with (
        pytest.raises(se.SentEvalNotFoundError, match="no task folder TREC"),
        se.task_path(tmp_path / "checkout" / "data", ["TREC"]),
    ):
        pass


def test_a_senteval_from_another_folder_is_not_reused(stand_in, tmp_path):
    se.import_senteval(stand_in)
    other = tmp_path / "other"
    (other / "senteval").mkdir(parents=True)
    (other / "senteval" / "engine.py").write_text("")
    with pytest.raises(se.SentEvalNotFoundError, match="already imported"):
        se.import_senteval(other)


def _cli(*args):
    return main(["eval", "senteval", "--engine", "senteval", *map(str, args)])


def test_cli_prints_the_table_with_the_engine(stand_in, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert (
        _cli(
            "--senteval-path",
            stand_in,
            "--senteval-classifier",
            "sklearn",
            "--model",
            "random:bow",
            "--tasks",
            "CR,MRPC",
            "--output",
            out,
        )
        == 0
    )
    table = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert "| Model | Engine | MR | CR |" in table
    assert "| random:bow | SentEval (sklearn-LogReg) |" in table
    res = data["results"]
    assert f"| {res['CR']['acc']:.1f} |" in table and f"| {res['MRPC']['f1']:.1f} |" in table
    assert data["engine"] == "senteval" and data["protocol"]["usepytorch"] is False
    assert data["protocol"]["data"] == str(stand_in / "data")


def test_cli_default_classifier_is_pytorch_and_needs_cuda(stand_in, tmp_path, monkeypatch, capsys):
    import torch

    data = write_senteval(tmp_path / "plain", n=10)  # task folders directly: --data is linked
    _sizes(monkeypatch, 10)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _cli("--senteval-path", stand_in, "--model", "random:bow", "--tasks", "CR") == 2
    assert "--senteval-classifier sklearn" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert _cli("--senteval-path", stand_in, "--model", "random:bow", "--tasks", "CR", "--data", data) == 0
    params = sys.modules["senteval.engine"].PARAMS[-1]
    assert params.usepytorch is True and params.classifier == se.DEFAULT_CLASSIFIER
    assert "pytorch nhid=0,optim=adam" in capsys.readouterr().out


@pytest.mark.parametrize("case", ["no-path", "missing", "not-a-checkout", "no-task", "fast-only", "fast-engine"])
def test_cli_errors_are_one_line_before_the_model_loads(case, stand_in, tmp_path, monkeypatch, capsys):
    def no_load(*a, **k):
        raise AssertionError("the model was loaded before the arguments were checked")

    monkeypatch.setattr("qt_hard.evaluation.models.load_model", no_load)
    args = {
        "no-path": [],
        "missing": ["--senteval-path", tmp_path / "nope"],
        "not-a-checkout": ["--senteval-path", tmp_path],
        "no-task": ["--senteval-path", stand_in, "--tasks", "SUBJ,CR", "--data", stand_in],
        "fast-only": ["--senteval-path", stand_in, "--reference"],
    }.get(case)
    if case == "fast-engine":
        code = main(["eval", "senteval", "--senteval-path", str(stand_in), "--model", "minilm"])
    else:
        code = _cli(*args, "--senteval-classifier", "sklearn", "--model", "minilm")
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("qt-hard: error:") and err.count("\n") == 1, err


def test_embedding_cache_is_shared_with_the_fast_engine(stand_in):
    """With one cache the two engines see the very same rows (what a --cache file gives the CLI)."""
    enc = HashBoW(dim=6)
    cache = EmbeddingCache(enc)
    se.run_engine(enc, ["CR"], stand_in, usepytorch=False, cache=cache)
    n = cache.n_encoded
    from qt_hard.evaluation.senteval import run_senteval

    run_senteval(enc, ["CR"], stand_in / "data" / "downstream", kfold=3, cache=cache)
    assert cache.n_encoded == n > 0


def test_checkout_commit_only_for_the_top_of_a_clone(tmp_path):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "SentEval"
    (repo / "senteval").mkdir(parents=True)
    (repo / "senteval" / "engine.py").write_text("")
    assert se.checkout_commit(repo) is None
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    assert se.checkout_commit(repo) == head
    assert se.checkout_commit(repo / "senteval") is None


def test_a_package_senteval_needs_is_named(stand_in):
    engine = stand_in / "senteval" / "engine.py"
    engine.write_text("import qt_hard_missing_dependency_for_test\n" + engine.read_text())
    with pytest.raises(se.SentEvalImportError, match="'qt_hard_missing_dependency_for_test', which is not installed"):
        se.import_senteval(stand_in)
