"""Fine-tuning with sentence-transformers (the st-compare experiment's summary), and each row's loss
cost over MNRL as the row trained."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.specs import scifact
from qt_hard.experiments.specs import st_compare as st

from docgen.markdown import captioned
from docgen.pages import table
from docgen.results import read_jsonl


def _st_compare(root: Path, folder: str) -> tuple[str, dict]:
    led = Ledger(root / "results" / "st_compare" / folder, st.KEY)
    return st.summarize(led.latest(), (led.setup or {}).get("recipe"))


table("st_compare_bow")(lambda root: _st_compare(root, "bow")[0])


@table("st_recipe_choice", spread=False)
def _st_recipe_choice(root: Path) -> str:
    """The bag-of-words start's recipe, chosen on dev: MNRL, seed 0, one folder per (lr, steps)."""
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
    return captioned(
        f"MNRL from the bag of words, one seed per recipe; {st.DEV_METRIC}; rule: the highest dev score "
        f"(the test columns are not read). The starting model's dev score: {before:.2f}. From "
        "`results/st_compare/bow_recipe/`.",
        ["lr", "steps", "seeds", "dev score", ""],
        body,
        "rrrrl",
    )


table("st_compare_minilm")(lambda root: _st_compare(root, "minilm")[0])


ST_BENCH = "results/bench_st_losses.jsonl"


def bench_run(root: Path) -> list[dict]:
    """The rows of the newest run of ``scripts/bench_losses.py st`` (one run: every ratio measured
    side by side); [] without the file."""
    path = root / ST_BENCH
    rows = read_jsonl(path) if path.is_file() else []
    return [r for r in rows if (r["utc"], r["command"]) == (rows[-1]["utc"], rows[-1]["command"])] if rows else []


def trained_as(records: list[dict], row: str, recipe: dict | None) -> tuple | None:
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


def cost_case(bench: list[dict], trained: tuple | None) -> dict | None:
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
    out = {}
    for name, folder, key in (
        ("bow", root / "results" / "st_compare" / "bow", st.KEY),
        ("minilm", root / "results" / "st_compare" / "minilm", st.KEY),
        ("scifact", root / "results" / "scifact", scifact.KEY),
        ("nfcorpus", root / "results" / "nfcorpus", scifact.KEY),
    ):
        if (folder / "results.jsonl").is_file():
            led = Ledger(folder, key)
            out[name] = (led.latest(), (led.setup or {}).get("recipe") or {})
    return out


def effect_cost(root: Path, folder: str, row: str, base: str) -> str:
    """The loss cost of ``row`` over its baseline ``base`` as both trained in ``folder``: the row's case
    over MNRL on the same columns, or over MNRL on the pairs where the baseline trained on the pairs and
    the row on mined triplets (both from one run of the benchmark)."""
    records, recipe = _st_ledgers(root).get(folder, ([], {}))
    trained = trained_as(records, row, recipe)
    base_trained = trained_as(records, base, recipe)
    case = cost_case(bench_run(root), trained)
    if case is None or base_trained is None:
        return "-"
    return f"x{case['ratio'] if base_trained[3] == trained[3] else case['ratio_vs_pairs']:.2f}"


_ST_COST_COLUMNS = (
    ("bow", "STS, from the bag of words"),
    ("minilm", "STS, from all-MiniLM-L6-v2"),
    ("scifact", "SciFact"),
    ("nfcorpus", "NFCorpus"),
)


@table("st_loss_cost", spread=False)
def _st_loss_cost(root: Path) -> str:
    """Each sentence-transformers comparison row's loss over MNRL's, as the row trained (loss and
    configuration from its records, its comparison's batch size, its columns)."""
    ledgers = _st_ledgers(root)
    bench = bench_run(root)
    rows = list(dict.fromkeys(r["row"] for records, _ in ledgers.values() for r in records if r["row"] != "before"))
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
            case = cost_case(bench, trained_as(records, row, recipe))
            cells.append("-" if case is None else f"x{case['ratio']:.2f}")
        body.append([f"`{row}`", "pairs + mined negative" if "mined" in row.split("+")[1:] else "pairs", *cells])
    if not bench:
        return captioned(
            f"No run of `scripts/bench_losses.py st` in `{ST_BENCH}` yet.", head, body, "ll" + "r" * len(names)
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
    return captioned(caption, head, body, "ll" + "r" * len(names))
