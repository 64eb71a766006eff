"""Two-level verdicts (seeds and queries, Holm across a family) and the retrieval choice rule of
qt_hard.experiments.report, on hand-made records.

A record's aggregate is the mean of its per-query scores, as for nDCG@10. A row is the baseline plus
``delta + e[q] + u[s]``: the seed-level differences are ``delta + mean(e) + u[s]``, the query-level
ones ``delta + e[q] + mean(u)``, so ``e`` sets the spread over queries and ``u`` the spread over seeds.
"""

from __future__ import annotations

import itertools
import statistics

import numpy as np
import pytest
from scipy import stats

from qt_hard.errors import ArgumentError
from qt_hard.experiments.report import (
    TwoLevelVerdict,
    choose_on_dev,
    choose_retrieval_row,
    family_note,
    holm,
    sign_flip_p_value,
    two_level_family,
)

QIDS = [f"q{i}" for i in range(8)]
BASE_Q = [40.0, 55.0, 62.0, 30.0, 71.0, 48.0, 35.0, 58.0]
SEED_OFFSET = {0: 0.0, 1: 0.6, 2: -0.4, 3: 0.2}
SEEDS = (0, 1, 2)
SMALL_Q = [0.3, -0.2, 0.1, -0.3, 0.2, -0.1, 0.25, -0.25]  # sum 0
LARGE_Q = [6.0, -5.0, 4.0, -6.0, 5.0, -4.0, 3.0, -3.0]  # sum 0
SMALL_S = [0.1, -0.1, 0.0]
LARGE_S = [3.0, -2.5, -0.5]


def baseline(seeds=SEEDS) -> dict[int, list[float]]:
    return {s: [b + SEED_OFFSET[s] for b in BASE_Q] for s in seeds}


def shifted(per_seed: dict, delta: float, e=SMALL_Q, u=SMALL_S) -> dict[int, list[float]]:
    """Each seed's per-query scores plus ``delta + e[q] + u[i]`` (i the seed's position)."""
    return {s: [x + delta + eq + u[i] for x, eq in zip(v, e)] for i, (s, v) in enumerate(per_seed.items())}


def records(per_seed: dict, split="dev", metric="ndcg@10", qids=QIDS) -> list[dict]:
    return [
        {"seed": s, f"{split}_{metric}": statistics.mean(v), "per_query": {split: {metric: dict(zip(qids, v))}}}
        for s, v in per_seed.items()
    ]


def judge(base: dict, row: dict, **kw) -> TwoLevelVerdict:
    """The verdict of one comparison, a family of one (Holm changes nothing)."""
    return two_level_family({"row": (records(base), records(row))}, "dev", "ndcg@10", **kw)["row"]


def diffs(base: dict, row: dict) -> tuple[list[float], list[float]]:
    """(seed-level differences, query-level differences), computed here independently of the library."""
    seed = [statistics.mean(row[s]) - statistics.mean(base[s]) for s in sorted(base)]
    query = [statistics.mean(row[s][q] - base[s][q] for s in base) for q in range(len(QIDS))]
    return seed, query


def test_better_at_both_levels_and_worse_when_swapped():
    base, row = baseline(), shifted(baseline(), 2.0)
    v = judge(base, row)
    assert v.verdict == "better" and (v.n_seeds, v.n_queries) == (3, 8)
    assert v.seed_p_adj == v.seed_p < 0.05 and v.query_p_adj == v.query_p < 0.05
    assert v.seed_mean == pytest.approx(2.0) and v.query_mean == pytest.approx(2.0)
    w = judge(row, base)
    assert w.verdict == "worse" and w.seed_high < 0 and w.query_high < 0


def test_level_when_only_the_seed_level_excludes_zero():
    v = judge(baseline(), shifted(baseline(), 1.0, e=LARGE_Q, u=SMALL_S))
    assert v.seed_p < 0.05 and v.seed_low > 0
    assert v.query_p > 0.05 and v.query_low < 0 < v.query_high
    assert v.verdict == "level"


def test_level_when_only_the_query_level_excludes_zero():
    v = judge(baseline(), shifted(baseline(), 1.0, e=SMALL_Q, u=LARGE_S))
    assert v.query_p < 0.05 and v.query_low > 0
    assert v.seed_p > 0.05 and v.seed_low < 0 < v.seed_high
    assert v.verdict == "level"


