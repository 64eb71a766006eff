"""A paraphrase training pool for fine-tuning sentence embeddings, disjoint from the similarity evaluations.

The pool joins three supervised sources of positive pairs (read from ``$QT_HARD_DATA/senteval``, SentEval's
layout, see its SOURCE.md):

* MRPC train pairs labelled paraphrase (quality 1; Dolan et al. 2004);
* SICK train pairs labelled ENTAILMENT (Marelli et al. 2014);
* STS Benchmark train pairs with a gold score >= 4 (Cer et al. 2017);

then removes every pair with a sentence that occurs in any evaluation set: every line of STS12-16's
``STS.input.*`` files (scored or not), STS Benchmark dev and test, SICK test, MRPC test. Without this the
"held-out" scores are not: STS Benchmark's train split is drawn from the same STS12-16 sets (thousands of
its pairs are in their test files) and MRPC's train sentences recur in STS12's MSRpar.

Sentence identity is decided on a normalized form (:func:`normalize_sentence`), because the files are not
written alike: STS12-16 and STS Benchmark are Moses-tokenized and lower-cased (``does n't`` , ``dominick
's``), SICK is cased, MRPC is raw text (``Dominick's``). The normal form is the NFKC text, lower-cased,
with every character that is not a letter or a digit removed (spaces and punctuation included), so
tokenization and case differences vanish. Two different sentences could only collide by differing in
spacing and punctuation alone; such a collision removes a pair, never keeps one, so the pool errs on the
side of disjointness. Sentences with an empty normal form are ignored on both sides.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import data_path

STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")


def normalize_sentence(text: str) -> str:
    """The comparison form: NFKC, lower case, letters and digits only (see the module docstring)."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


def _lines(path: Path, encoding: str = "utf-8") -> list[str]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing (see $QT_HARD_DATA/senteval/SOURCE.md)")
    with open(path, encoding=encoding, newline="") as fh:
        return fh.read().splitlines()


def _rows(path: Path, lines: list[str], n: int, start: int = 1):
    """(line number, fields) of each non-blank line of ``lines`` (``path``'s from line ``start``): at
    least ``n`` tab-separated fields, else a ``ValueError`` naming the line."""
    for lineno, line in enumerate(lines, start=start):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) < n:
            raise ValueError(f"{path}:{lineno}: expected at least {n} tab-separated fields, got {len(parts)}")
        yield lineno, parts


def mrpc_pairs(path: Path, paraphrase_only: bool = True) -> list[tuple[str, str]]:
    """(sentence_1, sentence_2) of an MRPC file (UTF-8 with BOM, a header line), quality-1 rows only by default."""
    lines = _lines(path, "utf-8-sig")
    if not lines or not lines[0].startswith("Quality"):
        raise ValueError(f"{path}:1: not an MRPC file (expected a 'Quality' header line)")
    return [(p[3], p[4]) for _, p in _rows(path, lines[1:], 5, start=2) if not paraphrase_only or p[0] == "1"]


def sick_pairs(path: Path, judgment: str | None = "ENTAILMENT") -> list[tuple[str, str]]:
    """(sentence_A, sentence_B) of a SICK file (a header line), those with ``judgment`` (None: all)."""
    return [(p[1], p[2]) for _, p in _rows(path, _lines(path)[1:], 5, start=2) if judgment is None or p[4] == judgment]


def stsb_pairs(path: Path, min_score: float | None = 4.0) -> list[tuple[str, str]]:
    """(sentence_1, sentence_2) of an STS Benchmark csv (tab separated, no header), score >= ``min_score``."""
    pairs = []
    for lineno, parts in _rows(path, _lines(path), 7):
        try:
            score = float(parts[4])
        except ValueError:
            raise ValueError(f"{path}:{lineno}: score {parts[4]!r} is not a number") from None
        if min_score is None or score >= min_score:
            pairs.append((parts[5], parts[6]))
    return pairs


def sts_input_pairs(path: Path) -> list[tuple[str, str]]:
    """Every line of an STS12-16 ``STS.input.<set>.txt`` file (two tab-separated sentences), scored or not."""
    return [(p[0], p[1]) for _, p in _rows(path, _lines(path), 2)]


def evaluation_sets(root: Path | None = None) -> dict[str, list[tuple[str, str]]]:
    """Every evaluation set's pairs by name (``STS12/MSRpar``, ..., ``STSBenchmark/test``, ``SICK/test``,
    ``MRPC/test``), read from ``root`` (default ``$QT_HARD_DATA/senteval``)."""
    root = Path(root) if root is not None else data_path("senteval")
    sets: dict[str, list[tuple[str, str]]] = {}
    for year in STS_YEARS:
        folder = root / "STS" / f"{year}-en-test"
        files = sorted(folder.glob("STS.input.*.txt"))
        if not files:
            raise FileNotFoundError(f"{folder}: no STS.input.*.txt files (see $QT_HARD_DATA/senteval/SOURCE.md)")
        for path in files:
            name = path.name[len("STS.input.") : -len(".txt")]
            sets[f"{year}/{name}"] = sts_input_pairs(path)
    for split in ("dev", "test"):
        sets[f"STSBenchmark/{split}"] = stsb_pairs(root / "STS" / "STSBenchmark" / f"sts-{split}.csv", None)
    sets["SICK/test"] = sick_pairs(root / "SICK" / "SICK_test_annotated.txt", None)
    sets["MRPC/test"] = mrpc_pairs(root / "MRPC" / "msr_paraphrase_test.txt", paraphrase_only=False)
    return sets


def evaluation_sentences(root: Path | None = None) -> set[str]:
    """The normal forms of every sentence of every evaluation set (empty forms left out)."""
    out: set[str] = set()
    for pairs in evaluation_sets(root).values():
        for pair in pairs:
            out.update(normalize_sentence(s) for s in pair)
    out.discard("")
    return out


@dataclass
class TrainingPool:
    """The pool's pairs and its bookkeeping: per source, pairs before and after the overlap removal."""

    pairs: list[tuple[str, str]]
    sources: list[str]
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict:
        return {
            "before": {**self.before, "total": sum(self.before.values())},
            "after": {**self.after, "total": sum(self.after.values())},
        }


def training_pool(root: Path | None = None) -> TrainingPool:
    """MRPC train paraphrases + SICK train ENTAILMENT + STS Benchmark train (score >= 4), without any pair
    that shares a sentence (normal form) with an evaluation set (module docstring). Order: by source, then
    file order."""
    root = Path(root) if root is not None else data_path("senteval")
    sources = {
        "MRPC/train": mrpc_pairs(root / "MRPC" / "msr_paraphrase_train.txt"),
        "SICK/train": sick_pairs(root / "SICK" / "SICK_train.txt"),
        "STSBenchmark/train": stsb_pairs(root / "STS" / "STSBenchmark" / "sts-train.csv"),
    }
    held_out = evaluation_sentences(root)
    pool = TrainingPool(pairs=[], sources=[])
    for name, pairs in sources.items():
        kept = [p for p in pairs if not {normalize_sentence(p[0]), normalize_sentence(p[1])} & held_out]
        pool.before[name], pool.after[name] = len(pairs), len(kept)
        pool.pairs.extend(kept)
        pool.sources.extend([name] * len(kept))
    return pool
