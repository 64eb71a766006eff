"""Retrieval fine-tuning comparison on BEIR SciFact from all-MiniLM-L6-v2 (``qt_hard.experiments.specs.scifact``).

Three steps, each resumable (a finished cell is a line of a ledger; a rerun skips it; several processes may
share one OUT, each claiming the cell it runs):

    python scripts/scifact_compare.py --out results/scifact --select --lrs 2e-5,5e-5,1e-4 --select-steps 22,44
    python scripts/scifact_compare.py --out results/scifact --mine
    python scripts/scifact_compare.py --out results/scifact --seeds 0,1,2

``--select`` trains MNRL (seed 0) once per learning rate and measures dev and test at each of
``--select-steps`` (``OUT/recipe.jsonl``); the grid then uses the recipe with the best **dev** nDCG@10.
``--mine`` writes ``OUT/mined.jsonl`` (claim, positive, negative ids) with the starting model; rerun on an
empty OUT it regenerates the same file. Without either, the grid runs ``--rows`` x ``--seeds`` (seeds
outermost, after the starting model's ``before`` row) into ``OUT/results.jsonl`` and writes ``OUT/table.md``.
``--summary-only`` rewrites the table from the ledger.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runnable from a checkout without installing the package

from qt_hard.experiments.specs import scifact as spec  # noqa: E402
from qt_hard.script_cli import ScriptParser, output_folder, run_script, seed_list  # noqa: E402


def _floats(text: str, flag: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"{flag} must be comma-separated numbers, got {text!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise SystemExit(f"{flag} must be positive numbers, got {text!r}")
    return vals


def select(args, out: Path, ctx: dict) -> None:
    """MNRL, seed 0, once per learning rate; dev and test at each step of ``--select-steps``."""
    from qt_hard.experiments.ledger import Ledger, provenance

    steps = sorted(seed_list(args.select_steps, "--select-steps"))
    setup = {"model": spec.MINILM, "row": "mnrl", "seed": 0, "base_recipe": ctx["base_recipe"], "data": ctx["summary"]}
    ledger = Ledger(out, ("lr", "steps"), setup, name="recipe.jsonl")
    for lr in _floats(args.lrs, "--lrs"):
        if all((lr, s) in ledger.done() for s in steps):
            continue
        with ledger.claim(("lr", lr)) as mine:
            if not mine:
                continue
            recipe = {**ctx["base_recipe"], "lr": lr, "steps": max(steps)}

            def keep(step, rec, lr=lr):
                row = {"lr": lr, "steps": step, **rec, **provenance(ROOT)}
                ledger.append(row)
                print(json.dumps({k: row[k] for k in ("lr", "steps", "dev_ndcg@10", "eval_s")}), flush=True)

            rec = spec.run_cell("mnrl", 0, {**ctx, "recipe": recipe}, eval_steps=steps[:-1], on_eval=keep)
            keep(
                max(steps), {k: v for k, v in rec.items() if k.startswith(("dev_", "test_", "train_")) or k == "eval_s"}
            )


def chosen_recipe(out: Path) -> dict:
    from qt_hard.experiments.ledger import Ledger

    if not (out / "recipe.jsonl").is_file():
        raise SystemExit(f"--out {out}: no recipe.jsonl; choose the recipe on dev first (--select)")
    return spec.select_recipe(Ledger(out, ("lr", "steps"), name="recipe.jsonl").latest())


def write_summary(out: Path) -> str:
    from qt_hard.experiments.ledger import Ledger

    ledger = Ledger(out, spec.KEY)
    table = spec.summarize(ledger.latest(), (ledger.setup or {}).get("recipe"))
    (out / "table.md").write_text(table + "\n", encoding="utf-8")
    return table


def main(argv: list[str] | None = None) -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/scifact", help="results folder")
    ap.add_argument("--data", default=None, help="BEIR SciFact folder (default $QT_HARD_DATA/beir/scifact)")
    ap.add_argument("--rows", default=",".join(spec.DEFAULT_ROWS), help="NAME[+mined][+cached], comma-separated")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of this process")
    ap.add_argument("--device", default="cpu", help="cpu or cuda: where the models train and encode")
    ap.add_argument("--batch-size", type=int, default=spec.BASE_RECIPE["batch_size"], help="pairs a step")
    ap.add_argument(
        "--max-seq-length", type=int, default=None, help="cut the training inputs (default: the model's own, 256)"
    )
    ap.add_argument("--select", action="store_true", help="choose the learning rate and steps of MNRL on dev")
    ap.add_argument("--lrs", default="2e-5,5e-5,1e-4", help="--select: learning rates")
    ap.add_argument("--select-steps", default="22,44", help="--select: steps at which dev is measured")
    ap.add_argument("--mine", action="store_true", help="mine the hard negatives (OUT/mined.jsonl) and stop")
    ap.add_argument("--summary-only", action="store_true", help="write and print the table of what is there")
    ap.add_argument(
        "--write-slice",
        default=None,
        metavar="DIR",
        help="write a small BEIR folder cut from --data (12 train and 4 test claims, 12 other abstracts) and stop",
    )
    args = ap.parse_args(argv)

    if args.write_slice:
        from qt_hard.paths import data_path

        src = Path(args.data) if args.data else data_path("beir", "scifact")
        print(spec.write_slice(src, output_folder(args.write_slice, "--write-slice"), train=12, test=4, others=12))
        return 0
    out = output_folder(args.out)
    if args.summary_only:
        if not (out / "results.jsonl").is_file():
            raise SystemExit(f"--out {out}: no results.jsonl to summarize")
        print(write_summary(out))
        return 0
    rows = [r for r in args.rows.split(",") if r]
    for r in rows:
        spec.parse_row(r)
    seeds = seed_list(args.seeds)
    for flag, v, low in (("--threads", args.threads, 1), ("--batch-size", args.batch_size, 2)):
        if v < low:
            raise SystemExit(f"{flag} must be >= {low}, got {v}")
    from qt_hard.paths import data_path

    folder = Path(args.data) if args.data else data_path("beir", "scifact")
    sf = spec.Scifact(folder)  # checked before anything is trained

    import torch

    torch.set_num_threads(args.threads)
    base_recipe = {**spec.BASE_RECIPE, "batch_size": args.batch_size}
    if args.device != "cpu":  # recorded: runs on another device differ by rounding, so they are another setup
        from qt_hard.evaluation.logreg import check_device

        check_device(args.device, "--device")
        base_recipe["device"] = args.device
    if args.max_seq_length is not None:
        base_recipe["max_seq_length"] = args.max_seq_length
    ctx = {
        "base_recipe": base_recipe,
        "scifact": sf,
        "summary": sf.summary(),
        "root": ROOT,
        "workdir": Path("runs") / "scifact_work",
        "mined": lambda: spec.mine(sf, out / "mined.jsonl", args.threads, args.device),
        "device": args.device,
    }
    if args.select:
        select(args, out, ctx)
        print(json.dumps(chosen_recipe(out)))
        return 0
    if args.mine:
        print(f"{len(ctx['mined']())} mined triplets in {out / 'mined.jsonl'}")
        return 0
    return run_grid(out, rows, seeds, ctx)


def run_grid(out: Path, rows: list[str], seeds: list[int], ctx: dict) -> int:
    from qt_hard.experiments.ledger import Ledger
    from qt_hard.experiments.runner import run_claimed

    choice = chosen_recipe(out)
    recipe = {**ctx["base_recipe"], "lr": choice["lr"], "steps": choice["steps"]}
    setup = {
        "model": spec.MINILM,
        "recipe": recipe,
        "recipe_rule": choice["rule"],
        "data": ctx["summary"],
        "mined": {
            "relative_margin": spec.MINE_MARGIN,
            "range_max": spec.MINE_RANGE,
            "num_negatives": 1,
            "sampling_strategy": "top",
        },
    }
    ledger = Ledger(out, spec.KEY, setup)
    ctx = {**ctx, "recipe": recipe}
    for row, seed in [("before", None)] + [(r, s) for s in seeds for r in rows]:
        if (row, seed) in ledger.done():
            continue
        recs = run_claimed(
            ledger, (row, seed), lambda row=row, seed=seed: spec.run_cell(row, seed, ctx), key=(row, seed)
        )
        for rec in recs or []:
            keys = ("row", "seed", "dev_ndcg@10", "test_ndcg@10", "guard_removed_frac", "wall_s")
            print(json.dumps({k: rec.get(k) for k in keys}), flush=True)
    print(write_summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
