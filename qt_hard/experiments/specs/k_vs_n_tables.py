"""The k-versus-N results (:mod:`.k_vs_n`): the ledger ``results.jsonl`` of ``--out``, the CSV and
``results.diag.jsonl`` derived from it beside it (:func:`results_files`), and the summary, figures and
diagnostics read from the records alone."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np

from qt_hard.errors import ArgumentError
from qt_hard.experiments import report

from .k_vs_n_grid import Point, Grid, SHUFFLED, data_settings


# --------------------------------------------------------------------------------------------
# results: the ledger, and the CSV and diagnostics derived from it

# What must match between an uninterrupted and a resumed grid (wall time and commit aside).
METRICS = ["mean_acc", "linear_acc", "linear_best_epoch", "final_loss", "steps"]
KEY = ("cell_id",)
# The CSV columns of a cell's point (N, k, B, collision_free, seed) and of the grid's data and
# train settings (the other settings are not in the CSV).
POINT_COLUMNS = tuple(f.name for f in fields(Point))
DATA_COLUMNS = {"data_kind": "kind", "min_count": "min_count", "split_seed": "split_seed", "articles": "articles"}
TRAIN_COLUMNS = ("dim", "temperature", "lr", "grad_clip", "epochs", "linear_epochs", "optimizer")
COLUMNS = [
    "cell_id",
    *POINT_COLUMNS,
    *TRAIN_COLUMNS,
    *DATA_COLUMNS,
    *METRICS,
    "vocab_size",
    "n_train",
    "n_test",
    "train_s",
    "eval_s",
    "wall_s",
    "sentences_per_s",
    "threads",
    "device",
    "host",
    "git_commit",
    "finished_at",
]
# The fields of a diagnostics line that come from its cell's record rather than its diagnostics.
DIAG_CELL = ("cell_id", *POINT_COLUMNS, "mean_acc")


# The tables written beside the ledger (:func:`results_files`).
TABLE_NAMES = ("results.csv", "results.diag.jsonl")


def setup_of(grid: Grid) -> dict:
    """What every cell of a results file shares: the grid's data and train settings (after the
    command line's overrides), flat, so that a mismatch names the setting. Seeds and blocks are
    not part of it: a grid grown by a seed or a block goes on in the same file."""
    return {
        **{f"data.{k}": v for k, v in data_settings(grid.data).items()},
        **{f"train.{k}": v for k, v in asdict(grid.train).items()},
    }


def _diag_line(record: dict) -> dict:
    """A record's line of ``results.diag.jsonl``: its cell and mean accuracy, then its diagnostics."""
    return {**{k: record[k] for k in DIAG_CELL}, **record["diagnostics"]}


def results_files(records: list[dict]) -> dict[str, str]:
    """From the records alone: ``results.csv`` (``COLUMNS``, one row per finished cell, its last record)
    and, when any record has them, the diagnostics lines ``results.diag.jsonl`` (:data:`TABLE_NAMES`)."""
    csv_name, diag_name = TABLE_NAMES
    files = {csv_name: report.csv_text(COLUMNS, records)}
    diag = [json.dumps(_diag_line(r), sort_keys=True) + "\n" for r in records if "diagnostics" in r]
    if diag:
        files[diag_name] = "".join(diag)
    return files


