"""CIFAR-10 (Krizhevsky 2009), the python version: the official archive's
``cifar-10-batches-py`` folder, into ``cifar10/``."""

from __future__ import annotations

import pickle
from pathlib import Path

from qt_hard.data.sources._common import Dataset, Options, Source, fetch_source, safe_member, write_file
from qt_hard.data.sources._common import read_targz, refuse_problems

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
SOURCES = {
    # md5 published on https://www.cs.toronto.edu/~kriz/cifar.html
    "cifar-10-python.tar.gz": Source(URL, md5="c58f30108f718f92721af3b95e74349a"),
}
FILES = (
    "data_batch_1",
    "data_batch_2",
    "data_batch_3",
    "data_batch_4",
    "data_batch_5",
    "test_batch",
    "batches.meta",
)


def build(tmp: Path, opts: Options) -> None:
    """Fetch and verify the archive, write its batches into ``tmp``, then unpickle every batch."""
    archive = fetch_source(opts, "cifar10", SOURCES["cifar-10-python.tar.gz"])
    prefix = "cifar-10-batches-py/"
    with read_targz(archive) as tf:
        for m in tf:
            if not m.isfile() or not m.name.startswith(prefix) or not safe_member(m.name):
                continue
            write_file(tmp / m.name, tf.extractfile(m).read())
    refuse_problems("cifar10", check(tmp))


def check(folder: Path, deep: bool = True) -> list[str]:
    """The seven files there; with ``deep``, every batch unpickled and of CIFAR's shape and type."""
    base = folder / "cifar-10-batches-py"
    missing = [f for f in FILES if not (base / f).is_file()]
    if missing:
        return [f"cifar-10-batches-py: missing {', '.join(missing)}"]
    if not deep:
        return []
    problems = []
    for name in FILES[:-1]:
        try:
            with open(base / name, "rb") as fh:
                batch = pickle.load(fh, encoding="latin1")
            n = len(batch["labels"])
            if batch["data"].shape != (n, 3072) or str(batch["data"].dtype) != "uint8":
                problems.append(f"{name}: data {batch['data'].shape} {batch['data'].dtype}, labels {n}")
        except Exception as err:  # noqa: BLE001 - any unreadable batch is a corrupt dataset
            problems.append(f"{name} cannot be read ({type(err).__name__}: {err})")
    return problems


DATASET = Dataset(
    "cifar10",
    "CIFAR-10 python version, the official archive (163 MB)",
    "no formal license; cite Krizhevsky 2009",
    build,
    check,
    sources=SOURCES,
)
