"""The one verdict rule (qt_hard.experiments.report.paired_verdict) on hand-made rows."""

from __future__ import annotations

import math

import pytest

from qt_hard.experiments.report import paired_verdict


def test_interval_excluding_zero_is_better_and_matches_students_t():
    base = {0: 10.0, 1: 11.0, 2: 12.0}
    row = {0: 10.5, 1: 11.4, 2: 12.6}  # differences 0.5, 0.4, 0.6: mean 0.5, sd 0.1
    v = paired_verdict(base, row)
    half = 4.302652729911275 * 0.1 / math.sqrt(3)  # t_{0.975, 2}
    assert v.n == 3 and v.verdict == "better"
    assert v.mean == pytest.approx(0.5) and v.low == pytest.approx(0.5 - half) and v.high == pytest.approx(0.5 + half)
    assert v.cell() == "+0.50 [+0.25, +0.75]"
    worse = paired_verdict(row, base)
    assert worse.verdict == "worse" and worse.high == pytest.approx(-0.5 + half)


def test_interval_holding_zero_is_level_even_when_the_mean_beats_the_spread():
    # The bag-of-words case: per seed +1.91, +0.18, +1.52 against a baseline whose spread is below the mean.
    base = {0: 50.0, 1: 50.1, 2: 49.9}
    row = {0: 51.91, 1: 50.28, 2: 51.42}
    v = paired_verdict(base, row)
    assert v.mean > 1.0 and v.low < 0 < v.high and v.verdict == "level"


def test_interval_touching_zero_is_not_better():
    # Identical differences have no spread: the interval is the point itself. At 0 it touches 0 on
    # both ends and is level; any row whose interval merely reaches 0 is not called better.
    v = paired_verdict({0: 1.0, 1: 2.0, 2: 3.0}, {0: 1.0, 1: 2.0, 2: 3.0})
    assert (v.low, v.high, v.verdict) == (0.0, 0.0, "level")
    w = paired_verdict({0: 0.0, 1: 0.0, 2: 0.0, 3: 0.0}, {0: 1.0, 1: -1.0, 2: 1.0, 3: -1.0})
    assert w.mean == 0.0 and w.low < 0 < w.high and w.verdict == "level"


def test_fewer_than_three_pairs_are_not_judged():
    v = paired_verdict({0: 1.0, 1: 2.0, 5: 3.0}, {0: 9.0, 1: 9.0, 2: 9.0})  # seeds 0 and 1 shared
    assert v.n == 2 and v.verdict == "not judged" and v.low is None
    assert v.cell() == f"{v.mean:+.2f}"
    assert paired_verdict({0: 1.0}, {1: 2.0}).cell() == "-"
