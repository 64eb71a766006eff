"""qt-table's namesake protocol (``namesake_table.md``): the six SentEval tasks, STS12-16 and the
held-out next-sentence measures of each row, and their paired differences to uniform by seed."""

from __future__ import annotations

import statistics
from pathlib import Path

from qt_hard.evaluation.datasets import TASKS
from qt_hard.experiments import report
from qt_hard.experiments.grid import GridError

STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
NAMESAKE_COLUMNS = ("six-task mean", "STS12-16", "held-out top-1", "held-out loss")


def held_out_range(exclude_books) -> tuple[int, int]:
    """(first, last) of the books a config leaves out of training (``data.exclude_books``, which must be
    a run of consecutive books): the held-out books ``first``..``last - 1``; GridError otherwise."""
    books = sorted(exclude_books or [])
    if not books or books != list(range(books[0], books[-1] + 1)):
        raise GridError(
            f"--protocol namesake: the held-out books are the config's data.exclude_books, which must be "
            f"consecutive books; got {exclude_books}"
        )
    return books[0], books[-1] + 1


def namesake(enc, kfold, data, cache=None, run=None) -> dict:
    """Two readouts without a classifier (``kfold`` plays no part): STS12-16, Spearman x100 of the
    cosine, the mean over each year's sets, then over the five years
    (``qt_hard.evaluation.similarity.evaluate_sts``); and the held-out next-sentence top-1 and uniform
    loss (``qt_hard.evaluation.heldout.HeldOut``) on the books the run's config leaves out."""
    from qt_hard.evaluation.heldout import HeldOut
    from qt_hard.evaluation.similarity import evaluate_sts, load_sts
    from qt_hard.training.config import load_config

    first, last = held_out_range(load_config(Path(run) / "config.yaml", check_pipeline=False).data.exclude_books)
    sts = {year: round(evaluate_sts(load_sts(year, data), cache)["spearman"], 2) for year in STS_YEARS}
    rec = {"sts_spearman": sts, "sts12_16": round(statistics.mean(sts.values()), 2)}
    rec.update({f"heldout_{k}": v for k, v in HeldOut(first, last).score(enc).items()})
    return {**rec, "held_out_books": [first, last]}


def namesake_runs(records: list[dict]) -> dict[str, dict[int, list[float | None]]]:
    """row -> seed -> the four columns of ``NAMESAKE_COLUMNS`` (None where a readout is missing): the
    six-task mean of the senteval records, the namesake records' readouts."""
    six = {
        (r["row"], r["seed"]): statistics.mean(r["acc"][t] for t in TASKS)
        for r in records
        if r.get("protocol") == "senteval" and "acc" in r
    }
    scores = {(r["row"], r["seed"]): r for r in records if r.get("protocol") == "namesake"}
    runs: dict[str, dict[int, list]] = {}
    for key in sorted(set(six) | set(scores)):
        s = scores.get(key, {})
        runs.setdefault(key[0], {})[key[1]] = [
            six.get(key),
            s.get("sts12_16"),
            s.get("heldout_next_top1"),
            s.get("heldout_uniform_loss"),
        ]
    return runs


def _paired_cells(seeds: dict, base: dict, digits: tuple) -> tuple[list[str], set[int]]:
    """One row's difference to the baseline per column, paired by seed (:func:`.report.paired_verdict`:
    the mean, its 95% t-interval from 3 pairs on, and the verdict), and the pair counts."""
    cells, counts = [], set()
    for i, d in enumerate(digits):
        col = {s: v[i] for s, v in seeds.items() if v[i] is not None}
        v = report.paired_verdict({s: b[i] for s, b in base.items() if b[i] is not None}, col)
        counts.add(v.n)
        cells.append("-" if v.mean is None else f"{v.cell(d)} {v.verdict}")
    return cells, counts


def namesake_table(runs: dict, baseline: str) -> tuple[str, str]:
    """The Markdown of the two tables (per row the mean ± sample std over seeds of each column; each
    row's difference to ``baseline`` paired by seed, with its 95% t-interval) and a one-line headline."""
    digits = (2, 2, 3, 3)
    body = []
    for row, seeds in runs.items():
        cells = []
        for i, d in enumerate(digits):
            have = [v[i] for v in seeds.values() if v[i] is not None]
            cells.append(report.fmt_mean_spread(have, d) if len(have) > 1 else (f"{have[0]:.{d}f}" if have else "-"))
        body.append([row, str(len(seeds)), *cells])
    first = report.markdown_table(["row", "seeds", *NAMESAKE_COLUMNS], body, "lr" + "r" * len(NAMESAKE_COLUMNS))
    diffs_body, heads = [], []
    for row, seeds in runs.items():
        if row == baseline:
            continue
        cells, counts = _paired_cells(seeds, runs.get(baseline, {}), digits)
        n = f"{min(counts)}" if len(counts) == 1 else f"{min(counts)}-{max(counts)}"
        diffs_body.append([row, n, *cells])
        if cells[0] != "-":
            heads.append(f"{row} {cells[0]}")
    heads_row = ["row", "shared seeds", *NAMESAKE_COLUMNS]
    second = report.markdown_table(heads_row, diffs_body, "lr" + "r" * len(NAMESAKE_COLUMNS))
    text = "\n".join(
        [
            "Mean ± sample std (ddof 1) over seeds; six-task mean: SentEval protocol, test accuracy (%); STS12-16: "
            "Spearman x100 of the cosine; held-out: next-sentence top-1 and uniform loss on the books training "
            "leaves out.",
            "",
            *first,
            "",
            f"Difference to {baseline}, paired by seed: mean, in brackets its 95% t-interval (n - 1 degrees of "
            "freedom over the shared seeds, from 3 pairs on), and the verdict (better or worse where the interval "
            "excludes 0; not judged below 3 pairs).",
            "",
            *second,
        ]
    )
    headline = f"six-task mean difference to {baseline}: " + ("; ".join(heads) if heads else "no paired row")
    return text, headline


def report_namesake(records: list[dict], protocol: str, paper: dict) -> dict[str, str]:
    """``namesake_table.md`` (:func:`namesake_table` against uniform); its headline is logged."""
    import logging

    text, headline = namesake_table(namesake_runs(records), "uniform")
    logging.getLogger(__name__).info(headline)
    return {"namesake_table.md": text + "\n"}
