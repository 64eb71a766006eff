"""Loss cost of every sentence-transformers comparison row as it trained: its loss over MNRL's, forward +
backward on fixed embeddings, all cases interleaved in one run.

The rows are those of the STS comparison (``qt-hard grid run st-compare``) and of the SciFact comparison
(``qt_hard.experiments.specs.scifact``). Each row's loss is built by its comparison's own ``build_loss``
(its strategy and options, the recipe's scale) at the batch size its comparison trained at (the
``recipe`` of its ledger's setup under ``results/``, else the comparison's default; ``--batch-size``
overrides both), on its columns: (anchor, positive) for a row on the pairs, (anchor, positive,
negative) for a ``+mined`` row. The inputs are fixed (B, ``--dim``) tensors, the model's embedding
width (384 for all-MiniLM-L6-v2 and the bag of words), so a time is the loss's own: no encoder runs.
Rows that need the encoder or a frozen guide model inside the loss (``GISTEmbedLoss``, a guard with a
guide, the ``+cached`` GradCache forms) are not measured, and are listed as such. Two rows with the
same loss, configuration, batch size and columns are one case.

Every case and MNRL itself (``MultipleNegativesRankingLoss`` at the same scale, once per batch size and
columns: the reference) run interleaved: each round runs a block of every one of them in turn (the
order rotated each round), each block back-to-back calls lasting at least ``--block-s`` (0.2 s); a case's time
is the median of its blocks. ``ratio``: the case's median over the reference's with the same batch
size and columns; ``ratio_vs_pairs``: over the reference on the pairs at the same batch size (the
cost of a mined column included); ``ratio_range``: the lowest and highest per-round ratio. The
``mnrl`` rows are MNRL measured against itself: their ratio is the run's noise. torch runs on
``--threads`` threads (1 unless told; ``qt_hard.threads.torch_threads``).

Prints one JSON row per case (appended to ``--out`` with the machine, date, commit, library versions,
load average, command and the run's wall time) and a one-line headline.

    python scripts/bench_st_losses.py --out results/bench_st_losses.jsonl
    python scripts/bench_st_losses.py --specs scifact --reps 3
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402

ROOT = _bench.ROOT
sys.path.insert(0, str(ROOT))  # runnable from a checkout without installing the package

SPECS = ("sts", "scifact")


def _st_compare():
    from qt_hard.experiments.specs import st_compare

    return st_compare


def _setup_recipe(ledger_file: Path) -> dict:
    """The ``recipe`` of a ledger's setup line, or {} without one."""
    if not ledger_file.is_file():
        return {}
    with ledger_file.open(encoding="utf-8") as fh:
        first = json.loads(fh.readline() or "{}")
    return (first.get("setup") or {}).get("recipe") or {}


def _spec_cases(name: str, spec, recipe: dict, build) -> tuple[list[dict], list[str]]:
    """(rows, skipped) of one comparison's default rows (``spec``: its module) at ``recipe``'s batch size:
    a row whose loss needs the encoder or a guide model (``+cached``, GIST, a guard with a guide) is
    skipped as ``name:row``; ``build(row, model, recipe)`` builds the loss of any other."""
    rows, skipped = [], []
    for row in spec.DEFAULT_ROWS:
        base, mined, cached = spec.parse_row(row)
        loss = spec.ROWS[base][1]
        if cached or loss["loss"] == "gist" or loss.get("guide"):
            skipped.append(f"{name}:{row}")
            continue
        rows.append(
            {
                "spec": name,
                "row": row,
                "B": recipe["batch_size"],
                "columns": 3 if mined else 2,
                "build": lambda model, row=row: build(row, model, recipe),
            }
        )
    return rows, skipped


def comparison_rows(specs=SPECS, batch_size: int | None = None) -> tuple[list[dict], list[str]]:
    """(rows, skipped): each row a dict with ``spec``, ``row``, ``B``, ``columns``, ``recipe`` and
    ``build`` (a function of the model returning the row's loss); ``skipped``: ``spec:row`` of the rows
    whose loss needs the encoder or a guide model."""
    from qt_hard.experiments.specs import scifact

    out, skipped = [], []
    if "sts" in specs:
        st = _st_compare()
        batches = {
            _setup_recipe(f).get("batch_size")
            for f in sorted((ROOT / "results" / "st_compare").glob("*/results.jsonl"))
            if f.parent.name in ("bow", "minilm")
        } - {None}
        scales = {_setup_recipe(f).get("scale") for f in (ROOT / "results" / "st_compare").glob("*/results.jsonl")}
        scale = next(iter(scales - {None}), 20.0)
        for B in sorted({batch_size} if batch_size else batches or {64}):
            recipe = {"batch_size": B, "scale": scale}
            rows, skips = _spec_cases(
                "sts", st, recipe, lambda row, model, recipe: st.build_loss(row, model, "", recipe)
            )
            out += rows
            skipped += skips
    if "scifact" in specs:
        recipe = {**scifact.BASE_RECIPE, **_setup_recipe(ROOT / "results" / "scifact" / "results.jsonl")}
        if batch_size:
            recipe["batch_size"] = batch_size
        rows, skips = _spec_cases("scifact", scifact, recipe, scifact.build_loss)
        out += rows
        skipped += skips
    return out, skipped


def loss_key(loss) -> tuple[str, str]:
    """(class name, configuration as JSON) of a loss: what a training record keeps as ``loss`` and
    ``loss_config`` (``st_finetuning.finetune``), so that a row's records find its case."""
    from qt_hard.experiments.specs.st_finetuning import jsonable

    config = {k: jsonable(v) for k, v in loss.get_config_dict().items()}
    return type(loss).__name__, json.dumps(config, sort_keys=True)


