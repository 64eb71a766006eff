"""What every experiment table reports, computed one way: mean ± spread over seeds, differences to a
baseline row paired by seed, the verdict of each row against its baseline (one-level and two-level,
with the rules on docs/comparisons.md), Markdown tables for the docs to include and the figures'
plumbing. Means and spreads are taken with :mod:`statistics` (exactly rounded), so a table regenerated
from the same records is the same text to the last digit.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from qt_hard.errors import ArgumentError
from qt_hard.files import csv_text

__all__ = [
    "MIN_PAIRS",
    "Choice",
    "choose_on_dev",
    "commits_note",
    "csv_text",
    "PairedVerdict",
    "paired_verdict",
    "fmt_mean_spread",
    "heatmap",
    "markdown_table",
    "mean_spread",
    "paired_differences",
    "paired_table",
    "plot_differences",
    "pyplot",
    "spread",
    "verdict_sentence",
    "EQUIVALENCE_MARGIN",
    "RetrievalChoice",
    "TwoLevelVerdict",
    "choose_retrieval_row",
    "family_note",
    "holm",
    "pack_per_query",
    "per_query_means",
    "query_scores",
    "sign_flip_p_value",
    "t_p_value",
    "two_level_family",
]


def spread(values: Iterable[float]) -> float:
    """The spread of every comparison: the sample standard deviation (ddof 1) of ``values``; 0.0 for
    fewer than two."""
    vals = [float(v) for v in values]
    if len(vals) < 2:
        return 0.0
    return statistics.stdev(vals)


def mean_spread(values: Iterable[float]) -> tuple[float, float]:
    """(mean, :func:`spread`) of a non-empty sequence of numbers."""
    vals = [float(v) for v in values]
    return statistics.mean(vals), spread(vals)


def fmt_mean_spread(values: Iterable, digits: int = 1) -> str:
    """``"mean ± spread"`` of the values that are numbers (None and "" left out); "-" without any."""
    vals = [float(v) for v in values if v not in (None, "")]
    if not vals:
        return "-"
    m, s = mean_spread(vals)
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def _interval(mean: float, low: float | None, high: float | None, digits: int) -> str:
    """``"+0.26 [-0.27, +0.79]"``, or the mean alone when there is no interval (``low`` None)."""
    if low is None:
        return f"{mean:+.{digits}f}"
    return f"{mean:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def _span(counts: Iterable[int]) -> str:
    """``"3"`` for counts that are all 3, ``"3-5"`` for counts from 3 to 5."""
    low, high = min(counts), max(counts)
    return f"{low}" if low == high else f"{low}-{high}"


def paired_differences(base: Mapping, row: Mapping) -> list[float]:
    """Per seed that both have (in seed order): ``row[seed] - base[seed]``."""
    return [float(row[s]) - float(base[s]) for s in sorted(set(base) & set(row))]


@dataclass(frozen=True)
class PairedVerdict:
    """A row judged against its baseline by the paired differences over seeds (row - baseline, per
    seed both have): their mean, the 95% t-interval of the mean (Student's t with n - 1 degrees of
    freedom; None below 3 pairs), the pair count and the verdict: ``"better"`` / ``"worse"`` when the
    interval lies above / below 0, ``"level"`` when it holds 0, ``"not judged"`` below 3 pairs."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    verdict: str

    def cell(self, digits: int = 2) -> str:
        """``"+0.26 [-0.27, +0.79]"``; the mean alone below 3 pairs; "-" without a pair."""
        return "-" if self.mean is None else _interval(self.mean, self.low, self.high, digits)


MIN_PAIRS = 3


def paired_verdict(base: Mapping, row: Mapping, confidence: float = 0.95) -> PairedVerdict:
    """The verdict of ``row`` ({seed: value}) against ``base`` ({seed: value}) on the seeds both
    have: see :class:`PairedVerdict`. The interval is ``mean ± t_{(1+c)/2, n-1} * sd / sqrt(n)``, sd
    the sample std (ddof 1) of the differences."""
    d = paired_differences(base, row)
    if not d:
        return PairedVerdict(None, None, None, 0, "not judged")
    m = statistics.mean(d)
    if len(d) < MIN_PAIRS:
        return PairedVerdict(m, None, None, len(d), "not judged")
    from scipy.stats import t

    half = float(t.ppf((1 + confidence) / 2, len(d) - 1)) * statistics.stdev(d) / math.sqrt(len(d))
    low, high = m - half, m + half
    verdict = "better" if low > 0 else "worse" if high < 0 else "level"
    return PairedVerdict(m, low, high, len(d), verdict)


