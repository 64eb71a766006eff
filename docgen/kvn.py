"""k versus N (the ``k_vs_n`` spec: the CSVs it exports from its ledgers, one results folder a grid, and
their diagnostics)."""

from __future__ import annotations

import statistics
from pathlib import Path

from qt_hard.experiments import report

from docgen.markdown import captioned, join_lines, span
from docgen.pages import table
from docgen.results import read_csv, read_jsonl


def kvn_cells(root: Path, name: str) -> list[dict]:
    """The cells of the grid ``NAME``'s ``results/k_vs_n/NAME/results.csv`` with their diagnostics
    (``results.diag.jsonl`` beside it) merged in."""
    folder = root / "results" / "k_vs_n" / name
    diag_path = folder / "results.diag.jsonl"
    diag = {d["cell_id"]: d for d in read_jsonl(diag_path)} if diag_path.is_file() else {}
    return [
        {**diag.get(r["cell_id"], {}), **r, "file": f"{name}/results.csv"} for r in read_csv(folder / "results.csv")
    ]


def _kvn_k(r: dict) -> str:
    return r["k"] or f"all {2 * (int(r['B']) - 1)}"


def kvn_pick(cells, N, k=None, B=1000, cf="False", **more) -> list[dict]:
    return [
        r
        for r in cells
        if int(r["N"]) == N
        and int(r["B"]) == B
        and r["collision_free"] == cf
        and (k is None and r["k"] == "" or k is not None and r["k"] == str(k))
        and all(str(r[a]) == str(b) for a, b in more.items())
    ]


def _ms(values) -> str:
    """mean ± spread to 2 digits; the value alone for one seed (no spread to give)."""
    vals = [float(v) for v in values if v not in (None, "")]
    return f"{vals[0]:.2f}" if len(vals) == 1 else report.fmt_mean_spread(vals, 2)


_KVN_COLS = {
    "mean clf. (dot)": lambda c: _ms(r["mean_acc"] for r in c),
    "mean clf. (cosine)": lambda c: _ms(r.get("mean_cos_acc") for r in c),
    "linear clf.": lambda c: _ms(r["linear_acc"] for r in c),
    "final loss": lambda c: f"{statistics.mean(float(r['final_loss']) for r in c):.2f}",
    "same-article softmax mass": lambda c: (
        f"{100 * statistics.mean(r['same_class_mass'] for r in c):.1f}%"
        if all("same_class_mass" in r for r in c)
        else "-"
    ),
    "norm CV": lambda c: (
        f"{statistics.mean(r['test_norm_cv'] for r in c):.3f}" if all("test_norm_cv" in r for r in c) else "-"
    ),
    "V": lambda c: "/".join(sorted({r["vocab_size"] for r in c})),
    "epochs": lambda c: "/".join(sorted({f"{r['epochs']} + {r['linear_epochs']}" for r in c})),
    "steps": lambda c: "/".join(sorted({r["steps"] for r in c})),
}


def _kvn_table(items: list[tuple[str, list[dict]]], cols: list[str]) -> list[str]:
    """One line per (label, cells): the seeds, the columns of ``_KVN_COLS``, the file and device."""
    body = []
    for label, cells in items:
        if not cells:
            continue
        seeds = ", ".join(sorted({r["seed"] for r in cells}, key=int))
        where = ", ".join(sorted({f"{r['file']} ({r['device']})" for r in cells}))
        body.append([label, seeds, *(_KVN_COLS[c](cells) for c in cols), where])
    return report.markdown_table(["cells", "seeds", *cols, "rows (device)"], body)


