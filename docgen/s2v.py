"""Quick-Thoughts at S2V's sizes on a GPU: the controls, the learning curve and the speed of
``configs/qt_s2v.yaml``."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.specs import qt_table

from docgen.markdown import join_lines
from docgen.pages import table
from docgen.results import json_lines, read_csv, read_jsonl
from docgen.text import six_mean, six_row


@table("s2v_controls", spread=False)
def _s2v_controls(root: Path) -> str:
    rows = json.loads((root / "results" / "s2v_controls.json").read_text())["rows"]
    labels = {
        "untrained": "the same architecture (bidirectional GRU pair, seed 0)",
        "bow2400": "`random:bow2400` (bag of words, seed 0)",
    }
    body = [six_row(labels[k], v["results"], digits=1) for k, v in rows.items() if k in labels]
    head = ["control (2,400-d, untrained, on `qt_s2v`'s 50,001-row cased tokenizer)", "MR", "CR", "SUBJ", "MPQA"]
    head += ["TREC", "MRPC", "mean"]
    return join_lines(
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
    folder = root / "results" / "s2v_curve_gpu"
    points = read_csv(folder / "curve.csv")
    controls = json.loads((root / "results" / "s2v_controls.json").read_text())["rows"]
    for p in points:  # the curve read its control means from this same file
        for key in ("untrained", "bow2400"):
            if abs(float(p[f"control_{key}_mean"]) - six_mean(controls[key]["results"])) > 0.01:
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
        body.append([label, *(f"{res[t]['acc']:.1f}" for t in qt_table.TASKS), f"{six_mean(res):.2f}", "", ""])
    meta = _s2v_gpu_meta(root)
    p0 = points[0]
    head = ["point", *qt_table.TASKS, "mean", "held-out top-1", "held-out loss"]
    return join_lines(
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
    prec = read_jsonl(folder / "precision.jsonl")
    runs = [r for r in map(json.loads, json_lines(folder / "bench_train_speed_gpu.jsonl")) if "ratio" in r]
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
    return join_lines(
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
