"""The evaluation protocols: SentEval's and skip-thoughts' on the same embeddings, the similarity
suite, and the fast engine against SentEval's own."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.specs import qt_table

from docgen.markdown import captioned, join_lines
from docgen.pages import table
from docgen.results import read_jsonl
from docgen.text import qt_csv_records, qt_ledger, six_row


@table("eval_protocols", spread=False)
def _eval_protocols(root: Path) -> str:
    """The two SentEval protocols on the same embeddings (MiniLM), and a random bag of words."""
    res = root / "results"
    rows = [
        ("all-MiniLM-L6-v2, skip-thoughts protocol", res / "minilm_skipthoughts_protocol.json"),
        ("all-MiniLM-L6-v2, SentEval protocol", res / "minilm_senteval_protocol.json"),
        ("random 768-d bag of words, SentEval protocol", res / "senteval_engine" / "random_bow_six_tasks_fast.json"),
    ]
    body = [six_row(label, json.loads(path.read_text())["results"], f1=True) for label, path in rows]
    head = ["model", "MR", "CR", "SUBJ", "MPQA", "TREC", "MSRP acc / F1", "mean"]
    files = ", ".join(f"`{path.relative_to(root).as_posix()}`" for _, path in rows)
    return join_lines(f"Test accuracy (%), from {files}.", "", report.markdown_table(head, body, "lrrrrrrr"))


@table("eval_similarity", spread=False)
def _eval_similarity(root: Path) -> str:
    """MiniLM and a random bag of words on the similarity suite (bench_eval.py similarity rows)."""
    labels = {
        "minilm": "all-MiniLM-L6-v2",
        "random:bow": "random 768-d bag of words (vocabulary fitted on the evaluated sentences)",
    }
    last = {r["model"]: r for r in read_jsonl(root / "results" / "bench_similarity.jsonl")}  # a model's newest row
    body = []
    for model in labels:
        r = last[model]
        sc = r["similarity"]["scores"]
        years = statistics.mean(sc[f"STS1{y}"] for y in range(2, 7))
        mean = (years + sc["STSBenchmark-cos"] + sc["SICKRelatedness-cos"]) / 3
        body.append([labels[model], *(f"{sc[t]:.2f}" for t in qt_table.SIM_TASKS[:7]), f"{mean:.2f}"])
        body[-1] += [f"{sc[t]:.2f}" for t in qt_table.SIM_TASKS[7:]]
    head = ["model", *qt_table.SIM_HEADS[:7], "Sim. mean", *qt_table.SIM_HEADS[7:9]]
    return join_lines(
        "Spearman x100, test; STS12-16 the mean over each year's sets; Sim. mean: the mean of the STS12-16 mean, "
        "STS-B cos and SICK-R cos. From `results/bench_similarity.jsonl`.",
        "",
        report.markdown_table(head, body, "l" + "r" * (len(head) - 1)),
    )


def _engine_runs(root: Path, *names: str) -> list[dict]:
    folder = root / "results" / "senteval_engine"
    return [json.loads((folder / f"{name}.json").read_text()) for name in names]


def _acc_dev(r: dict) -> str:
    return f"{r['acc']:.2f} ({r['devacc']:.2f})"


def _minus(a: dict, b: dict) -> str:
    """a - b, test accuracy (dev accuracy)."""
    return f"{a['acc'] - b['acc']:+.2f} ({a['devacc'] - b['devacc']:+.2f})"


@table("senteval_engine_minilm", spread=False)
def _senteval_engine_minilm(root: Path) -> str:
    """MiniLM on CR and MRPC under the fast engine, SentEval's engine and the ``--reference`` loop."""
    names = ("minilm_cr_mrpc_fast", "minilm_cr_mrpc_senteval", "minilm_cr_mrpc_reference")
    fast, engine, ref = _engine_runs(root, *names)
    body = []
    for task in ("CR", "MRPC"):
        a, b, c = (run["results"][task] for run in (fast, engine, ref))
        body.append([f"{task} acc (dev)", _acc_dev(a), _acc_dev(b), _acc_dev(c), _minus(b, a)])
    a, b, c = (run["results"]["MRPC"] for run in (fast, engine, ref))
    body.append(["MRPC F1", f"{a['f1']:.2f}", f"{b['f1']:.2f}", f"{c['f1']:.2f}", f"{b['f1'] - a['f1']:+.2f}"])
    encoding = sum(r["encode_seconds"] for r in fast["results"].values())
    walls = [f"{run['meta']['wall_seconds']:.1f} s" for run in (fast, engine, ref)]
    body.append(["wall time of the run", f"{walls[0]} ({encoding:.0f} s of it encoding)", *walls[1:], ""])
    head = ["task, metric", "fast engine", "SentEval engine (`sklearn`)", "`--reference`", "SentEval - fast"]
    files = ", ".join(f"`{n}.json`" for n in names)
    return captioned(f"From `results/senteval_engine/`: {files}.", head, body, "lrrrr")


