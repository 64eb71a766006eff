"""The results tables of the docs pages, written from the result files they cite.

A page (Markdown under ``docs/``, and ``README.md``) holds blocks::

    <!-- generated: NAME -->

    ...the table...

    <!-- /generated -->

and ``REGISTRY`` maps each NAME to a function of the checkout's root that returns the block's
Markdown, computed by the specs' own table code (``qt_hard.experiments.report``,
``qt_hard.experiments.specs``) from the ledgers, CSVs and benchmark JSONL under ``results/``. Every
block that compares runs ends with a link to the definitions of the spread and the verdict
(``docs/comparisons.md``): ``report.spread`` and ``report.paired_verdict``.

    python -m docgen --check   # exit 1 naming each stale block (or an unknown NAME)
    python -m docgen --write   # rewrite every block from its files
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from qt_hard.experiments import report

__all__ = ["REGISTRY", "Block", "UnknownBlock", "blocks", "main", "page_files", "render", "stale"]

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^<!-- generated: (?P<name>[^\s>]+) -->\n(?P<body>.*?)^<!-- /generated -->", re.S | re.M)
OPENING = re.compile(r"^<!-- generated:", re.M)
SPREAD_PAGE = "docs/comparisons.md"
SPREAD_ANCHOR = "#the-verdict"


class UnknownBlock(ValueError):
    """A page names a block that ``REGISTRY`` does not have."""


@dataclass(frozen=True)
class Block:
    """One registered table: ``make(root)`` is its Markdown; ``spread``: it compares runs, so its
    block ends with the link to the spread's definition; ``root_links``: its links are written from
    the checkout's root (``docs/...``) and each page gets them relative to itself."""

    make: Callable[[Path], str]
    spread: bool = True
    root_links: bool = False


REGISTRY: dict[str, Block] = {}
ROOT_LINK = re.compile(r"\]\((?P<path>(?:docs|results)/[^)#\s]*)(?P<anchor>#[^)\s]*)?\)")


def table(name: str, spread: bool = True, root_links: bool = False):
    """Register ``fn(root) -> markdown`` under ``name``."""

    def put(fn):
        if name in REGISTRY:
            raise ValueError(f"block {name} registered twice")
        REGISTRY[name] = Block(fn, spread, root_links)
        return fn

    return put


def _relink(text: str, root: Path, page: Path) -> str:
    """``text``'s root-relative links (``](docs/x.md#a)``) made relative to ``page``'s folder."""

    def sub(m):
        rel = os.path.relpath(root / m.group("path"), page.parent).replace(os.sep, "/")
        return f"]({rel}{m.group('anchor') or ''})"

    return ROOT_LINK.sub(sub, text)


# --------------------------------------------------------------------------------------------
# reading the result files


def _csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _latest(folder: Path, key, name: str = "results.jsonl") -> list[dict]:
    from qt_hard.experiments.ledger import Ledger

    if not (folder / name).is_file():
        return []
    return Ledger(folder, key, name=name).latest()


def _captioned(caption: str, head, body, align: str = "") -> str:
    """A caption line, a blank line, the Markdown table."""
    return _lines(caption, "", report.markdown_table(head, body, align))


def _lines(*parts) -> str:
    out = []
    for p in parts:
        out.extend(p if isinstance(p, list) else [p])
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# text: Quick-Thoughts (qt_table spec)


def _qt_csv_records(path: Path) -> list[dict]:
    """The records of a QT table's CSV (kept without its ledger): row, seed, protocol, acc per task."""
    from qt_hard.experiments.specs import qt_table

    return [
        {
            "row": r["row"],
            "seed": int(r["seed"]),
            "protocol": r["protocol"],
            "acc": {t: float(r[t]) for t in qt_table.TASKS},
        }
        for r in _csv(path)
    ]


def _qt_summary(records, protocol, field="acc") -> str:
    from qt_hard.experiments.specs import qt_table

    return qt_table.summarize(records, protocol, {}, field=field)[0]


def _qt_ledger(root: Path, folder: str) -> list[dict]:
    from qt_hard.experiments.specs import qt_table

    return _latest(root / "results" / folder, qt_table.KEY)


for _name, _file in (("qt_cpu", "qt_table.csv"), ("qt_gpu", "qt_table_gpu.csv")):
    for _protocol in ("senteval", "skipthoughts"):
        table(f"{_name}_{_protocol}")(
            lambda root, f=_file, p=_protocol: _qt_summary(_qt_csv_records(root / "results" / f), p)
        )


@table("readings_dev")
def _readings_dev(root: Path) -> str:
    return _qt_summary(_qt_ledger(root, "readings"), "senteval", "devacc")


@table("readings_test")
def _readings_test(root: Path) -> str:
    return _qt_summary(_qt_ledger(root, "readings"), "senteval")


@table("qt_similarity_transfer")
def _qt_similarity_transfer(root: Path) -> str:
    return _qt_summary(_qt_ledger(root, "qt_similarity"), "senteval")


@table("qt_similarity")
def _qt_similarity(root: Path) -> str:
    from qt_hard.experiments.specs import qt_table

    return qt_table.summarize_similarity(_qt_ledger(root, "qt_similarity"))[0]


def _sim_parts(results: dict) -> list[float]:
    """STS12-16 mean, STS-B cos, SICK-R cos and their mean (the similarity mean) of an eval JSON."""
    years = statistics.mean(results[f"STS1{y}"]["spearman"] for y in range(2, 7))
    stsb, sick = results["STSBenchmark-cos"]["spearman"], results["SICKRelatedness-cos"]["spearman"]
    return [years, stsb, sick, (years + stsb + sick) / 3]


def _six_mean(results: dict) -> float:
    from qt_hard.experiments.specs import qt_table

    return statistics.mean(results[t]["acc"] for t in qt_table.TASKS)


@table("quickstart_controls", spread=False)
def _quickstart_controls(root: Path) -> str:
    """The quick start's seed-0 model beside its two controls and MiniLM, similarity and transfer."""
    folder = root / "results" / "qt_similarity"
    ctrl = json.loads((folder / "quickstart_controls.json").read_text())
    transfer = json.loads((folder / "quickstart_controls_transfer.json").read_text())
    minilm = json.loads((folder / "minilm.json").read_text())["results"]
    minilm_transfer = json.loads((root / "results" / "minilm_senteval_protocol.json").read_text())["results"]
    body = []
    for key, label in (
        (None, "quick start, seed 0 (hard, beta 2, clamp)"),
        ("untrained qt-bow", "untrained, same architecture and tokenizer"),
        ("random:bow", "`random:bow` on the model's tokenizer"),
    ):
        res = ctrl["results"] if key is None else ctrl["controls"][key]
        tr = transfer["controls"][key] if key else None
        body.append([label, *(f"{x:.2f}" for x in _sim_parts(res)), f"{_six_mean(tr):.2f}" if tr else ""])
    body.append(
        [
            "all-MiniLM-L6-v2",
            *(f"{x:.2f}" for x in _sim_parts(minilm)),
            f"{_six_mean(minilm_transfer):.2f}",
        ]
    )
    head = ["model", "STS12-16 mean", "STS-B cos", "SICK-R cos", "Sim. mean", "six-task transfer mean"]
    return _lines(
        "Spearman x100 of the cosine (Sim. mean: the mean of the first three columns); transfer: SentEval's "
        "protocol, test accuracy. Files: `results/qt_similarity/quickstart_controls.json`, "
        "`quickstart_controls_transfer.json` (the controls' transfer), `minilm.json`, "
        "`results/minilm_senteval_protocol.json`.",
        "",
        report.markdown_table(head, body, "lrrrrr"),
    )


@table("readme_text_results")
def _readme_text_results(root: Path) -> str:
    """The README's text summary: the quick-start setting's rows (3 seeds), its controls, MiniLM."""
    from qt_hard.experiments.specs import qt_table

    recs = _qt_ledger(root, "qt_similarity")
    labels = {
        "hard2-clamp": "quick start (hard negatives, beta 2, `clamp`)",
        "hard1-rescaled-anneal": "hard negatives, beta annealed from 1, `rescaled`",
        "uniform": "uniform negatives",
    }
    body = []
    for row, label in labels.items():
        six = [statistics.mean(r["acc"][t] for t in qt_table.TASKS) for r in recs if r["row"] == row and "acc" in r]
        sim = [r["sim_mean"] for r in recs if r["row"] == row and r.get("protocol") == "similarity"]
        body.append([f"{label}, {len(six)} seeds", report.fmt_mean_spread(six, 2), report.fmt_mean_spread(sim, 2)])
    folder = root / "results" / "qt_similarity"
    ctrl = json.loads((folder / "quickstart_controls.json").read_text())["controls"]
    transfer = json.loads((folder / "quickstart_controls_transfer.json").read_text())["controls"]
    for key, label in (
        ("untrained qt-bow", "the quick start's model untrained (its tokenizer)"),
        ("random:bow", "`random:bow` on that tokenizer"),
    ):
        body.append([f"control: {label}", f"{_six_mean(transfer[key]):.2f}", f"{_sim_parts(ctrl[key])[-1]:.2f}"])
    minilm = json.loads((folder / "minilm.json").read_text())["results"]
    minilm_transfer = json.loads((root / "results" / "minilm_senteval_protocol.json").read_text())["results"]
    body.append(["all-MiniLM-L6-v2", f"{_six_mean(minilm_transfer):.2f}", f"{_sim_parts(minilm)[-1]:.2f}"])
    return _lines(
        report.markdown_table(["model", "transfer", "similarity"], body, "lrr"),
        "",
        "The quick start's objective, from the readings table's 5 seeds (`results/readings/`): "
        + _quickstart_choice(root).sentence(),
    )


def _quickstart_choice(root: Path) -> report.Choice:
    """The quick start's objective as the readings ledger's dev accuracies choose it (the rule of
    :func:`.report.choose_on_dev`, uniform the baseline)."""
    from qt_hard.experiments.specs import qt_table

    dev: dict = {}
    for r in _qt_ledger(root, "readings"):
        if r.get("protocol") == "senteval" and r.get("devacc"):
            dev.setdefault(r["row"], {})[r["seed"]] = statistics.mean(r["devacc"][t] for t in qt_table.TASKS)
    return report.choose_on_dev(
        dev, lambda r: None if r == "uniform" else "uniform", "uniform", "SentEval dev six-task accuracy"
    )


def _six_row(label: str, results: dict, digits: int = 2, f1: bool = False) -> list[str]:
    """A model's six transfer tasks (MRPC's F1 beside its accuracy with ``f1``) and their mean."""
    from qt_hard.experiments.specs import qt_table

    cells = [f"{results[t]['acc']:.{digits}f}" for t in qt_table.TASKS]
    if f1:
        cells[-1] += f" / {results['MRPC']['f1']:.{digits}f}"
    return [label, *cells, f"{_six_mean(results):.2f}"]


@table("eval_protocols", spread=False)
def _eval_protocols(root: Path) -> str:
    """The two SentEval protocols on the same embeddings (MiniLM), and a random bag of words."""
    res = root / "results"
    rows = [
        ("all-MiniLM-L6-v2, skip-thoughts protocol", res / "minilm_skipthoughts_protocol.json"),
        ("all-MiniLM-L6-v2, SentEval protocol", res / "minilm_senteval_protocol.json"),
        ("random 768-d bag of words, SentEval protocol", res / "senteval_engine" / "random_bow_six_tasks_fast.json"),
    ]
    body = [_six_row(label, json.loads(path.read_text())["results"], f1=True) for label, path in rows]
    head = ["model", "MR", "CR", "SUBJ", "MPQA", "TREC", "MSRP acc / F1", "mean"]
    files = ", ".join(f"`{path.relative_to(root).as_posix()}`" for _, path in rows)
    return _lines(f"Test accuracy (%), from {files}.", "", report.markdown_table(head, body, "lrrrrrrr"))


