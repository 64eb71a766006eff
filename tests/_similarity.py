"""Tiny STS12-16, STS Benchmark and SICK files in SentEval's layout and formats, for the tests.

Each pair is a random sentence and a copy with some words replaced; its gold score falls with the
share replaced, so an encoder that sees words scores above zero. STS15 and STS16 leave every third
gold line empty (pairs SentEval skips), as the real files do. ``sizes`` gives the line and pair
counts to put in place of SentEval's (``use_sizes``), since the loaders check them.
"""

from __future__ import annotations

import numpy as np

WORDS = "man woman dog cat plays runs eats guitar ball park street red small old the a is on in with".split()


def _pair(rng, score_range=(0.0, 5.0)):
    n = int(rng.integers(4, 9))
    s1 = list(rng.choice(WORDS, size=n))
    k = int(rng.integers(0, n + 1))
    s2 = list(s1)
    for i in rng.choice(n, size=k, replace=False):
        s2[i] = str(rng.choice(WORDS))
    lo, hi = score_range
    score = float(np.clip(hi - (hi - lo) * k / n + rng.normal(0, 0.3), lo, hi))
    return " ".join(s1), " ".join(s2), score


def sizes(n: int = 24) -> dict:
    """The counts of ``write_similarity(root, n)`` in the shape of ``qt_hard.data.catalog``'s tables."""
    from qt_hard.data.sources.sts import STS_SETS

    scored = {"STS15": n - n // 3, "STS16": n - n // 3}
    return {
        "STS_SETS": {y: {s: (n, scored.get(y, n)) for s in sets} for y, sets in STS_SETS.items()},
        "STSB_LINES": {"train": 5 * n, "dev": 2 * n, "test": 2 * n},
        "SICK_LINES": {"train": 5 * n + 1, "trial": 2 * n + 1, "test_annotated": 2 * n + 1},
    }


def use_sizes(monkeypatch, n: int = 24) -> None:
    from qt_hard.data.sources import sts

    for name, value in sizes(n).items():
        monkeypatch.setattr(sts, name, value)


def write_similarity(root, n: int = 24, seed: int = 0):
    """Write ``root/STS/...`` and ``root/SICK/...`` (``root``: a SentEval folder); returns root."""
    from qt_hard.data.sources.sts import STS_SETS

    rng = np.random.default_rng(seed)
    for year, sets in STS_SETS.items():
        folder = root / "STS" / f"{year}-en-test"
        folder.mkdir(parents=True, exist_ok=True)
        for name in sets:
            inputs, gold = [], []
            for i in range(n):
                s1, s2, score = _pair(rng)
                inputs.append(f"{s1}\t{s2}")
                gold.append("" if year in ("STS15", "STS16") and i % 3 == 2 else f"{score:.3f}")
            (folder / f"STS.input.{name}.txt").write_text("\n".join(inputs) + "\n", encoding="utf-8")
            (folder / f"STS.gs.{name}.txt").write_text("\n".join(gold) + "\n", encoding="utf-8")
    stsb = root / "STS" / "STSBenchmark"
    stsb.mkdir(parents=True, exist_ok=True)
    for split, m in (("train", 5 * n), ("dev", 2 * n), ("test", 2 * n)):
        lines = []
        for i in range(m):
            s1, s2, score = _pair(rng)
            lines.append(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.3f}\t{s1}\t{s2}")
        (stsb / f"sts-{split}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sick = root / "SICK"
    sick.mkdir(parents=True, exist_ok=True)
    for split, m in (("train", 5 * n), ("trial", 2 * n), ("test_annotated", 2 * n)):
        lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        for i in range(m):
            s1, s2, score = _pair(rng, (1.0, 5.0))
            lines.append(f"{i + 1}\t{s1}\t{s2}\t{score:.1f}\tNEUTRAL")
        end = "\r\n" if split == "test_annotated" else "\n"  # the real test file has CRLF line ends
        (sick / f"SICK_{split}.txt").write_bytes((end.join(lines) + end).encode("utf-8"))
    return root