@table("senteval_engine_bow", spread=False)
def _senteval_engine_bow(root: Path) -> str:
    """``random:bow`` on the six tasks under the fast engine and SentEval's, per task, with seconds."""
    fast, engine = _engine_runs(root, "random_bow_six_tasks_fast", "random_bow_six_tasks_senteval")
    body = []
    for task in ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC"):
        a, b = fast["results"][task], engine["results"][task]
        body.append([task, _acc_dev(a), _acc_dev(b), _minus(b, a), f"{a['seconds']:.1f}", f"{b['seconds']:.1f}"])
    a, b = fast["results"]["MRPC"], engine["results"]["MRPC"]
    body.append(["MRPC F1", f"{a['f1']:.2f}", f"{b['f1']:.2f}", f"{b['f1'] - a['f1']:+.2f}", "", ""])
    head = ["task", "fast acc (dev)", "SentEval acc (dev)", "SentEval - fast", "fast seconds", "SentEval seconds"]
    return captioned(
        "From `results/senteval_engine/random_bow_six_tasks_fast.json` and `random_bow_six_tasks_senteval.json` "
        f"(wall time of the runs: fast {fast['meta']['wall_seconds']:.1f} s, SentEval "
        f"{engine['meta']['wall_seconds']:.1f} s).",
        head,
        body,
        "lrrrrr",
    )


@table("protocol_differences")
def _protocol_differences(root: Path) -> str:
    """Skip-thoughts minus SentEval protocol on the same trained runs, per task and the six-task mean."""
    body = []
    for label, name in (
        ("bag of words, 300-d (CPU scale)", "qt_table.csv"),
        ("S2V's GRU, 2,400-d", "qt_table_gpu.csv"),
    ):
        recs = qt_csv_records(root / "results" / name)
        by = {
            p: {(r["row"], r["seed"]): r["acc"] for r in recs if r["protocol"] == p}
            for p in ("senteval", "skipthoughts")
        }
        runs = sorted(set(by["senteval"]) & set(by["skipthoughts"]))
        cells = []
        for t in [*qt_table.TASKS, None]:
            d = [
                (statistics.mean(by["skipthoughts"][k].values()) - statistics.mean(by["senteval"][k].values()))
                if t is None
                else by["skipthoughts"][k][t] - by["senteval"][k][t]
                for k in runs
            ]
            cells.append(f"{statistics.mean(d):+.2f} ± {report.spread(d):.2f}")
        body.append([label, str(len(runs)), *cells])
    caption = (
        "Skip-thoughts protocol minus SentEval's on the same run, test accuracy (points): mean ± sample std over "
        "the runs (every row and seed of the table), from `results/qt_table.csv` and `results/qt_table_gpu.csv`."
    )
    return captioned(caption, ["runs", "n", *qt_table.TASKS[:-1], "MSRP", "six-task mean"], body, "lr" + "r" * 7)


@table("subj_mpqa", spread=False)
def _subj_mpqa(root: Path) -> str:
    """SUBJ against MPQA for every encoder measured here (the paper's Table 2 has MPQA above SUBJ)."""
    res = root / "results"
    rows = []
    for label, path in (
        ("all-MiniLM-L6-v2, SentEval protocol", res / "minilm_senteval_protocol.json"),
        ("all-MiniLM-L6-v2, skip-thoughts protocol", res / "minilm_skipthoughts_protocol.json"),
        ("random 768-d bag of words, SentEval protocol", res / "senteval_engine" / "random_bow_six_tasks_fast.json"),
    ):
        r = json.loads(path.read_text())["results"]
        rows.append((label, [r["SUBJ"]["acc"]], [r["MPQA"]["acc"]], f"`{path.relative_to(root).as_posix()}`"))
    for label, name in (("our QT, CPU scale", "qt_table.csv"), ("our QT, S2V's sizes", "qt_table_gpu.csv")):
        for protocol in ("senteval", "skipthoughts"):
            recs = [r for r in qt_csv_records(res / name) if r["row"] == "uniform" and r["protocol"] == protocol]
            subj, mpqa = [r["acc"]["SUBJ"] for r in recs], [r["acc"]["MPQA"] for r in recs]
            rows.append((f"{label}, uniform, {protocol} protocol", subj, mpqa, f"`results/{name}`"))
    for row in ("uniform", "hard2-clamp"):
        recs = [r for r in qt_ledger(root, "readings") if r["row"] == row and r.get("protocol") == "senteval"]
        subj, mpqa = [r["acc"]["SUBJ"] for r in recs], [r["acc"]["MPQA"] for r in recs]
        rows.append((f"the quick-start setting, `{row}`, SentEval protocol", subj, mpqa, "`results/readings/`"))
    body, gaps = [], []
    for label, subj, mpqa, src in rows:
        gaps.append(statistics.mean(subj) - statistics.mean(mpqa))
        body.append([label, f"{statistics.mean(subj):.2f}", f"{statistics.mean(mpqa):.2f}", f"{gaps[-1]:+.2f}", src])
    return join_lines(
        "Test accuracy (%; means over seeds where there are several):",
        "",
        report.markdown_table(["encoder", "SUBJ", "MPQA", "SUBJ - MPQA", "source"], body, "lrrrl"),
        "",
        f"SUBJ is above MPQA for every encoder here, by {min(gaps):.1f} to {max(gaps):.1f} points.",
    )
