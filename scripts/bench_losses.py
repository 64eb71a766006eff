"""Forward + backward time of a loss against a reference loss on the same embeddings, side by side in
one run: a ratio is the loss's seconds over the reference's for the same work, no encoder running.

Every side starts from the same fixed embeddings; the sides run interleaved (each round a block of
every side in turn, a block back-to-back calls lasting at least 0.2 s) and a side's time is the median
of its blocks, so that a noisy machine slows every side alike. torch runs on ``--threads`` threads.
Each row is printed as JSON (appended to ``--out`` with the machine, date, commit, torch, threads,
load average and command); the last line is a one-line headline. The cases:

* ``infonce``: every negatives strategy of ``contrastive_loss`` against plain NT-Xent with
  ``F.cross_entropy``, both computing the (2B, 2B) scores from two (B, d) views, and the largest
  tensor made (memory O(B x candidates));
* ``guard``: ``HardNegativesLoss`` (its default, and with the false-negative guard, with the share of
  candidates it removes) against sentence-transformers' ``MultipleNegativesRankingLoss`` through
  ``compute_loss_from_embeddings``, every case and MNRL interleaved as ``st`` runs them;
* ``st``: the loss of every row of the STS and SciFact comparisons as it trained (its comparison's
  ``build_loss`` at the batch size and scale of its ledger under ``results/``) against MNRL at the
  same batch size and columns; rows whose loss needs the encoder or a guide model are listed, not
  measured. MNRL itself is a case: its ratio is the run's noise.

    python scripts/bench_losses.py infonce --batch-sizes 256,1024 --reps 5 --out results/bench_losses_cpu.jsonl
    python scripts/bench_losses.py guard --reps 9 --out results/bench_guard.jsonl
    python scripts/bench_losses.py st --out results/bench_st_losses.jsonl
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import _bench  # beside this file: python puts a script's own folder first on its path

ROOT = _bench.ROOT
INFONCE_TARGETS = {"hard": 1.05, "debiased": 1.05, "uniform+k": 1.2, "hard+k": 1.2, "ring": 1.3, "ot": 2.0}
STRATEGIES = {
    "uniform": {},
    "debiased": {"tau_plus": 0.1},
    "hard": {"beta": 1.0, "tau_plus": 0.1},
    "ring": {"lower": 10, "upper": 90},
    "label": {"hardening": "exp", "beta": 1.0},
    "ot": {"epsilon": 0.5, "sinkhorn_iters": 20},
}
GUARD_TARGETS = {"guard": 1.1, "default": 1.05}  # the guard without a guide; HardNegativesLoss(model)
GUARDS = {
    "uniform+guard": dict(guard="absolute", guard_margin=0.0),
    "uniform+guard_relative": dict(guard="relative", guard_margin=0.05),
    "hard+guard": dict(negatives="hard", beta=1.0, guard="absolute", guard_margin=0.0),
    "uniform": dict(),
}
SPECS = ("sts", "scifact")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


# ---------------------------------------------------------------------------- infonce


def infonce_cross_entropy(z1, z2, t):
    """Plain NT-Xent: cross-entropy over the 2B-1 other views, the partner as target."""
    import torch
    import torch.nn.functional as F

    b = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    s = (z @ z.T / t).masked_fill(torch.eye(2 * b, dtype=torch.bool, device=z.device), float("-inf"))
    return F.cross_entropy(s, torch.cat([torch.arange(b, 2 * b), torch.arange(b)]).to(z.device))


def infonce_row(b, d, k, name, reps, device, t=0.5) -> dict:
    import torch

    from qt_hard.diagnostics import LargestTensor
    from qt_hard.losses import contrastive_loss

    g = torch.Generator(device=device).manual_seed(0)
    z1, z2 = (torch.randn(b, d, device=device, generator=g).requires_grad_() for _ in range(2))
    labels = torch.randint(0, 10, (b,), device=device, generator=g)
    opts = STRATEGIES[name]
    ours = lambda: contrastive_loss(z1, z2, name, temperature=t, k=k, labels=labels, **opts).backward()
    (mb, mo), _, _ = _bench.side_by_side(
        [lambda: infonce_cross_entropy(z1, z2, t).backward(), ours], reps, device=device
    )
    with LargestTensor() as probe:
        ours()
    peak = None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        ours()
        peak = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return {
        "B": b,
        "d": d,
        "k": k if k is not None else "all",
        "strategy": name,
        "baseline_s": round(mb, 5),
        "ours_s": round(mo, 5),
        "ratio": round(mo / mb, 3),
        "peak_mib": peak,
        # the largest tensor made, in units of the larger of the (2B, 2B) score table and the (2B, d)
        # embeddings: a B x candidates x d tensor would be ~d or ~B
        "largest_tensor_vs_inputs": round(probe.largest / max((2 * b) ** 2, 2 * b * d), 2),
    }


def infonce_arguments(p):
    import torch

    _bench.common(p, threads=None, reps=3)
    p.add_argument("--batch-sizes", default="256,1024,4096")
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--ks", default="all,64")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")


def infonce(args):
    """Every negatives strategy against plain InfoNCE with F.cross_entropy."""
    import torch

    device, worst = torch.device(args.device), {}
    for b in _ints(args.batch_sizes):
        for k in (None if x == "all" else int(x) for x in args.ks.split(",")):
            for name in args.strategies.split(","):
                row = infonce_row(b, args.dim, k, name, args.reps, device)
                key = name + ("+k" if k is not None else "")
                worst[key] = max(worst.get(key, 0.0), row["ratio"])
                _bench.emit([{**row, "device": str(device), **_bench.stamp(__file__, args.argv)}], args.out)
    met = {key: worst[key] <= target for key, target in INFONCE_TARGETS.items() if key in worst}
    name = "hard" if "hard" in worst else next(iter(worst))
    print(
        f"headline: {name} negatives cost {worst[name]:.3f}x plain cross-entropy InfoNCE (worst over B, "
        f"{device.type}); targets met: {sum(met.values())}/{len(met)}"
    )


# ---------------------------------------------------------------------------- guard


def guard_removed(loss, b: int, d: int, n_neg: int) -> float | None:
    """The share of candidates ``loss``'s guard removes on the benchmark's fixed embeddings (None
    without a guard)."""
    import torch

    from qt_hard.negatives import one_directional_scores

    if not loss.strategy.guard:
        return None
    cols = [leaf.detach() for leaf in _bench.embeddings(b, d, 2 + n_neg)]
    neg = torch.stack(cols[2:], dim=1) if n_neg else None
    scores = one_directional_scores(cols[0], cols[1], neg, temperature=1 / loss.scale, gather_candidates=False)
    return round(loss.strategy.diagnostics(scores)["guard_removed_frac"], 4)


def guard_arguments(p):
    _bench.common(p, reps=7)
    p.add_argument("--batch-size", type=_ints, default=[256], help="batch sizes, comma separated")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--negatives", type=_ints, default=[0, 1], help="explicit negative columns, comma separated")
    p.add_argument("--cases", default=",".join(GUARDS), type=lambda s: s.split(","))


def guard(args):
    """HardNegativesLoss, its default and with the guard, against MultipleNegativesRankingLoss."""
    if set(args.cases) - set(GUARDS) or min(args.batch_size) < 2 or args.threads < 1:
        args.parser.error(f"--cases from {', '.join(GUARDS)}; --batch-size >= 2; --threads >= 1")
    import torch

    from qt_hard.integrations.sentence_transformers import HardNegativesLoss

    _bench.pin_threads(args.threads)
    stamp = _bench.stamp(__file__, args.argv)
    meta = {"device": _bench.device_name(), **stamp, "measured": stamp["utc"][:10]}  # a run: its commit and date
    build = lambda name: lambda model: HardNegativesLoss(model, scale=20.0, **GUARDS[name])
    specs = [
        {"spec": "guard", "row": name, "B": b, "columns": 2 + n, "build": build(name)}
        for b in args.batch_size
        for n in args.negatives
        for name in args.cases
    ]
    rows = measure(specs, args.dim, args.reps, 0.2)  # every case and its MNRL interleaved
    for r, spec in zip(rows, specs):
        r.update(explicit_negatives=r["columns"] - 2, ours_s=r["seconds"], **meta)
        r["guard_removed_frac"] = guard_removed(spec["build"](torch.nn.Identity()), r["B"], args.dim, r["columns"] - 2)
    _bench.emit(rows, args.out)
    parts = []
    if guarded := [r["ratio"] for r in rows if r["case"] in ("uniform+guard", "uniform+guard_relative")]:
        ok = "met" if max(guarded) <= GUARD_TARGETS["guard"] else "NOT met"
        parts.append(f"the guard (no guide) costs {max(guarded):.3f}x MNRL at worst (target <= 1.1: {ok})")
    if default := [r["ratio"] for r in rows if r["case"] == "uniform" and r["B"] == min(args.batch_size)]:
        ok = "met" if max(default) <= GUARD_TARGETS["default"] else "NOT met"
        parts.append(f"the default HardNegativesLoss(model) {max(default):.3f}x at B={min(args.batch_size)} ({ok})")
    where = f"forward + backward, d={args.dim}, cpu, {args.threads} thread(s)"
    print(f"headline: {'; '.join(parts) or 'no guard or default case run'} ({where})")


# ---------------------------------------------------------------------------- st


def _setup_recipe(ledger_file: Path) -> dict:
    """The ``recipe`` of a ledger's setup line, or {} without one."""
    if not ledger_file.is_file():
        return {}
    with ledger_file.open(encoding="utf-8") as fh:
        return (json.loads(fh.readline() or "{}").get("setup") or {}).get("recipe") or {}