def measure(rows: list[dict], d: int, reps: int, block_s: float) -> list[dict]:
    """The interleaved measurement: one dict per case (rows with the same loss key, B and columns
    merged), with the medians, the ratios and the per-round ratio range."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from torch import nn

    model = nn.Identity()  # the losses keep a model but never call it on embeddings
    leaves = {}
    cases: dict[tuple, dict] = {}
    for r in rows:
        loss = r["build"](model)
        key = (*loss_key(loss), r["B"], r["columns"])
        if key in cases:
            cases[key]["rows"].append(f"{r['spec']}:{r['row']}")
            continue
        shape = (r["B"], r["columns"])
        leaves.setdefault(shape, _bench.embeddings(shape[0], d, shape[1]))
        cases[key] = {"rows": [f"{r['spec']}:{r['row']}"], "loss": loss, "shape": shape, "scale": loss.scale}
    refs = {}
    for c in cases.values():
        for columns in (c["shape"][1], 2):
            ref_key = (c["shape"][0], columns, c["scale"])
            if ref_key not in refs:
                leaves.setdefault((ref_key[0], columns), _bench.embeddings(ref_key[0], d, columns))
                refs[ref_key] = {"loss": MultipleNegativesRankingLoss(model, scale=c["scale"]), "shape": ref_key[:2]}
    runners = list(cases.values()) + list(refs.values())
    for r in runners:
        r["step"] = _bench.loss_step(r["loss"], leaves[r["shape"]])
        r["step"]()  # warm-up
        r["calls"] = _bench.block_calls(r["step"], block_s)
    times = _bench.interleaved([r["step"] for r in runners], [r["calls"] for r in runners], reps, rotate=True)
    for r, t in zip(runners, times):
        r["times"] = t
    out = []
    for (name, config, B, columns), c in cases.items():
        ref, pairs = refs[(B, columns, c["scale"])], refs[(B, 2, c["scale"])]
        med, ref_med = statistics.median(c["times"]), statistics.median(ref["times"])
        per_round = [a / b for a, b in zip(c["times"], ref["times"])]
        out.append(
            {
                "case": c["rows"][0].split(":", 1)[1],
                "rows": c["rows"],
                "loss": name,
                "loss_config": json.loads(config),
                "B": B,
                "d": d,
                "columns": columns,
                "seconds": round(med, 7),
                "mnrl_s": round(ref_med, 7),
                "mnrl_pairs_s": round(statistics.median(pairs["times"]), 7),
                "ratio": round(med / ref_med, 3),
                "ratio_vs_pairs": round(med / statistics.median(pairs["times"]), 3),
                "ratio_range": [round(min(per_round), 3), round(max(per_round), 3)],
                "reps": reps,
                "calls_per_block": c["calls"],
            }
        )
    return out


def headline(rows: list[dict], skipped: list[str], threads: int, wall_s: float) -> str:
    noise = [r["ratio"] for r in rows if r["case"] in ("mnrl", "mnrl+mined")]
    ours = [r for r in rows if r["loss"] != "MultipleNegativesRankingLoss"]
    parts = []
    if ours:
        lo, hi = min(ours, key=lambda r: r["ratio"]), max(ours, key=lambda r: r["ratio"])
        parts.append(
            f"{len(ours)} HardNegativesLoss cases cost x{lo['ratio']:.2f} ({lo['case']}, B={lo['B']}) to "
            f"x{hi['ratio']:.2f} ({hi['case']}, B={hi['B']}) of MNRL on the same batch and columns"
        )
    if noise:
        parts.append(f"MNRL against itself x{min(noise):.2f}-x{max(noise):.2f} (the run's noise)")
    if skipped:
        parts.append(f"{len(skipped)} rows need the encoder or a guide and are not measured")
    where = f"forward + backward, d={rows[0]['d'] if rows else '?'}, cpu, {threads} thread(s), {wall_s:.0f} s"
    return f"headline: {'; '.join(parts) or 'no case run'} ({where})"


def main(argv=None) -> int:
    p = _bench.parser(__doc__, reps=9)
    p.add_argument("--specs", default=",".join(SPECS), help=f"comparisons, comma separated ({', '.join(SPECS)})")
    p.add_argument("--batch-size", type=int, default=None, help="override every row's batch size")
    p.add_argument("--dim", type=int, default=384, help="embedding width (the models': 384)")
    p.add_argument("--block-s", type=float, default=0.2, help="least seconds of one block")
    args = p.parse_args(argv)
    specs = [s for s in args.specs.split(",") if s]
    if not specs or any(s not in SPECS for s in specs):
        print(f"error: --specs takes {', '.join(SPECS)} (comma separated)", file=sys.stderr)
        return 2
    if args.batch_size is not None and args.batch_size < 2 or args.threads < 1 or args.reps < 1 or args.dim < 1:
        print("error: --batch-size >= 2, --threads, --reps and --dim >= 1", file=sys.stderr)
        return 2
    from qt_hard.threads import torch_threads

    t0 = time.perf_counter()
    with torch_threads(args.threads):
        rows, skipped = comparison_rows(specs, args.batch_size)
        results = measure(rows, args.dim, args.reps, args.block_s)
        stamp = _bench.stamp(__file__, argv)
    wall = time.perf_counter() - t0
    _bench.emit([{**r, **stamp, "run_wall_s": round(wall, 3)} for r in results], args.out)
    if skipped:
        print("not measured (the loss needs the encoder or a guide model): " + ", ".join(skipped))
    print(headline(results, skipped, args.threads, wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