@table("kvn_n_by_k")
def _kvn_n_by_k(root: Path) -> str:
    """Mean-classifier accuracy per N and k at B = 1000 with collisions (Fig. 3 left), best k in bold."""
    cells = kvn_cells(root, "main")
    plain = [r for r in cells if r["B"] == "1000" and r["collision_free"] == "False"]
    ks = sorted({r["k"] for r in plain if r["k"]}, key=int) + [""]
    body = []
    for N in sorted({int(r["N"]) for r in plain}):
        row = {k: [float(r["mean_acc"]) for r in plain if int(r["N"]) == N and r["k"] == k] for k in ks}
        best = max((k for k in ks if row[k]), key=lambda k: statistics.mean(row[k]))
        cellsN = []
        for k in ks:
            text = report.fmt_mean_spread(row[k], 2) if row[k] else "-"
            cellsN.append(f"**{text}**" if k == best else text)
        body.append([str(N), *cellsN])
    head = ["N", *(f"k = {k}" for k in ks[:-1]), "k = all 1,998"]
    return join_lines(
        "Mean-classifier accuracy (%), B = 1000, with collisions: mean ± spread over seeds (3 per cell), the best "
        "k of each N in bold. From `results/k_vs_n/main/results.csv`.",
        "",
        report.markdown_table(head, body, "l" + "r" * len(ks)),
    )


@table("kvn_b_by_k")
def _kvn_b_by_k(root: Path) -> str:
    """B at fixed k for the N that ran several B (Fig. 3 center)."""
    cells = [r for r in kvn_cells(root, "main") if r["collision_free"] == "False"]
    body, judged = [], []
    for N in sorted({int(r["N"]) for r in cells}):
        Bs = sorted({int(r["B"]) for r in cells if int(r["N"]) == N})
        if len(Bs) < 2:
            continue
        ks = sorted({r["k"] for r in cells if int(r["N"]) == N and r["k"]}, key=int)
        for k in [*ks, ""]:
            vals = {B: [float(r["mean_acc"]) for r in kvn_pick(cells, N, k or None, B)] for B in Bs}
            if sum(1 for v in vals.values() if v) < 2:
                continue
            by_seed = {B: {r["seed"]: float(r["mean_acc"]) for r in kvn_pick(cells, N, k or None, B)} for B in Bs}
            row = [str(N), k or "all 2(B-1)"]
            for B in Bs[:-1]:
                v = report.paired_verdict(by_seed[B], by_seed[Bs[-1]])
                row += [v.cell(), v.verdict] if v.n else ["-", ""]
            judged.append(row)
            best = max((B for B in Bs if vals[B]), key=lambda B: statistics.mean(vals[B]))
            row = []
            for B in Bs:
                text = report.fmt_mean_spread(vals[B], 2) if vals[B] else "-"
                row.append(f"**{text}**" if B == best else text)
            body.append([str(N), k or "all 2(B-1)", *row])
            Bhead = Bs
    vs = [h for B in Bhead[:-1] for h in (f"B = {Bhead[-1]} - B = {B}", "verdict")]
    return join_lines(
        "Mean-classifier accuracy (%) at fixed k for each batch size B, with collisions: mean ± spread over "
        "seeds (3 per cell), the best B of each (N, k) in bold. From `results/k_vs_n/main/results.csv`.",
        "",
        report.markdown_table(["N", "k", *(f"B = {B}" for B in Bhead)], body, "ll" + "r" * len(Bhead)),
        "",
        f"The largest batch against each smaller one, paired by seed (B = {Bhead[-1]} minus the other, mean [95% "
        "t-interval]; better or worse only when the interval excludes 0):",
        "",
        report.markdown_table(["N", "k", *vs], judged, "ll" + "rl" * (len(Bhead) - 1)),
    )


@table("kvn_collision_free")
def _kvn_collision_free(root: Path) -> str:
    """Collision-free minus plain at B = 1000, paired by seed, per N and k (Fig. 3 right)."""
    cells = kvn_cells(root, "main")
    body = []
    for N in sorted({int(r["N"]) for r in cells if r["collision_free"] == "True"}):
        for k in sorted({r["k"] for r in cells if int(r["N"]) == N and r["collision_free"] == "True"}, key=int):
            plain = {r["seed"]: float(r["mean_acc"]) for r in kvn_pick(cells, N, k)}
            free = {r["seed"]: float(r["mean_acc"]) for r in kvn_pick(cells, N, k, cf="True")}
            v = report.paired_verdict(plain, free)
            body.append(
                [
                    str(N),
                    k,
                    report.fmt_mean_spread(plain.values(), 2),
                    report.fmt_mean_spread(free.values(), 2),
                    v.cell(),
                    v.verdict,
                    str(v.n),
                ]
            )
    head = ["N", "k", "plain", "collision-free", "difference [95% interval]", "verdict", "pairs"]
    return join_lines(
        "Mean-classifier accuracy (%), B = 1000: plain and collision-free sampling, mean ± spread over seeds; "
        "the difference is collision-free minus plain, paired by seed, with its 95% t-interval: better or worse "
        "where the interval excludes 0. From `results/k_vs_n/main/results.csv`.",
        "",
        report.markdown_table(head, body, "llrrrlr"),
    )


