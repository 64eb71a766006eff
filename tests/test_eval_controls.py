"""Control rows of a trained word model: its own tokenizer, the unknown-word rates, the CLI table."""

import json

import pytest

from qt_hard.data.wordlevel import WordTokenizer
from qt_hard.encoders import random_encoder
from qt_hard.evaluation.models import control_models, load_model, load_tokenizer, unk_rates

from test_eval_senteval import tiny_senteval_sizes, write_senteval  # noqa: F401 (autouse fixture: the tiny files' sizes)


@pytest.fixture(scope="module")
def senteval_dir(tmp_path_factory):
    return write_senteval(tmp_path_factory.mktemp("senteval"))


@pytest.fixture
def model_dir(tmp_path):
    # A "trained" model whose vocabulary lacks the polarity words of the fake tasks (and 'story').
    tok = WordTokenizer.train(["the a movie plot it was and this film"], min_count=1)
    enc = random_encoder({"kind": "qt", "encoder": "gru", "embed_dim": 8, "hidden_dim": 8}, tokenizer=tok, seed=1)
    enc.save(tmp_path / "run" / "final")
    return tmp_path / "run"


def test_controls_share_the_models_tokenizer(model_dir, senteval_dir):
    model = load_model(str(model_dir))
    rows = control_models(model)
    assert list(rows) == ["untrained qt-gru", "random:bow"]
    for enc in rows.values():
        assert enc.vocab == model.vocab
    assert rows["untrained qt-gru"].config.hidden_dim == 8
    rates = unk_rates(model, ["MR", "TREC"], senteval_dir)
    assert 0 < rates["MR"] < 100 and set(rates) == {"MR", "TREC"}
    # random: with the model's tokenizer sees the same unknown words; fitted on the tasks it sees none
    fair = load_model("random:bow", tokenizer=load_tokenizer(model_dir))
    assert unk_rates(fair, ["MR"], senteval_dir)["MR"] == rates["MR"]
    from qt_hard.evaluation.senteval import task_sentences

    seen = load_model("random:bow", sentences=task_sentences(["MR"], senteval_dir))
    assert unk_rates(seen, ["MR"], senteval_dir)["MR"] == 0.0


def test_controls_need_a_word_model():
    class Other:
        def encode(self, s, batch_size=64):
            return None

    with pytest.raises(ValueError, match="word model"):
        control_models(Other())
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_tokenizer("/nonexistent/run")


def _eval_with_controls(model_dir, senteval_dir, out, tasks, *extra) -> int:
    from qt_hard.cli import main

    args = ["eval", "senteval", "--model", str(model_dir), "--controls", "--data", str(senteval_dir)]
    return main([*args, "--tasks", tasks, "--kfold", "2", "--name", "trained", "--output", str(out), *extra])


def test_cli_prints_three_rows_and_unknown_words(model_dir, senteval_dir, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert _eval_with_controls(model_dir, senteval_dir, out, "MR,TREC", "--workers", "1") in (0, None)
    text = capsys.readouterr().out
    assert "| trained |" in text and "| untrained qt-gru |" in text and "| random:bow |" in text
    assert "Unknown words (%)" in text
    payload = json.loads(out.read_text())
    assert list(payload["controls"]) == ["untrained qt-gru", "random:bow"]
    assert payload["unk_rate_percent"]["MR"] > 0


def test_control_rows_side_by_side_give_the_numbers_of_one_process(model_dir, tmp_path, capsys):
    # MR at SentEval's own size: a control row's process reads the files with their real line counts.
    full = write_senteval(tmp_path / "senteval", n=5331)
    one, beside = tmp_path / "one.json", tmp_path / "beside.json"
    assert _eval_with_controls(model_dir, full, one, "MR", "--workers", "1") in (0, None)
    text = _untimed(capsys.readouterr().out)
    assert _eval_with_controls(model_dir, full, beside, "MR", "--workers", "3") in (0, None)
    assert _untimed(capsys.readouterr().out) == text
    payload, again = json.loads(one.read_text()), json.loads(beside.read_text())
    for key in ("results", "controls", "unk_rate_percent"):
        assert _numbers(again[key]) == _numbers(payload[key]), key


def _untimed(text: str) -> list[str]:
    return [line for line in text.splitlines() if "seconds" not in line]


def _numbers(tree):
    """The numbers of a result tree without its timings (which differ between runs)."""
    if isinstance(tree, dict):
        return {k: _numbers(v) for k, v in tree.items() if "seconds" not in k}
    return tree


def test_workers_are_counted_before_the_model_loads(model_dir, senteval_dir, tmp_path, capsys):
    from qt_hard.cli import main

    args = ["eval", "senteval", "--model", str(tmp_path / "absent"), "--controls", "--workers", "0"]
    assert main([*args, "--data", str(senteval_dir)]) == 2
    assert capsys.readouterr().err.strip() == "qt-hard: error: --workers must be >= 1, got 0"


def test_six_task_mean_needs_all_six():
    from qt_hard.evaluation.report import six_task_mean, unk_table

    res = {t: {"acc": a} for t, a in zip(["MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC"], [60, 70, 80, 90, 50, 40])}
    assert six_task_mean(res) == pytest.approx(65.0)
    del res["CR"]
    assert six_task_mean(res) is None
    assert "| m | 1.5 | – |" in unk_table({"m": {"MR": 1.5}, "n": {"CR": 2.0}})