@dataclass(frozen=True)
class Choice:
    """A row chosen on dev (:func:`choose_on_dev`): its name, its mean dev metric over seeds, its
    verdict against its baseline on that metric (None for the default row), and the rule's words."""

    row: str
    dev: float
    verdict: PairedVerdict | None
    rule: str

    def sentence(self, label=str, digits: int = 2) -> str:
        """``"Chosen on dev (RULE): ROW (dev mean M; against its baseline on dev +x [a, b], better)."``"""
        said = f"{label(self.row)} (dev mean {self.dev:.{digits}f}"
        if self.verdict is not None:
            said += f"; against its baseline on dev {self.verdict.cell(digits)}, {self.verdict.verdict}"
        return f"Chosen on dev ({self.rule}): {said})."


def choose_on_dev(
    dev: Mapping[str, Mapping], baseline_of: Callable[[str], str | None], default: str, metric: str
) -> Choice:
    """The row a recommendation takes, chosen on dev only: of ``dev`` (row -> seed -> dev metric), the
    row with the highest mean among those **better** than their baseline (``baseline_of(row)``, on
    the same data) on that metric by :func:`paired_verdict`; ``default`` (the baseline a reader would
    use anyway) where no row is. Test scores play no part."""
    better = {}
    for row, vals in dev.items():
        base = baseline_of(row)
        if base is None or base not in dev:
            continue
        v = paired_verdict(dev[base], vals)
        if v.verdict == "better":
            better[row] = (statistics.mean(vals.values()), v)
    rule = (
        f"the highest mean {metric} over seeds among the rows better than their baseline on it (paired 95% "
        f"interval above 0); {default} where no row is"
    )
    if not better:
        return Choice(default, statistics.mean(dev[default].values()), None, rule)
    row = max(better, key=lambda r: better[r][0])
    return Choice(row, better[row][0], better[row][1], rule)


def commits_note(records: Iterable[Mapping]) -> str:
    """The line under a table whose ``records`` ran on more than one commit of the code: how many and
    which (a ``+dirty`` commit, with uncommitted code changes, counts as its own); "" for one."""
    commits = sorted({str(r["commit"]) for r in records if r.get("commit")})
    if len(commits) < 2:
        return ""
    return (
        f"The records span {len(commits)} commits of the code ({', '.join(commits)}); each record names its own, "
        "and a row's numbers may come from different code."
    )


def verdict_sentence(
    baseline: str, base: Mapping, rows: Mapping[str, Mapping], metric: str, digits: int = 2, label=str
) -> str:
    """The sentence under a table that judges ``rows`` (name -> {seed: value}) against ``baseline``'s
    values ``base`` ({seed: value}) on ``metric``, by :func:`paired_verdict`: the rows grouped by
    verdict, each with its mean difference and 95% interval, and the baseline's spread as context.
    Rows without a seed in common with the baseline are left out."""
    groups: dict[str, list[str]] = {"better": [], "level": [], "worse": [], "not judged": []}
    counts = set()
    for name, vals in rows.items():
        v = paired_verdict(base, vals)
        if v.n == 0:
            continue
        counts.add(v.n)
        groups[v.verdict].append(f"{label(name)} {v.cell(digits)}" + (f" ({v.n} paired)" if v.n < MIN_PAIRS else ""))
    if not counts:
        return f"No row shares a seed with {baseline} yet."
    said = "; ".join(f"**{k}**: {', '.join(g)}" for k, g in groups.items() if g)
    context = (
        f"{baseline}'s seed spread, for context: {spread(base.values()):.{digits}f}"
        if len(base) > 1
        else f"{baseline} has one seed"
    )
    return (
        f"Against {baseline} on the {metric}, paired by seed ({_span(counts)} pairs; mean difference [95% t-interval]; "
        f"better or worse only when the interval excludes 0, not judged below {MIN_PAIRS} pairs): {said}. {context}."
    )