_CF_LABEL = {"False": "none removed (plain)", "True": "same-article removed (collision-free)"}
_CF_LABEL["shuffled"] = "random, matched (shuffled control)"
_COLLISION_COLS = [*_KVN_COLS][:6]  # the readouts and the diagnostics of the collision studies


def _kvn_collision_study(root: Path, N: int, files: dict) -> str:
    """N's cells at k = 100 and 1000 in each collision mode, ``files``: mode -> the results file it is in."""
    cells = {name: kvn_cells(root, name) for name in set(files.values())}
    items = [
        (f"k = {k}, {_CF_LABEL[cf]}", kvn_pick(cells[f], N, k, cf=cf)) for k in (100, 1000) for cf, f in files.items()
    ]
    metrics = {"mean clf. (dot)": "mean_acc", "mean clf. (cosine)": "mean_cos_acc", "linear clf.": "linear_acc"}
    body = []
    for k in (100, 1000):

        def seeds(cf, m, k=k):
            return {
                r["seed"]: float(r[m]) for r in kvn_pick(cells[files[cf]], N, k, cf=cf) if r.get(m) not in (None, "")
            }

        for cf in [c for c in files if c != "False"]:
            judged = [report.paired_verdict(seeds("False", m), seeds(cf, m)) for m in metrics.values()]
            marks = ["*" if v.verdict in ("better", "worse") else "" for v in judged]
            body.append([f"k = {k}, {_CF_LABEL[cf]}", *(v.cell() + mk for v, mk in zip(judged, marks))])
    return join_lines(
        f"N = {N}, B = 1000; mean ± spread over seeds:",
        "",
        _kvn_table(items, _COLLISION_COLS),
        "",
        "Against plain sampling at the same k, paired by seed (mean [95% t-interval]; * where it excludes 0; "
        '"-" where a readout was not logged):',
        "",
        report.markdown_table(["cells", *metrics], body, "lrrr"),
    )


table("kvn_collisions")(lambda root: _kvn_collision_study(root, 300, dict.fromkeys(_CF_LABEL, "collisions")))
table("kvn_collisions_1000")(
    lambda root: _kvn_collision_study(root, 1000, {"False": "main", "True": "main", "shuffled": "collisions_1000"})
)


@table("kvn_b1000_long")
def _kvn_b1000_long(root: Path) -> str:
    main, long = kvn_cells(root, "main"), kvn_cells(root, "b1000_long")
    items = []
    for N in (100, 1000):
        items += [(f"N = {N}, the grid", kvn_pick(main, N)), (f"N = {N}, D.1's budget", kvn_pick(long, N))]
    cols = ["epochs", "steps", "mean clf. (dot)", "linear clf.", "final loss"]
    return join_lines("B = 1000, all 1,998 in-batch negatives; mean ± spread over seeds:", "", _kvn_table(items, cols))


@table("kvn_vocab_steps")
def _kvn_vocab_steps(root: Path) -> str:
    main, vocab, steps = kvn_cells(root, "main"), kvn_cells(root, "vocab"), kvn_cells(root, "steps_100")
    items = [
        ("N = 100, own vocabulary, 10 epochs (the grid)", kvn_pick(main, 100, 100)),
        ("N = 100, Wiki-3029's vocabulary, 10 epochs", kvn_pick(vocab, 100, 100)),
        ("N = 100, own vocabulary, 100 epochs", kvn_pick(steps, 100, 100)),
        ("N = 1000, own vocabulary, 10 epochs (the grid)", kvn_pick(main, 1000, 100)),
        ("N = 1000, Wiki-3029's vocabulary, 10 epochs", kvn_pick(vocab, 1000, 100)),
    ]
    cols = ["V", "steps", "mean clf. (dot)", "linear clf."]
    return join_lines("k = 100, B = 1000; mean ± spread over seeds:", "", _kvn_table(items, cols))