def _spec_rows(name: str, spec, recipe: dict, build) -> tuple[list[dict], list[str]]:
    """(rows, skipped ``name:row``) of one comparison's default rows at ``recipe``'s batch size; a row
    whose loss needs the encoder, a guide model or the training judgements (``+cached``, GIST, a guard
    with a guide, the mask by the judgements) is skipped."""
    rows, skipped = [], []
    for row in spec.DEFAULT_ROWS:
        base, mined, cached = spec.parse_row(row)
        loss = spec.ROWS[base].changes
        if cached or loss["loss"] == "gist" or loss.get("guide") or loss.get("relation"):
            skipped.append(f"{name}:{row}")
            continue
        rows.append({"spec": name, "row": row, "B": recipe["batch_size"], "columns": 3 if mined else 2})
        rows[-1]["build"] = lambda model, row=row: build(row, model, recipe)
    return rows, skipped


def comparison_rows(specs=SPECS, batch_size: int | None = None) -> tuple[list[dict], list[str]]:
    """(rows, skipped): each row a dict with ``spec``, ``row``, ``B``, ``columns`` and ``build`` (a
    function of the model returning the row's loss); ``skipped``: ``spec:row`` of the rows whose loss
    needs the encoder, a guide model or the training judgements."""
    from qt_hard.experiments.specs import scifact, st_compare

    out, skipped = [], []
    if "sts" in specs:
        ledgers = sorted((ROOT / "results" / "st_compare").glob("*/results.jsonl"))
        batches = {_setup_recipe(f).get("batch_size") for f in ledgers if f.parent.name in ("bow", "minilm")} - {None}
        scale = next(iter({_setup_recipe(f).get("scale") for f in ledgers} - {None}), 20.0)
        build = lambda row, model, recipe: st_compare.build_loss(row, model, "", recipe)
        for B in sorted({batch_size} if batch_size else batches or {64}):
            rows, skips = _spec_rows("sts", st_compare, {"batch_size": B, "scale": scale}, build)
            out, skipped = out + rows, skipped + skips
    if "scifact" in specs:
        recipe = {**scifact.BASE_RECIPE, **_setup_recipe(ROOT / "results" / "scifact" / "results.jsonl")}
        recipe["batch_size"] = batch_size or recipe["batch_size"]
        rows, skips = _spec_rows("scifact", scifact, recipe, scifact.build_loss)
        out, skipped = out + rows, skipped + skips
    return out, skipped