def paired_table(
    baseline: str, runs: Mapping[str, Mapping], heads: Sequence[str], label=str, digits: int = 2
) -> tuple[list[str], list[float]]:
    """Each row's difference to ``baseline``, paired by seed, per column: ``runs`` is row -> seed ->
    a value per column of ``heads`` (None where that seed has none). A cell is the mean of the
    per-seed differences over the seeds both have in that column with its 95% t-interval
    (:func:`paired_verdict`; the mean alone below 3 pairs), with * where the interval excludes 0;
    "-" without a shared seed. The last line gives the baseline's spread per column, for context.
    Returns the table's lines and the baseline's spreads."""
    base = runs[baseline]
    cols = range(len(heads))
    have = [{s: v[i] for s, v in base.items() if v[i] is not None} for i in cols]
    spreads = [spread(h.values()) for h in have]
    body = []
    for row, vals in runs.items():
        if row == baseline:
            continue
        cells, counts = [], set()
        for i in cols:
            v = paired_verdict(have[i], {s: x[i] for s, x in vals.items() if x[i] is not None})
            if v.n:
                counts.add(v.n)
            cells.append(v.cell(digits) + ("*" if v.verdict in ("better", "worse") else ""))
        if counts:
            body.append([label(row), _span(counts), *cells])
    seeds = _span([len(h) for h in have])
    body.append([f"*spread of {label(baseline)} ({seeds} seeds)*", "", *(f"{x:.{digits}f}" for x in spreads)])
    return markdown_table(["row", "pairs", *heads], body, "lr" + "r" * len(heads)), spreads


def markdown_table(head: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    """The lines of a Markdown table: ``align`` has one letter a column, ``l`` (``---``) or ``r``
    (``---:``), left for columns it does not reach. An empty cell is written as ``| |``."""

    def line(cells):
        return "|" + "".join(f" {c} |" if c != "" else " |" for c in cells)

    rule = "|" + "".join("---:|" if a == "r" else "---|" for a in align.ljust(len(head), "l"))
    return [line(head), rule, *(line(r) for r in rows)]


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_differences(diffs: Mapping[str, tuple], xs: Sequence[str], ylabel: str, path, marks: Mapping | None = None):
    """Grouped bars: per row ``label -> (mean differences per x, error bar per x)``; ``marks``
    (label -> a value per x, e.g. the paper's differences) drawn as black crosses."""
    import numpy as np

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.5))
    x = np.arange(len(xs))
    w = 0.8 / max(len(diffs), 1)
    for i, (label, (d, err)) in enumerate(diffs.items()):
        ax.bar(x + i * w, d, w, yerr=err, capsize=2, label=label)
        if marks and label in marks:
            ax.scatter(x + i * w, marks[label], marker="x", color="k", zorder=3, label="paper" if i == 0 else None)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x + w * (len(diffs) - 1) / 2, list(xs))
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def heatmap(fig, ax, raw, norm, xs, ys, xlabel, ylabel, title, dark=frozenset()):
    """Normalized values as colours, raw values as text (white on dark cells and on the ``dark``
    (row, column) markers), ticks and colour bar; NaN cells stay empty."""
    import numpy as np

    im = ax.imshow(norm, cmap="viridis", aspect="auto", origin="lower")
    for i in range(len(ys)):
        for j in range(len(xs)):
            if not np.isnan(raw[i, j]):
                color = "white" if (i, j) in dark or norm[i, j] < 0.99 else "black"
                ax.text(j, i, f"{raw[i, j]:.1f}", ha="center", va="center", fontsize=6, color=color)
    ax.set_xticks(range(len(xs)), [str(x) for x in xs], fontsize=7)
    ax.set_yticks(range(len(ys)), [str(y) for y in ys], fontsize=7)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.set_title(title, fontsize=8)
    fig.colorbar(im, ax=ax, shrink=0.8)


def append_json_line(path, row: dict) -> str:
    """``row`` as one JSON line, appended to ``path`` (its folder made) when ``path`` is given; the line."""
    import json

    line = json.dumps(row)
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    return line