def _kvn_cost_cell(cells: list[dict], parts: bool = False, total: bool = False, by_n: bool = False) -> str:
    """Wall seconds a cell (per N with ``by_n``; train and readouts with ``parts``; the sum in minutes
    with ``total``) of the cells of one study."""

    def one(group):
        text = span([float(r["wall_s"]) for r in group]) + (" a cell" if len(group) > 1 else "")
        if parts:
            train, readouts = span([float(r["train_s"]) for r in group]), span([float(r["eval_s"]) for r in group])
            text += f" (train {train}, readouts {readouts})"
        return text

    if by_n:
        ns = sorted({int(r["N"]) for r in cells})
        text = "; ".join(f"N = {n}: {one([r for r in cells if int(r['N']) == n])}" for n in ns)
    else:
        text = one(cells)
    if total:
        text += f", {sum(float(r['wall_s']) for r in cells) / 60:.0f} min in all"
    return text


@table("kvn_cost", spread=False)
def _kvn_cost(root: Path) -> str:
    """Each k-versus-N study's cells: how many, where they ran, their wall seconds (from the cells' CSVs)."""
    grid = kvn_cells(root, "main")
    gpu, cpu = [r for r in grid if r["device"] == "cuda"], [r for r in grid if r["device"] == "cpu"]
    shuffled = kvn_cells(root, "collisions_1000")
    one_worker = "2-core CPU, one worker of one thread"

    def hours(cells):
        return f"{sum(float(r['wall_s']) for r in cells) / 3600:.1f} cell-hours"

    collisions, vocab, steps, long = (kvn_cells(root, f) for f in ("collisions", "vocab", "steps_100", "b1000_long"))
    shuffled_cpu = [r for r in shuffled if r["device"] == "cpu"]
    shuffled_gpu = [r for r in shuffled if r["device"] == "cuda"]
    # (what, its cells where the row names their count, machine, wall time)
    rows = [
        (
            f"the grid's {len(gpu)} GPU cells",
            None,
            "one H100 shared by 10 to 12 workers",
            f"{hours(gpu)} of worker time",
        ),
        (f"the grid's {len(cpu)} CPU cells", None, one_worker, f"{hours(cpu)} ({_kvn_cost_cell(cpu, by_n=True)})"),
        ("the collisions study", collisions, one_worker, _kvn_cost_cell(collisions, total=True)),
        (
            "the N = 1000 shuffled control",
            shuffled_cpu,
            one_worker,
            _kvn_cost_cell(shuffled_cpu, parts=True, total=True),
        ),
        ("the vocabulary control", vocab, "the same", _kvn_cost_cell(vocab, parts=True, by_n=True)),
        ("the step-count control", steps, "the same", _kvn_cost_cell(steps, parts=True)),
        (
            "D.1's budget, B = 1000 row",
            long,
            "one H200 shared by 10 workers (and, in the same call, MoCo runs)",
            _kvn_cost_cell(long, by_n=True),
        ),
        (
            "the N = 1000 shuffled control at k = 1000",
            shuffled_gpu,
            "the same call, 3 workers",
            _kvn_cost_cell(shuffled_gpu),
        ),
    ]
    body = [
        [what if cells is None else f"{what}, {len(cells)} cells", where, wall] for what, cells, where, wall in rows
    ]
    return captioned(
        "Wall seconds of each cell (`wall_s`; train: `train_s`, readouts: `eval_s`) from the cells' CSVs in "
        "the folders of `results/k_vs_n/` (`main`, `collisions`, `collisions_1000`, `vocab`, `steps_100`, "
        "`b1000_long`).",
        ["what", "machine", "wall time"],
        body,
    )