@table("eval_similarity", spread=False)
def _eval_similarity(root: Path) -> str:
    """MiniLM and a random bag of words on the similarity suite (bench_similarity.py's rows)."""
    from qt_hard.experiments.specs import qt_table

    labels = {
        "minilm": "all-MiniLM-L6-v2",
        "random:bow": "random 768-d bag of words (vocabulary fitted on the evaluated sentences)",
    }
    last = {r["model"]: r for r in _jsonl(root / "results" / "bench_similarity.jsonl")}  # a model's newest row
    body = []
    for model in labels:
        r = last[model]
        sc = r["similarity"]["scores"]
        years = statistics.mean(sc[f"STS1{y}"] for y in range(2, 7))
        mean = (years + sc["STSBenchmark-cos"] + sc["SICKRelatedness-cos"]) / 3
        body.append([labels[model], *(f"{sc[t]:.2f}" for t in qt_table.SIM_TASKS[:7]), f"{mean:.2f}"])
        body[-1] += [f"{sc[t]:.2f}" for t in qt_table.SIM_TASKS[7:]]
    head = ["model", *qt_table.SIM_HEADS[:7], "Sim. mean", *qt_table.SIM_HEADS[7:9]]
    return _lines(
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
    return _captioned(f"From `results/senteval_engine/`: {files}.", head, body, "lrrrr")


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
    return _captioned(
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
    from qt_hard.experiments.specs import qt_table

    body = []
    for label, name in (
        ("bag of words, 300-d (CPU scale)", "qt_table.csv"),
        ("S2V's GRU, 2,400-d", "qt_table_gpu.csv"),
    ):
        recs = _qt_csv_records(root / "results" / name)
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
    return _captioned(caption, ["runs", "n", *qt_table.TASKS[:-1], "MSRP", "six-task mean"], body, "lr" + "r" * 7)


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
            recs = [r for r in _qt_csv_records(res / name) if r["row"] == "uniform" and r["protocol"] == protocol]
            subj, mpqa = [r["acc"]["SUBJ"] for r in recs], [r["acc"]["MPQA"] for r in recs]
            rows.append((f"{label}, uniform, {protocol} protocol", subj, mpqa, f"`results/{name}`"))
    for row in ("uniform", "hard2-clamp"):
        recs = [r for r in _qt_ledger(root, "readings") if r["row"] == row and r.get("protocol") == "senteval"]
        subj, mpqa = [r["acc"]["SUBJ"] for r in recs], [r["acc"]["MPQA"] for r in recs]
        rows.append((f"the quick-start setting, `{row}`, SentEval protocol", subj, mpqa, "`results/readings/`"))
    body, gaps = [], []
    for label, subj, mpqa, src in rows:
        gaps.append(statistics.mean(subj) - statistics.mean(mpqa))
        body.append([label, f"{statistics.mean(subj):.2f}", f"{statistics.mean(mpqa):.2f}", f"{gaps[-1]:+.2f}", src])
    return _lines(
        "Test accuracy (%; means over seeds where there are several):",
        "",
        report.markdown_table(["encoder", "SUBJ", "MPQA", "SUBJ - MPQA", "source"], body, "lrrrl"),
        "",
        f"SUBJ is above MPQA for every encoder here, by {min(gaps):.1f} to {max(gaps):.1f} points.",
    )


@table("qt_cost", spread=False)
def _qt_cost(root: Path) -> str:
    """The Quick-Thoughts tables' runs: how many, where they ran, their training and evaluation seconds."""
    res = root / "results"

    def spans(recs: list[dict], protocols: dict[str, str]) -> str:
        trained: dict = {}
        for r in recs:  # a run's second protocol reads its final/ without training: train_s 0
            trained[(r["row"], r["seed"])] = max(trained.get((r["row"], r["seed"]), 0.0), float(r["train_s"]))
        train = _span([t for t in trained.values() if t > 0])  # 0: trained by an earlier call of the script
        evals = [
            f"{label} {_span([float(r['eval_s']) for r in recs if r['protocol'] == p])}"
            for p, label in protocols.items()
        ]
        return f"training {train} a run; evaluation: {', '.join(evals)}"

    def runs(recs: list[dict]) -> str:
        n, protocols = len({(r["row"], r["seed"]) for r in recs}), len({r["protocol"] for r in recs})
        return f"{n} runs" + (f" x {protocols} protocols" if protocols > 1 else "")

    readings = _latest(res / "readings", _qt_key())
    similarity = _latest(res / "qt_similarity", _qt_key())
    cpu, gpu = _csv(res / "qt_table.csv"), _csv(res / "qt_table_gpu.csv")
    both = {"senteval": "SentEval", "skipthoughts": "skip-thoughts"}
    controls = json.loads((res / "qt_similarity" / "quickstart_controls.json").read_text())
    minilm = json.loads((res / "qt_similarity" / "minilm.json").read_text())
    body = [
        [
            f"readings, {runs(readings)}",
            "2-core CPU, one thread a run, two runs at a time (two copies of each command sharing the folder)",
            spans(readings, {"senteval": "transfer"}),
            "`results/readings/` (ledger with each run's machine, date and commit; `metrics/` holds each run's "
            "`metrics.csv`)",
        ],
        [
            f"similarity, {runs(similarity)}",
            "the same",
            spans(similarity, {"senteval": "transfer", "similarity": "similarity"}),
            "`results/qt_similarity/` (ledger with machine, date and commit)",
        ],
        [
            "the quick start's controls",
            "2-core CPU",
            f"{controls['total_seconds']:.0f} s",
            "`results/qt_similarity/quickstart_controls.json`",
        ],
        [
            "MiniLM on the similarity tasks",
            "2-core CPU",
            f"{minilm['total_seconds']:.0f} s",
            "`results/qt_similarity/minilm.json` (the README's similarity command with the two supervised tasks added)",
        ],
        [f"CPU scale, {runs(cpu)}", "2-core CPU", spans(cpu, both), "`results/qt_table.csv`"],
        [
            f"S2V's sizes, {runs(gpu)}",
            "one H100, two or three runs sharing it",
            spans(gpu, both) + " (on the GPU)",
            "`results/qt_table_gpu.csv`",
        ],
    ]
    return _captioned(
        "Seconds from each run's record (`train_s`, `eval_s`; an evaluation file's `total_seconds`); the CPU "
        "runs shared the machine with other jobs, so their times are upper bounds.",
        ["run", "machine", "wall time", "results"],
        body,
    )


def _qt_key():
    from qt_hard.experiments.specs import qt_table

    return qt_table.KEY


@table("quickstart_transfer")
def _quickstart_transfer(root: Path) -> str:
    """The quick start's objective over its seeds, its seed 0, and its two control rows."""
    from qt_hard.experiments.specs import qt_table

    recs = [r for r in _qt_ledger(root, "readings") if r["row"] == "hard2-clamp" and r.get("protocol") == "senteval"]
    means = [report.mean_spread(r["acc"][t] for r in recs)[0] for t in qt_table.TASKS]
    six = [statistics.mean(r["acc"][t] for t in qt_table.TASKS) for r in recs]
    body = [[f"`qt_books_smoke` (trained), mean of {len(recs)} seeds", *(f"{m:.1f}" for m in means)]]
    body[-1].append(report.fmt_mean_spread(six, 2))
    seed0 = next(r for r in recs if r["seed"] == 0)
    body.append(["`qt_books_smoke` (trained), seed 0", *(f"{seed0['acc'][t]:.1f}" for t in qt_table.TASKS)])
    body[-1].append(f"{six[recs.index(seed0)]:.2f}")
    ctrl = json.loads((root / "results" / "qt_similarity" / "quickstart_controls_transfer.json").read_text())
    for key, label in (
        ("untrained qt-bow", "untrained, same architecture"),
        ("random:bow", "`random:bow`, same vocabulary"),
    ):
        body.append(_six_row(label, ctrl["controls"][key], digits=1))
    caption = (
        "Test accuracy (%), SentEval's protocol: the readings ledger's `hard2-clamp` rows (`results/readings/`) and "
        "the controls of `results/qt_similarity/quickstart_controls_transfer.json`."
    )
    return _captioned(caption, ["model", *qt_table.TASKS, "mean"], body, "l" + "r" * 7)


@table("quickstart_wall", spread=False)
def _quickstart_wall(root: Path) -> str:
    """The README's first command end to end (``results/quickstart_wall.jsonl``, its newest line) and
    the wall times of the readings ledger's runs of the quick start's objective."""
    r = _jsonl(root / "results" / "quickstart_wall.jsonl")[-1]
    recs = [x for x in _qt_ledger(root, "readings") if x["row"] == "hard2-clamp" and x.get("protocol") == "senteval"]
    spans = [
        f"{name} {min(x[key] for x in recs):.0f}-{max(x[key] for x in recs):.0f} s"
        for name, key in (("training", "train_s"), ("evaluation", "eval_s"))
        if all(key in x for x in recs)
    ]
    readings = (
        f" The objective changes the cost of a step little: the readings ledger's {len(recs)} runs of "
        f"`hard2-clamp` (`results/readings/`; machine {recs[0]['machine']}) took {' and '.join(spans)}."
        if recs and spans
        else ""
    )
    return (
        f"The README's first command, end to end: {r['total_s']} s in all (preparing the books {r['books_s']} s, "
        f"training {r['train_s']} s, the three evaluations {r['eval_s']} s), {_threads(r['threads'])}, the "
        f"config's objective then {r['objective_then']}; on {r['machine']} beside {r['load']}, at commit "
        f"{r['commit']} (`results/quickstart_wall.jsonl`; {r['note']}).{readings}\n"
    )


def _threads(n: int) -> str:
    return "one torch thread" if n == 1 else f"{n} torch threads"


@table("quickstart_threads", spread=False)
def _quickstart_threads(root: Path) -> str:
    """One thread against two for the quick-start config: the summary lines of
    ``results/bench_threads_quickstart.jsonl`` (the lines with a ``ratio``) of its newest run."""
    rows = [r for r in _jsonl(root / "results" / "bench_threads_quickstart.jsonl") if "ratio" in r]
    newest = [r for r in rows if r["utc"] == rows[-1]["utc"]]
    by = {r["num_threads"]: r for r in newest}
    one, two = by[1], by[2]
    return (
        f"{one['steps']} steps of this config ran at {two['sentences_per_s']:.0f} sentences/s with two threads "
        f"against {one['sentences_per_s']:.0f} with one ({two['ratio']:.2f} times), on {one['machine']} with a "
        f"1-minute load average of {one['load_average_1min']:.1f} from other work ({one['utc'][:10]}, commit "
        f"{one['commit']}; `scripts/bench_threads.py`, `results/bench_threads_quickstart.jsonl`).\n"
    )


@table("s2v_controls", spread=False)
def _s2v_controls(root: Path) -> str:
    rows = json.loads((root / "results" / "s2v_controls.json").read_text())["rows"]
    labels = {
        "untrained": "the same architecture (bidirectional GRU pair, seed 0)",
        "bow2400": "`random:bow2400` (bag of words, seed 0)",
    }
    body = [_six_row(labels[k], v["results"], digits=1) for k, v in rows.items() if k in labels]
    head = ["control (2,400-d, untrained, on `qt_s2v`'s 50,001-row cased tokenizer)", "MR", "CR", "SUBJ", "MPQA"]
    head += ["TREC", "MRPC", "mean"]
    return _lines(
        "Test accuracy (%), SentEval's protocol, from `results/s2v_controls.json` (each row with its command, "
        "machine, date and commit).",
        "",
        report.markdown_table(head, body, "l" + "r" * 7),
    )


def _s2v_gpu_meta(root: Path) -> dict:
    return json.loads((root / "results" / "s2v_curve_gpu" / "meta.json").read_text())


@table("s2v_curve_gpu", spread=False)
def _s2v_curve_gpu(root: Path) -> str:
    """The learning curve of ``configs/qt_s2v.yaml`` on a GPU (``scripts/device_s2v.sh``) beside its
    two controls: six tasks, their mean, the held-out next-sentence top-1 and uniform loss."""
    from qt_hard.experiments.specs import qt_table

    folder = root / "results" / "s2v_curve_gpu"
    points = _csv(folder / "curve.csv")
    controls = json.loads((root / "results" / "s2v_controls.json").read_text())["rows"]
    for p in points:  # the curve read its control means from this same file
        for key in ("untrained", "bow2400"):
            if abs(float(p[f"control_{key}_mean"]) - _six_mean(controls[key]["results"])) > 0.01:
                raise ValueError(f"{folder / 'curve.csv'}: control_{key}_mean is not results/s2v_controls.json's")
    body = []
    for p in points:
        label = (
            f"step {int(p['step']):,} ({float(p['epoch']):.2f} epochs; last logged loss {float(p['train_loss']):.3f})"
        )
        cells = [f"{float(p[t]):.1f}" for t in qt_table.TASKS]
        held = [f"{float(p['heldout_next_top1']):.3f}", f"{float(p['heldout_uniform_loss']):.3f}"]
        body.append([label, *cells, f"{float(p['six_task_mean']):.2f}", *held])
    for key, label in (
        ("untrained", "control: the same architecture untrained"),
        ("bow2400", "control: `random:bow2400`"),
    ):
        res = controls[key]["results"]
        body.append([label, *(f"{res[t]['acc']:.1f}" for t in qt_table.TASKS), f"{_six_mean(res):.2f}", "", ""])
    meta = _s2v_gpu_meta(root)
    p0 = points[0]
    head = ["point", *qt_table.TASKS, "mean", "held-out top-1", "held-out loss"]
    return _lines(
        f"Test accuracy (%), SentEval's protocol, of one run of `configs/qt_s2v.yaml` (uniform, {p0['precision']}, "
        f"seed 0, batch 400; {int(points[-1]['sentences_seen']):,} sentences seen) at its three evaluation points, "
        "and the held-out next-sentence top-1 (chance 1/63) and uniform loss on books 8-10, which training leaves "
        f"out. Measured on {meta['machine']}, commit {meta['commit']}; from `results/s2v_curve_gpu/curve.csv` "
        "(provenance in its `meta.json`); controls from `results/s2v_controls.json`.",
        "",
        report.markdown_table(head, body, "l" + "r" * 9),
    )


@table("s2v_speed_gpu", spread=False)
def _s2v_speed_gpu(root: Path) -> str:
    """``scripts/device_s2v.sh``'s speed parts: the config's rate in three precisions, and the loop
    against a bare step (each run's headline row) for the two GPU cases."""
    folder = root / "results" / "s2v_curve_gpu"
    meta = _s2v_gpu_meta(root)
    prec = _jsonl(folder / "precision.jsonl")
    runs = [r for r in map(json.loads, _json_lines(folder / "bench_train_speed_gpu.jsonl")) if "ratio" in r]
    body = [
        [
            f"`configs/qt_s2v.yaml`, {r['precision']}, batch {r['batch_size']}",
            f"{r['sentences_per_s']:,.0f}",
            f"{r['mean_loss']:.4f} ({'within' if r['passed'] else 'outside'} {r['tolerance']:.0%} of float32's)",
        ]
        for r in prec
    ]
    labels = {"bow_wiki1000": "bag of words, Wiki-1000, B 1,000", "s2v_gru": "`s2v_gru` (qt_s2v on 60 books), B 400"}
    ratio_rows = []
    for case in dict.fromkeys(r["case"] for r in runs):
        mine = [r for r in runs if r["case"] == case]
        ratios = sorted(r["ratio"] for r in mine)
        loops = [r["loop_sentences_per_s"] for r in mine]
        ratio_rows.append(
            [
                labels.get(case, case),
                str(len(mine)),
                f"{min(loops):,.0f}-{max(loops):,.0f}",
                f"{ratios[0]:.2f}-{ratios[-1]:.2f} (median {statistics.median(ratios):.2f})",
            ]
        )
    steps = {r["steps"] for r in runs}
    return _lines(
        f"Measured on {meta['machine']}, torch {prec[0]['torch']}, commit {meta['commit']}; from "
        "`results/s2v_curve_gpu/precision.jsonl` and `bench_train_speed_gpu.jsonl` (provenance in its `meta.json`).",
        "",
        "Sentences/s of the median step over 200 steps through the loop, and the mean logged loss over them:",
        "",
        report.markdown_table(["config, precision", "sentences/s", "mean loss"], body, "lrl"),
        "",
        f"The loop against a bare step, runs of one round of {'/'.join(map(str, sorted(steps)))} steps:",
        "",
        report.markdown_table(["case", "runs", "loop sentences/s", "loop / bare"], ratio_rows, "lrrr"),
    )


@table("bench_side_by_side", spread=False)
def _bench_side_by_side(root: Path) -> str:
    """Aggregate sentences/s of N cells side by side (scripts/bench_side_by_side.py), per result file."""
    parts = []
    for path in sorted((root / "results").glob("bench_side_by_side_*.jsonl")):
        rows = [r for r in _jsonl(path) if "aggregate_sentences_per_s" in r]
        if not rows:
            continue
        r0 = rows[0]
        body = [
            [
                str(r["cells"]),
                f"{r['aggregate_sentences_per_s']:,.0f}",
                f"{r['ratio_to_one']:.2f}",
                ", ".join(f"{x:,.0f}" for x in r["per_cell_sentences_per_s"]),
                f"{r['peak_rss_mib_per_cell']:,}",
                f"{r['gpu_peak_reserved_mib_per_cell']:,}" if "gpu_peak_reserved_mib_per_cell" in r else "",
            ]
            for r in rows
        ]
        size = "toy size (`--dry`: 16-unit GRU pair, one book)" if r0["dry"] else "`configs/qt_s2v.yaml`, 60 books"
        parts += [
            f"From `results/{path.name}`: {r0['device']}, {size}, batch {r0['batch_size']}, {r0['threads_per_cell']} "
            f"thread(s) a cell, {r0['steps'] - r0['warmup']} timed steps a cell after {r0['warmup']}; "
            f"{r0['machine']}, load average {r0['load_average_1min']} at the start, commit {r0['commit']}, "
            f"{r0['utc'][:10]}. Command: `{r0['command']}`.",
            "",
            *report.markdown_table(
                ["cells", "aggregate sentences/s", "vs 1 cell", "each cell (median step)", "peak RSS a cell (MiB)"]
                + ["GPU memory a cell (MiB, reserved)"],
                body,
                "rrrrrr",
            ),
            "",
        ]
    return _lines(*parts[:-1])


BOOKCORPUS_SENTENCES = 74_004_228  # the row count `qt-hard data get bookcorpus` verifies


def _corpus_rows(path: Path) -> list[dict]:
    """(prepare row, startup row or None) per multiple of a corpus-scale JSONL, in order."""
    rows = _jsonl(path)
    start = {r["multiple"]: r for r in rows if r["part"] == "startup"}
    return [(r, start.get(r["multiple"])) for r in rows if r["part"] == "prepare"]


@table("corpus_scale", spread=False)
def _corpus_scale(root: Path) -> str:
    """Preparing K times the local books from an empty cache, and the start-up from it
    (scripts/bench_corpus_scale.py), with the extrapolation to BookCorpus's sentences."""

    def gib(mib) -> str:
        return "-" if mib is None else f"{mib / 1024:.2f}"

    body = []
    files = [
        ("", root / "results" / "corpus_scale.jsonl"),
        ("before, ", root / "results" / "corpus_scale_before.jsonl"),
    ]
    for label, path in files:
        for r, st in _corpus_rows(path) if path.is_file() else []:
            m = r["sentences"] / 1e6
            body.append(
                [
                    f"{label}x{r['multiple']}",
                    f"{m:.2f} M",
                    f"{r['prepare_s']:,.0f} ({r['split_s']:,.0f})",
                    f"{r['cpu_s']:,.0f}",
                    f"{r['cpu_s'] / m:.0f}",
                    gib(r["peak_rss_mb"]),
                    gib(r.get("peak_anon_mb")),
                    f"{r['token_bytes'] / 2**30:.2f}",
                    f"{r['cache_bytes'] / 2**30:.2f}",
                    f"{st['startup_s']:.1f} ({st['cpu_s']:.1f})" if st else "",
                    gib(st.get("peak_anon_mb")) if st else "",
                    f"{r['load_average_1min']:.1f}",
                    r["commit"],
                ]
            )
    head = ["corpus", "sentences", "prepare s (splitting)", "CPU s", "CPU s / M", "peak RSS GiB", "peak anon. GiB"]
    head += [
        "token arrays GiB",
        "cache on disk GiB",
        "start-up s (process CPU s)",
        "start-up anon. GiB",
        "load",
        "commit",
    ]
    now = _corpus_rows(root / "results" / "corpus_scale.jsonl")
    (small, _), (big, big_start) = now[0], now[-1]
    n_small, n_big = small["sentences"], big["sentences"]
    scale = BOOKCORPUS_SENTENCES / n_big
    slope = (big["peak_anon_mb"] - small["peak_anon_mb"]) / (n_big - n_small)  # MiB a sentence
    anon_74 = small["peak_anon_mb"] + slope * (BOOKCORPUS_SENTENCES - n_small)
    r0 = now[0][0]
    before = len(body) > len(now)
    return _lines(
        f"From `results/corpus_scale.jsonl` ({r0['machine']}, torch {r0['torch']}, {r0['utc'][:10]}; command "
        f"`{r0['command']}`)"
        + (", and the same script on the code before it (`results/corpus_scale_before.jsonl`)" if before else "")
        + ". Wall seconds follow the machine's load (load: the 1-minute load average when the script started; other "
        "work shared the two cores), CPU seconds (the process and its splitting workers) much less. Peak RSS and "
        "anonymous memory (RSS less the read pages of memory-mapped files) of the preparing process; start-up: from "
        "the call of `train` to its first step, with a 16-d model, from the prepared cache.",
        "",
        report.markdown_table(head, body, "lrrrrrrrrrrrl"),
        "",
        f"Extrapolated to BookCorpus's {BOOKCORPUS_SENTENCES:,} sentences ({scale:.1f} times the x{big['multiple']} "
        f"corpus), linearly from the x{big['multiple']} row: preparing takes about "
        f"{big['cpu_s'] * scale / 3600:.1f} CPU-hours ({big['prepare_s'] * scale / 3600:.1f} h of wall time on this "
        f"machine at that row's load), the cache about {big['cache_bytes'] * scale / 1e9:.0f} GB on disk (of which "
        f"{big['token_bytes'] * scale / 1e9:.1f} GB token ids), and the preparing process about "
        f"{anon_74 / 1024:.1f} GiB of anonymous memory (the line through the x{small['multiple']} and "
        f"x{big['multiple']} rows)"
        + (
            f"; at x{big['multiple']} a run started from its cache in {big_start['startup_s']:.0f} s "
            f"({big_start['cpu_s']:.0f} CPU s), holding {big_start['peak_anon_mb'] / 1024:.1f} GiB of anonymous memory."
            if big_start
            else "."
        ),
    )


def _json_lines(path: Path) -> list[str]:
    """The lines of a captured stdout that are JSON objects (the rest are the loop's messages and the
    script's headline)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("{")]


# --------------------------------------------------------------------------------------------
# graphs (qt-hard grid run graph-table)


def _graph_records(root: Path, source: str) -> list[dict]:
    """``source``: a results folder of ``qt-hard grid run graph-table`` under results/ (its latest
    records) or a CSV of cells."""
    path = root / "results" / source
    return _csv(path) if path.suffix == ".csv" else _grid_tables(root, "graph-table", f"results/{source}")[1]


def _graph_block(root: Path, source: str, rows: list[str], datasets: list[str]) -> str:
    from qt_hard.experiments.specs import graph_table

    recs = _graph_records(root, source)
    summary = graph_table.summarize(recs, rows, datasets)
    note = report.commits_note(r for r in recs if r["row"] in rows and r["dataset"] in datasets)
    return _lines(
        f"SVM accuracy (%), mean ± spread over repeats (n: repeats), from `results/{source}`; the papers' "
        "numbers as printed in the table named.",
        "",
        graph_table.table_lines(summary, rows, datasets),
        *(["", note] if note else []),
    )


def _graph_differences(root: Path, source: str, baseline: str, rows: list[str], datasets: list[str]) -> str:
    """Each row minus ``baseline``, paired by repeat (the same seed), per dataset."""
    from qt_hard.experiments.specs import graph_table

    recs = _graph_records(root, source)
    runs: dict = {}
    for name in [baseline, *rows]:
        for r in recs:
            if r["row"] == name and r["dataset"] in datasets:
                vals = runs.setdefault(name, {}).setdefault(int(r["repeat"]), [None] * len(datasets))
                vals[datasets.index(r["dataset"])] = 100 * float(r["svm_acc"])
    lines, _ = report.paired_table(baseline, runs, [graph_table.SHORT[d] for d in datasets], digits=1)
    return _lines(
        f"Difference to `{baseline}` (points), paired by repeat: the mean of the per-repeat differences [its 95% "
        f"t-interval]; * where the interval excludes 0 (better or worse), none where it holds 0 (level); the last "
        f"line is `{baseline}`'s spread, for context. From `results/{source}`.",
        "",
        lines,
    )


_GT_SETS = ["MUTAG", "ENZYMES", "PTC_MR", "IMDB-BINARY", "IMDB-MULTI"]
_GC_SETS = ["MUTAG", "PTC_MR", "IMDB-BINARY", "ENZYMES", "IMDB-MULTI"]
_GC_ROWS = [
    "infograph",
    "infograph_lr0.01",
    "hscl_b1",
    "hscl_b1_lr1e-3",
    "infograph_code",
    "hcl_code_b1",
    "hcl_code_b2",
    "hcl_code_b10",
    "hard_b1",
    "hard_b2",
    "hard_b10",
]
for _name, _rows in (
    ("graph_table", ["infograph", "infograph_code", "hard_b1", "hard_b2", "hard_b10"]),
    ("graph_table_hscl", ["infograph", "hscl_b1", "hscl_b2", "hscl_b10"]),
    ("graph_table_ot", ["infograph", "ot_e0.1"]),
):
    table(_name)(lambda root, rows=_rows: _graph_block(root, "graph_table.csv", rows, _GT_SETS))
table("graph_table_ot_diff")(
    lambda root: _graph_differences(root, "graph_table.csv", "infograph", ["ot_e0.1"], _GT_SETS)
)
table("graph_ot_enzymes_lr")(lambda root: _graph_block(root, "graph_ot_enzymes_lr1e-3.csv", ["ot_e0.1"], ["ENZYMES"]))
table("graph_controls")(lambda root: _graph_block(root, "graph_controls", _GC_ROWS, _GC_SETS))
table("graph_controls_hscl")(lambda root: _graph_block(root, "graph_controls", _GC_ROWS[:4], _GC_SETS))
table("graph_controls_hard_diff")(
    lambda root: _graph_differences(root, "graph_controls", "infograph", ["hard_b1", "hard_b2", "hard_b10"], _GC_SETS)
)
table("graph_controls_code_diff")(
    lambda root: _graph_differences(
        root, "graph_controls", "infograph_code", ["hcl_code_b1", "hcl_code_b2", "hcl_code_b10"], _GC_SETS
    )
)
table("graph_controls_lr_diff")(
    lambda root: _graph_differences(
        root, "graph_controls", "infograph", ["infograph_lr0.01", "hscl_b1_lr1e-3"], _GC_SETS
    )
)
table("graph_controls_hscl_diff")(
    lambda root: _graph_differences(root, "graph_controls", "infograph_lr0.01", ["hscl_b1"], _GC_SETS)
)


# --------------------------------------------------------------------------------------------
# images (qt-hard grid run vision-table)


def _vision_rows(root: Path, source: str) -> list[dict]:
    """``source``: a results folder of ``qt-hard grid run vision-table`` (its latest records) or a CSV
    of cells."""
    path = root / source
    return _csv(path) if path.suffix == ".csv" else _grid_tables(root, "vision-table", source)[1]


def _vision_block(root: Path, source: str, strategies: list[str]) -> str:
    from qt_hard.experiments.specs import vision_table

    rows = _vision_rows(root, source)
    strategies = [s for s in strategies if any(r["strategy"] == s for r in rows)]
    runs = {
        s: {int(r["seed"]): [float(r["knn_acc"]), float(r["linear_acc"])] for r in rows if r["strategy"] == s}
        for s in strategies
    }
    diff, _ = report.paired_table(strategies[0], runs, ["kNN acc. (points)", "linear readout (points)"])
    return _lines(
        f"Mean ± spread over seeds, from `{source}`:",
        "",
        vision_table.table(rows, strategies),
        "",
        f"Difference to {strategies[0]}, paired by seed: the mean of the per-seed differences [its 95% t-interval]; "
        "* where the interval excludes 0; the mean alone, not judged, below 3 paired seeds; the last line is "
        f"{strategies[0]}'s spread, for context:",
        "",
        diff,
    )


_VISION = ["uniform", "debiased", "hard", "ring", "ot"]
table("vision_cpu")(lambda root: _vision_block(root, "docs/img/vision_table_cpu.csv", _VISION))
table("vision_gpu")(lambda root: _vision_block(root, "docs/img/vision_table_gpu.csv", _VISION))
table("vision_gpu_ot")(lambda root: _vision_block(root, "docs/img/vision_table_gpu.csv", ["uniform", "hard", "ot"]))
table("vision_gpu_ring")(lambda root: _vision_block(root, "docs/img/vision_table_gpu.csv", ["uniform", "ring"]))
table("moco_ring_cpu")(lambda root: _vision_block(root, "results/moco_ring_cpu", ["uniform", "ring"]))
table("moco_ring_gpu")(lambda root: _vision_block(root, "results/moco_ring_gpu", ["uniform", "ring"]))


# --------------------------------------------------------------------------------------------
# k versus N (k_vs_n spec: the CSVs it exports from its ledgers, and their diagnostics)


def _kvn(root: Path, name: str) -> list[dict]:
    """The cells of ``results/k_vs_n/NAME.csv`` with their diagnostics (``NAME.diag.jsonl``) merged in."""
    folder = root / "results" / "k_vs_n"
    diag_path = folder / f"{name}.diag.jsonl"
    diag = {d["cell_id"]: d for d in _jsonl(diag_path)} if diag_path.is_file() else {}
    return [{**diag.get(r["cell_id"], {}), **r, "file": f"{name}.csv"} for r in _csv(folder / f"{name}.csv")]


def _kvn_k(r: dict) -> str:
    return r["k"] or f"all {2 * (int(r['B']) - 1)}"


def _kvn_pick(cells, N, k=None, B=1000, cf="False", **more) -> list[dict]:
    return [
        r
        for r in cells
        if int(r["N"]) == N
        and int(r["B"]) == B
        and r["collision_free"] == cf
        and (k is None and r["k"] == "" or k is not None and r["k"] == str(k))
        and all(str(r[a]) == str(b) for a, b in more.items())
    ]


def _ms(values) -> str:
    """mean ± spread to 2 digits; the value alone for one seed (no spread to give)."""
    vals = [float(v) for v in values if v not in (None, "")]
    return f"{vals[0]:.2f}" if len(vals) == 1 else report.fmt_mean_spread(vals, 2)


_KVN_COLS = {
    "mean clf. (dot)": lambda c: _ms(r["mean_acc"] for r in c),
    "mean clf. (cosine)": lambda c: _ms(r.get("mean_cos_acc") for r in c),
    "linear clf.": lambda c: _ms(r["linear_acc"] for r in c),
    "final loss": lambda c: f"{statistics.mean(float(r['final_loss']) for r in c):.2f}",
    "same-article softmax mass": lambda c: (
        f"{100 * statistics.mean(r['same_class_mass'] for r in c):.1f}%"
        if all("same_class_mass" in r for r in c)
        else "-"
    ),
    "norm CV": lambda c: (
        f"{statistics.mean(r['test_norm_cv'] for r in c):.3f}" if all("test_norm_cv" in r for r in c) else "-"
    ),
    "V": lambda c: "/".join(sorted({r["vocab_size"] for r in c})),
    "epochs": lambda c: "/".join(sorted({f"{r['epochs']} + {r['linear_epochs']}" for r in c})),
    "steps": lambda c: "/".join(sorted({r["steps"] for r in c})),
}


def _kvn_table(items: list[tuple[str, list[dict]]], cols: list[str]) -> list[str]:
    """One line per (label, cells): the seeds, the columns of ``_KVN_COLS``, the file and device."""
    body = []
    for label, cells in items:
        if not cells:
            continue
        seeds = ", ".join(sorted({r["seed"] for r in cells}, key=int))
        where = ", ".join(sorted({f"{r['file']} ({r['device']})" for r in cells}))
        body.append([label, seeds, *(_KVN_COLS[c](cells) for c in cols), where])
    return report.markdown_table(["cells", "seeds", *cols, "rows (device)"], body)


@table("kvn_n_by_k")
def _kvn_n_by_k(root: Path) -> str:
    """Mean-classifier accuracy per N and k at B = 1000 with collisions (Fig. 3 left), best k in bold."""
    cells = _kvn(root, "results")
    plain = [r for r in cells if r["B"] == "1000" and r["collision_free"] == "False"]
    ks = sorted({r["k"] for r in plain if r["k"]}, key=int) + [""]
    body = []
    for N in sorted({int(r["N"]) for r in plain}):
        row = {k: [float(r["mean_acc"]) for r in plain if int(r["N"]) == N and r["k"] == k] for k in ks}
        best = max((k for k in ks if row[k]), key=lambda k: statistics.mean(row[k]))
        cellsN = []
        for k in ks:
            text = report.fmt_mean_spread(row[k], 2) if row[k] else "-"
            cellsN.append(f"**{text}**" if k == best else text)
        body.append([str(N), *cellsN])
    head = ["N", *(f"k = {k}" for k in ks[:-1]), "k = all 1,998"]
    return _lines(
        "Mean-classifier accuracy (%), B = 1000, with collisions: mean ± spread over seeds (3 per cell), the best "
        "k of each N in bold. From `results/k_vs_n/results.csv`.",
        "",
        report.markdown_table(head, body, "l" + "r" * len(ks)),
    )


@table("kvn_b_by_k")
def _kvn_b_by_k(root: Path) -> str:
    """B at fixed k for the N that ran several B (Fig. 3 center)."""
    cells = [r for r in _kvn(root, "results") if r["collision_free"] == "False"]
    body, judged = [], []
    for N in sorted({int(r["N"]) for r in cells}):
        Bs = sorted({int(r["B"]) for r in cells if int(r["N"]) == N})
        if len(Bs) < 2:
            continue
        ks = sorted({r["k"] for r in cells if int(r["N"]) == N and r["k"]}, key=int)
        for k in [*ks, ""]:
            vals = {B: [float(r["mean_acc"]) for r in _kvn_pick(cells, N, k or None, B)] for B in Bs}
            if sum(1 for v in vals.values() if v) < 2:
                continue
            by_seed = {B: {r["seed"]: float(r["mean_acc"]) for r in _kvn_pick(cells, N, k or None, B)} for B in Bs}
            row = [str(N), k or "all 2(B-1)"]
            for B in Bs[:-1]:
                v = report.paired_verdict(by_seed[B], by_seed[Bs[-1]])
                row += [v.cell(), v.verdict] if v.n else ["-", ""]
            judged.append(row)
            best = max((B for B in Bs if vals[B]), key=lambda B: statistics.mean(vals[B]))
            row = []
            for B in Bs:
                text = report.fmt_mean_spread(vals[B], 2) if vals[B] else "-"
                row.append(f"**{text}**" if B == best else text)
            body.append([str(N), k or "all 2(B-1)", *row])
            Bhead = Bs
    vs = [h for B in Bhead[:-1] for h in (f"B = {Bhead[-1]} - B = {B}", "verdict")]
    return _lines(
        "Mean-classifier accuracy (%) at fixed k for each batch size B, with collisions: mean ± spread over "
        "seeds (3 per cell), the best B of each (N, k) in bold. From `results/k_vs_n/results.csv`.",
        "",
        report.markdown_table(["N", "k", *(f"B = {B}" for B in Bhead)], body, "ll" + "r" * len(Bhead)),
        "",
        f"The largest batch against each smaller one, paired by seed (B = {Bhead[-1]} minus the other, mean [95% "
        "t-interval]; better or worse only when the interval excludes 0):",
        "",
        report.markdown_table(["N", "k", *vs], judged, "ll" + "rl" * (len(Bhead) - 1)),
    )


@table("kvn_collision_free")
def _kvn_collision_free(root: Path) -> str:
    """Collision-free minus plain at B = 1000, paired by seed, per N and k (Fig. 3 right)."""
    cells = _kvn(root, "results")
    body = []
    for N in sorted({int(r["N"]) for r in cells if r["collision_free"] == "True"}):
        for k in sorted({r["k"] for r in cells if int(r["N"]) == N and r["collision_free"] == "True"}, key=int):
            plain = {r["seed"]: float(r["mean_acc"]) for r in _kvn_pick(cells, N, k)}
            free = {r["seed"]: float(r["mean_acc"]) for r in _kvn_pick(cells, N, k, cf="True")}
            v = report.paired_verdict(plain, free)
            body.append(
                [
                    str(N),
                    k,
                    report.fmt_mean_spread(plain.values(), 2),
                    report.fmt_mean_spread(free.values(), 2),
                    v.cell(),
                    v.verdict,
                    str(v.n),
                ]
            )
    head = ["N", "k", "plain", "collision-free", "difference [95% interval]", "verdict", "pairs"]
    return _lines(
        "Mean-classifier accuracy (%), B = 1000: plain and collision-free sampling, mean ± spread over seeds; "
        "the difference is collision-free minus plain, paired by seed, with its 95% t-interval: better or worse "
        "where the interval excludes 0. From `results/k_vs_n/results.csv`.",
        "",
        report.markdown_table(head, body, "llrrrlr"),
    )


_CF_LABEL = {"False": "none removed (plain)", "True": "same-article removed (collision-free)"}
_CF_LABEL["shuffled"] = "random, matched (shuffled control)"
_COLLISION_COLS = [*_KVN_COLS][:6]  # the readouts and the diagnostics of the collision studies


def _kvn_collision_study(root: Path, N: int, files: dict) -> str:
    """N's cells at k = 100 and 1000 in each collision mode, ``files``: mode -> the results file it is in."""
    cells = {name: _kvn(root, name) for name in set(files.values())}
    items = [
        (f"k = {k}, {_CF_LABEL[cf]}", _kvn_pick(cells[f], N, k, cf=cf)) for k in (100, 1000) for cf, f in files.items()
    ]
    metrics = {"mean clf. (dot)": "mean_acc", "mean clf. (cosine)": "mean_cos_acc", "linear clf.": "linear_acc"}
    body = []
    for k in (100, 1000):

        def seeds(cf, m, k=k):
            return {
                r["seed"]: float(r[m]) for r in _kvn_pick(cells[files[cf]], N, k, cf=cf) if r.get(m) not in (None, "")
            }

        for cf in [c for c in files if c != "False"]:
            judged = [report.paired_verdict(seeds("False", m), seeds(cf, m)) for m in metrics.values()]
            marks = ["*" if v.verdict in ("better", "worse") else "" for v in judged]
            body.append([f"k = {k}, {_CF_LABEL[cf]}", *(v.cell() + mk for v, mk in zip(judged, marks))])
    return _lines(
        f"N = {N}, B = 1000; mean ± spread over seeds:",
        "",
        _kvn_table(items, _COLLISION_COLS),
        "",
        "Against plain sampling at the same k, paired by seed (mean [95% t-interval]; * where it excludes 0; "
        '"-" where a readout was not logged):',
        "",
        report.markdown_table(["cells", *metrics], body, "lrrr"),
    )


table("kvn_collisions")(lambda root: _kvn_collision_study(root, 300, dict.fromkeys(_CF_LABEL, "collisions")))
table("kvn_collisions_1000")(
    lambda root: _kvn_collision_study(
        root, 1000, {"False": "results", "True": "results", "shuffled": "collisions_1000"}
    )
)


@table("kvn_b1000_long")
def _kvn_b1000_long(root: Path) -> str:
    main, long = _kvn(root, "results"), _kvn(root, "b1000_long")
    items = []
    for N in (100, 1000):
        items += [(f"N = {N}, the grid", _kvn_pick(main, N)), (f"N = {N}, D.1's budget", _kvn_pick(long, N))]
    cols = ["epochs", "steps", "mean clf. (dot)", "linear clf.", "final loss"]
    return _lines("B = 1000, all 1,998 in-batch negatives; mean ± spread over seeds:", "", _kvn_table(items, cols))


@table("kvn_vocab_steps")
def _kvn_vocab_steps(root: Path) -> str:
    main, vocab, steps = _kvn(root, "results"), _kvn(root, "vocab"), _kvn(root, "steps_100")
    items = [
        ("N = 100, own vocabulary, 10 epochs (the grid)", _kvn_pick(main, 100, 100)),
        ("N = 100, Wiki-3029's vocabulary, 10 epochs", _kvn_pick(vocab, 100, 100)),
        ("N = 100, own vocabulary, 100 epochs", _kvn_pick(steps, 100, 100)),
        ("N = 1000, own vocabulary, 10 epochs (the grid)", _kvn_pick(main, 1000, 100)),
        ("N = 1000, Wiki-3029's vocabulary, 10 epochs", _kvn_pick(vocab, 1000, 100)),
    ]
    cols = ["V", "steps", "mean clf. (dot)", "linear clf."]
    return _lines("k = 100, B = 1000; mean ± spread over seeds:", "", _kvn_table(items, cols))


def _span(values, unit: str = " s") -> str:
    """``a-b`` (rounded to the second) of ``values``, or one value where they round alike."""
    lo, hi = round(min(values)), round(max(values))
    return f"{lo:,}{unit}" if lo == hi else f"{lo:,}-{hi:,}{unit}"


def _kvn_cost_cell(cells: list[dict], parts: bool = False, total: bool = False, by_n: bool = False) -> str:
    """Wall seconds a cell (per N with ``by_n``; train and readouts with ``parts``; the sum in minutes
    with ``total``) of the cells of one study."""

    def one(group):
        text = _span([float(r["wall_s"]) for r in group]) + (" a cell" if len(group) > 1 else "")
        if parts:
            train, readouts = _span([float(r["train_s"]) for r in group]), _span([float(r["eval_s"]) for r in group])
            text += f" (train {train}, readouts {readouts})"
        return text

    if by_n:
        ns = sorted({int(r["N"]) for r in cells})
        text = "; ".join(f"N = {n}: {one([r for r in cells if int(r['N']) == n])}" for n in ns)
    else:
        text = one(cells)
    if total:
        text += f", {sum(float(r['wall_s']) for r in cells) / 60:.0f} min in all"
    return text


@table("kvn_cost", spread=False)
def _kvn_cost(root: Path) -> str:
    """Each k-versus-N study's cells: how many, where they ran, their wall seconds (from the cells' CSVs)."""
    grid = _kvn(root, "results")
    gpu, cpu = [r for r in grid if r["device"] == "cuda"], [r for r in grid if r["device"] == "cpu"]
    shuffled = _kvn(root, "collisions_1000")
    one_worker = "2-core CPU, one worker of one thread"

    def hours(cells):
        return f"{sum(float(r['wall_s']) for r in cells) / 3600:.1f} cell-hours"

    collisions, vocab, steps, long = (_kvn(root, f) for f in ("collisions", "vocab", "steps_100", "b1000_long"))
    shuffled_cpu = [r for r in shuffled if r["device"] == "cpu"]
    shuffled_gpu = [r for r in shuffled if r["device"] == "cuda"]
    # (what, its cells where the row names their count, machine, wall time)
    rows = [
        (
            f"the grid's {len(gpu)} GPU cells",
            None,
            "one H100 shared by 10 to 12 workers",
            f"{hours(gpu)} of worker time",
        ),
        (f"the grid's {len(cpu)} CPU cells", None, one_worker, f"{hours(cpu)} ({_kvn_cost_cell(cpu, by_n=True)})"),
        ("the collisions study", collisions, one_worker, _kvn_cost_cell(collisions, total=True)),
        (
            "the N = 1000 shuffled control",
            shuffled_cpu,
            one_worker,
            _kvn_cost_cell(shuffled_cpu, parts=True, total=True),
        ),
        ("the vocabulary control", vocab, "the same", _kvn_cost_cell(vocab, parts=True, by_n=True)),
        ("the step-count control", steps, "the same", _kvn_cost_cell(steps, parts=True)),
        (
            "D.1's budget, B = 1000 row",
            long,
            "one H200 shared by 10 workers (and, in the same call, MoCo runs)",
            _kvn_cost_cell(long, by_n=True),
        ),
        (
            "the N = 1000 shuffled control at k = 1000",
            shuffled_gpu,
            "the same call, 3 workers",
            _kvn_cost_cell(shuffled_gpu),
        ),
    ]
    body = [
        [what if cells is None else f"{what}, {len(cells)} cells", where, wall] for what, cells, where, wall in rows
    ]
    return _captioned(
        "Wall seconds of each cell (`wall_s`; train: `train_s`, readouts: `eval_s`) from the cells' CSVs in "
        "`results/k_vs_n/` (`results.csv`, `collisions.csv`, `collisions_1000.csv`, `vocab.csv`, `steps_100.csv`, "
        "`b1000_long.csv`).",
        ["what", "machine", "wall time"],
        body,
    )


# --------------------------------------------------------------------------------------------
# fine-tuning with sentence-transformers (the st-compare experiment's summary)
def _st_spec():
    from qt_hard.experiments.specs import st_compare

    return st_compare


def _st_compare(root: Path, folder: str) -> tuple[str, dict]:
    from qt_hard.experiments.ledger import Ledger

    st = _st_spec()
    led = Ledger(root / "results" / "st_compare" / folder, st.KEY)
    return st.summarize(led.latest(), (led.setup or {}).get("recipe"))


table("st_compare_bow")(lambda root: _st_compare(root, "bow")[0])


@table("st_recipe_choice", spread=False)
def _st_recipe_choice(root: Path) -> str:
    """The bag-of-words start's recipe, chosen on dev: MNRL, seed 0, one folder per (lr, steps)."""
    from qt_hard.experiments.ledger import Ledger

    st = _st_spec()
    body, scores, before = [], {}, None
    for folder in sorted((root / "results" / "st_compare" / "bow_recipe").iterdir()):
        led = Ledger(folder, st.KEY)
        recipe, recs = (led.setup or {}).get("recipe") or {}, led.latest()
        dev = st.dev_runs(recs)[st.BASELINE]
        scores[folder.name] = statistics.mean(dev.values())
        before = next(((r["stsb_dev"] + r["sickr_dev"]) / 2 for r in recs if r["row"] == st.BEFORE), before)
        body.append(
            [f"{recipe['lr']:g}", str(recipe["steps"]), str(len(dev)), f"{scores[folder.name]:.2f}", folder.name]
        )
    best = max(scores, key=scores.get)
    for row in body:
        row[-1] = "**chosen**" if row[-1] == best else ""
    return _captioned(
        f"MNRL from the bag of words, one seed per recipe; {st.DEV_METRIC}; rule: the highest dev score "
        f"(the test columns are not read). The starting model's dev score: {before:.2f}. From "
        "`results/st_compare/bow_recipe/`.",
        ["lr", "steps", "seeds", "dev score", ""],
        body,
        "rrrrl",
    )


table("st_compare_minilm")(lambda root: _st_compare(root, "minilm")[0])


# --------------------------------------------------------------------------------------------
# which negatives to use: one line per setting, each the paired difference of one table above


LOSS_BENCH = "results/bench_losses_cpu.jsonl"
GUARD_BENCH = "results/bench_guard.jsonl"
ST_BENCH = "results/bench_st_losses.jsonl"


def _loss_ratio(root: Path, strategy: str, k, B: int) -> str:
    """The loss-cost ratio of a row as it trained: ``strategy`` at ``k`` and batch size ``B`` from the
    loss benchmark's rows; "-" where no benchmark row matches the row's strategy, k and batch size."""
    path = root / LOSS_BENCH
    rows = _jsonl(path) if path.is_file() else []
    rows = [r for r in rows if r["strategy"] == strategy and str(r["k"]) == str(k) and r["B"] == B]
    return f"x{rows[-1]['ratio']:.2f}" if rows else "-"


def st_bench_run(root: Path) -> list[dict]:
    """The rows of the newest run of ``scripts/bench_st_losses.py`` (one run: every ratio measured
    side by side); [] without the file."""
    path = root / ST_BENCH
    rows = _jsonl(path) if path.is_file() else []
    return [r for r in rows if (r["utc"], r["command"]) == (rows[-1]["utc"], rows[-1]["command"])] if rows else []


def st_trained_as(records: list[dict], row: str, recipe: dict | None) -> tuple | None:
    """(loss class, configuration as JSON, batch size, columns) of ``row`` as it trained: the ``loss``
    and ``loss_config`` its records name (None when they disagree or are missing), the batch size of
    its ledger's ``recipe``, and 3 columns for a ``+mined`` row (anchor, positive, mined negative),
    else 2."""
    keys = {(r.get("loss"), json.dumps(r.get("loss_config"), sort_keys=True)) for r in records if r.get("row") == row}
    batch = (recipe or {}).get("batch_size")
    if len(keys) != 1 or None in next(iter(keys)) or batch is None:
        return None
    loss, config = next(iter(keys))
    return loss, config, int(batch), 3 if "mined" in row.split("+")[1:] else 2


def st_cost_case(bench: list[dict], trained: tuple | None) -> dict | None:
    """The benchmark case that measured exactly the loss a row trained with: the same class and
    configuration, batch size and columns; None where no case matches (the cost is then "-")."""
    if trained is None:
        return None
    loss, config, batch, columns = trained
    hits = [
        r
        for r in bench
        if (r["loss"], json.dumps(r["loss_config"], sort_keys=True), r["B"], r["columns"])
        == (loss, config, batch, columns)
    ]
    return hits[-1] if hits else None


def _st_ledgers(root: Path) -> dict[str, tuple[list[dict], dict]]:
    """comparison -> (latest records, recipe) of the sentence-transformers ledgers."""
    from qt_hard.experiments.ledger import Ledger

    st = _st_spec()
    from qt_hard.experiments.specs import scifact

    out = {}
    for name, folder, key in (
        ("bow", root / "results" / "st_compare" / "bow", st.KEY),
        ("minilm", root / "results" / "st_compare" / "minilm", st.KEY),
        ("scifact", root / "results" / "scifact", scifact.KEY),
    ):
        if (folder / "results.jsonl").is_file():
            led = Ledger(folder, key)
            out[name] = (led.latest(), (led.setup or {}).get("recipe") or {})
    return out


def _st_effect_cost(root: Path, folder: str, row: str, base: str) -> str:
    """The loss cost of ``row`` over its baseline ``base`` as both trained in ``folder``: the row's case
    over MNRL on the same columns, or over MNRL on the pairs where the baseline trained on the pairs and
    the row on mined triplets (both from one run of the benchmark)."""
    records, recipe = _st_ledgers(root).get(folder, ([], {}))
    trained = st_trained_as(records, row, recipe)
    base_trained = st_trained_as(records, base, recipe)
    case = st_cost_case(st_bench_run(root), trained)
    if case is None or base_trained is None:
        return "-"
    return f"x{case['ratio'] if base_trained[3] == trained[3] else case['ratio_vs_pairs']:.2f}"


_ST_COST_COLUMNS = (
    ("bow", "STS, from the bag of words"),
    ("minilm", "STS, from all-MiniLM-L6-v2"),
    ("scifact", "SciFact"),
)


@table("st_loss_cost", spread=False)
def _st_loss_cost(root: Path) -> str:
    """Each sentence-transformers comparison row's loss over MNRL's, as the row trained (loss and
    configuration from its records, its comparison's batch size, its columns)."""
    ledgers = _st_ledgers(root)
    bench = st_bench_run(root)
    rows = list(dict.fromkeys(r["row"] for records, _ in ledgers.values() for r in records if r["row"] != "before"))
    st = _st_spec()
    rows.sort(key=lambda r: (r.count("+"), "mined" in r, st.row_order(r) if r.split("+")[0] in st.ROWS else (9, r)))
    names = [(n, h) for n, h in _ST_COST_COLUMNS if n in ledgers]
    head = ["row", "columns", *(f"{h} (B = {ledgers[n][1].get('batch_size', '?')})" for n, h in names)]
    body = []
    for row in rows:
        cells = []
        for n, _ in names:
            records, recipe = ledgers[n]
            if not any(r["row"] == row for r in records):
                cells.append("")
                continue
            case = st_cost_case(bench, st_trained_as(records, row, recipe))
            cells.append("-" if case is None else f"x{case['ratio']:.2f}")
        body.append([f"`{row}`", "pairs + mined negative" if "mined" in row.split("+")[1:] else "pairs", *cells])
    if not bench:
        return _captioned(
            f"No run of `scripts/bench_st_losses.py` in `{ST_BENCH}` yet.", head, body, "ll" + "r" * len(names)
        )
    r0 = bench[0]
    load = sorted({r["load_average_1min"] for r in bench})
    caption = (
        "Loss cost: the row's loss, forward + backward on fixed (B, "
        f"{r0['d']}) embeddings, over sentence-transformers' MNRL on the same batch size and columns, the "
        "median of interleaved blocks; the case is the one with the loss class and configuration the row's "
        'records name, its comparison\'s batch size B and its columns. "-": no case matches (GIST, a guard '
        "with a guide and the cached forms need the encoder inside the loss); blank: the row was not trained in "
        "that comparison. The `mnrl` and `mnrl+mined` rows are MNRL against itself: the run's noise. From "
        f"`{ST_BENCH}`: `{r0['command']}` on {r0['machine']}, torch {r0['torch']}, {r0['threads']} thread(s), "
        f"commit {r0['commit']}, {r0['utc'][:10]}, {r0['run_wall_s']:.0f} s of wall time, 1-minute load "
        f"average {load[0]}{'' if len(load) == 1 else f'-{load[-1]}'}."
    )
    return _captioned(caption, head, body, "ll" + "r" * len(names))


@table("loss_cost", spread=False)
def _loss_cost(root: Path) -> str:
    """Each strategy's loss over plain InfoNCE (forward + backward), per batch size and k."""
    rows = _jsonl(root / LOSS_BENCH)
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    keys = list(dict.fromkeys((r["B"], str(r["k"])) for r in rows))
    body = []
    for B, k in keys:
        mine = {r["strategy"]: r for r in rows if (r["B"], str(r["k"])) == (B, k)}
        base = statistics.median(r["baseline_s"] for r in mine.values())
        body.append([str(B), k, f"{base:.4f}", *(f"{mine[s]['ratio']:.2f}" if s in mine else "-" for s in strategies)])
        body[-1].append(f"{max(r['largest_tensor_vs_inputs'] for r in mine.values()):.1f}")
    r0 = rows[0]
    return _lines(
        f"Ratio of each strategy's seconds per forward + backward to plain `F.cross_entropy` NT-Xent on the same (2B, "
        f"{r0['d']}) embeddings (baseline s: its median seconds), from `{LOSS_BENCH}`: {r0['device']}, torch "
        f"{r0['torch']}, {r0['threads']} thread(s), {r0['machine']}, commit {r0['commit']}, {r0['utc'][:10]}. "
        "Command: `python scripts/bench_losses.py --batch-sizes 256,1024 --reps 5 --out results/bench_losses_cpu.jsonl`.",
        "",
        report.markdown_table(
            ["B", "k", "baseline s", *strategies, "largest tensor"], body, "lrr" + "r" * len(strategies) + "r"
        ),
    )


@table("guard_cost", spread=False)
def _guard_cost(root: Path) -> str:
    """The sentence-transformers plugin against MNRL, seconds per loss call, from the guard benchmark's
    newest run (the rows of the last commit measured)."""
    rows = _jsonl(root / GUARD_BENCH)
    rows = [r for r in rows if (r["commit"], r["measured"]) == (rows[-1]["commit"], rows[-1]["measured"])]
    body = [
        [
            r["case"],
            "yes" if r["explicit_negatives"] else "no",
            f"{1000 * r['mnrl_s']:.2f}",
            f"{1000 * r['ours_s']:.2f}",
            f"{r['ratio']:.2f}",
            "-" if r["guard_removed_frac"] is None else f"{100 * r['guard_removed_frac']:.2f}%",
        ]
        for r in rows
    ]
    r0 = rows[0]
    head = ["case", "mined negative per pair", "MNRL ms", "ours ms", "ratio", "candidates the guard removed"]
    return _lines(
        f"B = {r0['B']} pairs, d = {r0['d']}, forward + backward of the loss, from `{GUARD_BENCH}`: {r0['device']}, "
        f"torch {r0['torch']}, {r0['threads']} thread(s), commit {r0['commit']}, {r0['measured']}. Command: "
        f"`{r0['command']}`.",
        "",
        report.markdown_table(head, body, "llrrrr"),
    )


def _bench_eval(root: Path, features: str) -> str:
    """Fast solver against SentEval's reference, CPU seconds per task and width (the newest row of each)."""
    from qt_hard.experiments.specs import qt_table

    rows = [r for r in _jsonl(root / "results" / "bench_eval.jsonl") if r["features"].split(":")[0] == features]
    last = {(r["width"], r["task"]): r for r in rows}
    body = []
    for width in sorted({w for w, _ in last}):
        cells, fast, ref, diffs, checked, n = [], 0.0, 0.0, [], 0, 0
        for task in qt_table.TASKS:
            r = last.get((width, task))
            if r is None:
                cells.append("-")
                continue
            n += 1
            fast, ref = fast + r["fast_cpu_seconds"], ref + r["reference_cpu_seconds"]
            ratio = r["reference_cpu_seconds"] / r["fast_cpu_seconds"]
            cells.append(f"{r['fast_cpu_seconds']:.0f} / {r['reference_cpu_seconds']:.0f} ({ratio:.1f}x)")
            if r.get("check"):
                checked += 1
                diffs.append(float(r["check"]["max_abs_diff_converged"]))
        check = f"{max(diffs):.2f}" if diffs else "-"
        if diffs and checked < n:
            check += f" ({checked} of {n} checked)"
        body.append([f"{width:,}", *cells, f"{fast:.0f} / {ref:.0f} ({ref / fast:.1f}x)", check])
    head = ["width", *qt_table.TASKS, "six tasks", "check: max abs diff"]
    return _lines(
        "CPU seconds of the fast solver / of the reference (ratio), the newest row of each (width, task) in "
        "`results/bench_eval.jsonl`; check: the largest difference in points between the fast solver's held-out "
        "accuracy and converged lbfgs on the timed problems.",
        "",
        report.markdown_table(head, body),
    )


table("bench_eval_bigru", spread=False)(lambda root: _bench_eval(root, "bigru"))
table("bench_eval_hashbow", spread=False)(lambda root: _bench_eval(root, "hashbow"))


@table("bench_train_speed", spread=False)
def _bench_train_speed(root: Path) -> str:
    """The loop against a bare step, before and after, median over rounds of each (case, code)."""
    rows = _jsonl(root / "results" / "bench_train_speed_cpu.jsonl")
    labels = {
        "bow_wiki": "bag of words, Wiki-50 pairs, B 256",
        "bow_books": "Quick-Thoughts bag of words, 8 books, B 400",
        "gru_books": "Quick-Thoughts GRU 64/128, 8 books, B 64",
    }
    summary = {(r["case"], r["code"]): r for r in rows if "ratio" in r}  # the script's headline row per run
    body = []
    for case in dict.fromkeys(r["case"] for r in rows):
        cells = []
        for code in ("before", "after"):
            r = summary[(case, code)]
            cells += [f"{r['loop_sentences_per_s']:,.0f} / {r['bare_sentences_per_s']:,.0f}", f"{r['ratio']:.2f}"]
        body.append([labels.get(case, case), *cells])
    head = ["case", "before: loop / bare (sentences/s)", "ratio", "after: loop / bare (sentences/s)", "ratio"]
    commits = sorted({f"{r.get('code')} {r['commit']}" for r in rows})
    return _lines(
        "Median sentences/s over rounds; ratio: the median over rounds of each round's loop / bare (the script's "
        "headline row of each run). From "
        f"`results/bench_train_speed_cpu.jsonl` ({rows[0]['device']}, {rows[0]['threads']} thread; commits: "
        f"{', '.join(commits)}).",
        "",
        report.markdown_table(head, body, "lrrrr"),
    )


@table("bench_similarity", spread=False)
def _bench_similarity(root: Path) -> str:
    """Wall seconds of the similarity suite and of the six transfer tasks (encoding in brackets)."""
    labels = {"random:bow": "random 768-d bag of words", "minilm": "all-MiniLM-L6-v2"}
    body = []
    for r in _jsonl(root / "results" / "bench_similarity.jsonl"):
        sim, tr = r["similarity"], r["transfer"]
        body.append(
            [
                labels.get(r["model"], r["model"]),
                f"{sim['seconds']:.1f} s ({sim['encode_seconds']:.1f} s)",
                f"{tr['seconds']:.1f} s ({tr['encode_seconds']:.1f} s)",
                " / ".join(
                    f"{x:.1f}"
                    for x in (r.get("load_average_before") or [])[:1] + (r.get("load_average_after") or [])[:1]
                ),
                r.get("commit", ""),
            ]
        )
    head = ["model", "similarity suite", "six transfer tasks", "1-min load before / after", "commit"]
    return _lines(
        "From `results/bench_similarity.jsonl`, one line per row:", "", report.markdown_table(head, body, "lrrrl")
    )


@table("ci_timing", spread=False)
def _ci_timing(root: Path) -> str:
    rows = _jsonl(root / "results" / "ci_timing.jsonl")
    body = []
    for r in rows:
        body.append(
            [
                r["commit"],
                f"{r['pytest_q_s']:.0f} s ({r['pytest_q']})",
                f"{r['commands_marker_s']:.0f} s ({r['commands_marker']})",
                f"{r['ci_run_wall_s']:.0f} s",
            ]
        )
    head = ["commit", "`python -m pytest -q`", "`pytest -q -m commands -n 2 --dist loadgroup`", "`.ci/run` in all"]
    return _lines(
        f"`bash .ci/run` on a clean clone, from `results/ci_timing.jsonl` ({rows[0]['machine']}):",
        "",
        report.markdown_table(head, body, "lrrr"),
    )


def _measured(r: dict) -> str:
    """A benchmark row's context cells: the UTC date, the commit, threads and the 1-minute load average."""
    return f"{r['utc'][:10]}, {r['commit']}, {r['threads']} thread(s), load {r['load_average_1min']:.1f}"


@table("bench_augment", spread=False)
def _bench_augment(root: Path) -> str:
    """Images/s of SimCLR's batch augmentation, ours against kornia's, one line per run of the script."""
    runs: dict[tuple, dict] = {}
    for r in _jsonl(root / "results" / "bench_augment.jsonl"):
        runs.setdefault((r["utc"], r["commit"]), {})[r["impl"].split(" ")[0]] = r
    body = []
    for run in runs.values():
        ours, kornia = run["qt_hard"], run.get("kornia", {})
        other = kornia.get("images_per_s")
        body.append(
            [
                f"{ours['batch']} of {ours['size']}x{ours['size']}, {ours['device']}",
                f"{ours['images_per_s']:,.0f}",
                f"{other:,.0f} ({kornia['impl']})" if other else "not installed",
                f"{ours['images_per_s'] / other:.2f}x" if other else "",
                _measured(ours),
            ]
        )
    head = ["batch", "ours, images/s", "kornia, images/s", "ours / kornia", "date, commit, threads, load"]
    return _captioned(
        "Best of the repeats, one line per run of the script, from `results/bench_augment.jsonl` (machine: "
        f"{next(iter(runs.values()))['qt_hard']['machine']}).",
        head,
        body,
        "lrrrl",
    )


@table("bench_encode", spread=False)
def _bench_encode(root: Path) -> str:
    """Sentences/s of ``encode`` and of the evaluation's ``EmbeddingCache``, three repetitions a run."""
    rows = _jsonl(root / "results" / "bench_encode.jsonl")
    body = [
        [
            f"`{r['model'] or r['config']}`, {r['dim']}-d, {r['n']:,} MR sentences",
            ", ".join(f"{x:,}" for x in r["encode_sent_s"]),
            ", ".join(f"{x:,}" for x in r["embedding_cache_sent_s"]),
            _measured(r),
        ]
        for r in rows
    ]
    head = ["model", "`encode`, sentences/s", "`EmbeddingCache`, sentences/s", "date, commit, threads, load"]
    return _captioned(
        f"Three repetitions each, from `results/bench_encode.jsonl` (machine: {rows[0]['machine']}); command "
        f"of the last row: `{rows[-1]['command']}`.",
        head,
        body,
        "lrrl",
    )


WIKI_SMOKE_ROWS = {
    "bow_trained": "`configs/bow_wiki_smoke.yaml` trained (256 pairs a step, k = 100, 200 steps)",
    "bow_untrained": "the same architecture untrained",
    "hf_trained": "MiniLM fine-tuned by `configs/hf_wiki_smoke.yaml` (40 steps of 16 pairs, D.1 loss, t = 0.05)",
    "minilm": "MiniLM untouched",
}


@table("wiki_smoke", spread=False)
def _wiki_smoke(root: Path) -> str:
    """The Wiki-50 smoke models and their controls: each row's newest line of ``results/wiki_smoke.jsonl``."""
    newest = {r["row"]: r for r in _jsonl(root / "results" / "wiki_smoke.jsonl")}
    body = [
        [
            label,
            f"{newest[row]['mean_classifier_acc']:.1f} / {newest[row]['linear_acc']:.1f}",
            ", then ".join(f"`{c}` ({s:.0f} s)" for c, s in zip(newest[row]["commands"], newest[row]["wall_seconds"])),
            _measured(newest[row]),
        ]
        for row, label in WIKI_SMOKE_ROWS.items()
        if row in newest
    ]
    head = ["model", "Wiki-50 mean / linear classifier (%)", "commands (wall s)", "date, commit, threads, load"]
    built = {r.get("data_command") for r in newest.values()}  # one Wiki-50 under every row, or none named
    source = f", built by `{next(iter(built))}`" if len(built) == 1 and None not in built else ""
    caption = (
        f"Top-1 on the run's 80/20 split of Wiki-50 (split seed 0){source}; each row's newest line of "
        f"`results/wiki_smoke.jsonl` (machine: {next(iter(newest.values()))['machine']}), written by "
        "`python scripts/wiki_smoke_table.py --out results/wiki_smoke.jsonl`."
    )
    if "hf_trained" in newest and "minilm" in newest:
        caption += " " + _fine_tune_against_base(newest["hf_trained"], newest["minilm"])
    return _captioned(caption, head, body, "lrll")


def _fine_tune_against_base(tuned: dict, base: dict) -> str:
    """Where the MiniLM smoke fine-tune ends against the untouched MiniLM, on both classifiers."""
    sides = [
        "above" if tuned[k] > base[k] else "below" if tuned[k] < base[k] else "level with"
        for k in ("mean_classifier_acc", "linear_acc")
    ]
    where = (
        f"{sides[0]} the untouched model on both classifiers"
        if sides[0] == sides[1]
        else (f"{sides[0]} the untouched model on the mean classifier and {sides[1]} it on the linear one")
    )
    return f"The fine-tune (a smoke run, not a recipe) ends {where}."


def _grid_tables(root: Path, name: str, folder: str) -> tuple[dict[str, str], list[dict]]:
    """The tables experiment ``name`` writes from its ledger in ``root/folder`` (``qt-hard grid run
    NAME --summary-only`` writes the same), and the records they read; empty without the ledger."""
    from qt_hard.experiments.gridrun import experiment
    from qt_hard.experiments.ledger import Ledger

    exp = experiment(name)
    path = root / folder
    if not (path / exp.ledger_name).is_file():
        return {}, []
    ledger = Ledger(path, exp.key, name=exp.ledger_name)
    records = ledger.latest()
    return (exp.tables(records, ledger.setup, path) if records else {}), records


def _cell_hours(records: list[dict], fields=("wall_s",)) -> float:
    return sum(float(r.get(f) or 0.0) for r in records for f in fields) / 3600


def _grid_block(root: Path, name: str, table: str, missing: str, caption: str, hours=("wall_s",)) -> str:
    """Experiment ``name``'s table file ``table`` from its ledger in ``results/scifact``, captioned with
    the ledger's file, its machines and its hours of cell time; ``missing`` before it exists."""
    tables, records = _grid_tables(root, name, "results/scifact")
    if not records:
        return missing
    machines = ", ".join(sorted({r["machine"] for r in records}))
    return tables[table] + "\n\n" + caption.format(n=len(records), machines=machines, hours=_cell_hours(records, hours))


@table("scifact", spread=False)
def _scifact(root: Path) -> str:
    """The SciFact retrieval comparison from ``results/scifact``: the recipe chosen on dev, each row's
    dev and test metrics over seeds, the guard audit, and the paired verdicts against both baselines."""
    return _grid_block(
        root,
        "scifact",
        "table.md",
        "Not measured yet: the recipe and the grid run with the commands above.",
        "`results/scifact/results.jsonl`: {n} runs on {machines}, one torch thread a process, "
        "{hours:.1f} hours of cell time in all.",
    )


@table("scifact-recipe", spread=False)
def _scifact_recipe(root: Path) -> str:
    """The recipe choice on dev (``results/scifact/recipe.jsonl``): dev nDCG@10 of MNRL, seed 0, at each
    learning rate and step count tried, and the choice."""
    return _grid_block(
        root,
        "scifact-recipe",
        "recipe.md",
        "Not measured yet: `qt-hard grid run scifact-recipe` above chooses it.",
        "`results/scifact/recipe.jsonl`: MNRL, seed 0, on {machines}, one torch thread, "
        "{hours:.1f} hours of training and evaluation in all.",
        hours=("train_s", "eval_s"),
    )


@table("retrieval_bench", spread=False)
def _retrieval_bench(root: Path) -> str:
    """qt-hard's retrieval evaluation beside InformationRetrievalEvaluator: every run of
    ``results/bench_retrieval.jsonl`` (a run's rows share one ``utc``), newest last."""
    path = root / "results" / "bench_retrieval.jsonl"
    rows = _jsonl(path) if path.is_file() else []
    if not rows:
        return "No measurement yet: run the command above."
    runs: dict[str, list] = {}
    for r in rows:
        runs.setdefault(r["utc"], []).append(r)
    body = []
    for run in runs.values():
        r = run[0]
        corpus = "whole corpus" if r["docs"] == "all" else f"first {r['docs']} documents + the judged"
        for x in run:
            body.append(
                [
                    f"`{x['case']}`",
                    corpus,
                    f"{x['ndcg@10']:.2f}",
                    f"{x['seconds_median']:.1f} ({len(x['seconds'])} round(s))",
                    f"{x['ratio']:.3f} of {x['ratio_of']}",
                    _measured(x),
                ]
            )
    r = rows[-1]
    return _captioned(
        f"SciFact test; the sides alternate and each time is the median of its rounds; `{r['command']}` (with "
        f"`--docs` and `--reps` as the rows say) on {r['machine']}, torch {r['torch']}, threads pinned.",
        ["side", "corpus", "nDCG@10", "seconds", "time ratio", "date, commit, threads, load"],
        body,
        "llrrll",
    )


@dataclass(frozen=True)
class Effect:
    """One measured effect: ``base`` and ``row`` (seed -> value) of a row and the baseline it is judged
    against, trained on the same data; ``what`` names both. ``key``: the handle the answer blocks of
    the decision page pick it by."""

    key: str
    setting: str
    what: str
    metric: str
    base: dict
    row: dict
    link: str
    cost: tuple = ()  # (strategy, k, B) of the loss benchmark, or ("st", comparison, row, baseline)

    @property
    def verdict(self) -> report.PairedVerdict:
        return report.paired_verdict(self.base, self.row)


def _by_seed(records, row, value, key="seed") -> dict:
    return {int(r[key]): float(value(r)) for r in records if r["row"] == row}


QT_TEXT = "text encoder from scratch (QT bag of words, quick-start setting)"


def _effects_text(root: Path) -> list[Effect]:
    from qt_hard.experiments.specs import qt_table

    six = lambda r: statistics.mean(r["acc"][t] for t in qt_table.TASKS)  # noqa: E731
    out = []
    readings = [r for r in _qt_ledger(root, "readings") if r.get("protocol") == "senteval"]
    link = "reproductions/hcl-text.md#the-readings-of-the-clip-at-the-quick-start-setting"
    for row, label in (("hard2-clamp", "hard, beta 2, `clamp`"), ("hard1-clamp", "hard, beta 1, `clamp`")):
        out.append(
            Effect(
                f"text_{row}_transfer",
                QT_TEXT,
                f"{label} vs uniform",
                "six-task test mean",
                _by_seed(readings, "uniform", six),
                _by_seed(readings, row, six),
                link,
                ("hard", "all", 400),
            )
        )
    sim = [r for r in _qt_ledger(root, "qt_similarity") if r.get("protocol") == "similarity"]
    for row, label in (
        ("hard1-rescaled-anneal", "hard, beta 1 annealed, `rescaled`"),
        ("hard2-clamp", "hard, beta 2, `clamp`"),
    ):
        out.append(
            Effect(
                f"text_{row}_similarity",
                QT_TEXT,
                f"{label} vs uniform",
                "similarity mean",
                _by_seed(sim, "uniform", lambda r: r["sim_mean"]),
                _by_seed(sim, row, lambda r: r["sim_mean"]),
                "reproductions/hcl-text.md#semantic-similarity-at-the-quick-start-setting",
                ("hard", "all", 400),
            )
        )
    gpu = [r for r in _qt_csv_records(root / "results" / "qt_table_gpu.csv") if r["protocol"] == "senteval"]
    out.append(
        Effect(
            "text_s2v_hard1",
            "text encoder from scratch (QT GRU, S2V's sizes, 1,500 steps)",
            "hard, beta 1, `rescaled` vs uniform",
            "six-task test mean",
            _by_seed(gpu, "uniform", six),
            _by_seed(gpu, "hard1", six),
            "reproductions/hcl-text.md#s2vs-model-sizes-on-a-gpu",
            ("hard", "all", 400),
        )
    )
    return out


# the rows the decision page reports
_ST_ROWS = ("hard_b1", "hard_b1_guard_rel", "mnrl+mined", "hard_b1+mined")


def _effects_st(root: Path) -> list[Effect]:
    from qt_hard.experiments.ledger import Ledger

    st = _st_spec()
    out = []
    for folder, start in (("minilm", "all-MiniLM-L6-v2"), ("bow", "the quick start's bag of words")):
        led = Ledger(root / "results" / "st_compare" / folder, st.KEY)
        recs = led.latest()
        have = {r["row"] for r in recs}
        for row in _ST_ROWS:
            base = st.baseline_of(row)
            if row not in have or base not in have:
                continue
            out.append(
                Effect(
                    f"st_{folder}_{row}",
                    f"fine-tuning for similarity (sentence-transformers, from {start})",
                    f"`{row}` vs `{base}`" + (" (the mining's effect: other data)" if row == st.MINED_BASELINE else ""),
                    "STS12-16 mean",
                    _by_seed(recs, base, lambda r: r["sts_mean"]),
                    _by_seed(recs, row, lambda r: r["sts_mean"]),
                    "guides/sentence-transformers.md#fine-tuning-comparison-which-loss-to-start-with",
                    ("st", folder, row, base),
                )
            )
    return out


def _effects_graphs(root: Path) -> list[Effect]:
    from qt_hard.experiments.specs import graph_table

    recs = _graph_records(root, "graph_controls")
    out = []

    def pick(row, ds):
        return _by_seed([r for r in recs if r["dataset"] == ds], row, lambda r: 100 * float(r["svm_acc"]), key="repeat")

    for ds in ("MUTAG", "PTC_MR"):
        out.append(
            Effect(
                f"graphs_hard_{ds}",
                "graphs without labels (InfoGraph)",
                f"hard, beta 1 vs uniform, {graph_table.SHORT[ds]}",
                "SVM accuracy",
                pick("infograph", ds),
                pick("hard_b1", ds),
                "reproductions/hcl-graphs.md#the-controls-one-code-10-repeats",
                ("hard", "all", 128),
            )
        )
    for ds in ("IMDB-BINARY", "MUTAG"):
        out.append(
            Effect(
                f"graphs_hscl_{ds}",
                "graphs with labels (H-SCL, lr 0.01)",
                f"H-SCL, beta 1 vs uniform, {graph_table.SHORT[ds]}",
                "SVM accuracy",
                pick("infograph_lr0.01", ds),
                pick("hscl_b1", ds),
                "reproductions/hscl.md#the-learning-rate-control-10-repeats-one-code",
                ("label", "all", 128),
            )
        )
    for ds in ("IMDB-BINARY", "IMDB-MULTI"):
        out.append(
            Effect(
                f"graphs_hscl_lr1e-3_{ds}",
                "graphs with labels (H-SCL, lr 1e-3)",
                f"H-SCL, beta 1 vs uniform, {graph_table.SHORT[ds]}",
                "SVM accuracy",
                pick("infograph", ds),
                pick("hscl_b1_lr1e-3", ds),
                "reproductions/hscl.md#the-learning-rate-control-10-repeats-one-code",
                ("label", "all", 128),
            )
        )
    return out


def _effects_images(root: Path) -> list[Effect]:
    out = []
    gpu = _vision_rows(root, "docs/img/vision_table_gpu.csv")
    for strategy in ("hard", "ot"):
        out.append(
            Effect(
                f"images_simclr_{strategy}",
                "images, in-batch negatives (SimCLR, ResNet-18, 40 epochs)",
                f"{strategy} vs uniform",
                "kNN accuracy",
                {int(r["seed"]): float(r["knn_acc"]) for r in gpu if r["strategy"] == "uniform"},
                {int(r["seed"]): float(r["knn_acc"]) for r in gpu if r["strategy"] == strategy},
                "reproductions/hcl-images.md#results",
                (strategy, "all", int(gpu[0]["batch_size"])),
            )
        )
    for folder, model in (("moco_ring_gpu", "ResNet-18"), ("moco_ring_cpu", "`resnet_tiny`")):
        rows = _vision_rows(root, f"results/{folder}")
        out.append(
            Effect(
                f"images_{folder}",
                f"images, a queue of negatives (MoCo-v2, {model})",
                "ring vs uniform",
                "kNN accuracy",
                {int(r["seed"]): float(r["knn_acc"]) for r in rows if r["strategy"] == "uniform"},
                {int(r["seed"]): float(r["knn_acc"]) for r in rows if r["strategy"] == "ring"},
                "reproductions/ring.md#results",
            )
        )
    return out


def _effects_k(root: Path) -> list[Effect]:
    cells = _kvn(root, "results")

    def seeds(N, k, cf="False"):
        return {int(r["seed"]): float(r["mean_acc"]) for r in _kvn_pick(cells, N, k, cf=cf)}

    out = []
    for N, k in ((100, 50), (1000, 998)):
        out.append(
            Effect(
                f"k_{N}",
                "choosing k (Wiki-N, B = 1000)",
                f"N = {N}: k = {k} vs all 1,998 in-batch negatives",
                "mean-classifier accuracy",
                seeds(N, None),
                seeds(N, k),
                "reproductions/k-vs-n.md#the-best-k-grows-with-n-fig-3-left",
                ("uniform", k, 1000),
            )
        )
    for N in (100, 300, 1000):
        out.append(
            Effect(
                f"collision_free_{N}",
                "the sampling (Wiki-N, B = 1000, k = 1000)",
                f"N = {N}: collision-free vs plain",
                "mean-classifier accuracy",
                seeds(N, 1000),
                seeds(N, 1000, "True"),
                "reproductions/k-vs-n.md#collision-free-sampling-fig-3-right",
            )
        )
    return out


def _effects(root: Path) -> list[Effect]:
    """Every effect the decision page reports, in its order."""
    fns = (_effects_text, _effects_st, _effects_graphs, _effects_images, _effects_k)
    return [e for fn in fns for e in fn(root)]


@table("which_negatives")
def _which_negatives(root: Path) -> str:
    """The measured effect of each setting's candidate negatives against its baseline, paired by seed:
    one table per setting."""
    parts = [
        "Effect: the mean over seeds (or repeats) of the row minus its baseline (trained on the same data), "
        "paired by seed, with the 95% t-interval of that mean; verdict: better or worse only when the interval "
        "excludes 0, level when it holds 0, not judged below 3 pairs; baseline spread: the sample std of the "
        "baseline's metric over its seeds, for context; loss cost: the row's loss, forward and backward, over "
        f"its baseline's at the row's batch size and k, from `{LOSS_BENCH}` or, for sentence-transformers, "
        f"`{ST_BENCH}` (the case with the loss, configuration, batch size and columns the row trained with, over "
        "MNRL on its baseline's columns, measured in one run; the table under the sentence-transformers guide's "
        'comparisons). CPU, one thread; "-" where no benchmark case matches the row as it trained. Each '
        "comparison links its table."
    ]
    head = ["comparison", "metric", "effect [95% interval]", "pairs", "verdict", "baseline spread", "loss cost"]
    groups: dict[str, list[list[str]]] = {}
    for e in _effects(root):
        v = e.verdict
        sd = f"{report.spread(e.base.values()):.2f}" if len(e.base) > 1 else "-"
        cost = (
            "-"
            if not e.cost
            else _st_effect_cost(root, *e.cost[1:])
            if e.cost[0] == "st"
            else _loss_ratio(root, *e.cost)
        )
        cells = [f"[{e.what}]({e.link})", e.metric, v.cell(), str(v.n), v.verdict, sd, cost]
        groups.setdefault(e.setting, []).append(cells)
    for setting, body in groups.items():
        parts += ["", f"**{setting[0].upper()}{setting[1:]}**", "", *report.markdown_table(head, body, "llrrlrr")]
    return _lines(*parts)


def _said(v: report.PairedVerdict, digits: int = 2) -> str:
    """``"better, +0.42 [+0.18, +0.66]"``: a verdict and its cell, for the claims' sentences."""
    return f"{v.verdict}, {v.cell(digits)}" + (f" ({v.n} seeds)" if v.verdict == "not judged" else "")


# --------------------------------------------------------------------------------------------
# the decision page's answers: one line of effects per setting, under the page's own prose


def _effect_line(root: Path, items: list[tuple[str, str]]) -> str:
    """One line: for each (effect key, short name) the effect's paired mean [95% interval], its seeds
    and its verdict, the name linking the effect's table."""
    fx = {e.key: e for e in _effects(root)}
    parts = []
    for key, short in items:
        v = fx[key].verdict
        parts.append(f"[{short}]({fx[key].link}) {v.cell()}, {v.n} seeds, **{v.verdict}**")
    return "Effect: " + "; ".join(parts) + "."


def _answer(items: list[tuple[str, str]]):
    return lambda root: _effect_line(root, items)


table("answer-text", spread=False)(
    _answer(
        [
            ("text_hard2-clamp_transfer", "transfer (six-task test mean) vs uniform"),
            ("text_hard2-clamp_similarity", "similarity mean"),
        ]
    )
)
table("answer-graphs", spread=False)(
    _answer(
        [
            ("graphs_hard_MUTAG", "hard vs uniform, MUTAG"),
            ("graphs_hscl_lr1e-3_IMDB-BINARY", "H-SCL vs uniform, IMDB-B"),
            ("graphs_hscl_lr1e-3_IMDB-MULTI", "IMDB-M"),
        ]
    )
)
table("answer-images", spread=False)(
    _answer([("images_simclr_hard", "SimCLR, hard vs uniform, kNN"), ("images_moco_ring_cpu", "MoCo, ring vs uniform")])
)
table("answer-k", spread=False)(
    _answer(
        [
            ("k_100", "k = 50 vs all, N = 100"),
            ("k_1000", "k = 998 vs all, N = 1000"),
            ("collision_free_1000", "collision-free vs plain, N = 1000"),
        ]
    )
)


@table("answer-similarity", spread=False)
def _answer_similarity(root: Path) -> str:
    """The sentence-transformers choice from each start, on dev, with the chosen row's test effect."""
    from qt_hard.experiments.ledger import Ledger

    st = _st_spec()
    parts = []
    for folder, start in (("minilm", "all-MiniLM-L6-v2"), ("bow", "the quick start's bag of words")):
        recs = Ledger(root / "results" / "st_compare" / folder, st.KEY).latest()
        c = st.choose(recs)
        if c.verdict is None:
            parts.append(f"from {start}, `{c.row}` (no row better on dev)")
            continue
        base = st.baseline_of(c.row)
        test = {k: {r["seed"]: r["sts_mean"] for r in recs if r["row"] == k} for k in (base, c.row)}
        t = report.paired_verdict(test[base], test[c.row])
        parts.append(
            f"from {start}, `{c.row}`: vs `{base}` on dev {c.verdict.cell()}, **{c.verdict.verdict}**; on "
            f"STS12-16 test {t.cell()}, **{t.verdict}**"
        )
    return (
        "[Chosen on dev](guides/sentence-transformers.md#fine-tuning-comparison-which-loss-to-start-with) "
        "(3 seeds): " + "; ".join(parts) + "."
    )


SCIFACT_LEDGER = "results/scifact/results.jsonl"


@table("scifact-answer", spread=False)
def _scifact_answer(root: Path) -> str:
    """Retrieval fine-tuning on SciFact: "not measured yet" until its ledger exists; then the row
    chosen on dev nDCG@10 (each row against MNRL on the same data) and its test nDCG@10 effect."""
    path = root / SCIFACT_LEDGER
    if not path.is_file():
        return f"Not measured yet: `{SCIFACT_LEDGER}` does not exist."
    from qt_hard.experiments.specs import scifact

    recs = _latest(path.parent, scifact.KEY)

    def baseline_of(row):
        if row in ("before", scifact.BASELINES[0]):
            return None
        return scifact.BASELINES[1] if "+mined" in row and row != scifact.BASELINES[1] else scifact.BASELINES[0]

    def runs(metric):
        out: dict = {}
        for r in recs:
            if r.get(metric) is not None and r["row"] != "before":
                out.setdefault(r["row"], {})[r["seed"]] = float(r[metric])
        return out

    dev, test = runs("dev_ndcg@10"), runs("test_ndcg@10")
    if scifact.BASELINES[0] not in dev:
        return f"Not measured yet: `{SCIFACT_LEDGER}` has no `{scifact.BASELINES[0]}` row."
    judged = [r for r in dev if baseline_of(r) in dev and len(set(dev[r]) & set(dev[baseline_of(r)])) >= 3]
    if not judged:
        return (
            f"Not judged yet: no row has 3 seeds paired with its baseline in `{SCIFACT_LEDGER}` "
            f"({len(recs)} records; rows so far: {', '.join(f'`{r}`' for r in sorted(dev))})."
        )
    c = report.choose_on_dev(dev, baseline_of, scifact.BASELINES[0], "dev nDCG@10")
    said = f"Chosen on dev nDCG@10 (each row against MNRL on the same data): `{c.row}`"
    if c.verdict is None:
        return said + f", no row is better than its baseline on dev ({len(recs)} records in `{SCIFACT_LEDGER}`)."
    base = baseline_of(c.row)
    t = report.paired_verdict(test.get(base, {}), test.get(c.row, {}))
    return (
        said + f": against `{base}` on dev {c.verdict.cell()}, **{c.verdict.verdict}**; on test nDCG@10 "
        f"{t.cell()}, **{t.verdict}** (`{SCIFACT_LEDGER}`)."
    )


def _ring_claims(root: Path) -> tuple[dict, report.PairedVerdict]:
    """Ring against uniform, paired by seed: MoCo's (kNN, linear) verdicts per results folder, and
    SimCLR's kNN verdict."""
    ring = {}
    for folder in ("moco_ring_cpu", "moco_ring_gpu"):
        rows = _vision_rows(root, f"results/{folder}")
        ring[folder] = [
            report.paired_verdict(
                {int(r["seed"]): float(r[m]) for r in rows if r["strategy"] == "uniform"},
                {int(r["seed"]): float(r[m]) for r in rows if r["strategy"] == "ring"},
            )
            for m in ("knn_acc", "linear_acc")
        ]
    gpu = _vision_rows(root, "docs/img/vision_table_gpu.csv")
    ring_simclr = report.paired_verdict(
        {int(r["seed"]): float(r["knn_acc"]) for r in gpu if r["strategy"] == "uniform"},
        {int(r["seed"]): float(r["knn_acc"]) for r in gpu if r["strategy"] == "ring"},
    )
    return ring, ring_simclr


def _kvn_claim_rows(root: Path) -> list[list[str]]:
    """The README claims table's rows for Ash et al., from the k-versus-N ledger's CSV."""
    cells = [r for r in _kvn(root, "results") if r["collision_free"] == "False"]
    best = {}
    for N in sorted({int(r["N"]) for r in cells if r["B"] == "1000"}):
        accs = {}
        for r in cells:
            if int(r["N"]) == N and r["B"] == "1000":
                accs.setdefault(r["k"], []).append(float(r["mean_acc"]))
        if len(accs) < 5:  # N = 200 ran only the three k of its collision block
            continue
        k = max(accs, key=lambda k: statistics.mean(accs[k]))
        best[N] = k or "1,998"
    big_b, small_b = [], []
    for N in sorted({int(r["N"]) for r in cells if r["B"] != "1000"}):
        ks, worse = [], []
        for k in sorted({r["k"] for r in cells if int(r["N"]) == N and r["k"]}, key=int):
            by_b = {B: {r["seed"]: float(r["mean_acc"]) for r in _kvn_pick(cells, N, k, B)} for B in (200, 500, 1000)}
            if not all(by_b.values()):
                continue
            judged = [report.paired_verdict(by_b[B], by_b[1000]).verdict for B in (200, 500)]
            if judged == ["better", "better"]:
                ks.append(k)
            elif "worse" in judged:
                worse.append(k)
        big_b.append(f"N = {N}: k = {', '.join(ks)}" if ks else f"N = {N}: no k")
        small_b.append(f"N = {N}: k = {', '.join(worse)}" if worse else f"N = {N}: no k")
    allc = _kvn(root, "results")

    def cf(N, k):
        plain = {r["seed"]: float(r["mean_acc"]) for r in _kvn_pick(allc, N, k)}
        return report.paired_verdict(plain, {r["seed"]: float(r["mean_acc"]) for r in _kvn_pick(allc, N, k, cf="True")})

    at1000 = {N: cf(N, 1000) for N in (100, 200, 300, 1000)}
    gains = [N for N, v in at1000.items() if v.verdict == "better"]
    level = [N for N, v in at1000.items() if v.verdict == "level"]
    k_fx = {e.key: e.verdict for e in _effects_k(root)}
    return [
        [
            "Ash et al.",
            "the best k grows with N",
            f"**reproduced**: the best k is {', '.join(str(k) for k in best.values())} for N = "
            f"{', '.join(str(n) for n in best)} (B = 1000, so 1,998 = 2B - 2 is all in-batch candidates); k = 50 "
            "against all 1,998 in-batch candidates at N = 100: "
            f"{_said(k_fx['k_100'])}; k = 998 at N = 1000: {_said(k_fx['k_1000'])}",
            "Wiki-N, 10 + 10 epochs (5x fewer than D.1), 3 seeds",
            "[k versus N](docs/reproductions/k-vs-n.md)",
        ],
        [
            "Ash et al.",
            "larger B helps at fixed k",
            f"**partly**: B = 1000 is better than both B = 200 and 500 at {'; '.join(big_b)}, and worse than one of "
            f"them at {'; '.join(small_b)}",
            "as above",
            "[k versus N](docs/reproductions/k-vs-n.md)",
        ],
        [
            "Ash et al.",
            "collision-free sampling helps, most at small N",
            "**partly**: at k = 1000 collision-free sampling is better only at N = "
            f"{', '.join(str(n) for n in gains) or 'no N'}"
            + (f", level at N = {', '.join(str(n) for n in level)}" if level else "")
            + f" and worse above; at N = 1000 removing the same-article candidates costs {-cf(1000, 100).mean:.1f} "
            f"points (k = 100) and {-cf(1000, 1000).mean:.1f} (k = 1000) where removing as many random ones costs "
            "nothing",
            "as above",
            "[k versus N](docs/reproductions/k-vs-n.md)",
        ],
    ]


@table("readme_claims", root_links=True)
def _readme_claims(root: Path) -> str:
    """The README's table of the papers' claims: each verdict with the paired intervals of the tables it
    rests on."""
    from qt_hard.experiments.specs import graph_table

    fx = {e.key: e.verdict for e in (*_effects_text(root), *_effects_images(root))}
    gc = _graph_records(root, "graph_controls")

    def g(row, ds):
        return {int(r["repeat"]): 100 * float(r["svm_acc"]) for r in gc if r["row"] == row and r["dataset"] == ds}

    def judged(base, rows):  # (row, dataset) -> verdict, over the datasets both have
        out = {(row, ds): report.paired_verdict(g(base, ds), g(row, ds)) for row in rows for ds in _GC_SETS}
        return {k: v for k, v in out.items() if v.n}

    hs01 = report.paired_verdict(g("infograph_lr0.01", "IMDB-BINARY"), g("hscl_b1", "IMDB-BINARY"))
    hs13 = judged("infograph", ["hscl_b1_lr1e-3"])
    hs13_better = [graph_table.SHORT[ds] for (_, ds), v in hs13.items() if v.verdict == "better"]
    hs13_other = sorted({v.verdict for (_, ds), v in hs13.items() if v.verdict != "better"})
    hard_g = [report.paired_verdict(g("infograph", ds), g("hard_b1", ds)) for ds in ("MUTAG", "PTC_MR")]
    hard_all = {
        **judged("infograph", [r for r in _GC_ROWS if r.startswith("hard_")]),
        **judged("infograph_code", [r for r in _GC_ROWS if r.startswith("hcl_code_")]),
    }
    hard_better = [f"`{row}` on {graph_table.SHORT[ds]}" for (row, ds), v in hard_all.items() if v.verdict == "better"]
    readings = [r for r in _qt_ledger(root, "readings") if r.get("protocol") == "senteval"]
    six = {
        row: {r["seed"]: statistics.mean(r["acc"].values()) for r in readings if r["row"] == row}
        for row in dict.fromkeys(r["row"] for r in readings)
    }
    others: dict[str, int] = {}
    for row in six:
        if row.startswith("hard") and not row.endswith("-clamp"):
            v = report.paired_verdict(six["uniform"], six[row])
            others[v.verdict] = others.get(v.verdict, 0) + 1
    ring, ring_simclr = _ring_claims(root)
    ot_gt = [r for r in _graph_records(root, "graph_table.csv") if r["row"] == "ot_e0.1" and r["dataset"] == "ENZYMES"]
    ot_gap = graph_table.ROWS["ot_e0.1"].paper[graph_table.DATASETS.index("ENZYMES")] - statistics.mean(
        100 * float(r["svm_acc"]) for r in ot_gt
    )
    gt = _graph_records(root, "graph_table.csv")
    ot_far = []  # the datasets where our OT row is further from the paper's number than our spread
    for ds in _GT_SETS:
        m, sd = report.mean_spread(
            100 * float(r["svm_acc"]) for r in gt if r["row"] == "ot_e0.1" and r["dataset"] == ds
        )
        if abs(graph_table.ROWS["ot_e0.1"].paper[graph_table.DATASETS.index(ds)] - m) > sd:
            ot_far.append(graph_table.SHORT[ds])
    hard_img, ot_img = fx["images_simclr_hard"], fx["images_simclr_ot"]
    rows = [
        [
            "Robinson et al. (HCL)",
            "hard negatives improve Quick-Thoughts on six SentEval tasks (Table 2)",
            "**partly**: under App. D.2's literal clip (`clamp`) hard beta 2 against uniform on the six-task test "
            f"mean is {_said(fx['text_hard2-clamp_transfer'])} ({fx['text_hard2-clamp_transfer'].n} seeds paired, "
            f"quick-start setting), about the paper's gain; beta 1 is {_said(fx['text_hard1-clamp_transfer'])}; "
            "of the paper's other readings of the clip (beta fixed, annealed or warmed up) "
            + (f"{others['better']} are better" if "better" in others else "none is better")
            + " ("
            + ", ".join(f"{n} {k}" for k, n in sorted(others.items()))
            + "; not judged: fewer than 3 seeds), and hard beta "
            f"1 under the rescaled reading at S2V's sizes is {_said(fx['text_s2v_hard1'])}; on semantic similarity, "
            "which the paper does not report, beta annealed from 1 is "
            f"{_said(fx['text_hard1-rescaled-anneal_similarity'])} and the clamp row "
            f"{_said(fx['text_hard2-clamp_similarity'])} ({fx['text_hard2-clamp_similarity'].n} seeds)",
            "30 books, 300-d bag of words, and 352 books, 768-d bag of words (CPU); S2V's GRU, 2,400-d, 352 books, "
            "1,500 steps (one GPU); 2-5 seeds",
            "[HCL](docs/reproductions/hcl-text.md)",
        ],
        [
            "Robinson et al. (HCL)",
            "hard negatives improve InfoGraph on TU graphs (Fig. 3)",
            f"**not reproduced**: at 10 repeats hard beta 1 against uniform is {_said(hard_g[0], 1)} on MUTAG and "
            f"{_said(hard_g[1], 1)} on PTC_MR; "
            + (
                "better: " + ", ".join(hard_better)
                if hard_better
                else "no hard row is better than its uniform row, in the paper's form or the released code's"
            )
            + "; uniform InfoGraph matches the published row",
            "5 TU datasets, 200 epochs, 3-10 repeats",
            "[HCL](docs/reproductions/hcl-graphs.md)",
        ],
        [
            "Robinson et al. (HCL)",
            "hard > debiased > SimCLR on images",
            f"**not judged**: on a 5,085-image CIFAR-10 subset hard is {hard_img.mean:+.1f} kNN points over SimCLR, "
            f"paired by seed, over {hard_img.n} seeds, fewer than a verdict needs; HCL itself found no gain on full "
            "CIFAR-10 with 510 negatives per anchor",
            "ResNet-18, 40 epochs, 2 seeds",
            "[HCL](docs/reproductions/hcl-images.md)",
        ],
        [
            "Jiang et al. (H-SCL)",
            "label-aware hard negatives beat unsupervised InfoGraph",
            "**partly**: with the learning rate matched (10 repeats) H-SCL beta 1 against uniform on IMDB-BINARY is "
            f"{_said(hs13[('hscl_b1_lr1e-3', 'IMDB-BINARY')], 1)} at InfoGraph's 1e-3 and {_said(hs01, 1)} at "
            "H-SCL's 0.01 (one of uniform's runs at that rate collapsed to chance); at 1e-3 better on "
            f"{', '.join(hs13_better) or 'no dataset'}, {' or '.join(hs13_other)} on the others",
            "5 TU datasets, 3-10 repeats",
            "[H-SCL](docs/reproductions/hscl.md)",
        ],
        [
            "Wu et al. (Ring)",
            "ring negatives improve MoCo (MoCoRing)",
            "**not reproduced** at small scale: with MoCo-v2's queue, MoCoRing against MoCo-v2 is "
            f"{_said(ring['moco_ring_cpu'][0], 1)} kNN and {_said(ring['moco_ring_cpu'][1], 1)} linear points "
            f"(`resnet_tiny`, 3 seeds) and {ring['moco_ring_gpu'][0].mean:+.1f} kNN and "
            f"{ring['moco_ring_gpu'][1].mean:+.1f} linear points (ResNet-18, {ring['moco_ring_gpu'][0].n} seeds, not "
            f"judged) (paper: +1.4 to +3.0 linear); inside SimCLR ring is {ring_simclr.mean:+.1f} kNN points over "
            f"uniform ({ring_simclr.n} seeds, not judged)",
            "MoCo: `resnet_tiny`, 40 epochs, 3 seeds (CPU); ResNet-18, 40 epochs, 2 seeds (one GPU); SimCLR: "
            "ResNet-18, 40 epochs, 2 seeds",
            "[Ring](docs/reproductions/ring.md)",
        ],
        [
            "Jiang, Ishwar & Aeron (OT)",
            "OT negatives match or beat HCL",
            f"**not judged** on images: OT is {ot_img.mean:+.1f} kNN points over SimCLR against hard's "
            f"{hard_img.mean:+.1f} ({ot_img.n} seeds); on graphs our OT row is further from the paper's number "
            f"than our repeats' spread on {', '.join(ot_far) or 'no dataset'} only (ENZYMES: {ot_gap:.1f} points "
            "below)",
            "as above",
            "[OT](docs/reproductions/ot.md)",
        ],
        *_kvn_claim_rows(root),
    ]
    spans = []
    for folder, recs in (
        ("readings", readings),
        ("qt_similarity", _qt_ledger(root, "qt_similarity")),
        ("graph_controls", gc),
    ):
        commits = {r["commit"] for r in recs if r.get("commit")}
        if len(commits) > 1:
            spans.append(f"`results/{folder}/` {len(commits)}")
    return _lines(
        report.markdown_table(["paper", "claim", "here", "scale", "page"], rows),
        *(
            [
                "",
                "The records behind these claims span several commits of the code (per ledger: "
                + ", ".join(spans)
                + "); each record names its own.",
            ]
            if spans
            else []
        ),
    )


# --------------------------------------------------------------------------------------------
# the pages: find the blocks, regenerate them, check or write


def page_files(root: Path) -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [p for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))] if p.is_file()]


