"""The training loop's step against a bare step, side by side in one process.

For each case (the bag of words on Wiki-N pairs, the Quick-Thoughts bag of words on books, the
Quick-Thoughts GRU pair on books; and for a GPU the bag of words on Wiki-1000 at B = 1,000 and S2V's
GRU pair of configs/qt_s2v.yaml at batch 400) this runs, in alternating rounds:

* ``loop``: ``qt_hard.training.loop.train`` on the case's config (CSV tracker only, no progress
  bar, no checkpoints before the end); a step is timed from one ``on_step`` call to the next, so
  it holds everything the loop does per step (its batch, the objective, clipping, the optimizer,
  logging);
* ``bare``: the same pipeline's module, objective and optimizer (fused Adam, the loop's
  default) and clipping, on batches built before the clock starts, with no loop around them.

The first ``--warmup`` steps of every run are left out; a run's rate is that of its median step
(so the loop's step that also writes a metrics row, one in 10, does not count). Each round builds
a fresh module from the same seed. A row per (case, path, round) and per case (median
sentences/s over rounds; ``ratio``, the median over rounds of loop/bare within a round;
``ratio_of_medians``) is printed as JSON; the last line is a headline with the three ratios.

    nice -n 5 python scripts/bench_train_speed.py --steps 40 --rounds 3 --out runs/bench_train_speed
    python scripts/bench_train_speed.py --cases bow_wiki1000 s2v_gru --wiki WIKI_1000_DIR   # a GPU

``--wiki`` names a Wiki folder for ``bow_wiki1000`` (its first 1,000 articles are read; without it the
case builds Wiki-1000 from ``$QT_HARD_DATA/wikipedia``); ``--case-set CASE:KEY=VALUE`` overrides one
case's config (the dry run of ``scripts/device_s2v.sh`` shrinks the cases so).

The script reads the library only through ``train``, the pipeline registry and a task's
``local_batch``, so the same file measures an older checkout (``PYTHONPATH=<checkout>``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402

CASES = {
    # The bag of words of Ash et al. on Wiki-N pairs (configs/bow_wiki_smoke.yaml's model and loss).
    "bow_wiki": {
        "model": {"kind": "bow", "dim": 128, "max_len": 128},
        "data": {"kind": "wiki", "articles": 50, "min_sentences": 200, "min_count": 5},
        "objective": {
            "negatives": "uniform",
            "temperature": 1.0,
            "normalize": False,
            "include_positive": False,
            "k": 100,
        },
        "train": {"batch_size": 256, "lr": 0.01, "grad_clip": 2.5},
    },
    # The Quick-Thoughts bag-of-words pair on books (configs/qt_books_smoke.yaml on 8 books).
    "bow_books": {
        "model": {"kind": "qt", "encoder": "bow", "embed_dim": 384, "max_len": 50},
        "data": {"kind": "books", "max_books": 8, "min_count": 3, "max_vocab": 50000},
        "objective": {
            "negatives": "hard",
            "include_positive": True,
            "context": 1,
            "options": {"beta": 1.0, "tau_plus": 0.0, "clip": "rescaled"},
        },
        "train": {"batch_size": 400, "lr": 0.005, "grad_clip": 5.0},
    },
    # The Quick-Thoughts GRU pair (64-d words, 128-d states, batches of 64) on the same books.
    "gru_books": {
        "model": {"kind": "qt", "encoder": "gru", "embed_dim": 64, "hidden_dim": 128, "max_len": 50},
        "data": {"kind": "books", "max_books": 8, "min_count": 3, "max_vocab": 50000},
        "objective": {"negatives": "uniform", "include_positive": True, "context": 1},
        "train": {"batch_size": 64, "lr": 0.0005, "grad_clip": 5.0},
    },
    # The bag of words of Ash et al. at k-versus-N's B = 1,000 row (configs/k_vs_n_b1000_long.yaml:
    # 768-d, min count 50, all 2(B-1) in-batch negatives, lr 0.01, clip 2.5) on Wiki-1000.
    "bow_wiki1000": {
        "model": {"kind": "bow", "dim": 768, "max_len": 128},
        "data": {"kind": "wiki", "articles": 1000, "min_sentences": 200, "min_count": 50, "classes": 1000},
        "objective": {"negatives": "uniform", "temperature": 1.0, "normalize": False, "include_positive": False},
        "train": {"batch_size": 1000, "lr": 0.01, "grad_clip": 2.5},
    },
    # S2V's GRU pair, configs/qt_s2v.yaml as it is (bidirectional 600 units each way, 620-d words,
    # batch 400) on its first 60 books: a vocabulary near the config's 50,001 rows at a fraction of
    # the tokenizing.
    "s2v_gru": {"from": "configs/qt_s2v.yaml", "data": {"max_books": 60}},
}


def _case_tree(case: str) -> dict:
    """The case's config tree; ``from`` names a config file whose tree the case's sections update."""
    import yaml

    spec = json.loads(json.dumps(CASES[case]))
    source = spec.pop("from", None)
    if source is None:
        return spec
    tree = yaml.safe_load((Path(__file__).resolve().parent.parent / source).read_text())
    tree.pop("note", None)
    for section, values in spec.items():
        tree.setdefault(section, {}).update(values)
    return tree


def _config(case: str, out: Path, steps: int, threads: int, overrides: list[str]):
    from qt_hard.training.config import config_from_dict

    tree = _case_tree(case)
    tree["out_dir"] = str(out)
    tree["train"].update(
        steps=steps, seed=0, checkpoint_every=0, log_every=10, trackers=["csv"], progress=False, num_threads=threads
    )
    return config_from_dict(tree, overrides)


def bare_rate(cfg, warmup: int) -> float:
    """Sentences/s of forward, loss, backward, clipping and Adam on batches built beforehand."""
    import torch
    from accelerate.utils import set_seed

    from qt_hard.pipelines import get_pipeline

    if cfg.train.num_threads:
        torch.set_num_threads(cfg.train.num_threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    set_seed(cfg.train.seed)
    run = get_pipeline(cfg.pipeline).build(cfg, Path(cfg.out_dir))
    if hasattr(run.task, "to_device"):
        run.task.to_device(device)
    module = run.module.to(device).train()
    opt = torch.optim.Adam(
        module.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay, fused=device.type in ("cpu", "cuda")
    )
    gen = torch.Generator(device=device)
    gen.manual_seed(cfg.train.seed * 1009 + 17)
    batches = [_to(run.task.local_batch(s, 0, 1), device) for s in range(cfg.train.steps)]
    stamps = []
    for step, batch in enumerate(batches):
        run.objective.set_progress(step / len(batches))
        loss = run.objective(module, batch, gen)
        loss.backward()
        if cfg.train.grad_clip:
            torch.nn.utils.clip_grad_norm_(module.parameters(), cfg.train.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        float(loss.detach())  # the loop reads the loss every step too
        stamps.append(time.perf_counter())
    _bench.sync()
    return _bench.step_rate(cfg, stamps[warmup:])


def _to(batch, device):
    if isinstance(batch, dict):
        return {k: _to(v, device) for k, v in batch.items()}
    return batch.to(device) if hasattr(batch, "to") else batch


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--steps", type=int, default=40, help="steps of every timed run")
    p.add_argument("--warmup", type=int, default=5, help="first steps of a run left out of its rate")
    p.add_argument("--rounds", type=int, default=3, help="loop/bare pairs per case (medians are reported)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (train.num_threads)")
    p.add_argument("--out", default="runs/bench_train_speed", help="run folders; data caches are kept there")
    p.add_argument("--wiki", default=None, help="Wiki folder of bow_wiki1000 (default: built from the dump)")
    p.add_argument(
        "--case-set", action="append", default=[], metavar="CASE:KEY=VALUE", help="an override of one case's config"
    )
    p.add_argument("overrides", nargs="*", help="config overrides for every case, e.g. train.batch_size=128")
    return p


def _case_overrides(p: argparse.ArgumentParser, args) -> dict[str, list[str]]:
    """Each case's own overrides: ``--wiki`` for bow_wiki1000 and every ``--case-set``."""
    per_case: dict[str, list[str]] = {c: [] for c in CASES}
    if args.wiki:
        per_case["bow_wiki1000"].append(f"data.path={Path(args.wiki).resolve()}")
    for item in args.case_set:
        case, sep, override = item.partition(":")
        if not sep or case not in CASES or "=" not in override:
            p.error(f"--case-set {item!r}: expected CASE:KEY=VALUE with CASE one of {', '.join(CASES)}")
        per_case[case].append(override)
    return per_case


