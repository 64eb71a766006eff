"""BEIR data sets as BEIR ships them: one zip per data set holding ``NAME/corpus.jsonl``,
``NAME/queries.jsonl`` and ``NAME/qrels/SPLIT.tsv``. Those members are written unchanged, byte for
byte, into ``beir/NAME`` under the data root, then the folder is read whole (``load_beir``: every
qrels id resolves) and its counts compared with the published ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qt_hard.data.download import DownloadError, file_digest
from qt_hard.data.sources._common import Dataset, Options, Source, fetch_source, open_zip, refuse_problems, write_file


@dataclass(frozen=True)
class BeirCounts:
    """What a BEIR folder holds: documents, queries, and per qrels split its judgements (one a line
    after the header), and where given the queries they judge and the scores they use."""

    corpus: int
    queries: int
    judgements: dict[str, int]
    judged_queries: dict[str, int] = field(default_factory=dict)
    scores: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def files(self) -> tuple[str, ...]:
        return ("corpus.jsonl", "queries.jsonl", *(f"qrels/{split}.tsv" for split in self.judgements))


def count_problems(folder: Path, counts: BeirCounts) -> list[str]:
    """How the BEIR folder differs from ``counts``: a missing file, a folder ``load_beir`` refuses,
    or a count other than the published one (an empty list when it agrees)."""
    from qt_hard.data.beir import load_beir
    from qt_hard.errors import UserError

    missing = [f for f in counts.files if not (folder / f).is_file()]
    if missing:
        return [f"missing {', '.join(missing)}"]
    try:
        data = load_beir(folder, tuple(counts.judgements))
    except UserError as err:
        return [str(err)]
    have = {"corpus": len(data.doc_ids), "queries": len(data.queries)}
    want = {"corpus": counts.corpus, "queries": counts.queries}
    for split, n in counts.judgements.items():
        have[split], want[split] = sum(len(d) for d in data.qrels[split].values()), n
    problems = [f"{k}: {have[k]} entries, expected {n}" for k, n in want.items() if have[k] != n]
    for split, n in counts.judged_queries.items():
        if len(data.qrels[split]) != n:
            problems.append(f"qrels/{split}.tsv judges {len(data.qrels[split])} queries, expected {n}")
    for split, scores in counts.scores.items():
        used = sorted({s for docs in data.qrels[split].values() for s in docs.values()})
        if used != sorted(scores):
            problems.append(f"qrels/{split}.tsv uses the scores {used}, expected {sorted(scores)}")
    return problems


@dataclass
class BeirZip:
    """One BEIR data set fetched as ``NAME.zip`` (``sources`` names it, with its checksum).

    ``sha256``: the sha256 of each file written, where they are pinned (checked by ``check`` too, so
    that ``qt-hard data list`` tells a changed byte in a folder that has no ``SHA256SUMS``)."""

    name: str
    sources: dict[str, Source]
    counts: BeirCounts
    sha256: dict[str, str] = field(default_factory=dict)

    def build(self, tmp: Path, opts: Options) -> None:
        """Fetch and verify the zip, write its members unchanged into ``tmp``, then check ``tmp``."""
        archive = fetch_source(opts, self.name, self.sources[f"{self.name}.zip"])
        with open_zip(archive) as zf:
            for rel in self.counts.files:
                try:
                    data = zf.read(f"{self.name}/{rel}")
                except KeyError:
                    raise DownloadError(f"{archive.name} has no {self.name}/{rel}") from None
                write_file(tmp / rel, data)
        refuse_problems(self.name, self.check(tmp))

    def check(self, folder: Path) -> list[str]:
        """The pinned sha256 of every file present, then (when they all match) the counts."""
        problems = [
            f"{rel}: sha256 {got} differs from BEIR's {want}"
            for rel, want in self.sha256.items()
            if (folder / rel).is_file() and (got := file_digest(folder / rel)) != want
        ]
        return problems or count_problems(folder, self.counts)

    def dataset(self, summary: str, license: str) -> Dataset:
        """The ``Dataset`` that installs this zip's folder as ``beir/NAME``."""
        return Dataset(
            self.name, summary, license, self.build, self.check, home=f"beir/{self.name}", sources=self.sources
        )