# Two-level verdicts for retrieval rows (the rule: docs/comparisons.md).

EQUIVALENCE_MARGIN = 0.5
SIGN_FLIPS = 10_000
QUERY_TESTS = ("t", "sign-flip")


def _seed_values(records: Sequence[Mapping], key: str) -> dict:
    """{seed: record[key]} of a row's records; a seed twice or a record without ``key`` is refused."""
    out = {}
    for r in records:
        if "seed" not in r:
            raise ArgumentError("a record has no 'seed'; pairing by seed needs one in each")
        if key not in r:
            raise ArgumentError(f"the record of seed {r['seed']!r} has no {key!r}")
        if r["seed"] in out:
            raise ArgumentError(f"seed {r['seed']!r} appears twice in one row's records; pairing by seed needs one")
        out[r["seed"]] = float(r[key])
    return out


# Decimals a packed per-query score keeps: scores are x100, so 1e-4 is a millionth of the metric, far below
# the 0.01 every table prints; the full float's other ten digits were half of each record's bytes.
PER_QUERY_DECIMALS = 4


def pack_per_query(per_query: Mapping[str, Mapping[str, Mapping[str, float]]], decimals: int = PER_QUERY_DECIMALS):
    """``{split: {metric: {query: score}}}`` as a record keeps it: per split, the query ids once under
    ``"queries"`` (sorted) and each metric's scores as a list in that order, rounded to ``decimals``.
    Repeating each id under every metric made the ids most of a record's bytes. An already packed
    split is kept as it is; a metric that scores other queries than the split's first is refused."""
    out = {}
    for split, metrics in per_query.items():
        if "queries" in metrics:
            out[split] = dict(metrics)
            continue
        qids = sorted(next(iter(metrics.values()), {}))
        packed: dict = {"queries": qids}
        for metric, scores in metrics.items():
            if set(scores) != set(qids):
                raise ArgumentError(f"per-query {split} {metric} scores other queries than the split's others")
            packed[metric] = [round(float(scores[q]), decimals) for q in qids]
        out[split] = packed
    return out


def query_scores(record: Mapping, split: str, metric: str) -> dict[str, float] | None:
    """``{query: score}`` of ``record["per_query"][split][metric]`` in either form a ledger holds: packed
    (:func:`pack_per_query`) or the evaluator's own mapping; None when the record has none."""
    got = (record.get("per_query") or {}).get(split, {})
    if "queries" not in got:
        return got.get(metric) or None
    scores = got.get(metric)
    if scores is None:
        return None
    if len(scores) != len(got["queries"]):
        raise ArgumentError(
            f"the record of seed {record.get('seed')!r} has {len(scores)} per-query {split} {metric} scores "
            f"for {len(got['queries'])} queries"
        )
    return dict(zip(got["queries"], scores))


def per_query_means(records: Sequence[Mapping], seeds: Iterable, split: str, metric: str) -> dict[str, float]:
    """A row's per-query score on ``split`` and ``metric``: for each query, the mean over ``seeds`` of
    its score in ``record["per_query"]`` (:func:`query_scores`: packed or not). Every record of those seeds
    must hold per-query scores for the same queries; otherwise an :class:`~qt_hard.errors.ArgumentError`
    says which."""
    seeds = set(seeds)
    scores, qids = [], None
    for r in records:
        if r["seed"] not in seeds:
            continue
        got = query_scores(r, split, metric)
        if not got:
            raise ArgumentError(f"the record of seed {r['seed']!r} has no per-query {split} {metric} scores")
        if qids is not None and set(got) != qids:
            raise ArgumentError(f"the records of one row score different {split} queries (seed {r['seed']!r})")
        qids = set(got)
        scores.append(got)
    return {q: statistics.mean(float(s[q]) for s in scores) for q in sorted(qids or ())}


def t_p_value(diffs: Sequence[float]) -> float:
    """Two-sided p-value of Student's t test that the mean of ``diffs`` is 0:
    ``2 * P(T_{n-1} >= |mean| / (sd / sqrt(n)))``, sd the sample std (ddof 1). Differences without
    spread give 1.0 when they are all 0 and 0.0 otherwise (the t statistic is 0 or infinite)."""
    m, sd = statistics.mean(diffs), statistics.stdev(diffs)
    if sd == 0:
        return 1.0 if m == 0 else 0.0
    from scipy.stats import t

    return float(2 * t.sf(abs(m) / (sd / math.sqrt(len(diffs))), len(diffs) - 1))


