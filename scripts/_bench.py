"""What the benchmarks of scripts/ share: one command line of cases (``bench_<group>.py <case> ...``)
with their common arguments (``--reps``, ``--threads``, the JSONL of ``--out``), pinned threads,
back-to-back timed blocks run interleaved and ratios paired by round, fixed embeddings for the loss
benchmarks, the rate of a training run's median step, the training configs they time, and the rows
printed and appended to a JSONL with ``qt_hard.experiments.ledger.measurement_stamp``.

A script imports it from beside itself (``python scripts/<name>.py`` puts the script's folder first on
``sys.path``; the tests load a script the same way). It imports the library inside its functions only
and leaves ``sys.path`` alone: ``bench_train.py loop`` measures whichever checkout ``PYTHONPATH`` names.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def common(ap, *, jsonl: str | None = "--out", threads: int | None = 1, reps: int | None = None):
    """Add the common arguments to ``ap``: ``reps`` rounds (``--reps``), torch threads (``--threads``,
    pinned) and the JSONL the rows are appended to (``jsonl``, ``--out`` unless told); None leaves one
    out."""
    if reps is not None:
        ap.add_argument("--reps", type=int, default=reps, help="rounds, each a block of every side (medians reported)")
    if threads is not None:
        ap.add_argument("--threads", type=int, default=threads, help="torch threads (pinned)")
    if jsonl:
        ap.add_argument(jsonl, default=None, help="JSONL file the rows are appended to")
    return ap


def cases_of(module) -> dict:
    """A benchmark script's cases, in the order the script defines them: each ``NAME_arguments(parser)``
    (the case's own arguments) with its ``NAME(args)`` (the measurement; its docstring's first line is
    the case's help)."""
    found = {}
    for name, fn in vars(module).items():
        if name.endswith("_arguments") and callable(fn) and callable(vars(module).get(name[: -len("_arguments")])):
            found[name[: -len("_arguments")]] = (fn, vars(module)[name[: -len("_arguments")]])
    return found


def cli(module, argv=None) -> int:
    """Run the case of ``module`` (a benchmark script, :func:`cases_of`) named by the first argument.
    Returns the measurement's status (0 for None)."""
    ap = argparse.ArgumentParser(description=module.__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="case", required=True, metavar="CASE")
    for name, (arguments, run) in cases_of(module).items():
        p = sub.add_parser(name, help=run.__doc__.splitlines()[0], description=run.__doc__.splitlines()[0])
        arguments(p)
        p.set_defaults(_measure=run, parser=p)
    args = ap.parse_args(argv)
    args.argv = argv  # the command a row records: this process's own where None
    return args._measure(args) or 0


def main_of(name: str):
    """The ``main(argv=None)`` of the benchmark script imported as ``name``: :func:`cli` over its cases."""
    return lambda argv=None: cli(sys.modules[name], argv)


def stamp(script: str, argv: list[str] | None = None) -> dict:
    """``measurement_stamp`` of a run of ``scripts/<script>`` with ``argv`` (default: this process's)."""
    from qt_hard.experiments.ledger import measurement_stamp

    return measurement_stamp(ROOT, [f"scripts/{Path(script).name}", *(sys.argv[1:] if argv is None else argv)])


def emit(rows: list[dict], path: str | os.PathLike | None = None) -> None:
    """Print each row as a JSON line and append it to ``path`` when given (its folder made)."""
    from qt_hard.experiments.report import append_json_line

    for row in rows:
        print(append_json_line(path, row), flush=True)


def pin_threads(n: int, evaluation: bool = False) -> None:
    """torch on ``n`` threads; with ``evaluation``, the embedding cache's encoder and the evaluation's
    solver too (``QT_HARD_EVAL_THREADS``, ``logreg.DEFAULT_THREADS``)."""
    import torch

    torch.set_num_threads(n)
    if evaluation:
        from qt_hard.evaluation import logreg

        os.environ["QT_HARD_EVAL_THREADS"] = str(n)
        logreg.DEFAULT_THREADS = n


def sync(device=None) -> None:
    """Wait for the GPU's queued work: on ``device`` where it is a CUDA device; None: wherever torch
    sees a GPU."""
    import torch

    if torch.cuda.is_available() if device is None else torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, calls: int = 1, device=None) -> float:
    """Seconds per call of ``fn`` over ``calls`` back-to-back calls (on a CUDA ``device``, from and
    to an idle queue; None: no wait)."""
    if device is not None:
        sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    if device is not None:
        sync(device)
    return (time.perf_counter() - start) / calls


