"""BookCorpus through ``datasets`` (the hub copy, or a local folder of Parquet files), written as
Parquet shards into ``bookcorpus/``."""

from __future__ import annotations

from pathlib import Path

from qt_hard.data.download import DownloadError
from qt_hard.data.sources._common import Dataset, Options, Source

HUB = "bookcorpus/bookcorpus"
ROWS = 74_004_228  # the hub copy's train split
SOURCES = {
    "hub": Source(
        f"https://huggingface.co/datasets/{HUB}",
        note="through `datasets`; row count checked (74,004,228 sentences)",
    ),
}


def build(tmp: Path, opts: Options, rows_per_file: int = 1_000_000) -> None:
    """The train split of the hub copy (or of ``opts.source``), its text column as Parquet shards."""
    from datasets import load_dataset

    source = opts.source or HUB
    if Path(source).is_dir():
        files = sorted(str(p) for p in Path(source).rglob("*.parquet"))
        if not files:
            raise DownloadError(f"{source} holds no .parquet files")
        ds = load_dataset("parquet", data_files=files, split="train")
    else:
        ds = load_dataset(source, split="train")
    if "text" not in ds.column_names:
        raise DownloadError(f"{source}: expected a 'text' column, found {ds.column_names}")
    if source == HUB and len(ds) != ROWS:
        raise DownloadError(f"{source}: {len(ds)} rows, expected {ROWS}")
    ds = ds.select_columns(["text"])
    shards = max(1, -(-len(ds) // rows_per_file))
    for i in range(shards):
        ds.shard(shards, i, contiguous=True).to_parquet(str(tmp / f"train-{i:05d}-of-{shards:05d}.parquet"))


def check(folder: Path) -> list[str]:
    """At least one Parquet shard there."""
    return [] if any(folder.glob("*.parquet")) else ["no .parquet files"]


def bookcorpus_files(folder: Path) -> list[str]:
    """The Parquet shards ``qt-hard data get bookcorpus`` wrote, in corpus order."""
    return sorted(str(p) for p in Path(folder).glob("*.parquet"))


DATASET = Dataset(
    "bookcorpus",
    "BookCorpus (74 M sentences) through `datasets`, written as Parquet shards",
    "see the Hugging Face dataset card (Smashwords books; research use)",
    build,
    check,
    sources=SOURCES,
)