def sign_flip_p_value(diffs: Sequence[float], flips: int = SIGN_FLIPS, seed: int = 0) -> float:
    """Two-sided sign-flip randomization p-value that the paired differences ``diffs`` are centred on 0:
    ``(1 + #{k : |sum(s_k * d)| >= |sum(d)|}) / (1 + flips)``, each ``s_k`` a vector of independent
    random signs drawn by ``numpy.random.default_rng(seed)`` (the same p for the same arguments)."""
    import numpy as np

    d = np.asarray(diffs, dtype=float)
    rng = np.random.default_rng(seed)
    observed = abs(float(d.sum()))
    # A flip whose sum equals the observed one in exact arithmetic may differ in the last bits when
    # summed in another order; it must count as at least as extreme.
    tol = 1e-9 * max(1.0, float(np.abs(d).sum()))
    hits = 0
    for start in range(0, flips, 1000):  # blocks of 1000 flips keep memory at 1000 x n
        signs = rng.choice((-1.0, 1.0), size=(min(1000, flips - start), d.size))
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
    return (1 + hits) / (1 + flips)


def holm(pvalues: Mapping, alpha: float = 0.05) -> dict:
    """Holm's step-down adjustment of a family of ``m`` p-values: ``{key: (adjusted p, level)}``.

    Ranked by p (ties in the order given), the i-th smallest gets the adjusted p-value
    ``min(1, max_{j <= i} (m - j + 1) * p_(j))`` (the running maximum keeps them monotone in rank)
    and the level ``alpha / (m - i + 1)`` at which Holm's step i tests it. The procedure stops at the
    first rank r whose p is not below its level; every comparison ranked after r keeps r's level
    ``alpha / (m - r + 1)`` instead of its own looser one. So an interval at confidence ``1 - level``
    excludes 0 exactly when the adjusted p (of the same t test) is below ``alpha``."""
    order = sorted(pvalues, key=lambda k: pvalues[k])
    m = len(order)
    out, running, stopped = {}, 0.0, None
    for i, key in enumerate(order, start=1):
        p = float(pvalues[key])
        running = max(running, min(1.0, (m - i + 1) * p))
        if stopped is None and p >= alpha / (m - i + 1):
            stopped = i
        out[key] = (running, alpha / (m - min(i, stopped or i) + 1))
    return out


@dataclass(frozen=True)
class TwoLevelVerdict:
    """A row against its baseline on one split and metric (row - baseline), judged over the ``n_seeds``
    shared seeds and over the ``n_queries`` queries; the two levels and the verdict rule are on
    docs/comparisons.md. ``*_p`` are the raw p-values (the query level's by ``query_test``: ``"t"``,
    :func:`t_p_value`; ``"sign-flip"``, :func:`sign_flip_p_value`), ``*_p_adj`` Holm's (:func:`holm`,
    across the family, each level on its own), each interval is at ``*_confidence`` = 1 - its Holm
    level; "not judged" (below 3 seed pairs) has the means only, no interval nor p."""

    verdict: str
    n_seeds: int
    n_queries: int
    seed_mean: float | None = None
    seed_low: float | None = None
    seed_high: float | None = None
    query_mean: float | None = None
    query_low: float | None = None
    query_high: float | None = None
    seed_p: float | None = None
    query_p: float | None = None
    seed_p_adj: float | None = None
    query_p_adj: float | None = None
    seed_confidence: float | None = None
    query_confidence: float | None = None
    query_test: str = "t"

    @property
    def n(self) -> int:  # the seed pairs, as :attr:`PairedVerdict.n`
        return self.n_seeds

    def cell(self, digits: int = 2) -> str:
        """``"+1.23 [+0.40, +2.06] / q +1.10 [+0.52, +1.68]"`` (seed level / query level); the means
        alone when not judged; "-" without a shared seed."""
        if self.seed_mean is None:
            return "-"
        return (
            f"{_interval(self.seed_mean, self.seed_low, self.seed_high, digits)} / q "
            f"{_interval(self.query_mean, self.query_low, self.query_high, digits)}"
        )


