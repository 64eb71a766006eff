"""qt-table's namesake protocol (``namesake_table.md``): the paired differences to uniform and their
95% t-intervals, from the senteval and namesake records."""

from __future__ import annotations

import math
import statistics

import pytest

from qt_hard.experiments.grid import GridError
from qt_hard.experiments.specs import qt_table as Q
from qt_hard.experiments.specs import qt_table_namesake as N


def test_the_table_pairs_by_seed_and_skips_missing_readouts():
    runs = {
        "uniform": {0: [76.0, 40.0, 0.10, 3.50], 1: [77.0, 42.0, 0.12, 3.40]},
        "hard2-clamp": {0: [77.0, 41.0, 0.11, None], 1: [79.0, 45.0, 0.12, 3.30], 2: [90.0, 50.0, 0.2, 3.0]},
        "hard1-clamp": {1: [77.5, 42.5, 0.13, 3.45]},
    }
    text, headline = N.namesake_table(runs, "uniform")
    lines = text.splitlines()
    hard2 = next(line for line in lines if line.startswith("| hard2-clamp | 1-2 |"))
    assert "| +1.50 not judged |" in hard2  # seeds 0 and 1 only (seed 2 has no uniform pair): below 3 pairs
    assert "-0.100 not judged" in hard2  # the loss of seed 0 is missing: one pair left
    assert "| hard1-clamp | 1 | +0.50 not judged |" in text
    assert headline == "six-task mean difference to uniform: hard2-clamp +1.50 not judged; hard1-clamp +0.50 not judged"
    runs["uniform"][2] = [88.0, 40.0, 0.1, 3.2]
    half = 4.302652729911275 / math.sqrt(3)  # t(0.975, 2 degrees of freedom) / sqrt(3 pairs)
    sd = statistics.stdev([1.0, 2.0, 2.0])
    lo, hi = 5 / 3 - half * sd, 5 / 3 + half * sd
    hard2 = next(x for x in N.namesake_table(runs, "uniform")[0].splitlines() if x.startswith("| hard2-clamp | 2-3 |"))
    assert f"| +1.67 [{lo:+.2f}, {hi:+.2f}] {'better' if lo > 0 else 'level'} |" in hard2


def test_the_runs_come_from_the_senteval_and_namesake_records():
    six = {t: 70.0 + i for i, t in enumerate(Q.TASKS)}  # mean 72.5
    records = [
        {"row": "uniform", "seed": 0, "protocol": "senteval", "acc": six},
        {"row": "uniform", "seed": 0, "protocol": "namesake", "sts12_16": 40.0, "heldout_next_top1": 0.1},
        {"row": "hard2-clamp", "seed": 1, "protocol": "similarity", "sim_mean": 50.0},
    ]
    assert N.namesake_runs(records) == {"uniform": {0: [72.5, 40.0, 0.1, None]}}
    files = Q.report_files(records, {})
    assert files["namesake_table.md"] == N.namesake_table(N.namesake_runs(records), "uniform")[0] + "\n"


def test_the_held_out_books_are_the_configs_consecutive_excluded_books():
    assert N.held_out_range([8, 9, 10]) == (8, 11) and N.held_out_range([2]) == (2, 3)
    for bad in (None, [], [8, 10]):
        with pytest.raises(GridError, match="consecutive books"):
            N.held_out_range(bad)
