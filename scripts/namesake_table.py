"""The namesake at S2V's width: each row's difference to uniform, paired by seed, with 95% t-intervals.

Reads a ``qt-hard grid run qt-table`` folder (``OUT/results.jsonl``: each run's six SentEval tasks under the
SentEval protocol; ``OUT/runs/<row>_s<seed>/final``: the trained encoders) and adds, per run, two
readouts that need no classifier:

* STS12-16: Spearman x100 of the cosine, mean over each year's sets, then over the five years
  (``qt_hard.evaluation.similarity.evaluate_sts``);
* held-out next-sentence: ``scripts/qt_heldout.py``'s top-1 and uniform loss on the books the config
  leaves out (``--first``/``--last``; configs/qt_s2v.yaml leaves out books 8-10).

``score`` writes one JSON line per run to ``OUT/scores.jsonl`` (a run already there is kept, so a
stopped call resumes); ``table`` writes ``OUT/namesake_table.md`` and prints it: per row the mean ±
sample std (ddof 1) over seeds of the six-task mean, STS12-16 and the held-out top-1 and loss, then each
row's difference to ``--baseline`` paired by seed: the mean difference and its 95% t-interval
(mean ± t(0.975, n - 1) x sd / sqrt(n) over the n shared seeds; with one seed, no interval). The last
line is a one-line headline.

    python scripts/namesake_table.py score --out runs/namesake --device cuda
    python scripts/namesake_table.py table --out runs/namesake
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from qt_hard.script_cli import ScriptParser, run_script  # noqa: E402

STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
SIX = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")
COLUMNS = ("six-task mean", "STS12-16", "held-out top-1", "held-out loss")


def run_folders(out: Path) -> list[tuple[str, int, Path]]:
    """(row, seed, folder) of every finished run under ``OUT/runs`` (``<row>_s<seed>/final``)."""
    found = []
    for folder in sorted((out / "runs").glob("*_s*")):
        row, _, seed = folder.name.rpartition("_s")
        if seed.isdigit() and (folder / "final").is_dir():
            found.append((row, int(seed), folder))
    return found


def cmd_score(args) -> int:
    import torch

    import qt_hard
    from qt_hard.evaluation.models import EmbeddingCache
    from qt_hard.evaluation.similarity import evaluate_sts, load_sts
    from qt_hard.experiments.ledger import provenance
    from qt_hard.paths import data_path
    from qt_heldout import HeldOut

    out = Path(args.out)
    scores = out / "scores.jsonl"
    done = {(r["row"], r["seed"]) for r in _jsonl(scores)}
    todo = [(row, seed, folder) for row, seed, folder in run_folders(out) if (row, seed) not in done]
    if not todo:
        print(f"every run of {out} is scored")
        return 0
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    senteval = Path(args.data) if args.data else data_path("senteval")
    held = HeldOut(args.first, args.last, args.blocks, args.block_size)
    tasks = {year: load_sts(year, senteval) for year in STS_YEARS}
    for row, seed, folder in todo:
        enc = qt_hard.load_encoder(folder, device=device)
        cache = EmbeddingCache(enc)
        sts = {year: round(evaluate_sts(task, cache)["spearman"], 2) for year, task in tasks.items()}  # x100
        rec = {"row": row, "seed": seed, "run": str(folder), "sts_spearman": sts}
        rec["sts12_16"] = round(statistics.mean(sts.values()), 2)
        rec.update({f"heldout_{k}": v for k, v in held.score(enc).items()})
        rec.update(held_out_books=[args.first, args.last], device=device, **provenance(ROOT))
        with scores.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)
    return 0


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def t_interval(diffs: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """The ``level`` t-interval of the mean of ``diffs`` (sample std, n - 1 degrees of freedom); None
    with fewer than two values."""
    from scipy import stats

    n = len(diffs)
    if n < 2:
        return None
    m, sd = statistics.mean(diffs), statistics.stdev(diffs)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return m - half, m + half


def values(out: Path) -> dict[str, dict[int, list[float | None]]]:
    """row -> seed -> the four columns of ``COLUMNS`` (None where a readout is missing)."""
    from qt_hard.experiments.specs import qt_table

    senteval = {
        (r["row"], r["seed"]): statistics.mean(r["acc"][t] for t in SIX)
        for r in qt_table.ledger(out, None).latest()
        if r.get("protocol") == "senteval" and "acc" in r
    }
    scores = {(r["row"], r["seed"]): r for r in _jsonl(out / "scores.jsonl")}
    runs: dict[str, dict[int, list]] = {}
    for key in sorted(set(senteval) | set(scores)):
        s = scores.get(key, {})
        runs.setdefault(key[0], {})[key[1]] = [
            senteval.get(key),
            s.get("sts12_16"),
            s.get("heldout_next_top1"),
            s.get("heldout_uniform_loss"),
        ]
    return runs


def table(runs: dict, baseline: str) -> tuple[str, str]:
    """The Markdown of the two tables and the headline."""
    from qt_hard.experiments.report import fmt_mean_spread, markdown_table

    digits = (2, 2, 3, 3)
    body = []
    for row, seeds in runs.items():
        cells = []
        for i, d in enumerate(digits):
            have = [v[i] for v in seeds.values() if v[i] is not None]
            cells.append(fmt_mean_spread(have, d) if len(have) > 1 else (f"{have[0]:.{d}f}" if have else "-"))
        body.append([row, str(len(seeds)), *cells])
    first = markdown_table(["row", "seeds", *COLUMNS], body, "lr" + "r" * len(COLUMNS))
    base = runs.get(baseline, {})
    diffs_body, heads = [], []
    for row, seeds in runs.items():
        if row == baseline:
            continue
        cells, counts = [], set()
        for i, d in enumerate(digits):
            shared = sorted(s for s in seeds if s in base and seeds[s][i] is not None and base[s][i] is not None)
            diffs = [seeds[s][i] - base[s][i] for s in shared]
            counts.add(len(diffs))
            if not diffs:
                cells.append("-")
                continue
            ci = t_interval(diffs)
            m = statistics.mean(diffs)
            cells.append(f"{m:+.{d}f}" + (f" [{ci[0]:+.{d}f}, {ci[1]:+.{d}f}]" if ci else " (one seed)"))
        n = f"{min(counts)}" if len(counts) == 1 else f"{min(counts)}-{max(counts)}"
        diffs_body.append([row, n, *cells])
        if cells[0] != "-":
            heads.append(f"{row} {cells[0]}")
    second = markdown_table(["row", "shared seeds", *COLUMNS], diffs_body, "lr" + "r" * len(COLUMNS))
    text = "\n".join(
        [
            "Mean ± sample std (ddof 1) over seeds; six-task mean: SentEval protocol, test accuracy (%); STS12-16: "
            "Spearman x100 of the cosine; held-out: next-sentence top-1 and uniform loss on the books training "
            "leaves out.",
            "",
            *first,
            "",
            f"Difference to {baseline}, paired by seed: mean, and in brackets its 95% t-interval (n - 1 degrees of "
            "freedom over the shared seeds).",
            "",
            *second,
        ]
    )
    headline = f"six-task mean difference to {baseline}: " + ("; ".join(heads) if heads else "no paired row")
    return text, headline


def cmd_table(args) -> int:
    out = Path(args.out)
    runs = values(out)
    if not runs:
        raise SystemExit(f"{out}: no finished run in results.jsonl or scores.jsonl")
    text, headline = table(runs, args.baseline)
    (out / "namesake_table.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    print(headline)
    return 0


def main(argv=None) -> int:
    ap = ScriptParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score", help="STS12-16 and the held-out readouts of every run")
    s.add_argument("--out", required=True, help="the qt-table grid's folder")
    s.add_argument("--device", default=None, help="where the encoders run (default: cuda where there is one)")
    s.add_argument("--data", default=None, help="SentEval folder (default $QT_HARD_DATA/senteval)")
    s.add_argument("--first", type=int, default=8, help="first held-out book (0-based)")
    s.add_argument("--last", type=int, default=11, help="held-out books: FIRST..LAST-1")
    s.add_argument("--blocks", type=int, default=30)
    s.add_argument("--block-size", type=int, default=64)
    t = sub.add_parser("table", help="the paired table of the scored runs")
    t.add_argument("--out", required=True, help="the qt-table grid's folder")
    t.add_argument("--baseline", default="uniform")
    args = ap.parse_args(argv)
    return cmd_score(args) if args.cmd == "score" else cmd_table(args)


if __name__ == "__main__":
    sys.exit(run_script(main))