def _paired_levels(base_records, row_records, split, metric, query_test, flips, flip_seed) -> dict:
    """The inputs of both levels for one comparison: seed -> aggregate value of baseline and row,
    query -> mean over shared seeds of each, and the raw p-value of each level (None below 3 seed
    pairs). Query sets that differ between baseline and row are refused."""
    key = f"{split}_{metric}"
    base, row = _seed_values(base_records, key), _seed_values(row_records, key)
    shared = set(base) & set(row)
    out = {"base": base, "row": row, "bq": {}, "rq": {}, "seed_p": None, "query_p": None}
    if not shared:
        return out
    bq, rq = (per_query_means(r, shared, split, metric) for r in (base_records, row_records))
    if set(bq) != set(rq):
        only = sorted(set(bq) ^ set(rq))
        raise ArgumentError(
            f"baseline and row score different {split} queries ({len(bq)} and {len(rq)}; "
            f"{len(only)} in one only, e.g. {only[:3]}): the query level pairs the same queries"
        )
    if len(bq) < 2:
        raise ArgumentError(f"the query level needs at least 2 {split} queries, the records have {len(bq)}")
    out.update(bq=bq, rq=rq)
    if len(shared) >= MIN_PAIRS:
        d = paired_differences(bq, rq)
        out["seed_p"] = t_p_value(paired_differences(base, row))
        out["query_p"] = t_p_value(d) if query_test == "t" else sign_flip_p_value(d, flips, flip_seed)
    return out


def _two_level(x: Mapping, seed_holm, query_holm, alpha: float, margin: float, query_test: str) -> TwoLevelVerdict:
    """The :class:`TwoLevelVerdict` of one prepared comparison (:func:`_paired_levels`) given its
    (adjusted p, level) at each level from :func:`holm`, or None when it is not judged."""
    if seed_holm is None:
        s, q = paired_verdict(x["base"], x["row"]), paired_verdict(x["bq"], x["rq"])
        return TwoLevelVerdict("not judged", s.n, len(x["bq"]), s.mean, query_mean=q.mean, query_test=query_test)
    s = paired_verdict(x["base"], x["row"], 1 - seed_holm[1])
    q = paired_verdict(x["bq"], x["rq"], 1 - query_holm[1])
    both = seed_holm[0] < alpha and query_holm[0] < alpha
    if both and s.mean > 0 and q.mean > 0:
        verdict = "better"
    elif both and s.mean < 0 and q.mean < 0:
        verdict = "worse"
    elif -margin <= q.low and q.high <= margin:
        verdict = "equivalent"
    else:
        verdict = "level"
    return TwoLevelVerdict(
        verdict, s.n, len(x["bq"]), s.mean, s.low, s.high, q.mean, q.low, q.high,
        seed_p=x["seed_p"], query_p=x["query_p"], seed_p_adj=seed_holm[0], query_p_adj=query_holm[0],
        seed_confidence=1 - seed_holm[1], query_confidence=1 - query_holm[1], query_test=query_test,
    )  # fmt: skip


def two_level_family(
    comparisons: Mapping[str, tuple[Sequence[Mapping], Sequence[Mapping]]],
    split: str,
    metric: str,
    alpha: float = 0.05,
    query_test: str = "t",
    flips: int = SIGN_FLIPS,
    flip_seed: int = 0,
    margin: float = EQUIVALENCE_MARGIN,
) -> dict[str, TwoLevelVerdict]:
    """``{label: TwoLevelVerdict}`` for a family of one-change comparisons ``{label: (baseline records,
    row records)}`` on ``split`` and ``metric``. A record is a dict with ``seed``,
    ``f"{split}_{metric}"`` and ``per_query[split][metric]`` = {qid: score}. Holm's adjustment
    (:func:`holm`) runs across the judged comparisons (3 seed pairs or more), separately for the
    seed-level and the query-level p-values; see :class:`TwoLevelVerdict` for the verdict."""
    if query_test not in QUERY_TESTS:
        raise ArgumentError(f"unknown query test {query_test!r}; one of {', '.join(QUERY_TESTS)}")
    prepared = {
        label: _paired_levels(base, row, split, metric, query_test, flips, flip_seed)
        for label, (base, row) in comparisons.items()
    }
    judged = [label for label, x in prepared.items() if x["seed_p"] is not None]
    seed_holm = holm({label: prepared[label]["seed_p"] for label in judged}, alpha)
    query_holm = holm({label: prepared[label]["query_p"] for label in judged}, alpha)
    return {
        label: _two_level(x, seed_holm.get(label), query_holm.get(label), alpha, margin, query_test)
        for label, x in prepared.items()
    }