def record_of(grid: Grid, cell: Point, cid: str, metrics: dict, wall: float, device, threads: int, commit: str) -> dict:
    """A finished cell's record: ``COLUMNS`` (k None for all candidates) and ``diagnostics``."""
    return {
        "cell_id": cid,
        **asdict(cell),
        **{c: getattr(grid.data, n) for c, n in DATA_COLUMNS.items()},
        **{c: getattr(grid.train, c) for c in TRAIN_COLUMNS},
        **metrics,
        "wall_s": round(wall, 3),
        "threads": threads,
        "device": str(device),
        "host": socket.gethostname(),
        "git_commit": commit,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


# --------------------------------------------------------------------------------------------
# plots (from the results alone)


def _mean_by(rows, keys, metric):
    """{key tuple: (mean, spread, n)} of a metric over seeds; the spread is the report module's (the
    sample std, ddof 1), as on the pages; 0 for one seed."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(float(r[metric]))
    return {k: (*report.mean_spread(v), len(v)) for k, v in groups.items()}


def _kval(k, B):
    return 2 * (B - 1) if k is None else k


def _main_B(rows):
    Bs = [r["B"] for r in rows if r["collision_free"] is False]
    if 1000 in Bs:
        return 1000
    return max(set(Bs), key=Bs.count)


def _means(rows, B0, metric):
    """A metric's seed means (:func:`_mean_by`), each k as its number of candidates (:func:`_kval`):
    ``plain`` {N: {B: {k: (mean, spread, n)}}} of the cells with collisions, and ``at_b0``
    {N: {collision mode: {k: (mean, spread, n)}}} of the cells at B0."""
    plain: dict = {}
    at_b0: dict = {}
    for (N, B, k, cf), v in _mean_by(rows, ["N", "B", "k", "collision_free"], metric).items():
        if cf is False:
            plain.setdefault(N, {}).setdefault(B, {})[_kval(k, B)] = v
        if B == B0:
            at_b0.setdefault(N, {}).setdefault(cf, {})[_kval(k, B)] = v
    return plain, at_b0


def _matrix(table: dict, ys: list, xs: list):
    """The means of ``table`` ({y: {x: (mean, ...)}}) as a len(ys) x len(xs) array, NaN where none."""
    raw = np.full((len(ys), len(xs)), np.nan)
    for y, row in table.items():
        for x, v in row.items():
            raw[ys.index(y), xs.index(x)] = v[0]
    return raw


def summarize(rows: list[dict]) -> dict:
    """The numbers behind the three findings, per metric."""
    B0 = _main_B(rows)
    out = {"B": B0}
    for metric in ("mean_acc", "linear_acc"):
        plain, at_b0 = _means(rows, B0, metric)
        best = {}
        for N in sorted(n for n in plain if B0 in plain[n]):
            row = plain[N][B0]
            kb = max(row, key=lambda k: row[k][0])
            near = [k for k in row if row[k][0] >= 0.995 * row[kb][0]]
            best[N] = {
                "best_k": kb,
                "acc": round(row[kb][0], 2),
                "std": round(row[kb][1], 2),
                "k_range_0995": [min(near), max(near)],
                "acc_by_k": {k: round(row[k][0], 2) for k in sorted(row)},
            }
        m = {"best_k_by_N": best, "b_at_fixed_k": {}}
        for N, by_b in sorted(plain.items()):
            if len(by_b) >= 2:
                common = sorted(set.intersection(*(set(row) for row in by_b.values())))
                m["b_at_fixed_k"][N] = {
                    f"k={k}": {f"B={b}": round(by_b[b][k][0], 2) for b in sorted(by_b)} for k in common
                }
        for which, key in ((True, "collision_free_gain"), (SHUFFLED, "shuffled_control_gain")):
            gain = {}
            for N, modes in at_b0.items():
                for k, v in modes.get(which, {}).items():
                    if k in modes.get(False, {}):
                        gain.setdefault(N, {})[k] = round(v[0] - modes[False][k][0], 2)
            if gain:
                m[key] = {N: dict(sorted(g.items())) for N, g in sorted(gain.items())}
        out[metric] = m
    out["cells"] = len(rows)
    out["total_cell_hours"] = round(sum(r["wall_s"] for r in rows) / 3600, 2)
    return out


def _fig_n_by_k(plt, plain, at_b0, B0, title):
    """Fig. 3 left (Figs. 5, 6): N x k at B0, row-normalized, the best k of each N marked."""
    g = {N: by_b[B0] for N, by_b in plain.items() if B0 in by_b}
    if not g:
        return None
    Ns = sorted(g)
    ks = sorted({k for row in g.values() for k in row})
    raw = _matrix(g, Ns, ks)
    norm = raw / np.nanmax(raw, axis=1, keepdims=True)
    fig, ax = plt.subplots(figsize=(1.0 + 0.75 * len(ks), 0.9 + 0.5 * len(Ns)), dpi=110)
    best = set()
    for i in range(len(Ns)):
        row = norm[i]
        if np.all(np.isnan(row)):
            continue
        jb = int(np.nanargmax(row))
        best.add((i, jb))
        near = [j for j in range(len(ks)) if row[j] >= 0.995]
        for j in {min(near), max(near)} - {jb}:
            ax.plot(j, i, "o", color="black", alpha=0.35, ms=11)
        ax.plot(jb, i, "o", color="black", ms=11)
    what = f"{title}, B={B0}, row-normalized"
    report.heatmap(fig, ax, raw, norm, ks, Ns, "k (negatives)", "N (classes)", what, best)
    return fig


def _fig_b_by_k(plt, plain, at_b0, B0, title):
    """Fig. 3 center (Fig. 7): B x k for (up to) two N, globally normalized per panel."""
    Ns2 = sorted([N for N in plain if len(plain[N]) >= 2], key=lambda N: (-len(plain[N]), N))[:2]
    if not Ns2:
        return None
    fig, axes = plt.subplots(1, len(Ns2), figsize=(3.6 * len(Ns2), 2.6), dpi=110, squeeze=False)
    for ax, N in zip(axes[0], sorted(Ns2)):
        Bs = sorted(plain[N])
        ks = sorted({k for row in plain[N].values() for k in row})
        raw = _matrix(plain[N], Bs, ks)
        report.heatmap(fig, ax, raw, raw / np.nanmax(raw), ks, Bs, "k", "B", f"{title}, N={N}, globally normalized")
    return fig


def _fig_collisions(plt, plain, at_b0, B0, title):
    """Fig. 3 right: accuracy vs k with (solid) and without (dotted) collisions, four N."""
    Nc = sorted(N for N, modes in at_b0.items() if True in modes)
    if not Nc:
        return None
    fig, ax = plt.subplots(figsize=(4.2, 3.0), dpi=110)
    styles = ((False, "-", ""), (True, ":", " no collision"), (SHUFFLED, "--", " shuffled control"))
    for i, N in enumerate(Nc[:4]):
        for c, style, tag in styles:
            pts = sorted((k, v[0]) for k, v in at_b0[N].get(c, {}).items())
            if pts:
                ax.plot(*zip(*pts), style, marker="o", ms=3, color=f"C{i}", label=f"N={N}{tag}")
    ax.set_xscale("log")
    ax.set_xlabel("k")
    ax.set_ylabel("accuracy (%)")
    control = ", shuffled-label control (dashed)" if any(SHUFFLED in modes for modes in at_b0.values()) else ""
    ax.set_title(f"{title}, B={B0}\ncollisions (solid), none (dotted){control}", fontsize=7)
    ax.legend(fontsize=5, ncol=2)
    return fig


def plot(rows: list[dict], out_dir: Path) -> list[Path]:
    """Fig. 3 left / center / right (and App. Figs. 5-7) for both readouts from the ledger's records
    ``rows``, as small PNGs, and the summary (:func:`summarize`) as JSON."""
    plt = report.pyplot()
    if not rows:
        raise ArgumentError("no finished cells to plot")
    out_dir.mkdir(parents=True, exist_ok=True)
    B0 = _main_B(rows)
    epochs = sorted({(r["epochs"], r["linear_epochs"]) for r in rows})
    seeds = len({r["seed"] for r in rows})
    caption = (
        f"Wiki-N from our 2015 dump (not the CURL release); {seeds} seed(s); "
        f"NCE/linear epochs {', '.join(f'{a}/{b}' for a, b in epochs)}"
    )
    written = []
    for metric, title in (("mean_acc", "mean classifier"), ("linear_acc", "linear classifier")):
        means = _means(rows, B0, metric)
        figures = (("k_vs_n", _fig_n_by_k, 0.03), ("b_by_k", _fig_b_by_k, 0.04), ("collisions", _fig_collisions, 0.03))
        for name, draw, bottom in figures:
            fig = draw(plt, *means, B0, title)
            if fig is None:
                continue
            fig.text(0.01, 0.005, caption, fontsize=5)
            fig.tight_layout(rect=(0, bottom, 1, 1))
            fig.savefig(out_dir / f"{name}_{metric}.png")
            written.append(out_dir / f"{name}_{metric}.png")
            plt.close(fig)
    from qt_hard.files import write_text

    write_text(out_dir / "k_vs_n_summary.json", json.dumps(summarize(rows), indent=1, default=str) + "\n", "summary")
    return [*written, out_dir / "k_vs_n_summary.json"]


DIAG_COLUMNS = (
    ("mean_acc", "mean clf. (dot)"),
    ("mean_cos_acc", "mean clf. (cosine)"),
    ("linear_acc", "linear clf."),
    ("final_loss", "final loss"),
    ("same_class_mass", "same-class softmax mass"),
    ("same_class_share", "same-class share"),
    ("test_norm_mean", "norm"),
    ("test_norm_cv", "norm CV"),
)


def diagnose(records: list[dict]) -> str:
    """A markdown table of the cells that have diagnostics (their records' ``diagnostics``, also
    ``results.diag.jsonl``): per (N, k, B, collision_free), the mean ± std over seeds of both
    readouts, the cosine mean classifier, the final loss, the softmax mass and share of
    same-class candidates, and the embedding norms."""
    groups: dict = {}
    for rec in records:
        if "diagnostics" not in rec:  # a cell run before the readouts had diagnostics
            continue
        key = (rec["N"], rec["k"] or "all", rec["B"], str(rec["collision_free"]))
        groups.setdefault(key, []).append({**rec, **rec["diagnostics"]})
    if not groups:
        raise ArgumentError("--diagnose: no finished cell has diagnostics")
    order = {"False": 0, "True": 1, SHUFFLED: 2}
    names = {"False": "none (plain)", "True": "same-class (collision-free)", SHUFFLED: "random, matched (shuffled)"}
    body = []
    for key in sorted(groups, key=lambda k: (k[0], str(k[1]).zfill(6), k[2], order.get(k[3], 9))):
        g = groups[key]
        cells = []
        for col, _ in DIAG_COLUMNS:
            digits = 2 if col.endswith("acc") or col in ("final_loss", "test_norm_mean") else 4
            m, sd = report.mean_spread(x[col] for x in g)
            cells.append(f"{m:.{digits}f} ± {sd:.{digits}f}")
        body.append([*key[:3], names.get(key[3], key[3]), len(g), *cells])
    head = ["N", "k", "B", "collisions removed", "seeds", *(t for _, t in DIAG_COLUMNS)]
    return "\n".join(report.markdown_table(head, body))
