"""The decision page's retrieval answer reads both datasets: per dataset the row chosen on dev against
MNRL itself at two levels (with its test nDCG@10 and Recall@100), "being measured" for a dataset without
records, and whether the two agree; hand-made ledgers with per-query scores."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path


def _ledger(folder: Path, gain: float, queries: int = 30, complete: bool = False) -> None:
    """MNRL and ``mask_relevant`` at seeds 0-2; the mask ``gain`` points above MNRL on every query;
    ``complete``: every other row of the grid too, each equal to MNRL."""
    from qt_hard.experiments.specs.scifact import DEFAULT_ROWS

    rng = random.Random(0)
    base = {q: 40 + 20 * rng.random() for q in range(queries)}
    setup = {"recipe": {"lr": 5e-5, "steps": 40, "batch_size": 4}, "data": {"training_queries": 41}}
    lines = [json.dumps({"ledger": 1, "setup": setup})]
    before = {"row": "before", "seed": None, "test_ndcg@10": 30.0, "test_recall@100": 31.5}
    lines.append(json.dumps({**before, "dev_ndcg@10": 29.0, "test_mrr@10": 50.0}))
    others = [(r, 0.0) for r in DEFAULT_ROWS if r not in ("mnrl", "mask_relevant")] if complete else []
    for row, plus in (("mnrl", 0.0), ("mask_relevant", gain), *others):
        # the other rows differ from MNRL by noise alone, a point either way a query
        noise = random.Random(row) if (row, plus) in others else None
        for seed in range(3):
            rec = {"row": row, "seed": seed}
            pq = {}
            for split in ("dev", "test"):
                scores = {
                    str(q): v + plus + 0.1 * seed + 0.01 * q % 0.07 + (noise.uniform(-1, 1) if noise else 0.0)
                    for q, v in base.items()
                }
                pq[split] = {m: scores for m in ("ndcg@10", "rr@10", "recall@100")}
                for m in ("ndcg@10", "rr@10", "recall@100"):
                    rec[f"{split}_{m}"] = sum(scores.values()) / len(scores)
            lines.append(json.dumps({**rec, "per_query": pq}))
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n")


def test_mnrl_alone_is_still_being_measured(tmp_path):
    """MNRL's records without a row beside it choose nothing: no "no row better" over zero rows."""
    from docgen.decision import _retrieval_row

    _ledger(tmp_path / "results" / "nfcorpus", gain=2.0)
    ledger = tmp_path / "results" / "nfcorpus" / "results.jsonl"
    lines = ledger.read_text().splitlines()
    ledger.write_text("\n".join(x for x in lines if '"mask_relevant"' not in x) + "\n")
    assert "NFCorpus (false negatives common): being measured" in _retrieval_row(tmp_path)[1]


def test_the_answer_names_each_datasets_choice_and_whether_they_agree(tmp_path):
    from docgen.decision import _retrieval_row

    _ledger(tmp_path / "results" / "nfcorpus", gain=2.0)
    what = _retrieval_row(tmp_path)
    assert "SciFact (false negatives rare): being measured" in what[1]
    assert "NFCorpus (false negatives common): `mask_relevant`, better than MNRL on dev" in what[1]
    assert "Recall@100 +2.00" in what[2] and "**better**" in what[2] and "agree" not in what[1]
    # the recipe in epochs (41 queries, 10 full batches of 4 an epoch) and MNRL on test beside the start
    assert "lr 5e-05, 40 steps of 4 (4 epochs)" in what[2]
    assert "MNRL on test, 3 seeds: nDCG@10 " in what[2] and "(the starting model: 30.00, 31.50)" in what[2]
    # one screen holds every setting: the page counts the rows still measured, the guide names them
    assert "(so far 1 of the grid's 14 rows judged)" in what[1] and "Under 3 seeds" not in what[2]
    _ledger(tmp_path / "results" / "scifact", gain=0.0)
    what = _retrieval_row(tmp_path)
    assert "SciFact (false negatives rare): MNRL: no row better on dev" in what[1]
    # two partial grids are not compared: they would "agree" on rows neither has judged
    assert "agree" not in what[1]
    for name, gain in (("nfcorpus", 2.0), ("scifact", 0.0)):
        shutil.rmtree(tmp_path / "results" / name)
        _ledger(tmp_path / "results" / name, gain=gain, complete=True)
    what = _retrieval_row(tmp_path)
    assert "so far" not in what[1] and "`mask_relevant`, better than MNRL on dev" in what[1]
    assert what[1].endswith("the two disagree: choose by how common they are")


def test_the_guides_answer_block_reads_the_same_choice(tmp_path):
    """The retrieval guide's answer block says the same per dataset as the decision page, one line each,
    "being measured" without a ledger, and whether the datasets agree once both grids are complete."""
    from docgen.pages import REGISTRY

    make = REGISTRY["retrieval-answer"].make
    assert make(tmp_path).count("being measured") == 2
    _ledger(tmp_path / "results" / "nfcorpus", gain=2.0)
    text = make(tmp_path)
    assert "* **NFCorpus** (false negatives common): `mask_relevant`, better than MNRL on dev (so far 1 of" in text
    # an answer over part of the grid names the rows it waits for, and what moved on test
    assert "Under 3 seeds yet: `hard_b1`, " in text
    assert "Against MNRL on test: `mask_relevant` nDCG@10 +2.00 [" in text
    assert "* **SciFact** (false negatives rare): being measured" in text and "agree" not in text
    _ledger(tmp_path / "results" / "scifact", gain=2.0)
    assert make(tmp_path).endswith("Whether the two datasets agree is said once both grids are complete.")
    for name in ("nfcorpus", "scifact"):
        shutil.rmtree(tmp_path / "results" / name)
        _ledger(tmp_path / "results" / name, gain=2.0, complete=True)
    assert make(tmp_path).endswith(
        "The two datasets agree: the same choice, and the same verdicts against MNRL on test."
    )


def test_where_the_datasets_differ_is_said_on_the_guide_and_the_decision_page(tmp_path):
    """Both grids complete: a different choice is named per dataset, and a row whose test verdict
    against MNRL is better or worse on one dataset and not on the other is listed, on both pages."""
    from docgen.decision import _retrieval_row
    from docgen.pages import REGISTRY

    make = REGISTRY["retrieval-answer"].make
    # the same choice (MNRL kept on both), but the mask costs 2 points on NFCorpus alone
    _ledger(tmp_path / "results" / "nfcorpus", gain=-2.0, complete=True)
    _ledger(tmp_path / "results" / "scifact", gain=0.0, complete=True)
    text = make(tmp_path)
    assert text.splitlines()[-1].startswith("The two datasets agree on the choice; where they differ: ")
    assert "`mask_relevant` nDCG@10 on test: equivalent on SciFact, worse on NFCorpus" in text
    assert "`mask_relevant` Recall@100 on test: equivalent on SciFact, worse on NFCorpus" in text
    what = _retrieval_row(tmp_path)
    assert what[1].endswith("the two agree on the choice")
    assert "where the two differ: `mask_relevant` nDCG@10 on test: equivalent on SciFact, worse on NFCorpus" in what[2]
    # different choices: each is named
    shutil.rmtree(tmp_path / "results" / "nfcorpus")
    _ledger(tmp_path / "results" / "nfcorpus", gain=2.0, complete=True)
    text = make(tmp_path)
    assert (
        "The two datasets disagree; where they differ: SciFact chooses `mnrl`, NFCorpus chooses `mask_relevant`" in text
    )
    assert _retrieval_row(tmp_path)[1].endswith("the two disagree: choose by how common they are")
