"""What every experiment table reports, computed one way: mean ± spread over seeds, differences to a
baseline row paired by seed, the verdict of each row against its baseline, Markdown tables for the
docs to include, CSV files written whole, and the figures' plumbing.

* **spread**: the sample standard deviation (ddof 1) over seeds, 0.0 with fewer than two values; a
  context column beside a verdict, never the rule of one;
* **paired difference** of a row to the baseline: per seed both have, row minus baseline;
* **verdict** (:func:`paired_verdict`): the mean of the paired differences with its 95% Student-t
  interval; "better" / "worse" only when the interval excludes 0, "level" when it holds 0, "not
  judged" below 3 pairs. The baseline of a row is one trained on the same data (a row on mined
  triplets has the baseline on those triplets).

Means and spreads are taken with :mod:`statistics` (exactly rounded), so a table regenerated from the
same records is the same text to the last digit.
"""

from __future__ import annotations

import csv
import io
import math
import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    "write_csv",
    "write_text",
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
        if self.mean is None:
            return "-"
        if self.low is None:
            return f"{self.mean:+.{digits}f}"
        return f"{self.mean:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"


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
    n = f"{min(counts)}" if len(counts) == 1 else f"{min(counts)}-{max(counts)}"
    said = "; ".join(f"**{k}**: {', '.join(g)}" for k, g in groups.items() if g)
    context = (
        f"{baseline}'s seed spread, for context: {spread(base.values()):.{digits}f}"
        if len(base) > 1
        else f"{baseline} has one seed"
    )
    return (
        f"Against {baseline} on the {metric}, paired by seed ({n} pairs; mean difference [95% t-interval]; better or "
        f"worse only when the interval excludes 0, not judged below {MIN_PAIRS} pairs): {said}. {context}."
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
            n = f"{min(counts)}" if len(counts) == 1 else f"{min(counts)}-{max(counts)}"
            body.append([label(row), n, *cells])
    sizes = sorted({len(h) for h in have})
    seeds = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
    body.append([f"*spread of {label(baseline)} ({seeds} seeds)*", "", *(f"{x:.{digits}f}" for x in spreads)])
    return markdown_table(["row", "pairs", *heads], body, "lr" + "r" * len(heads)), spreads


def markdown_table(head: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    """The lines of a Markdown table: ``align`` has one letter a column, ``l`` (``---``) or ``r``
    (``---:``), left for columns it does not reach. An empty cell is written as ``| |``."""

    def line(cells):
        return "|" + "".join(f" {c} |" if c != "" else " |" for c in cells)

    rule = "|" + "".join("---:|" if a == "r" else "---|" for a in align.ljust(len(head), "l"))
    return [line(head), rule, *(line(r) for r in rows)]


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` whole (:func:`qt_hard.files.write_text`): a reader never sees half a file, and a
    full disk is one line that leaves no temporary file."""
    from qt_hard.files import write_text as write_whole

    return write_whole(path, text, "table")


def csv_text(fields: Sequence[str], rows: Iterable[Mapping], lineterminator: str = "\r\n") -> str:
    """A CSV of ``rows`` (their ``fields``, other keys ignored), as text."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, list(fields), extrasaction="ignore", lineterminator=lineterminator)
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def write_csv(path: str | os.PathLike, fields: Sequence[str], rows: Iterable[Mapping], lineterminator: str = "\r\n"):
    """A CSV of ``rows`` (:func:`csv_text`), written whole (:func:`write_text`)."""
    return write_text(path, csv_text(fields, rows, lineterminator))


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
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
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
