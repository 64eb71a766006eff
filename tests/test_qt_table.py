"""The QT table (``qt_hard.experiments.specs.qt_table``, ``qt-hard grid run qt-table``): the paper's rows,
atomic result lines, the summary and the plot (no training)."""

import json
import os
from pathlib import Path

import pytest

from qt_hard.experiments.grid import GridError
from qt_hard.experiments.ledger import LedgerError
from qt_hard.experiments.specs import qt_table as spec


@pytest.fixture(scope="module")
def qt_table():
    return spec


def _ledger(folder, setup):
    """The table's ledger in ``folder`` (``setup`` None: read only), as the grid command opens it."""
    return spec.Table2().ledger(folder, "results.jsonl", setup)


def test_paper_rows_parse_table2(qt_table, tmp_path):
    text = (
        "Objective\tMR\tCR\tSUBJ\tMPQA\tTREC\tMSRP (Acc) (F1)\n"
        "QT ( $\\beta = 0, \\tau^+ = 0$ )\t70.1\t71.2\t72.3\t73.4\t<b>74.5</b>\t75.6\t80.0\n"
        "Hard ( $\\beta = 2, \\tau^+ = 0$ )\t60.1\t61.2\t62.3\t63.4\t64.5\t65.6\t70.0\n"
    )
    (tmp_path / "p.txt").write_text(text)
    rows = qt_table.paper_rows(tmp_path / "p.txt")
    assert set(rows) == {"uniform", "hard2"}
    assert rows["uniform"]["TREC"] == 74.5 and rows["hard2"]["MRPC"] == 65.6
    assert qt_table.paper_rows(tmp_path / "absent.txt") == {}


def test_real_paper_has_all_four_rows(qt_table):
    paper = os.environ.get("QT_HARD_PAPER")  # the HCL paper's text, as `--paper` takes it
    if not paper:
        pytest.skip("set QT_HARD_PAPER to the HCL paper's text")
    paper = Path(paper)
    rows = qt_table.paper_rows(paper)
    assert set(rows) == set(qt_table.ROWS)
    assert all(50 < v < 100 for r in rows.values() for v in r.values())


def test_results_append_read_summary_and_plot(qt_table, tmp_path):
    path = tmp_path / "results.jsonl"
    setup = {"config": "c.yaml", "overrides": []}
    ledger = _ledger(tmp_path, setup)
    for row, base in [("uniform", 70.0), ("hard1", 71.0)]:
        for seed in range(3):
            acc = {t: base + seed * 0.1 + i for i, t in enumerate(qt_table.TASKS)}
            ledger.append({"row": row, "seed": seed, "protocol": "senteval", "acc": acc})
    with open(path, "a") as f:
        f.write('{"row": "hard2", "se')  # a torn line is ignored
    recs = _ledger(tmp_path, None).latest()
    assert len(recs) == 6 and json.loads(path.read_text().splitlines()[1])["row"] == "uniform"
    table, parts = qt_table.summarize(recs, "senteval", {})
    assert "70.1 ± 0.1" in table and "+1.0" in table
    assert parts["diffs"]["hard1"]["mean"] == pytest.approx([1.0] * 6)
    assert table.splitlines()[-1].startswith("Against uniform on the six-task mean")
    assert "**better**: hard1 +1.00 [+1.00, +1.00]" in table.splitlines()[-1]
    qt_table.plot(parts, {}, tmp_path / "d.png")
    assert (tmp_path / "d.png").stat().st_size > 1000
    assert "No objective" not in qt_table.summarize(recs, "senteval", {})[0]
    assert qt_table.summarize(recs, "skipthoughts", {})[1]["stats"] == {}
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(qt_table.csv_text(recs))))
    assert [(r["row"], r["seed"]) for r in rows] == [
        ("uniform", "0"),
        ("uniform", "1"),
        ("uniform", "2"),
        ("hard1", "0"),
        ("hard1", "1"),
        ("hard1", "2"),
    ]
    assert float(rows[1]["MR"]) == pytest.approx(70.1) and float(rows[3]["mean"]) == pytest.approx(73.5)


