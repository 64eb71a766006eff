"""Packed per-query scores (qt_hard.experiments.report.pack_per_query): each split's query ids once and
each metric's scores as a list; read in either form by the verdicts, with the same tables; and
scripts/pack_per_query.py, which packs a ledger only where its table stays the same text."""

from __future__ import annotations

import json
import random

import pytest

from _scripts import load_script
from qt_hard.errors import ArgumentError, UserError
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.report import pack_per_query, per_query_means, query_scores
from qt_hard.experiments.specs.scifact import KEY, summarize

METRICS = ("ndcg@10", "rr@10", "recall@100")


def _record(row: str, seed: int, shift: float, rng: random.Random, n: int = 40) -> dict:
    """A retrieval record with full-precision per-query scores: a fixed base per query, ``shift`` and noise."""
    per = {
        split: {m: {f"q{i}": 30.0 + (i * 7.3) % 50 + shift + rng.gauss(0, 2) for i in range(n)} for m in METRICS}
        for split in ("dev", "test")
    }
    rec = {"row": row, "seed": seed, "per_query": per, "test_mrr@10": 0.0}
    for split in ("dev", "test"):
        for m in ("ndcg@10", "recall@100"):
            rec[f"{split}_{m}"] = sum(per[split][m].values()) / n
    return rec


def _records(seeds=range(3)) -> list[dict]:
    rng = random.Random(5)
    shifts = {"mnrl": 0.0, "hard_b1": 0.9, "hard_b0.5": 0.2, "mnrl+mined": -0.6, "hard_b1+mined": 0.4}
    return [_record(row, s, shift, rng) for row, shift in shifts.items() for s in seeds]


def test_packing_keeps_each_split_s_ids_once_and_scores_to_four_decimals():
    per = _records()[0]["per_query"]
    packed = pack_per_query(per)
    for split in ("dev", "test"):
        assert packed[split]["queries"] == sorted(per[split]["ndcg@10"])
        for m in METRICS:
            got = query_scores({"per_query": packed}, split, m)
            assert got.keys() == per[split][m].keys()
            assert all(abs(got[q] - per[split][m][q]) <= 5e-5 for q in got)
            assert got != per[split][m]  # rounded: full floats would not survive four decimals
            assert query_scores({"per_query": per}, split, m) == per[split][m]  # the unpacked form reads as it is
    assert pack_per_query(packed) == packed  # packing twice changes nothing
    assert len(json.dumps(packed)) < 0.6 * len(json.dumps(per))
    assert query_scores({"per_query": packed}, "dev", "map@100") is None and query_scores({}, "dev", "ndcg@10") is None


def test_packing_refuses_metrics_over_other_queries_and_reading_refuses_a_short_list():
    per = {"dev": {"ndcg@10": {"a": 1.0, "b": 2.0}, "rr@10": {"a": 1.0}}}
    with pytest.raises(ArgumentError, match="dev rr@10 scores other queries"):
        pack_per_query(per)
    short = {"seed": 0, "per_query": {"dev": {"queries": ["a", "b"], "ndcg@10": [1.0]}}}
    with pytest.raises(ArgumentError, match="1 per-query dev ndcg@10 scores for 2 queries"):
        query_scores(short, "dev", "ndcg@10")


def test_the_table_and_its_verdicts_are_the_same_text_packed_unpacked_or_mixed():
    records = _records()
    packed = [{**r, "per_query": pack_per_query(r["per_query"])} for r in records]
    mixed = [p if i % 2 else r for i, (r, p) in enumerate(zip(records, packed))]
    table = summarize(records)
    assert "| `hard_b1` | `mnrl` | 3 |" in table and "Chosen on dev" in table
    assert summarize(packed) == table and summarize(mixed) == table
    means = per_query_means(records[:3], {0, 1, 2}, "test", "recall@100")
    assert per_query_means(mixed[:3], {0, 1, 2}, "test", "recall@100") == pytest.approx(means, abs=5e-5)


def _ledger(folder, records) -> Ledger:
    led = Ledger(folder, KEY, {"recipe": {"lr": 5e-5, "steps": 8}})
    for r in records:
        led.append(r)
    return led


def test_the_script_packs_a_ledger_once_and_only_where_its_table_stays_the_same(tmp_path, monkeypatch):
    script = load_script("pack_per_query")
    records = _records()
    led = _ledger(tmp_path / "a", records)
    size = led.path.stat().st_size
    table = summarize(led.latest(), {"lr": 5e-5, "steps": 8})
    line = script.pack_folder(tmp_path / "a")
    assert line.endswith("table unchanged") and f"{size:,} ->" in line
    assert led.path.stat().st_size < 0.6 * size
    assert all("queries" in r["per_query"]["dev"] for r in led.records())
    assert summarize(led.latest(), {"lr": 5e-5, "steps": 8}) == table
    packed_text = led.path.read_text()
    assert script.main([str(tmp_path / "a")]) == 0 and led.path.read_text() == packed_text  # idempotent
    # a packing that loses what the table prints is refused and leaves the file
    other = _ledger(tmp_path / "b", records)
    before = other.path.read_text()
    monkeypatch.setattr(script, "pack_per_query", lambda per: pack_per_query(per, decimals=0))
    with pytest.raises(UserError, match="packing changes line"):
        script.pack_folder(tmp_path / "b")
    assert other.path.read_text() == before
    assert script.main([str(tmp_path / "missing")]) == 2