def blocks(text: str) -> list[tuple[str, str]]:
    """(NAME, body) of each generated block of a page, in order; UnknownBlock for an opening marker
    without its closing one."""
    found = [(m.group("name"), m.group("body")) for m in BLOCK.finditer(text)]
    if len(OPENING.findall(text)) != len(found):
        raise UnknownBlock("a '<!-- generated: NAME -->' marker has no '<!-- /generated -->' after it")
    return found


def _spread_link(root: Path, page: Path) -> str:
    rel = os.path.relpath(root / SPREAD_PAGE, page.parent).replace(os.sep, "/")
    return (
        "Spread: the sample std (ddof 1) over seeds; verdict: the 95% t-interval of the paired differences, "
        f"better or worse only when it excludes 0 ([how the tables compare runs]({rel}{SPREAD_ANCHOR}))."
    )


def body_of(name: str, root: Path, page: Path, cache: dict | None = None) -> str:
    """The text a block NAME of ``page`` holds: a blank line, the table, (the spread's link,) a blank line."""
    if name not in REGISTRY:
        raise UnknownBlock(f"{page}: unknown generated block {name!r}; known: {', '.join(sorted(REGISTRY))}")
    cache = {} if cache is None else cache
    if name not in cache:
        cache[name] = REGISTRY[name].make(root).rstrip("\n")
    text = cache[name]
    if REGISTRY[name].root_links:
        text = _relink(text, root, page)
    if REGISTRY[name].spread:
        text += "\n\n" + _spread_link(root, page)
    return f"\n{text}\n\n"