def test_summary_of_a_single_seed(qt_table, tmp_path):
    """One finished run (the first of a table) summarizes with a 0.0 spread instead of failing."""
    acc = {t: 70.0 + i for i, t in enumerate(qt_table.TASKS)}
    rec = {"row": "uniform", "seed": 0, "protocol": "senteval", "acc": acc}
    table, parts = qt_table.summarize([rec], "senteval", {})
    assert "70.0 ± 0.0" in table and parts["stats"]["uniform"]["n"] == 1
    hard = {"row": "hard1", "seed": 0, "protocol": "senteval", "acc": {t: v + 0.1 for t, v in acc.items()}}
    table = qt_table.summarize([rec, hard], "senteval", {})[0]
    assert "**not judged**: hard1 +0.10 (1 paired)" in table.splitlines()[-1]  # no claim from one pair


def test_unknown_protocol_is_a_clear_error(qt_table):
    with pytest.raises(GridError, match="no such protocol"):
        qt_table.protocol("skip-thoughts")
    for name in ("skipthoughts", "senteval"):
        assert callable(qt_table.protocol(name).evaluate) and callable(qt_table.protocol(name).report)


def test_row_names(qt_table):
    row = qt_table.row_spec("hard2-fig14-floor")
    label, obj = row.label, row.changes
    assert obj == {"negatives": "hard", "options": {"beta": 2.0, "tau_plus": 0.0, "clip": "fig14", "floor": "hard"}}
    assert "fig14" in label and "floor" in label
    opts = qt_table.row_spec("hard1-none-anneal").changes["options"]
    assert opts["beta"] == {"schedule": "beta_anneal", "beta": 1.0, "changes": 4, "direction": "down"}
    assert opts["floor"] == "none"
    assert qt_table.row_spec("hard1.5-graph_code-warmup").changes["options"]["beta"]["schedule"] == "linear"
    assert qt_table.row_spec("uniform-floor").changes == {
        "negatives": "uniform",
        "options": {"tau_plus": 0.0, "floor": "hard"},
    }
    assert qt_table.row_spec("hard1").changes["options"]["clip"] == "rescaled"
    for bad in ("hard1-nope", "hard-none", "soft1-none", "hard1-none-floor-anneal-x"):
        with pytest.raises(GridError, match="unknown row"):
            qt_table.row_spec(bad)
    order = sorted(["hard2-none", "uniform", "hard1-rescaled", "uniform-floor", "hard1"], key=qt_table.row_order)
    assert order[:3] == ["uniform", "uniform-floor", "hard1"]


