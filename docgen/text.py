"""Quick-Thoughts on text (the ``qt_table`` spec): the tables of its CSVs and ledgers, the quick
start's controls, its wall time and the runs' costs."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.specs import qt_table

from docgen.markdown import captioned, join_lines, span
from docgen.pages import table
from docgen.results import latest_records, read_csv, read_jsonl


def qt_csv_records(path: Path) -> list[dict]:
    """The records of a QT table's CSV (kept without its ledger): row, seed, protocol, acc per task."""
    return [
        {
            "row": r["row"],
            "seed": int(r["seed"]),
            "protocol": r["protocol"],
            "acc": {t: float(r[t]) for t in qt_table.TASKS},
        }
        for r in read_csv(path)
    ]


def _qt_summary(records, protocol, field="acc") -> str:
    return qt_table.summarize(records, protocol, {}, field=field)[0]


def qt_ledger(root: Path, folder: str) -> list[dict]:
    return latest_records(root / "results" / folder, qt_table.KEY)


for _name, _file in (("qt_cpu", "qt_table.csv"), ("qt_gpu", "qt_table_gpu.csv")):
    for _protocol in ("senteval", "skipthoughts"):
        table(f"{_name}_{_protocol}")(
            lambda root, f=_file, p=_protocol: _qt_summary(qt_csv_records(root / "results" / f), p)
        )


@table("readings_dev")
def _readings_dev(root: Path) -> str:
    return _qt_summary(qt_ledger(root, "readings"), "senteval", "devacc")


@table("readings_test")
def _readings_test(root: Path) -> str:
    return _qt_summary(qt_ledger(root, "readings"), "senteval")


@table("qt_similarity_transfer")
def _qt_similarity_transfer(root: Path) -> str:
    return _qt_summary(qt_ledger(root, "qt_similarity"), "senteval")


@table("qt_similarity")
def _qt_similarity(root: Path) -> str:
    return qt_table.summarize_similarity(qt_ledger(root, "qt_similarity"))[0]


def _sim_parts(results: dict) -> list[float]:
    """STS12-16 mean, STS-B cos, SICK-R cos and their mean (the similarity mean) of an eval JSON."""
    years = statistics.mean(results[f"STS1{y}"]["spearman"] for y in range(2, 7))
    stsb, sick = results["STSBenchmark-cos"]["spearman"], results["SICKRelatedness-cos"]["spearman"]
    return [years, stsb, sick, (years + stsb + sick) / 3]


