"""The TU Dortmund graph datasets (TUDataset, Morris et al. 2020) in their original text format,
one folder each under ``tu/``, each installed on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from qt_hard.data.download import DownloadError
from qt_hard.data.sources._common import Dataset, Options, Source, fetch_source, open_zip, safe_member, write_file
from qt_hard.data.sources._common import refuse_problems

BASE = "https://www.chrsmrrs.com/graphkerneldatasets"
# (graphs, nodes) per TU dataset, the published TUDataset statistics; None where only the graph
# count is checked.
COUNTS = {
    "MUTAG": (188, 3371),
    "PTC_MR": (344, 4915),
    "ENZYMES": (600, 19580),
    "PROTEINS": (1113, 43471),
    "IMDB-BINARY": (1000, 19773),
    "IMDB-MULTI": (1500, 19502),
    "DD": (1178, None),
    "REDDIT-BINARY": (2000, None),
}
SOURCES = {
    f"{ds}.zip": Source(f"{BASE}/{ds}.zip", note="TU publishes no checksums: graph/node counts checked")
    for ds in COUNTS
}


def build_part(ds: str) -> Callable[[Path, Options], None]:
    """The builder of the folder ``tu/ds``: the zip's ``ds/`` files, then their counts checked."""

    def build(tmp: Path, opts: Options) -> None:
        with open_zip(fetch_source(opts, "tu", SOURCES[f"{ds}.zip"])) as zf:
            members = [
                n
                for n in zf.namelist()
                if safe_member(n) and n.startswith(f"{ds}/") and not n.endswith("/") and "__MACOSX" not in n
            ]
            if not members:
                raise DownloadError(f"{ds}.zip holds no {ds}/ folder")
            for n in members:
                write_file(tmp / n[len(ds) + 1 :], zf.read(n))
        refuse_problems(f"tu/{ds}", check_part(tmp, ds))

    return build


def _count_lines(path: Path) -> tuple[int, int]:
    """(lines, largest integer on a line) of a TU indicator/label file."""
    n, top = 0, None
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                n += 1
                v = int(line.split(b",")[0])
                top = v if top is None or v > top else top
    return n, top or 0


def check_part(folder: Path, ds: str) -> list[str]:
    """The three files TU's loaders read, with the published graph (and node) counts."""
    need = [f"{ds}_A.txt", f"{ds}_graph_indicator.txt", f"{ds}_graph_labels.txt"]
    missing = [f for f in need if not (folder / f).is_file()]
    if missing:
        return [f"{ds}: missing {', '.join(missing)}"]
    graphs, nodes = COUNTS[ds]
    n_labels, _ = _count_lines(folder / f"{ds}_graph_labels.txt")
    n_nodes, top = _count_lines(folder / f"{ds}_graph_indicator.txt")
    problems = []
    if n_labels != graphs or top != graphs:
        problems.append(f"{ds}: {n_labels} graph labels and graph ids up to {top}, expected {graphs}")
    if nodes is not None and n_nodes != nodes:
        problems.append(f"{ds}: {n_nodes} nodes, expected {nodes}")
    return problems


DATASET = Dataset(
    "tu",
    "TU Dortmund graph datasets: MUTAG, PTC_MR, ENZYMES, PROTEINS, IMDB-BINARY, IMDB-MULTI, DD, "
    "REDDIT-BINARY, original text format",
    "no license stated; research use with citation of TUDataset (Morris et al. 2020) and each source",
    None,
    None,
    parts=tuple(COUNTS),
    part_build=build_part,
    part_check=check_part,
    sources=SOURCES,
)
