"""scripts/bench_losses.py st and the pages' loss-cost column: a row finds the benchmark case of the
loss, configuration, batch size and columns it trained with, a mismatch reads "-", and the
benchmark's ratios are its own medians divided on a tiny run."""

from __future__ import annotations

import json

import pytest
from _scripts import load_script

from docgen import finetune

HARD = {"beta": 1.0, "negatives": "hard", "scale": 20.0}
MNRL = {"scale": 20.0, "similarity_fct": "cos_sim"}


def _case(loss, config, B, columns, ratio, ratio_vs_pairs=None):
    return {
        "loss": loss,
        "loss_config": config,
        "B": B,
        "columns": columns,
        "ratio": ratio,
        "ratio_vs_pairs": ratio if ratio_vs_pairs is None else ratio_vs_pairs,
    }


BENCH = [
    _case("HardNegativesLoss", HARD, 64, 2, 1.31),
    _case("HardNegativesLoss", HARD, 64, 3, 1.12, 2.05),
    _case("MultipleNegativesRankingLoss", MNRL, 64, 3, 1.01, 1.83),
    _case("HardNegativesLoss", {**HARD, "beta": 0.5}, 32, 2, 1.2),
]


def _records(row, loss="HardNegativesLoss", config=HARD, seeds=(0, 1, 2)):
    # key order differs from the benchmark's: the match compares configurations, not their spelling
    return [{"row": row, "seed": s, "loss": loss, "loss_config": dict(reversed(config.items()))} for s in seeds]


def test_a_row_finds_the_case_of_its_loss_batch_and_columns():
    trained = finetune.trained_as(_records("hard_b1"), "hard_b1", {"batch_size": 64})
    assert finetune.cost_case(BENCH, trained)["ratio"] == 1.31
    mined = finetune.trained_as(_records("hard_b1+mined"), "hard_b1+mined", {"batch_size": 64})
    assert mined[3] == 3 and finetune.cost_case(BENCH, mined)["ratio"] == 1.12


@pytest.mark.parametrize(
    "row, records, recipe",
    [
        ("hard_b1", _records("hard_b1"), {"batch_size": 32}),  # trained at another batch size
        ("hard_b1+cached", _records("hard_b1+cached", "CachedHardNegativesLoss"), {"batch_size": 64}),  # other loss
        ("hard_b0.5", _records("hard_b0.5", config={**HARD, "beta": 0.5}), {"batch_size": 64}),  # only at B 32
        ("hard_b1", _records("hard_b1", config={**HARD, "scale": 50.0}), {"batch_size": 64}),  # other option
        ("hard_b1", _records("hard_b1") + _records("hard_b1", config=MNRL, seeds=(3,)), {"batch_size": 64}),
        ("hard_b1", [{"row": "hard_b1", "seed": 0}], {"batch_size": 64}),  # a record without its loss
        ("hard_b1", _records("hard_b1"), {}),  # a ledger without its batch size
    ],
)
def test_a_row_without_a_matching_case_gets_none(row, records, recipe):
    assert finetune.cost_case(BENCH, finetune.trained_as(records, row, recipe)) is None


def test_mined_columns_do_not_match_a_pairs_case():
    bench = [c for c in BENCH if c["columns"] == 2]
    trained = finetune.trained_as(_records("hard_b1+mined"), "hard_b1+mined", {"batch_size": 64})
    assert finetune.cost_case(bench, trained) is None


def test_the_page_reads_the_newest_run_only(tmp_path):
    (tmp_path / "results").mkdir()
    old = {**BENCH[0], "ratio": 9.0, "utc": "2020-01-01T00:00:00Z", "command": "python x"}
    new = [{**c, "utc": "2021-01-01T00:00:00Z", "command": "python x"} for c in BENCH]
    (tmp_path / finetune.ST_BENCH).write_text("".join(json.dumps(r) + "\n" for r in [old, *new]))
    run = finetune.bench_run(tmp_path)
    assert len(run) == len(BENCH) and all(r["ratio"] != 9.0 for r in run)
    assert finetune.bench_run(tmp_path / "nowhere") == []


def test_a_tiny_run_divides_its_own_medians(tmp_path, capsys):
    bench = load_script("bench_losses")
    out = tmp_path / "b.jsonl"
    argv = ["st", "--specs", "scifact", "--batch-size", "4", "--dim", "8", "--reps", "2", "--block-s", "0.001"]
    assert bench.main([*argv, "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("headline: ") and "MNRL against itself" in lines[-1]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    import torch

    from qt_hard.experiments.specs import scifact

    measurable = [
        r
        for r in scifact.DEFAULT_ROWS
        if (c := scifact.ROWS[r.split("+")[0]].changes)["loss"] != "gist"
        and not c.get("guide")
        and not c.get("relation")
    ]
    assert sorted(c for r in rows for c in r["rows"]) == sorted(f"scifact:{r}" for r in measurable)
    for r in rows:
        # seconds are rounded to 1e-7 and ratios to 1e-3: ratio * base - seconds is within what those
        # roundings allow, however small the base (a tiny run's medians are microseconds)
        for ratio, base in ((r["ratio"], r["mnrl_s"]), (r["ratio_vs_pairs"], r["mnrl_pairs_s"])):
            assert abs(ratio * base - r["seconds"]) <= 5.1e-4 * base + 5.1e-8 * (ratio + 1)
        assert r["ratio_range"][0] <= r["ratio_range"][1] and r["reps"] == 2
        assert (r["B"], r["d"], r["threads"], r["columns"]) == (4, 8, 1, 3 if "+mined" in r["case"] else 2)
        if r["columns"] == 2:
            assert r["mnrl_s"] == r["mnrl_pairs_s"]
        # the case is the loss the row's build_loss makes: what its training records name
        loss = scifact.build_loss(r["case"], torch.nn.Identity(), {**scifact.BASE_RECIPE, "batch_size": 4})
        assert (r["loss"], json.dumps(r["loss_config"], sort_keys=True)) == bench.loss_key(loss)
        assert r["command"].startswith("python scripts/bench_losses.py st --specs scifact")
        assert r["run_wall_s"] > 0 and "versions" in r