def six_mean(results: dict) -> float:
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
        body.append([label, *(f"{x:.2f}" for x in _sim_parts(res)), f"{six_mean(tr):.2f}" if tr else ""])
    body.append(
        [
            "all-MiniLM-L6-v2",
            *(f"{x:.2f}" for x in _sim_parts(minilm)),
            f"{six_mean(minilm_transfer):.2f}",
        ]
    )
    head = ["model", "STS12-16 mean", "STS-B cos", "SICK-R cos", "Sim. mean", "six-task transfer mean"]
    return join_lines(
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
    recs = qt_ledger(root, "qt_similarity")
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
        body.append([f"control: {label}", f"{six_mean(transfer[key]):.2f}", f"{_sim_parts(ctrl[key])[-1]:.2f}"])
    minilm = json.loads((folder / "minilm.json").read_text())["results"]
    minilm_transfer = json.loads((root / "results" / "minilm_senteval_protocol.json").read_text())["results"]
    body.append(["all-MiniLM-L6-v2", f"{six_mean(minilm_transfer):.2f}", f"{_sim_parts(minilm)[-1]:.2f}"])
    return join_lines(
        report.markdown_table(["model", "transfer", "similarity"], body, "lrr"),
        "",
        "The quick start's objective, from the readings table's 5 seeds (`results/readings/`): "
        + _quickstart_choice(root).sentence(),
    )


def _quickstart_choice(root: Path) -> report.Choice:
    """The quick start's objective as the readings ledger's dev accuracies choose it (the rule of
    :func:`.report.choose_on_dev`, uniform the baseline)."""
    dev: dict = {}
    for r in qt_ledger(root, "readings"):
        if r.get("protocol") == "senteval" and r.get("devacc"):
            dev.setdefault(r["row"], {})[r["seed"]] = statistics.mean(r["devacc"][t] for t in qt_table.TASKS)
    return report.choose_on_dev(
        dev, lambda r: None if r == "uniform" else "uniform", "uniform", "SentEval dev six-task accuracy"
    )


def six_row(label: str, results: dict, digits: int = 2, f1: bool = False) -> list[str]:
    """A model's six transfer tasks (MRPC's F1 beside its accuracy with ``f1``) and their mean."""
    cells = [f"{results[t]['acc']:.{digits}f}" for t in qt_table.TASKS]
    if f1:
        cells[-1] += f" / {results['MRPC']['f1']:.{digits}f}"
    return [label, *cells, f"{six_mean(results):.2f}"]


def _cost_spans(recs: list[dict], protocols: dict[str, str]) -> str:
    """The training seconds a run and the evaluation seconds per protocol of a QT table's records."""
    trained: dict = {}
    for r in recs:  # a run's second protocol reads its final/ without training: train_s 0
        trained[(r["row"], r["seed"])] = max(trained.get((r["row"], r["seed"]), 0.0), float(r["train_s"]))
    train = span([t for t in trained.values() if t > 0])  # 0: trained by an earlier call of the script
    evals = [
        f"{label} {span([float(r['eval_s']) for r in recs if r['protocol'] == p])}" for p, label in protocols.items()
    ]
    return f"training {train} a run; evaluation: {', '.join(evals)}"


def _cost_runs(recs: list[dict]) -> str:
    """How many runs (row, seed) a QT table's records hold, and how many protocols each."""
    n, protocols = len({(r["row"], r["seed"]) for r in recs}), len({r["protocol"] for r in recs})
    return f"{n} runs" + (f" x {protocols} protocols" if protocols > 1 else "")


@table("qt_cost", spread=False)
def _qt_cost(root: Path) -> str:
    """The Quick-Thoughts tables' runs: how many, where they ran, their training and evaluation seconds."""
    res = root / "results"
    readings = latest_records(res / "readings", qt_table.KEY)
    similarity = latest_records(res / "qt_similarity", qt_table.KEY)
    cpu, gpu = read_csv(res / "qt_table.csv"), read_csv(res / "qt_table_gpu.csv")
    both = {"senteval": "SentEval", "skipthoughts": "skip-thoughts"}
    controls = json.loads((res / "qt_similarity" / "quickstart_controls.json").read_text())
    minilm = json.loads((res / "qt_similarity" / "minilm.json").read_text())
    body = [
        [
            f"readings, {_cost_runs(readings)}",
            "2-core CPU, one thread a run, two runs at a time (two copies of each command sharing the folder)",
            _cost_spans(readings, {"senteval": "transfer"}),
            "`results/readings/` (ledger with each run's machine, date and commit; `metrics/` holds each run's "
            "`metrics.csv`)",
        ],
        [
            f"similarity, {_cost_runs(similarity)}",
            "the same",
            _cost_spans(similarity, {"senteval": "transfer", "similarity": "similarity"}),
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
        [f"CPU scale, {_cost_runs(cpu)}", "2-core CPU", _cost_spans(cpu, both), "`results/qt_table.csv`"],
        [
            f"S2V's sizes, {_cost_runs(gpu)}",
            "one H100, two or three runs sharing it",
            _cost_spans(gpu, both) + " (on the GPU)",
            "`results/qt_table_gpu.csv`",
        ],
    ]
    return captioned(
        "Seconds from each run's record (`train_s`, `eval_s`; an evaluation file's `total_seconds`); the CPU "
        "runs shared the machine with other jobs, so their times are upper bounds.",
        ["run", "machine", "wall time", "results"],
        body,
    )


@table("quickstart_transfer")
def _quickstart_transfer(root: Path) -> str:
    """The quick start's objective over its seeds, its seed 0, and its two control rows."""
    recs = [r for r in qt_ledger(root, "readings") if r["row"] == "hard2-clamp" and r.get("protocol") == "senteval"]
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
        body.append(six_row(label, ctrl["controls"][key], digits=1))
    caption = (
        "Test accuracy (%), SentEval's protocol: the readings ledger's `hard2-clamp` rows (`results/readings/`) and "
        "the controls of `results/qt_similarity/quickstart_controls_transfer.json`."
    )
    return captioned(caption, ["model", *qt_table.TASKS, "mean"], body, "l" + "r" * 7)


@table("quickstart_wall", spread=False)
def _quickstart_wall(root: Path) -> str:
    """The README's first command end to end (``results/quickstart_wall.jsonl``, its newest line) and
    the wall times of the readings ledger's runs of the quick start's objective."""
    r = read_jsonl(root / "results" / "quickstart_wall.jsonl")[-1]
    recs = [x for x in qt_ledger(root, "readings") if x["row"] == "hard2-clamp" and x.get("protocol") == "senteval"]
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


@table("readme_quickstart_time", spread=False)
def _readme_quickstart_time(root: Path) -> str:
    """The README's sentence on how long its first command takes: the newest line of
    ``results/quickstart_wall.jsonl``."""
    r = read_jsonl(root / "results" / "quickstart_wall.jsonl")[-1]
    return (
        f"After the downloads it took {r['total_s'] / 60:.1f} minutes ({r['total_s']} s: preparing the books "
        f"{r['books_s']} s, training {r['train_s']} s on {_threads(r['threads'])}, the three evaluations "
        f"{r['eval_s']} s) on {r['machine']} beside {r['load']}, at commit {r['commit']} "
        f"(`results/quickstart_wall.jsonl`).\n"
    )


def _threads(n: int) -> str:
    return "one torch thread" if n == 1 else f"{n} torch threads"


@table("quickstart_threads", spread=False)
def _quickstart_threads(root: Path) -> str:
    """One thread against two for the quick-start config: a sentence per run of
    ``results/bench_threads_quickstart.jsonl`` (its lines with a ``ratio``, one ``utc`` a run), oldest
    first, each with the machine's load when it started."""
    rows = [r for r in read_jsonl(root / "results" / "bench_threads_quickstart.jsonl") if "ratio" in r]
    runs: dict[str, dict] = {}
    for r in rows:
        runs.setdefault(r["utc"], {})[r["num_threads"]] = r
    said = []
    for by in runs.values():
        one, two = by[1], by[2]
        load = one["load_average_1min"]
        said.append(
            f"{one['steps']} steps of this config ran at {two['sentences_per_s']:.0f} sentences/s with two threads "
            f"against {one['sentences_per_s']:.0f} with one ({two['ratio']:.2f} times) on {one['machine']} with a "
            f"1-minute load average of {load:.1f}{' from other work' if load >= 1.5 else ''} ({one['utc'][:10]}, "
            f"commit {one['commit']})."
        )
    return " ".join(said) + " (`scripts/bench_train.py threads`, `results/bench_threads_quickstart.jsonl`.)\n"
