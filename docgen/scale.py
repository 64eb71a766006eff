"""Running at scale: cells side by side on one machine, and preparing K times the local books with
the extrapolation to BookCorpus."""

from __future__ import annotations

from pathlib import Path

from qt_hard.experiments import report

from docgen.markdown import join_lines
from docgen.pages import table
from docgen.results import read_jsonl


@table("bench_side_by_side", spread=False)
def _bench_side_by_side(root: Path) -> str:
    """Aggregate sentences/s of N cells side by side (scripts/bench_train.py cells), per result file."""
    parts = []
    for path in sorted((root / "results").glob("bench_side_by_side_*.jsonl")):
        rows = [r for r in read_jsonl(path) if "aggregate_sentences_per_s" in r]
        if not rows:
            continue
        r0 = rows[0]
        body = [
            [
                str(r["cells"]),
                f"{r['aggregate_sentences_per_s']:,.0f}",
                f"{r['ratio_to_one']:.2f}",
                ", ".join(f"{x:,.0f}" for x in r["per_cell_sentences_per_s"]),
                f"{r['peak_rss_mib_per_cell']:,}",
                f"{r['gpu_peak_reserved_mib_per_cell']:,}" if "gpu_peak_reserved_mib_per_cell" in r else "",
            ]
            for r in rows
        ]
        size = "toy size (`--dry`: 16-unit GRU pair, one book)" if r0["dry"] else "`configs/qt_s2v.yaml`, 60 books"
        parts += [
            f"From `results/{path.name}`: {r0['device']}, {size}, batch {r0['batch_size']}, {r0['threads_per_cell']} "
            f"thread(s) a cell, {r0['steps'] - r0['warmup']} timed steps a cell after {r0['warmup']}; "
            f"{r0['machine']}, load average {r0['load_average_1min']} at the start, commit {r0['commit']}, "
            f"{r0['utc'][:10]}. Command: `{r0['command']}`.",
            "",
            *report.markdown_table(
                ["cells", "aggregate sentences/s", "vs 1 cell", "each cell (median step)", "peak RSS a cell (MiB)"]
                + ["GPU memory a cell (MiB, reserved)"],
                body,
                "rrrrrr",
            ),
            "",
        ]
    return join_lines(*parts[:-1])


BOOKCORPUS_SENTENCES = 74_004_228  # the row count `qt-hard data get bookcorpus` verifies


def _corpus_rows(path: Path) -> list[dict]:
    """(prepare row, startup row or None) per multiple of a corpus-scale JSONL, in order."""
    rows = read_jsonl(path)
    start = {r["multiple"]: r for r in rows if r["part"] == "startup"}
    return [(r, start.get(r["multiple"])) for r in rows if r["part"] == "prepare"]


def _gib(mib) -> str:
    return "-" if mib is None else f"{mib / 1024:.2f}"


def _corpus_line(label: str, r: dict, st: dict | None) -> list[str]:
    """One table line: a multiple's prepare row ``r`` and its start-up row ``st`` (or None)."""
    m = r["sentences"] / 1e6
    return [
        f"{label}x{r['multiple']}",
        f"{m:.2f} M",
        f"{r['prepare_s']:,.0f} ({r['split_s']:,.0f})",
        f"{r['cpu_s']:,.0f}",
        f"{r['cpu_s'] / m:.0f}",
        _gib(r["peak_rss_mb"]),
        _gib(r.get("peak_anon_mb")),
        f"{r['token_bytes'] / 2**30:.2f}",
        f"{r['cache_bytes'] / 2**30:.2f}",
        f"{st['startup_s']:.1f} ({st['cpu_s']:.1f})" if st else "",
        _gib(st.get("peak_anon_mb")) if st else "",
        f"{r['load_average_1min']:.1f}",
        r["commit"],
    ]


_CORPUS_HEAD = [
    "corpus",
    "sentences",
    "prepare s (splitting)",
    "CPU s",
    "CPU s / M",
    "peak RSS GiB",
    "peak anon. GiB",
    "token arrays GiB",
    "cache on disk GiB",
    "start-up s (process CPU s)",
    "start-up anon. GiB",
    "load",
    "commit",
]


def _corpus_extrapolation(now: list) -> str:
    """BookCorpus's cost, extrapolated linearly from the largest multiple of ``now`` (its anonymous
    memory along the line through the smallest and the largest)."""
    (small, _), (big, big_start) = now[0], now[-1]
    n_small, n_big = small["sentences"], big["sentences"]
    scale = BOOKCORPUS_SENTENCES / n_big
    slope = (big["peak_anon_mb"] - small["peak_anon_mb"]) / (n_big - n_small)  # MiB a sentence
    anon_74 = small["peak_anon_mb"] + slope * (BOOKCORPUS_SENTENCES - n_small)
    return (
        f"Extrapolated to BookCorpus's {BOOKCORPUS_SENTENCES:,} sentences ({scale:.1f} times the x{big['multiple']} "
        f"corpus), linearly from the x{big['multiple']} row: preparing takes about "
        f"{big['cpu_s'] * scale / 3600:.1f} CPU-hours ({big['prepare_s'] * scale / 3600:.1f} h of wall time on this "
        f"machine at that row's load), the cache about {big['cache_bytes'] * scale / 1e9:.0f} GB on disk (of which "
        f"{big['token_bytes'] * scale / 1e9:.1f} GB token ids), and the preparing process about "
        f"{anon_74 / 1024:.1f} GiB of anonymous memory (the line through the x{small['multiple']} and "
        f"x{big['multiple']} rows)"
        + (
            f"; at x{big['multiple']} a run started from its cache in {big_start['startup_s']:.0f} s "
            f"({big_start['cpu_s']:.0f} CPU s), holding {big_start['peak_anon_mb'] / 1024:.1f} GiB of anonymous memory."
            if big_start
            else "."
        )
    )


@table("corpus_scale", spread=False)
def _corpus_scale(root: Path) -> str:
    """Preparing K times the local books from an empty cache, and the start-up from it
    (scripts/bench_data.py corpus), with the extrapolation to BookCorpus's sentences."""
    body = []
    files = [
        ("", root / "results" / "corpus_scale.jsonl"),
        ("before, ", root / "results" / "corpus_scale_before.jsonl"),
    ]
    for label, path in files:
        for r, st in _corpus_rows(path) if path.is_file() else []:
            body.append(_corpus_line(label, r, st))
    now = _corpus_rows(root / "results" / "corpus_scale.jsonl")
    r0 = now[0][0]
    before = len(body) > len(now)
    return join_lines(
        f"From `results/corpus_scale.jsonl` ({r0['machine']}, torch {r0['torch']}, {r0['utc'][:10]}; command "
        f"`{r0['command']}`)"
        + (", and the same script on the code before it (`results/corpus_scale_before.jsonl`)" if before else "")
        + ". Wall seconds follow the machine's load (load: the 1-minute load average when the script started; other "
        "work shared the two cores), CPU seconds (the process and its splitting workers) much less. Peak RSS and "
        "anonymous memory (RSS less the read pages of memory-mapped files) of the preparing process; start-up: from "
        "the call of `train` to its first step, with a 16-d model, from the prepared cache.",
        "",
        report.markdown_table(_CORPUS_HEAD, body, "lrrrrrrrrrrrl"),
        "",
        _corpus_extrapolation(now),
    )