def family_note(
    verdicts: Mapping[str, TwoLevelVerdict],
    split: str,
    metric: str,
    alpha: float = 0.05,
    margin: float = EQUIVALENCE_MARGIN,
) -> str:
    """The line under a table of :func:`two_level_family` verdicts naming its family: how many
    comparisons, the split and metric, Holm-adjusted at each level, and the verdict rule."""
    judged = [v for v in verdicts.values() if v.verdict != "not judged"]
    left = len(verdicts) - len(judged)
    tests = {v.query_test for v in judged} or {"t"}
    left_out = f" ({left} not judged, below {MIN_PAIRS} seed pairs, left out)" if left else ""
    return (
        f"Family: {len(judged)} one-change comparison{'' if len(judged) == 1 else 's'} on {split} {metric}{left_out}, "
        f"Holm-adjusted at each level (seeds: paired t; queries: paired {'/'.join(sorted(tests))}); each interval at "
        f"its comparison's Holm level; better or worse only when both adjusted p < {alpha:g} with the same sign, "
        f"equivalent when the query interval lies within ±{margin:g}."
    )


@dataclass(frozen=True)
class RetrievalChoice:
    """The row a retrieval recommendation takes (:func:`choose_retrieval_row`): its name, its mean dev
    metric over the seeds it shares with the reference (all the reference's seeds when it is the
    reference), the sentence that says why, and the verdicts of the candidates against the reference."""

    row: str
    dev: float
    why: str
    verdicts: dict[str, TwoLevelVerdict]


def choose_retrieval_row(
    records: Mapping[str, Sequence[Mapping]],
    reference: str,
    candidates: Sequence[str],
    metric: str = "ndcg@10",
    alpha: float = 0.05,
    query_test: str = "t",
) -> RetrievalChoice:
    """The row chosen on dev: of ``candidates`` (names in ``records``, row -> its records, see
    :func:`two_level_family`), the one with the highest mean ``dev_{metric}`` over the seeds it shares
    with ``reference`` among those **better** than the reference itself at both levels, Holm over the
    candidates' comparisons with the reference; ``reference`` where none is. A row better than its
    own baseline (on other data) but not than the reference is not chosen. Test scores play no part."""
    missing = [r for r in (reference, *candidates) if r not in records]
    if missing:
        raise ArgumentError(f"no records for {', '.join(missing)}")
    rows = [r for r in candidates if r != reference]
    verdicts = two_level_family({r: (records[reference], records[r]) for r in rows}, "dev", metric, alpha, query_test)
    ref = _seed_values(records[reference], f"dev_{metric}")

    def dev_mean(row: str) -> float:
        vals = _seed_values(records[row], f"dev_{metric}")
        return statistics.mean(vals[s] for s in sorted(set(vals) & set(ref)))

    better = [r for r in rows if verdicts[r].verdict == "better"]
    family = f"Holm over {sum(v.verdict != 'not judged' for v in verdicts.values())} judged candidate(s) vs {reference}"
    if not better:
        why = f"No candidate is better than {reference} on dev {metric} at both levels ({family}); {reference} is kept."
        return RetrievalChoice(reference, statistics.mean(ref.values()), why, verdicts)
    row = max(better, key=dev_mean)
    why = (
        f"{row} has the highest dev {metric} mean among the {len(better)} candidates better than {reference} at "
        f"both levels ({family}): {verdicts[row].cell()}."
    )
    return RetrievalChoice(row, dev_mean(row), why, verdicts)
