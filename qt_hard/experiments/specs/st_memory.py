"""Peak memory of a fine-tuning row against its GradCache (``+cached``) form: what the similarity and the
retrieval comparisons' memory probes share (the probe and its table: docs/guides/retrieval.md, "The
setup", Memory).

Records (``OUT/memory.jsonl``, key ``(row, batch)``): ``peak_rss_mb``, ``peak_rss_mb_before_steps``,
``step_s``, ``steps``, ``machine_mb`` (the machine's physical memory).
"""

from __future__ import annotations

import os
import resource
import time

from qt_hard.errors import ArgumentError
from qt_hard.experiments.contract import Cell, Context


def machine_mb() -> float:
    """The machine's physical memory (MB)."""
    return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20, 1)


def memory_steps(model, loss, examples: list[tuple[str, ...]], batch: int, steps: int, lr: float) -> dict:
    """``steps`` AdamW steps of ``loss`` at ``lr`` on ``batch`` examples (text tuples: anchor, positive
    [, negative]) drawn without replacement (seed 0) from ``examples``; the peak resident memory (MB)
    before and after them and the seconds a step."""
    import random

    import torch

    if batch > len(examples):
        raise ArgumentError(f"--memory-batch {batch} exceeds the {len(examples)} training examples")
    rng = random.Random(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    for _ in range(steps):
        drawn = rng.sample(examples, batch)
        feats = [model.preprocess([e[i] for e in drawn]) for i in range(len(drawn[0]))]
        opt.zero_grad()
        loss(feats, None).backward()
        opt.step()
    return {
        "peak_rss_mb_before_steps": round(rss0 / 1024, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "step_s": round((time.perf_counter() - t) / steps, 2),
        "machine_mb": machine_mb(),
    }


def in_fresh_process(fn, *args):
    """``fn(*args)`` in a process of its own (spawned), so that its peak memory is its own."""
    from qt_hard.workers import process_pool

    with process_pool(1) as ex:
        return ex.submit(fn, *args).result()


class MemoryProbe:
    """The memory probe of a comparison, mixed in before the comparison's option class: cells
    ``(row, batch)`` for ``--memory ROW`` and its ``+cached`` form at each of ``--memory-batch``.

    The comparison gives ``probe_fn`` (a module-level function of one dict, run in a fresh process),
    ``probe_args(args, out, setup)`` (what it needs besides row, batch and steps) and ``parse_row``;
    ``mined_ok`` says whether ``ROW`` may train on the mined triplets."""

    key = ("row", "batch")
    ledger_name = "memory.jsonl"
    seeds = ""
    mined_ok = False

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--memory", default=None, metavar="ROW", help="the row (without +cached)")
        parser.add_argument("--memory-batch", default="512", help="batch sizes, comma-separated")
        parser.add_argument("--memory-steps", type=int, default=3)
        parser.add_argument(
            "--memory-cached-only", action="store_true", help="measure only the +cached form (batches too large)"
        )

    def check(self, args) -> None:
        from qt_hard.experiments.grid import seed_list

        if args.memory is None:
            raise ArgumentError("--memory: give the row to measure (without +cached)")
        _, mined, cached = self.parse_row(args.memory)
        if cached or (mined and not self.mined_ok):
            what = "+cached" if self.mined_ok else "+mined or +cached"
            raise ArgumentError(
                f"--memory {args.memory}: give a row without {what}; the probe measures the row and its +cached form"
            )
        self.batches = seed_list(args.memory_batch, "--memory-batch")
        if min(self.batches) < 2 or args.memory_steps < 1:
            raise ArgumentError("--memory-batch must be >= 2 and --memory-steps >= 1")
        super().check(args)

    def cells(self, args, rows, seeds) -> list[Cell]:
        forms = [f"{args.memory}+cached"] if args.memory_cached_only else [args.memory, f"{args.memory}+cached"]
        return [Cell((row, b)) for b in self.batches for row in forms]

    def run(self, cell: Cell, ctx: Context) -> dict:
        args, out, setup = ctx.args, ctx.out, ctx.setup

        row, batch = cell.claim
        probe = {**self.probe_args(args, out, setup), "row": row, "batch": batch, "steps": args.memory_steps}
        measured = in_fresh_process(self.probe_fn, probe)
        return {"row": row, "batch": batch, "steps": args.memory_steps, **measured}

    def progress(self, record: dict) -> str:
        return f"{record['row']} at batch {record['batch']}: peak {record['peak_rss_mb']} MB"


def latest_records(out, name: str = MemoryProbe.ledger_name, key: tuple = MemoryProbe.key) -> list[dict]:
    """The newest record of each ``key`` in the folder's ledger ``out/name`` (by default the memory probe's;
    a comparison's is ``results.jsonl``, key ``(row, seed)``); [] when the folder has none."""
    from pathlib import Path

    from qt_hard.experiments.ledger import Ledger

    return Ledger(out, key, name=name).latest() if (Path(out) / name).is_file() else []


def with_memory_table(table: str, out) -> str:
    """A comparison's ``table`` and under it, when the folder has a memory ledger, its :func:`memory_table`."""
    memory = latest_records(out)
    return table + "\n" + "\n".join(memory_table(memory)) if memory else table


def _line_through(points: list[tuple[int, float]]):
    """The least-squares line (intercept, slope) through (batch, MB) points, or None for fewer than two
    distinct batches."""
    if len({b for b, _ in points}) < 2:
        return None
    n = len(points)
    mb = sum(b for b, _ in points) / n
    mm = sum(m for _, m in points) / n
    slope = sum((b - mb) * (m - mm) for b, m in points) / sum((b - mb) ** 2 for b, _ in points)
    return mm - slope * mb, slope


def memory_table(memory: list[dict]) -> list[str]:
    """The table of peak resident memory per memory record, and, for a cached form measured at a batch
    its uncached form was not, that form's peak extrapolated from its measured batches."""
    from qt_hard.experiments.report import markdown_table

    heads = ["Row", "batch", "steps", "peak RSS before the steps", "peak RSS", "s / step"]
    peaks = ("peak_rss_mb_before_steps", "peak_rss_mb")
    body = [[f"`{m['row']}`", m["batch"], m["steps"], *(f"{m[k]:.0f}" for k in peaks), m["step_s"]] for m in memory]
    lines = ["", "Peak resident memory of a few training steps, each in a fresh process (MB; `ru_maxrss`):", ""]
    lines += markdown_table(heads, body, "lrrrrr")
    return lines + _extrapolated(memory)


def _extrapolated(memory: list[dict]) -> list[str]:
    measured = {(m["row"], m["batch"]) for m in memory}
    notes = []
    for m in memory:
        base = m["row"].removesuffix("+cached")
        if base == m["row"] or (base, m["batch"]) in measured:
            continue
        line = _line_through([(r["batch"], r["peak_rss_mb"]) for r in memory if r["row"] == base])
        if line is None:
            continue
        need = line[0] + line[1] * m["batch"]
        fits = "more than" if need > m.get("machine_mb", float("inf")) else "within"
        notes.append(
            f"At batch {m['batch']}, `{base}` would need about {need:,.0f} MB (the straight line through its "
            f"measured batches, {line[1]:.1f} MB an example), {fits} this machine's {m.get('machine_mb', 0):,.0f} "
            f"MB; `{m['row']}` peaked at {m['peak_rss_mb']:,.0f} MB."
        )
    return ["", *notes] if notes else []