def run_case(case: str, args, overrides: list[str], meta: dict) -> float:
    """The case's rounds of a loop and a bare run (a row printed per run, then the case's row);
    returns the median over rounds of loop/bare within a round."""
    rates = {"loop": [], "bare": []}
    for rnd in range(args.rounds):
        for path in ("loop", "bare"):
            # One run folder per case: the loop's data cache (tokens, Wiki-N) is built once.
            cfg = _config(case, Path(args.out) / case, args.steps, args.threads, overrides)
            t0 = time.perf_counter()
            rate = (_bench.train_rate if path == "loop" else bare_rate)(cfg, args.warmup)
            rates[path].append(rate)
            row = {"case": case, "path": path, "round": rnd, "sentences_per_s": round(rate, 1)}
            print(json.dumps({**row, "wall_s": round(time.perf_counter() - t0, 2), **meta}), flush=True)
    loop, bare = statistics.median(rates["loop"]), statistics.median(rates["bare"])
    # Each round's two runs are neighbours in time, so their ratio cancels most of what other
    # processes on the machine do; the median over rounds is the headline figure.
    paired = _bench.paired_ratio(rates["loop"], rates["bare"])
    row = {"case": case, "loop_sentences_per_s": round(loop, 1), "bare_sentences_per_s": round(bare, 1)}
    row.update(ratio=round(paired, 3), ratio_of_medians=round(loop / bare, 3), rounds=args.rounds)
    print(json.dumps({**row, **meta}), flush=True)
    return paired


def main(argv=None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    if args.steps < args.warmup + 3:
        p.error("--steps must exceed --warmup by at least 3")
    per_case = _case_overrides(p, args)
    import torch

    import qt_hard

    meta = {
        "device": _bench.device_name(),
        "torch": torch.__version__,
        "threads": args.threads,
        "library": str(Path(qt_hard.__file__).resolve().parent.parent),
        "steps": args.steps,
        "warmup": args.warmup,
    }
    ratios = {case: run_case(case, args, args.overrides + per_case[case], meta) for case in args.cases}
    print(
        f"loop/bare on {meta['device']}, {args.threads} thread(s), {args.steps} steps x {args.rounds} rounds: "
        + "; ".join(f"{c} {r:.2f}" for c, r in ratios.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