def test_equivalent_when_the_query_interval_lies_within_half_a_point():
    v = judge(baseline(), shifted(baseline(), 0.05, e=SMALL_Q, u=[0.3, -0.3, 0.0]))
    assert -0.5 <= v.query_low < 0 < v.query_high <= 0.5
    assert v.verdict == "equivalent"
    # The same differences with a margin below the interval's half-width are only level.
    assert judge(baseline(), shifted(baseline(), 0.05, e=SMALL_Q, u=[0.3, -0.3, 0.0]), margin=0.1).verdict == "level"


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_significant_levels_of_opposite_sign_are_level(sign):
    base, row = records(baseline()), records(shifted(baseline(), 2.0 * sign))
    for r, b in zip(row, base):  # an aggregate that is not the per-query mean, on the other side of the baseline's
        r["dev_ndcg@10"] = b["dev_ndcg@10"] - sign * (2.0 + 0.1 * r["seed"])
    v = two_level_family({"row": (base, row)}, "dev", "ndcg@10")["row"]
    assert v.seed_p < 0.05 and v.query_p < 0.05 and v.seed_mean * v.query_mean < 0
    assert v.verdict == "level"


def test_two_seed_pairs_are_not_judged():
    v = judge(baseline((0, 1)), shifted(baseline((0, 1)), 2.0))
    assert v.verdict == "not judged" and v.n_seeds == 2 and v.seed_low is None and v.seed_p is None
    assert v.cell() == f"{v.seed_mean:+.2f} / q {v.query_mean:+.2f}"


def test_intervals_and_p_values_match_scipy():
    base, row = baseline(), shifted(baseline(), 1.0, e=LARGE_Q, u=[0.4, -0.3, 0.1])
    v = judge(base, row)
    for d, low, high, p in (
        (diffs(base, row)[0], v.seed_low, v.seed_high, v.seed_p),
        (diffs(base, row)[1], v.query_low, v.query_high, v.query_p),
    ):
        lo, hi = stats.t.interval(0.95, len(d) - 1, loc=np.mean(d), scale=stats.sem(d))
        assert (low, high) == pytest.approx((lo, hi), abs=1e-9)
        assert p == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, abs=1e-12)


def family() -> dict:
    """Three comparisons of one table: one better alone with seed p near 0.03, two level ones."""
    base = baseline()
    rows = {
        "near": shifted(base, 1.0, e=SMALL_Q, u=[-0.3, 0.0, 0.3]),
        "noisy_seeds": shifted(base, 1.0, e=SMALL_Q, u=LARGE_S),
        "noisy_queries": shifted(base, 1.0, e=LARGE_Q, u=[0.4, -0.3, 0.1]),
    }
    return {label: (records(base), records(row)) for label, row in rows.items()}


def test_holm_turns_a_lone_better_into_level_when_the_family_grows():
    comparisons = family()
    alone = two_level_family({"near": comparisons["near"]}, "dev", "ndcg@10")["near"]
    assert alone.verdict == "better" and alone.seed_p < 0.05
    v = two_level_family(comparisons, "dev", "ndcg@10")["near"]
    assert v.seed_p == alone.seed_p < 0.05 < v.seed_p_adj
    assert v.seed_p_adj == pytest.approx(3 * v.seed_p)  # the smallest of 3 seed-level p-values
    assert v.seed_confidence == pytest.approx(1 - 0.05 / 3)
    assert v.seed_low < 0 < alone.seed_low  # the wider interval at Holm's level holds 0
    assert v.verdict == "level"


def test_family_intervals_are_scipys_at_the_holm_level():
    comparisons = family()
    verdicts = two_level_family(comparisons, "dev", "ndcg@10")
    seed_holm = holm({k: v.seed_p for k, v in verdicts.items()})
    query_holm = holm({k: v.query_p for k, v in verdicts.items()})
    for label, v in verdicts.items():
        base, row = (
            {r["seed"]: list(r["per_query"]["dev"]["ndcg@10"].values()) for r in rs} for rs in comparisons[label]
        )
        for d, level, low, high in (
            (diffs(base, row)[0], seed_holm[label][1], v.seed_low, v.seed_high),
            (diffs(base, row)[1], query_holm[label][1], v.query_low, v.query_high),
        ):
            lo, hi = stats.t.interval(1 - level, len(d) - 1, loc=np.mean(d), scale=stats.sem(d))
            assert (low, high) == pytest.approx((lo, hi), abs=1e-9)
    assert {v.query_confidence for v in verdicts.values()} != {0.95}


