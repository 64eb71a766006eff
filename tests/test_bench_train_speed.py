"""scripts/bench_train.py loop: its cases are valid configs of the library, and a run's rate is
that of its median step."""

from types import SimpleNamespace

import pytest
from _scripts import load_script

B = load_script("bench_train")


@pytest.mark.parametrize("case", list(B.CASES))
def test_cases_are_valid_configs(tmp_path, case):
    cfg = B._config(case, tmp_path / case, 12, 1, ["train.batch_size=64"])
    assert cfg.train.steps == 12 and cfg.train.batch_size == 64 and cfg.train.trackers == ["csv"]
    assert cfg.train.checkpoint_every == 0 and not cfg.train.progress


def test_rate_is_that_of_the_median_step():
    cfg = SimpleNamespace(train=SimpleNamespace(batch_size=10), data=SimpleNamespace(kind="wiki"))
    stamps = [0.0, 0.1, 0.2, 0.3, 5.0, 5.1]  # one step held up by another process
    assert B._bench.step_rate(cfg, stamps) == pytest.approx(2 * 10 / 0.1)
    cfg.data.kind = "books"
    assert B._bench.step_rate(cfg, stamps) == pytest.approx(10 / 0.1)


def test_the_s2v_case_is_configs_qt_s2v_on_fewer_books(tmp_path):
    from qt_hard.training.config import load_config

    cfg = B._config("s2v_gru", tmp_path / "s2v", 12, 1, [])
    ref = load_config(B.Path(__file__).resolve().parent.parent / "configs" / "qt_s2v.yaml", check_pipeline=False)
    assert cfg.model == ref.model and cfg.objective == ref.objective
    assert cfg.train.batch_size == ref.train.batch_size == 400 and cfg.train.lr == ref.train.lr
    assert cfg.data.max_books == 60 and cfg.data.max_vocab == ref.data.max_vocab
    wiki = B._config("bow_wiki1000", tmp_path / "w", 12, 1, [])
    assert (wiki.train.batch_size, wiki.data.classes, wiki.objective.k, wiki.model.dim) == (1000, 1000, None, 768)


def test_case_set_must_name_a_case(capsys):
    with pytest.raises(SystemExit):
        B.main(["loop", "--cases", "bow_wiki", "--case-set", "nope:train.lr=1"])
    assert "expected CASE:KEY=VALUE" in capsys.readouterr().err


def test_a_second_round_runs_beside_the_first(tmp_path, capsys):
    """Every round's loop run trains into the case's folder again (the data cache there is reused):
    the second round must not find the first round's run there and stop."""
    import json

    argv = ["loop", "--cases", "bow_wiki", "--steps", "6", "--warmup", "2", "--rounds", "2", "--out", str(tmp_path)]
    argv += ["data.kind=synthetic", "data.num_classes=8", "train.batch_size=16", "objective.k=8", "model.dim=16"]
    assert B.main(argv) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    runs = [(r["path"], r["round"]) for r in rows if "path" in r]
    assert runs == [("loop", 0), ("bare", 0), ("loop", 1), ("bare", 1)]
    assert rows[-1]["rounds"] == 2 and rows[-1]["ratio"] > 0