def render(text: str, root: Path, page: Path, cache: dict | None = None) -> str:
    """``text`` with every generated block rewritten from its files (UnknownBlock for an unknown NAME)."""
    cache = {} if cache is None else cache

    def sub(m):
        name = m.group("name")
        return f"<!-- generated: {name} -->\n{body_of(name, root, page, cache)}<!-- /generated -->"

    return BLOCK.sub(sub, text)


def stale(root: Path = ROOT) -> list[tuple[Path, str]]:
    """(page, NAME) of every block whose text differs from its regeneration."""
    cache: dict = {}
    out = []
    for page in page_files(root):
        try:
            found = blocks(page.read_text(encoding="utf-8"))
        except UnknownBlock as err:
            raise UnknownBlock(f"{page}: {err}") from None
        for name, body in found:
            if body != body_of(name, root, page, cache):
                out.append((page, name))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m docgen", description=__doc__.splitlines()[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="exit 1 naming each stale block")
    what.add_argument("--write", action="store_true", help="rewrite every block from its files")
    p.add_argument("--root", default=str(ROOT), help="the checkout (default: this one)")
    args = p.parse_args(argv)
    root = Path(args.root).resolve()
    try:
        if args.check:
            found = stale(root)
            for page, name in found:
                print(f"stale: {page.relative_to(root)}: {name}")
            n = sum(len(blocks(pg.read_text(encoding="utf-8"))) for pg in page_files(root))
            print(f"{n} generated blocks, {len(found)} stale" + ("; run with --write" if found else ""))
            return 1 if found else 0
        cache: dict = {}
        for page in page_files(root):
            text = page.read_text(encoding="utf-8")
            new = render(text, root, page, cache)
            if new != text:
                page.write_text(new, encoding="utf-8")
                print(f"wrote {page.relative_to(root)}")
        return 0
    except UnknownBlock as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