def test_an_interval_excludes_zero_exactly_when_its_adjusted_p_is_below_alpha():
    comparisons = family()
    comparisons["better"] = (comparisons["near"][0], records(shifted(baseline(), 2.0)))
    for v in two_level_family(comparisons, "dev", "ndcg@10").values():
        assert (v.seed_low > 0 or v.seed_high < 0) == (v.seed_p_adj < 0.05)
        assert (v.query_low > 0 or v.query_high < 0) == (v.query_p_adj < 0.05)


def test_holm_against_a_hand_computation():
    got = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005})
    # ranked d, a, c, b: 4 * 0.005, 3 * 0.01, 2 * 0.03, then max(0.06, 1 * 0.04)
    assert {k: p for k, (p, _) in got.items()} == pytest.approx({"d": 0.02, "a": 0.03, "c": 0.06, "b": 0.06})
    # Holm stops at c (0.03 >= 0.05 / 2): b keeps c's level 0.025, not its own 0.05 (its raw 0.04 is below 0.05)
    assert {k: lvl for k, (_, lvl) in got.items()} == pytest.approx(
        {"d": 0.0125, "a": 0.05 / 3, "c": 0.025, "b": 0.025}
    )
    assert {k: p for k, (p, _) in holm({"x": 0.6, "y": 0.7}).items()} == {"x": 1.0, "y": 1.0}
    assert holm({}) == {}


def test_holm_against_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    ps = [0.001, 0.2, 0.013, 0.04, 0.012, 0.5, 0.03]
    _, adjusted, _, _ = multitest.multipletests(ps, method="holm")
    got = holm(dict(enumerate(ps)))
    assert [got[i][0] for i in range(len(ps))] == pytest.approx(list(adjusted))


def exact_sign_flip(d) -> float:
    """The exact two-sided sign-flip p-value: the share of all 2^n sign vectors at least as extreme."""
    obs = abs(sum(d))
    flips = [abs(sum(s * x for s, x in zip(signs, d))) for signs in itertools.product((-1, 1), repeat=len(d))]
    return sum(f >= obs - 1e-9 for f in flips) / len(flips)


def test_sign_flip_p_value_is_deterministic_and_near_the_exact_one():
    for base, row in ((baseline(), shifted(baseline(), 2.0)), (baseline(), shifted(baseline(), 1.0, e=LARGE_Q))):
        d = diffs(base, row)[1]
        p = sign_flip_p_value(d)
        assert p == sign_flip_p_value(d) and p != sign_flip_p_value(d, seed=1)
        assert p == pytest.approx(exact_sign_flip(d), abs=0.02)
    assert sign_flip_p_value([1.0] * 8) == pytest.approx(2 / 256, abs=0.003)
    # The observed differences count as one of the arrangements: never below 1 / (flips + 1), and
    # differences all 0 are matched by every flip.
    assert sign_flip_p_value([1.0] * 30, flips=1000) == 1 / 1001
    assert sign_flip_p_value([0.0] * 5, flips=1000) == 1.0


def test_the_sign_flip_option_sets_the_query_p_value():
    base, row = baseline(), shifted(baseline(), 1.0, e=LARGE_Q)
    v = judge(base, row, query_test="sign-flip", flips=2000, flip_seed=3)
    assert v.query_test == "sign-flip" and v.query_p == sign_flip_p_value(diffs(base, row)[1], 2000, 3)
    assert v.query_p != judge(base, row).query_p
    with pytest.raises(ArgumentError, match="unknown query test"):
        judge(base, row, query_test="wilcoxon")