def test_a_ledger_of_the_earlier_script_resumes(qt_table, tmp_path):
    """A folder written by the table's earlier script (the same ledger format and setup) goes on: its
    finished (row, seed, protocol) are skipped, another setup is refused, and a results file without
    the ledger's header line is refused rather than read."""
    rec = {"row": "uniform", "seed": 0, "protocol": "senteval", "acc": {t: 70.0 for t in qt_table.TASKS}}
    setup = {"config": "c.yaml", "overrides": ["a=1"]}
    header = {"ledger": 1, "setup": setup}
    (tmp_path / "results.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(rec) + "\n")
    assert _ledger(tmp_path, {"config": "c.yaml", "overrides": ["a=1"]}).done() == {("uniform", 0, "senteval")}
    with pytest.raises(LedgerError, match="another setup"):
        _ledger(tmp_path, {"config": "c.yaml", "overrides": []})
    (tmp_path / "results.jsonl").write_text(json.dumps(rec) + "\n")
    with pytest.raises(LedgerError, match="not a results ledger header"):
        _ledger(tmp_path, setup)


def test_dev_table_and_diagnostics_figure(qt_table, tmp_path):
    recs = [
        {
            "row": r,
            "seed": s,
            "protocol": "senteval",
            "acc": {t: 70.0 + s for t in qt_table.TASKS},
            "devacc": {t: 71.0 + s + (r != "uniform") for t in qt_table.TASKS},
        }
        for r in ("uniform", "hard1-none")
        for s in (0, 1)
    ]
    table = qt_table.summarize(recs, "senteval", {}, field="devacc")[0]
    assert "dev accuracy" in table and "+1.0" in table
    run = tmp_path / "runs" / "hard1-none_s0"
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text(
        "step,loss,ess_frac,w_ratio_median,pushed_up_frac,score_std,floor_binds_frac\n"
        "50,5.9,0.9,2.0,0.01,0.3,0\n100,5.8,0.8,3.0,0.02,0.4,0\n"
    )
    assert qt_table.plot_diagnostics(tmp_path, tmp_path / "diag.png")
    assert (tmp_path / "diag.png").stat().st_size > 1000


def test_quick_start_trains_the_row_the_dev_scores_chose(qt_table):
    """configs/qt_books_smoke.yaml trains the readings table's row with the best six-task SentEval dev
    mean among the rows with 5 seeds (results/readings/results.jsonl), objective for objective."""
    import statistics

    import yaml

    root = Path(__file__).resolve().parent.parent
    devs: dict = {}
    for line in (root / "results" / "readings" / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if "row" in rec and rec["protocol"] == "senteval":
            devs.setdefault(rec["row"], []).append(statistics.mean(rec["devacc"].values()))
    five = {row: statistics.mean(v) for row, v in devs.items() if len(v) >= 5}
    assert "uniform" in five and len(five) >= 4  # uniform and the three best hard rows
    best = max(five, key=five.get)
    objective = yaml.safe_load((root / "configs" / "qt_books_smoke.yaml").read_text())["objective"]
    chosen = qt_table.row_spec(best).changes
    assert objective["negatives"] == chosen["negatives"]
    assert objective.get("options", {}) == chosen["options"]


@pytest.mark.parametrize("beta", [1, 2])
def test_clamp_rows_parse_and_build(qt_table, beta):
    from qt_hard.negatives import make_strategy

    row = qt_table.row_spec(f"hard{beta}-clamp")
    label, obj = row.label, row.changes
    assert obj == {
        "negatives": "hard",
        "options": {"beta": float(beta), "tau_plus": 0.0, "clip": "clamp", "floor": "none"},
    }
    assert "clamp" in label
    strat = make_strategy(obj["negatives"], **obj["options"])
    assert strat.weightings[0].clip == "clamp"


# ---------------------------------------------------------------- the similarity protocol
def _sim_record(qt_table, row, seed, base):
    spear = {t: base + i + 0.1 * seed for i, t in enumerate(qt_table.SIM_TASKS)}
    return {"row": row, "seed": seed, "protocol": "similarity", "spearman": spear, "pearson": spear}


def test_similarity_summary_pairs_by_seed_and_judges_by_the_paired_interval(qt_table):
    recs = [_sim_record(qt_table, "uniform", s, 50.0) for s in range(3)]
    recs += [_sim_record(qt_table, "hard1-rescaled-anneal", s, 51.0) for s in range(3)]
    recs += [_sim_record(qt_table, "hard2", s, 50.0 + 0.05 * (s - 1)) for s in (0, 1)]  # two seeds only
    # +0.3 on average, above uniform's spread of 0.1, but per seed +0.9, -0.5, +0.5: the interval holds 0
    recs += [_sim_record(qt_table, "hard1", s, 50.0 + d) for s, d in enumerate((0.9, -0.5, 0.5))]
    table, parts = qt_table.summarize_similarity(recs)
    # the similarity mean: (mean of STS12-16 + STS-B cos + SICK-R cos) / 3 = (52 + 55 + 56) / 3 for uniform seed 0
    assert parts["stats"]["uniform"]["mean"][-1] == pytest.approx((52.1 + 55.1 + 56.1) / 3)
    assert parts["spread"][-1] == pytest.approx(0.1)  # uniform's seeds: 0.0, 0.1, 0.2 apart
    assert parts["diffs"]["hard1-rescaled-anneal"] == pytest.approx([1.0] * 10)
    assert parts["verdict"] == {"hard1": "level", "hard1-rescaled-anneal": "better", "hard2": "not judged"}
    # hard2 is paired on its own two seeds: (50 - 0.05 - 50) and (50 + 0.1 - 50.1) -> -0.025
    assert parts["diffs"]["hard2"][0] == pytest.approx(-0.025)
    assert "50.1 ± 0.1" in table and "+1.00*" in table and "| 2 |" in table
    assert "+1.00 [+1.00, +1.00]* | better |" in table and "| level |" in table
    assert table.splitlines()[-1].startswith("Against uniform on the Sim. mean, paired by seed")
    one = qt_table.summarize_similarity(recs[:1] + recs[3:4])[0]
    assert "**not judged**" in one.splitlines()[-1]
    assert callable(qt_table.protocol("similarity").evaluate) and callable(qt_table.protocol("similarity").report)


def test_the_report_of_a_ledger_of_both_protocols(qt_table, tmp_path, capsys):
    """A ledger holding senteval and similarity records (as the table's earlier script wrote them):
    the report writes the similarity table from the similarity records alone, and results.csv and
    table.md from the senteval ones alone."""
    led = _ledger(tmp_path, {"config": "c.yaml", "overrides": []})
    for seed in range(2):
        for row, base in [("uniform", 70.0), ("hard1-clamp", 71.0)]:
            acc = {t: base + seed + i for i, t in enumerate(qt_table.TASKS)}
            led.append({"row": row, "seed": seed, "protocol": "senteval", "acc": acc, "devacc": acc})
            led.append({**_sim_record(qt_table, row, seed, base - 20), "sim_mean": base - 20 + seed})
    recs = _ledger(tmp_path, None).latest()
    from qt_hard.experiments.gridrun import experiment, write_tables

    write_tables(experiment("qt-table"), tmp_path)
    sim = (tmp_path / "table_similarity.md").read_text()
    assert sim == qt_table.summarize_similarity(recs)[0] + "\n"
    assert "| Hard (beta=1, clamp) | 2 |" in sim and "| 50.5 ± 0.7 |\n" in sim  # uniform's stored sim_mean: 50, 51
    assert "| Hard (beta=1, clamp) (ours) | 2 |" in (tmp_path / "table.md").read_text()
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert len(lines) == 5 and all(",senteval," in line for line in lines[1:])
    assert sim.rstrip("\n") in capsys.readouterr().out


def test_similarity_protocol_on_a_toy_run_then_added_without_training(qt_table, tmp_path, monkeypatch, capsys):
    """Train a 2-step toy run under --protocol similarity; then --protocol senteval,similarity on the
    same folder evaluates the transfer tasks from final/ without training again."""

    import yaml
    from _similarity import use_sizes, write_similarity
    from test_eval_senteval import fixture_lines, write_senteval
    from test_training import qt_config

    from qt_hard.data.sources import senteval as senteval_source

    data = write_similarity(write_senteval(tmp_path / "senteval"))
    use_sizes(monkeypatch)
    monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines())
    cfg = tmp_path / "toy.yaml"
    cfg.write_text(yaml.safe_dump(qt_config(tmp_path, steps=2)))
    out = tmp_path / "table"
    base = ["grid", "run", "qt-table", "--out", str(out), "--config", str(cfg), "--seeds", "0", "--rows", "uniform"]
    base += ["--data", str(data), "--kfold", "2"]
    from qt_hard.cli import main

    assert main([*base, "--protocol", "similarity"]) == 0
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()[1:]]
    assert [(r["row"], r["protocol"]) for r in recs] == [("uniform", "similarity")]
    assert set(recs[0]["spearman"]) == set(qt_table.SIM_TASKS) and recs[0]["sim_mean"] is not None
    assert "| QT (beta=0, tau+=0) | 1 |" in (out / "table_similarity.md").read_text()

    import qt_hard.training.loop as loop

    monkeypatch.setattr(loop, "train", lambda *a, **k: (_ for _ in ()).throw(AssertionError("trained again")))
    assert main([*base, "--protocol", "senteval,similarity"]) == 0
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()[1:]]
    assert [r["protocol"] for r in recs] == ["similarity", "senteval"]
    assert "STS12" in capsys.readouterr().out


def test_cells_side_by_side_share_the_cpus_unless_told_a_thread_count(monkeypatch):
    import argparse

    from qt_hard import workers
    from qt_hard.experiments.specs import qt_table

    monkeypatch.setattr(workers, "usable_cpus", lambda: 16)
    cores = qt_table._shared_cores
    assert cores(argparse.Namespace(workers=1, set=[])) == []
    assert cores(argparse.Namespace(workers=4, set=["train.progress=false"])) == ["train.num_threads=4"]
    assert cores(argparse.Namespace(workers=32, set=[])) == ["train.num_threads=1"]
    assert cores(argparse.Namespace(workers=4, set=["train.num_threads=2"])) == []