def loss_key(loss) -> tuple[str, str]:
    """(class name, configuration as JSON) of a loss: what a training record keeps as ``loss`` and
    ``loss_config`` (``st_finetuning.finetune``), so that a row's records find its case."""
    from qt_hard.experiments.specs.st_finetuning import jsonable

    config = {k: jsonable(v) for k, v in loss.get_config_dict().items()}
    return type(loss).__name__, json.dumps(config, sort_keys=True)


def _cases(rows: list[dict], d: int) -> tuple[dict, dict]:
    """(cases, references): rows with the same loss key, B and columns are one case; a reference is
    MNRL at a case's scale, B and columns, and on the pairs at its B. Each has its ``step``."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from torch import nn

    model, leaves, cases, refs = nn.Identity(), {}, {}, {}
    for r in rows:
        loss = r["build"](model)
        case = cases.setdefault((*loss_key(loss), r["B"], r["columns"]), {"rows": [], "loss": loss})
        case["rows"].append(f"{r['spec']}:{r['row']}")
        for columns in (r["columns"], 2):
            if (r["B"], columns, loss.scale) not in refs:
                refs[(r["B"], columns, loss.scale)] = {"loss": MultipleNegativesRankingLoss(model, scale=loss.scale)}
    for key, c in [*((k[2:], c) for k, c in cases.items()), *((k[:2], c) for k, c in refs.items())]:
        c["step"] = _bench.loss_step(c["loss"], leaves.setdefault(key, _bench.embeddings(key[0], d, key[1])))
    return cases, refs


def measure(rows: list[dict], d: int, reps: int, block_s: float) -> list[dict]:
    """The interleaved measurement: one dict per case, with the medians, the ratios and the per-round
    ratio range against MNRL."""
    cases, refs = _cases(rows, d)
    runners = [*cases.values(), *refs.values()]
    medians, times, calls = _bench.side_by_side([r["step"] for r in runners], reps, block_s, rotate=True)
    for r, m, t, n in zip(runners, medians, times, calls):
        r.update(median=m, times=t, calls=n)
    out = []
    for (name, config, B, columns), c in cases.items():
        ref, pairs = refs[(B, columns, c["loss"].scale)], refs[(B, 2, c["loss"].scale)]
        per_round = [a / b for a, b in zip(c["times"], ref["times"])]
        out.append({"case": c["rows"][0].split(":", 1)[1], "rows": c["rows"], "loss": name})
        out[-1].update(loss_config=json.loads(config), B=B, d=d, columns=columns, seconds=round(c["median"], 7))
        out[-1].update(mnrl_s=round(ref["median"], 7), mnrl_pairs_s=round(pairs["median"], 7))
        out[-1].update(
            ratio=round(c["median"] / ref["median"], 3), ratio_vs_pairs=round(c["median"] / pairs["median"], 3)
        )
        out[-1].update(ratio_range=[round(min(per_round), 3), round(max(per_round), 3)], reps=reps)
        out[-1]["calls_per_block"] = c["calls"]
    return out


def st_arguments(p):
    _bench.common(p, reps=9)
    p.add_argument("--specs", default=",".join(SPECS), help=f"comparisons, comma separated ({', '.join(SPECS)})")
    p.add_argument("--batch-size", type=int, default=None, help="override every row's batch size")
    p.add_argument("--dim", type=int, default=384, help="embedding width (the models': 384)")
    p.add_argument("--block-s", type=float, default=0.2, help="least seconds of one block")


def st(args):
    """Every sentence-transformers comparison row's loss as it trained against MNRL."""
    specs = [s for s in args.specs.split(",") if s]
    if not specs or set(specs) - set(SPECS) or (args.batch_size or 2) < 2 or min(args.threads, args.reps, args.dim) < 1:
        args.parser.error(f"--specs from {', '.join(SPECS)}; --batch-size >= 2; --threads, --reps, --dim >= 1")
    from qt_hard.threads import torch_threads

    t0 = time.perf_counter()
    with torch_threads(args.threads):
        rows, skipped = comparison_rows(specs, args.batch_size)
        results = measure(rows, args.dim, args.reps, args.block_s)
        stamp = _bench.stamp(__file__, args.argv)
    wall = time.perf_counter() - t0
    _bench.emit([{**r, **stamp, "run_wall_s": round(wall, 3)} for r in results], args.out)
    noise = [r["ratio"] for r in results if r["case"] in ("mnrl", "mnrl+mined")]
    ours = sorted((r for r in results if r["loss"] != "MultipleNegativesRankingLoss"), key=lambda r: r["ratio"])
    parts = [
        f"{len(ours)} HardNegativesLoss cases cost x{lo['ratio']:.2f} ({lo['case']}, B={lo['B']}) to x{hi['ratio']:.2f} "
        f"({hi['case']}, B={hi['B']}) of MNRL on the same batch and columns"
        for lo, hi in [(ours[0], ours[-1])][: len(ours) and 1]
    ]
    parts += [f"MNRL against itself x{min(noise):.2f}-x{max(noise):.2f} (the run's noise)"] if noise else []
    if skipped:
        print("not measured (the loss needs the encoder or a guide model): " + ", ".join(skipped))
        parts.append(f"{len(skipped)} rows need the encoder or a guide and are not measured")
    print(
        f"headline: {'; '.join(parts)} (forward + backward, d={args.dim}, cpu, {args.threads} thread(s), {wall:.0f} s)"
    )


main = _bench.main_of(__name__)  # its cases: each NAME_arguments(parser) with its NAME(args)


if __name__ == "__main__":
    sys.exit(main())