def test_mismatched_query_sets_and_missing_per_query_scores_are_refused():
    base = records(baseline())
    row = records(shifted(baseline(), 2.0), qids=[*QIDS[:7], "q99"])
    with pytest.raises(ArgumentError, match="different dev queries"):
        two_level_family({"row": (base, row)}, "dev", "ndcg@10")
    mixed = records(shifted(baseline(), 2.0))
    mixed[2]["per_query"]["dev"]["ndcg@10"]["q99"] = 50.0  # one seed scores a query the others do not
    with pytest.raises(ArgumentError, match="one row score different dev queries"):
        two_level_family({"row": (base, mixed)}, "dev", "ndcg@10")
    with pytest.raises(ArgumentError, match="seed 0 appears twice"):
        two_level_family({"row": (base, [*records(baseline()), records(baseline())[0]])}, "dev", "ndcg@10")
    bare = records(shifted(baseline(), 2.0))
    del bare[1]["per_query"]
    with pytest.raises(ArgumentError, match="seed 1 has no per-query dev ndcg@10"):
        two_level_family({"row": (base, bare)}, "dev", "ndcg@10")
    with pytest.raises(ArgumentError, match="seed 0 has no 'dev_rr@10'"):
        two_level_family({"row": (base, records(baseline()))}, "dev", "rr@10")
    row = records(baseline())
    for r in [*base, *row]:  # the aggregate is there, the per-query scores of that metric are not
        r["dev_rr@10"] = r["dev_ndcg@10"]
    with pytest.raises(ValueError, match="no per-query dev rr@10"):  # an ArgumentError is a ValueError
        two_level_family({"row": (base, row)}, "dev", "rr@10")


def test_cell_and_family_note():
    v = TwoLevelVerdict("better", 3, 300, 1.234, 0.4, 2.06, 1.1, 0.52, 1.68)
    assert v.cell() == "+1.23 [+0.40, +2.06] / q +1.10 [+0.52, +1.68]"
    comparisons = family()
    comparisons["two seeds"] = (records(baseline((0, 1))), records(shifted(baseline((0, 1)), 2.0)))
    note = family_note(two_level_family(comparisons, "dev", "ndcg@10"), "dev", "ndcg@10")
    assert note.startswith("Family: 3 one-change comparisons on dev ndcg@10 (1 not judged")
    assert "Holm-adjusted" in note and "\n" not in note


def test_choice_keeps_the_reference_when_nothing_beats_it():
    runs = {
        "mnrl": records(baseline()),
        "gist": records(shifted(baseline(), 1.0, e=SMALL_Q, u=LARGE_S)),
        "hard": records(shifted(baseline(), 0.05, e=SMALL_Q, u=[0.3, -0.3, 0.0])),
    }
    c = choose_retrieval_row(runs, "mnrl", ["gist", "hard"])
    assert c.row == "mnrl" and c.dev == pytest.approx(statistics.mean(r["dev_ndcg@10"] for r in runs["mnrl"]))
    assert {k: v.verdict for k, v in c.verdicts.items()} == {"gist": "level", "hard": "equivalent"}
    assert "mnrl is kept" in c.why


def test_choice_takes_the_highest_dev_mean_among_rows_better_than_the_reference():
    runs = {
        "mnrl": records(baseline()),
        "a": records(shifted(baseline(), 2.0)),
        "b": records(shifted(baseline(), 3.0)),
        "c": records(shifted(baseline(), 4.0, e=SMALL_Q, u=LARGE_S)),  # the highest mean, but level
    }
    c = choose_retrieval_row(runs, "mnrl", ["a", "b", "c"])
    assert c.verdicts["c"].verdict == "level" and c.row == "b"
    assert c.dev == pytest.approx(statistics.mean(r["dev_ndcg@10"] for r in runs["b"]))
    assert c.why.startswith("b has the highest dev ndcg@10 mean among the 2 candidates better than mnrl")


def test_a_row_better_only_than_its_own_baseline_is_not_chosen():
    mnrl = baseline()
    gist_mined = shifted(mnrl, 0.5, e=SMALL_Q, u=LARGE_S)  # level against mnrl
    mnrl_mined = shifted(gist_mined, -2.0)  # gist+mined is better than its own baseline
    runs = {"mnrl": records(mnrl), "mnrl+mined": records(mnrl_mined), "gist+mined": records(gist_mined)}
    own = two_level_family({"gist+mined": (runs["mnrl+mined"], runs["gist+mined"])}, "dev", "ndcg@10")
    assert own["gist+mined"].verdict == "better"
    dev = {row: {r["seed"]: r["dev_ndcg@10"] for r in recs} for row, recs in runs.items()}
    baseline_of = {"mnrl+mined": "mnrl", "gist+mined": "mnrl+mined"}.get
    assert choose_on_dev(dev, baseline_of, "mnrl", "ndcg@10").row == "gist+mined"  # the own-baseline rule would
    c = choose_retrieval_row(runs, "mnrl", ["mnrl+mined", "gist+mined"])
    assert c.verdicts["gist+mined"].verdict == "level" and c.row == "mnrl"