def side_by_side(fns: list, reps: int, block_s: float = 0.2, device=None, rotate: bool = False):
    """``reps`` rounds, each a block of every function in turn (the order rotated by one each round with
    ``rotate``), so that a noisy machine slows every side alike; a block is back-to-back calls lasting
    about ``block_s`` (small cases take milliseconds: the calls average scheduler noise out), after one
    warm-up call (the allocator, the kernels). Returns (the median seconds per call of each function,
    each one's seconds per call in every round, each one's calls a block)."""
    calls = []
    for fn in fns:
        fn()
        calls.append(max(1, int(block_s / max(timed(fn, 1, device), 1e-6))))
    times: list[list[float]] = [[] for _ in fns]
    for r in range(reps):
        k = r % len(fns) if rotate else 0
        for i in [*range(k, len(fns)), *range(k)]:
            times[i].append(timed(fns[i], calls[i], device))
    return [statistics.median(t) for t in times], times, calls


def embeddings(b: int, d: int, columns: int, seed: int = 0) -> list:
    """Fixed (b, d) leaves of each column of a loss benchmark: anchors in b / 8 topics (8 pairs a
    topic), positives near their anchors and ``columns - 2`` negative columns farther, so that some
    in-batch candidates of the same topic outscore a positive (a guard has work to do)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(max(1, b // 8), d, generator=g)
    anchors = centers[torch.arange(b) % centers.shape[0]] + 0.3 * torch.randn(b, d, generator=g)
    cols = [anchors, anchors + 0.9 * torch.randn(b, d, generator=g)]
    cols += [anchors + 1.2 * torch.randn(b, d, generator=g) for _ in range(columns - 2)]
    return [c.clone().requires_grad_() for c in cols]


def loss_step(loss, leaves: list):
    """One forward + backward of a sentence-transformers loss on fixed embeddings (no encoder runs:
    the losses keep a model but never call it on embeddings)."""

    def step():
        for leaf in leaves:
            leaf.grad = None
        loss.compute_loss_from_embeddings(leaves, None).backward()

    return step


def device_name() -> str:
    """The GPU's name, else ``cpu (N cores)``."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"cpu ({os.cpu_count()} cores)"


def paired_ratio(a: list[float], b: list[float]) -> float:
    """The median over rounds of ``a / b`` within a round: neighbours in time, so the ratio cancels
    most of what other processes on the machine do."""
    return statistics.median(x / y for x, y in zip(a, b))


def sentences_per_step(cfg) -> int:
    """Sentences of one training step: a batch of pairs holds two sentences a pair."""
    return cfg.train.batch_size * (2 if cfg.data.kind in ("wiki", "synthetic") else 1)


def step_rate(cfg, stamps: list[float]) -> float:
    """Sentences per second of the median step between consecutive clock readings: on a shared
    machine the mean would follow whichever run another process happened to preempt."""
    steps = [b - a for a, b in zip(stamps, stamps[1:])]
    return sentences_per_step(cfg) / statistics.median(steps)


def train_rate(cfg, warmup: int) -> float:
    """Sentences/s of the training loop's median step after ``warmup`` steps (clock read at each
    ``on_step``, once the step's loss is a float). The run replaces any earlier run in its folder
    (``overwrite``: the data cache under ``cache/`` is kept, so tokens and Wiki-N are built once)."""
    from qt_hard.training.loop import train

    stamps: list[float] = []
    train(cfg, on_step=lambda step, loss: stamps.append(time.perf_counter()), overwrite=True)
    return step_rate(cfg, stamps[warmup:])


def timed_config(source, out: Path, overrides: list[str], steps: int | None = None):
    """A training config built for timing (``source``: a config file or a config tree): into ``out``,
    CSV tracker only, no progress bar, no checkpoints before the end, then ``overrides``."""
    from qt_hard.training.config import config_from_dict, load_config

    quiet = ["train.checkpoint_every=0", "train.progress=false", "train.trackers=[csv]", f"out_dir={out}"]
    quiet += [f"train.steps={steps}"] if steps else []
    if isinstance(source, dict):
        return config_from_dict(source, [*quiet, *overrides])
    return load_config(source, [*quiet, *overrides])
