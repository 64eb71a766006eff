"""scripts/bench_train_speed.py: its cases are valid configs of the library, and a run's rate is
that of its median step."""

from types import SimpleNamespace

import pytest
from _scripts import load_script

B = load_script("bench_train_speed")


@pytest.mark.parametrize("case", list(B.CASES))
def test_cases_are_valid_configs(tmp_path, case):
    cfg = B._config(case, tmp_path / case, 12, 1, ["train.batch_size=64"])
    assert cfg.train.steps == 12 and cfg.train.batch_size == 64 and cfg.train.trackers == ["csv"]
    assert cfg.train.checkpoint_every == 0 and not cfg.train.progress


def test_rate_is_that_of_the_median_step():
    cfg = SimpleNamespace(train=SimpleNamespace(batch_size=10), data=SimpleNamespace(kind="wiki"))
    stamps = [0.0, 0.1, 0.2, 0.3, 5.0, 5.1]  # one step held up by another process
    assert B._rate(cfg, stamps) == pytest.approx(2 * 10 / 0.1)
    cfg.data.kind = "books"
    assert B._rate(cfg, stamps) == pytest.approx(10 / 0.1)
