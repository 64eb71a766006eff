"""Fine-tuning comparison: MNRL, GISTEmbed and HardNegativesLoss rows from one starting model (CPU-sized).

The training pool, the rows (:data:`ROWS`, their ``+mined`` and ``+cached`` forms), the measures, the
ledger and the paired verdicts are described on docs/guides/sentence-transformers.md ("Fine-tuning
comparison: which loss to start with"), with the commands; ``st-compare-memory`` is the comparison's
memory probe (:mod:`.st_memory`).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from qt_hard.errors import ArgumentError
from qt_hard.evaluation.models import STEncoder
from qt_hard.experiments import report
from qt_hard.experiments.contract import Cell, Context, Experiment, Row
from qt_hard.evaluation.similarity import COSINE_TASKS, STS_YEARS
from qt_hard.experiments.specs.st_finetuning import (
    SHARED_ROWS,
    BeforeThenRows,
    GuardAudit,
    baseline_of,
    frozen_guide,
    guard_cell,
    is_static,
    load_start,
    mine_triplets,
    mined_once,
    row_loss,
    train_dataset,
)
from qt_hard.experiments.specs.st_finetuning import finetune as st_finetune
from qt_hard.experiments.specs.st_finetuning import parse_row as parse_spec_row
from qt_hard.experiments.specs.st_finetuning import row_label as spec_row_label
from qt_hard.experiments.specs.st_memory import MemoryProbe, latest_records, memory_steps, with_memory_table

RING = {"lower": {"schedule": "linear", "start": 0.0, "end": 85.0, "until": 0.5}, "upper": 95.0}
_ROWS = {  # name: (label, what the row changes)
    "mnrl": SHARED_ROWS["mnrl"],
    "mnrl_sym": (
        "MNRL symmetric",
        {"loss": "mnrl", "kwargs": {"directions": ["query_to_doc", "doc_to_query"], "partition_mode": "per_direction"}},
    ),
    "gist": SHARED_ROWS["gist"],
    "hard_b0.1": ("hard, beta 0.1", {"loss": "hnl", "kwargs": {"negatives": "hard", "beta": 0.1}}),
    **{name: SHARED_ROWS[name] for name in ("hard_b0.5", "hard_b1", "hard_b1_guard_abs", "hard_b1_guard_rel")},
    "debiased": (
        "debiased, tau+ 0.1, smooth floor",
        {"loss": "hnl", "kwargs": {"negatives": "debiased", "tau_plus": 0.1, "floor": "smooth"}},
    ),
    "ring": ("ring, lower 0->85, upper 95", {"loss": "hnl", "kwargs": {"negatives": "ring", **RING}}),
    "ot": ("OT, epsilon 0.5", {"loss": "hnl", "kwargs": {"negatives": "ot", "epsilon": 0.5}}),
    "gist_filter": SHARED_ROWS["gist_filter"],
}
ROWS = {name: Row(name, changes, label) for name, (label, changes) in _ROWS.items()}
MINED_ROWS = ("mnrl", "gist", "hard_b1", "hard_b1_guard_rel", "gist_filter")
DEFAULT_ROWS = [*ROWS, *(f"{r}+mined" for r in MINED_ROWS)]
BASELINE = "mnrl"
MINED_BASELINE = "mnrl+mined"
BEFORE = "before"
KEY = ("row", "seed")
# (record field, table heading): the headline first.
METRICS = (
    ("sts_mean", "STS12-16"),
    ("stsb", "STS-B test"),
    ("sickr", "SICK-R test"),
    ("mrpc_top1", "MRPC top-1"),
)


def parse_row(name: str) -> tuple[str, bool, bool]:
    """(base row, mined, cached) of ``NAME[+mined][+cached]``, ``NAME`` one of :data:`ROWS`;
    ``ArgumentError`` for an unknown name (:func:`.st_finetuning.parse_row`)."""
    return parse_spec_row(name, ROWS)


def row_label(name: str) -> str:
    return spec_row_label(name, ROWS, "before (starting model)", ", mined triplets")


def row_order(name: str) -> tuple:
    if name == BEFORE:
        return (-1, 0, 0, 0)
    base, mined, cached = parse_row(name)
    return (int(mined), list(ROWS).index(base), int(cached), 0)


# ------------------------------------------------------------------------------------------- model
def build_loss(row: str, model, model_spec: str, recipe: dict, mini_batch_size: int = 32):
    """The loss of ``row`` (``NAME[+mined][+cached]``) for ``model`` under ``recipe``'s scale: its spec in
    :data:`ROWS` built by :func:`.st_finetuning.row_loss`, the guide a frozen copy of ``model_spec``
    (a bag of words given a ``transformers`` tokenizer first for GIST). A ``+cached`` row of a
    ``StaticEmbedding`` model is an ``ArgumentError``."""
    guide = lambda: frozen_guide(model_spec, recipe.get("max_seq_length"))  # noqa: E731
    return row_loss(row, ROWS, model, recipe["scale"], mini_batch_size, guide)


# -------------------------------------------------------------------------------------------- data
def pool_pairs(root: Path, limit: int | None = None) -> tuple[list[tuple[str, str]], dict]:
    """The disjoint training pool (its first ``limit`` pairs when given) and its bookkeeping."""
    from qt_hard.data.similarity_pool import training_pool

    pool = training_pool(root)
    pairs = pool.pairs if limit is None else pool.pairs[:limit]
    return pairs, pool.summary()


# -------------------------------------------------------------------------------------------- cell
def evaluate(model, data_dir: Path, mrpc_test) -> dict:
    """Cosine Spearman x100 on ``COSINE_TASKS`` (``qt_hard.evaluation.similarity``), the STS12-16 mean,
    and MRPC test retrieval top-1 x100, from one encoding per distinct sentence."""
    import numpy as np

    from qt_hard.evaluation.models import EmbeddingCache
    from qt_hard.evaluation.similarity import evaluate_similarity

    t = time.perf_counter()
    model.eval()
    cache = EmbeddingCache(STEncoder(model))
    res = {name: evaluate_similarity(name, data_dir, cache) for name in COSINE_TASKS}
    q = cache.embed([a for a, _ in mrpc_test])
    d = cache.embed([b for _, b in mrpc_test])
    q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
    top1 = float(((q @ d.T).argmax(axis=1) == np.arange(len(mrpc_test))).mean())
    return {
        "spearman": {n: res[n]["spearman"] for n in COSINE_TASKS},
        "pearson": {n: res[n]["pearson"] for n in COSINE_TASKS},
        "sts_mean": float(np.mean([res[n]["spearman"] for n in STS_YEARS])),
        "stsb": res["STSBenchmark-cos"]["spearman"],
        "sickr": res["SICKRelatedness-cos"]["spearman"],
        "stsb_dev": res["STSBenchmark-cos"]["devspearman"],
        "sickr_dev": res["SICKRelatedness-cos"]["devspearman"],
        "mrpc_top1": 100.0 * top1,
        "sentences_encoded": cache.n_encoded,
        "eval_s": round(time.perf_counter() - t, 1),
    }


def finetune(row: str, seed: int, model_spec: str, recipe: dict, rows, workdir: Path, mini_batch_size: int = 32):
    """Fine-tune the starting model with ``row``'s loss on ``rows`` (pairs or triplets) for
    ``recipe["steps"]`` steps; returns (model, info)."""
    import torch

    torch.manual_seed(seed)
    model = load_start(model_spec, recipe.get("max_seq_length"))
    loss = build_loss(row, model, model_spec, recipe, mini_batch_size)
    # The guard's work is recorded per run; a candidate is a true positive when the pool pairs its
    # text with the same anchor. The row index rides in the label column, which the losses ignore.
    relevant: dict[str, set] = {}
    for r in rows:
        relevant.setdefault(r[0], set()).add(r[1])
    # A StaticEmbedding's features have no batch axis to check labels against: its runs go unaudited.
    audited = hasattr(loss, "record_guard") and getattr(loss, "guard", None) is not None and not is_static(model)
    audit = GuardAudit(loss, rows, relevant) if audited else None
    data = train_dataset(rows, {"label": list(range(len(rows)))} if audited else None)
    info = st_finetune(model, loss, recipe, data, seed, workdir)
    if audit is not None:
        info.update(audit.record())
    return model, info


# ------------------------------------------------------------------------------------------- memory
def memory_probe(probe: dict) -> dict:
    """A few training steps of ``probe["row"]`` at ``probe["batch"]`` on the pool's pairs, in this (fresh)
    process (:func:`.st_memory.memory_steps`)."""
    import torch

    recipe = probe["recipe"]
    torch.set_num_threads(probe["threads"])
    model = load_start(probe["model"], recipe.get("max_seq_length"))
    loss = build_loss(probe["row"], model, probe["model"], recipe, probe["mini_batch_size"])
    pairs, _ = pool_pairs(Path(probe["data_dir"]))
    return memory_steps(model, loss, pairs, probe["batch"], probe["steps"], recipe["lr"])


# ------------------------------------------------------------------------------------------ summary
def summarize(records: list[dict], recipe: dict | None = None) -> tuple[str, dict]:
    """The Markdown table: mean ± sample std (ddof 1) over seeds per row of ``METRICS``; then each row's
    difference to its baseline (:func:`baseline_of`: MNRL on the same data) paired by seed, the
    headline's with its 95% t-interval and verdict (:func:`qt_hard.experiments.report.paired_verdict`),
    * where a column's interval excludes 0, and per baseline the sentence that groups the rows by
    verdict. ``parts``: stats, diffs, MNRL's spread, verdicts (row -> PairedVerdict of the headline),
    baselines (row -> its baseline) and beats (the rows judged better)."""
    by, stats = _seed_stats(records)
    heads = [h for _, h in METRICS]
    lines = _stats_table(stats, recipe, records)
    diffs, verdicts, bases, spread = {}, {}, {}, None
    if BASELINE in stats and any(baseline_of(r) in by for r in stats):
        spread = stats[BASELINE]["std"]
        body, diffs, verdicts, bases = _paired_rows(by, stats, len(heads))
        lines += _difference_table(stats, heads, body)
        for b in (BASELINE, MINED_BASELINE):
            mine = {r: {s: v[0] for s, v in by[r].items()} for r in bases if bases[r] == b}
            if mine:
                base_runs = {s: v[0] for s, v in by[b].items()}
                lines += [
                    "",
                    report.verdict_sentence(f"`{b}`", base_runs, mine, "STS12-16 mean", label=lambda r: f"`{r}`"),
                ]
        lines += ["", *dev_lines(records)]
    if note := report.commits_note(records):
        lines += ["", note]
    beats = [r for r, v in verdicts.items() if v.verdict == "better"]
    parts = {"stats": stats, "diffs": diffs, "spread": spread, "verdicts": verdicts, "baselines": bases}
    return "\n".join(lines), {**parts, "beats": beats}


def _seed_stats(records: list[dict]) -> tuple[dict, dict]:
    """``by`` (row -> seed -> the ``METRICS`` values) and ``stats`` (row, in ``row_order`` -> n, mean, sample
    std (ddof 1; None for one seed))."""
    import numpy as np

    by: dict = {}
    for r in records:
        by.setdefault(r["row"], {})[r["seed"]] = np.array([r[m] for m, _ in METRICS], dtype=float)
    stats = {}
    for row in sorted(by, key=row_order):
        m = np.stack(list(by[row].values()))
        stats[row] = {"n": len(m), "mean": m.mean(0), "std": m.std(0, ddof=1) if len(m) > 1 else None}
    return by, stats


def _stats_table(stats: dict, recipe: dict | None, records: list[dict]) -> list[str]:
    """The recipe line (where given) and the table of mean ± sample std per row, with its guard's cell
    (:func:`.st_finetuning.guard_cell`)."""
    heads = [h for _, h in METRICS]
    lines = []
    if recipe:
        lines += [
            "Recipe: "
            + ", ".join(f"{k} {v}" for k, v in recipe.items() if v is not None)
            + ". Cosine Spearman x100 (STS12-16: the mean of the five years, each the mean over its sets; "
            "STS-B and SICK-R: test split); MRPC: test retrieval top-1 x100. Mean ± sample std (ddof 1) over seeds. "
            "Guard: the share of candidates the row's guard removed, mean over the runs that recorded it (in "
            "brackets, the share of those the pool pairs with the same anchor); not recorded for runs made before "
            "the audit, of a static model or of GISTEmbedLoss (whose filter the audit does not read).",
            "",
        ]
    body = []
    for row, s in stats.items():
        sd = s["std"] if s["std"] is not None else [None] * len(heads)
        cells = [f"{m:.2f}" + (f" ± {d:.2f}" if d is not None else "") for m, d in zip(s["mean"], sd)]
        guard = guard_cell([r for r in records if r["row"] == row], row, ROWS)
        body.append([f"{row_label(row)} (`{row}`)", str(s["n"]), *cells, guard])
    heads = ["Row", "seeds", *heads, "guard removed (true positives)"]
    return lines + report.markdown_table(heads, body, "lr" + "r" * len(METRICS) + "l")


def _paired_rows(by: dict, stats: dict, n_metrics: int) -> tuple[list, dict, dict, dict]:
    """Each row against its baseline, paired by seed: the table's body rows, and per row the mean
    differences, the headline's PairedVerdict and the baseline (rows without a shared seed are left out)."""
    import numpy as np

    body, diffs, verdicts, bases = [], {}, {}, {}
    for row in stats:
        base = baseline_of(row)
        if base is None or base not in by or not set(by[row]) & set(by[base]):
            continue
        judged = [
            report.paired_verdict({s: v[i] for s, v in by[base].items()}, {s: v[i] for s, v in by[row].items()})
            for i in range(n_metrics)
        ]
        diffs[row], verdicts[row], bases[row] = np.array([v.mean for v in judged]), judged[0], base
        marks = ["*" if v.verdict in ("better", "worse") else "" for v in judged]
        cells = [judged[0].cell() + marks[0], judged[0].verdict]
        cells += [f"{v.mean:+.2f}{m}" for v, m in zip(judged[1:], marks[1:])]
        body.append([f"`{row}`", f"`{base}`", str(judged[0].n), *cells])
    return body, diffs, verdicts, bases


def _difference_table(stats: dict, heads: list[str], body: list) -> list[str]:
    """The paragraph on the paired differences (with the baselines' seed spreads) and their table."""
    context = [
        f"`{b}` {', '.join(f'{h} {x:.2f}' for h, x in zip(heads, stats[b]['std']))}"
        for b in (BASELINE, MINED_BASELINE)
        if b in stats and stats[b]["std"] is not None
    ]
    return [
        "",
        "Difference to each row's baseline, MNRL trained on the same data (`mnrl` for rows on the pairs, "
        "`mnrl+mined` for rows on the mined triplets; `mnrl+mined` itself against `mnrl`: the effect of the "
        "mining), paired by seed: the STS12-16 mean with its 95% t-interval and verdict (better or worse only "
        "when the interval excludes 0; not judged below 3 pairs), the other columns the mean, * where the "
        "interval excludes 0. The baselines' seed spreads, for context: "
        + ("; ".join(context) or "none yet (one seed)")
        + ".",
        "",
        *report.markdown_table(
            ["Row", "baseline", "pairs", f"{heads[0]} [95% interval]", "verdict", *heads[1:]],
            body,
            "llrrl" + "r" * (len(heads) - 1),
        ),
    ]


DEV_METRIC = "dev score (STS-B dev and SICK-R dev cosine Spearman x100, averaged)"


def dev_runs(records: list[dict]) -> dict:
    """row -> seed -> the dev mean of a run: (``stsb_dev`` + ``sickr_dev``) / 2, the split the choices
    read (the test columns never choose)."""
    out: dict = {}
    for r in sorted(records, key=lambda r: row_order(r["row"])):
        if r["row"] != BEFORE and r.get("stsb_dev") is not None and r.get("sickr_dev") is not None:
            out.setdefault(r["row"], {})[r["seed"]] = (r["stsb_dev"] + r["sickr_dev"]) / 2
    return out


def choose(records: list[dict]) -> report.Choice:
    """The row this comparison recommends, chosen on dev alone (``report.choose_on_dev`` over
    :func:`dev_runs`, each row against :func:`baseline_of`); MNRL where no row is better on dev."""
    return report.choose_on_dev(dev_runs(records), baseline_of, BASELINE, DEV_METRIC)


def dev_lines(records: list[dict]) -> list[str]:
    """The dev table (each row's dev mean against its baseline's, paired by seed: mean [95% interval]
    and verdict) and the line naming the row chosen on it, with that row's test effect."""
    dev = dev_runs(records)
    body = []
    for row, vals in dev.items():
        base = baseline_of(row)
        if base not in dev:
            continue
        v = report.paired_verdict(dev[base], vals)
        body.append([f"`{row}`", f"`{base}`", str(v.n), f"{statistics.mean(vals.values()):.2f}", v.cell(), v.verdict])
    if not body:
        return []
    c = choose(records)
    said = c.sentence(label=lambda r: f"`{r}`")
    base = baseline_of(c.row)
    if base is not None:
        test = {k: {r["seed"]: r["sts_mean"] for r in records if r["row"] == k} for k in (c.row, base)}
        t = report.paired_verdict(test[base], test[c.row])
        said += f" On test, against `{base}` on the STS12-16 mean: {t.cell()}, {t.verdict}."
    return [
        f"Dev, the split the choice reads: the {DEV_METRIC}, each row against its baseline paired by seed:",
        "",
        *report.markdown_table(
            ["Row", "baseline", "pairs", "dev score", "difference [95% interval]", "verdict"], body, "llrrrl"
        ),
        "",
        said,
    ]


CSV_FIELDS = [
    "row",
    "label",
    "seed",
    *STS_YEARS,
    "sts_mean",
    "stsb",
    "sickr",
    "mrpc_top1",
    "stsb_dev",
    "sickr_dev",
    "steps",
    "train_rows",
    "train_loss",
    "train_s",
    "eval_s",
    "wall_s",
    "machine",
    "utc",
    "commit",
]


def csv_text(records: list[dict]) -> str:
    """One CSV row per run (``CSV_FIELDS``), in the table's order."""
    ordered = sorted(records, key=lambda r: (row_order(r["row"]), r["seed"] if r["seed"] is not None else -1))
    rows = [{**r, **{y: r["spearman"][y] for y in STS_YEARS}, "label": row_label(r["row"])} for r in ordered]
    return report.csv_text(CSV_FIELDS, rows)


# --------------------------------------------------------------------------------------- the contract
class _Common(Experiment):
    """The options, checks, setup and per-process data the comparison and its memory probe share
    (one setup per folder: the probe's records sit beside the comparison's)."""

    default_out = "runs/st_compare"
    parse_row = staticmethod(parse_row)
    row_table = ROWS

    def add_arguments(self, parser) -> None:
        parser.add_argument("--model", default=None, help="starting model: a sentence-transformers folder, or minilm")
        parser.add_argument("--steps", type=int, default=140, help="optimizer steps of every run")
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--lr", type=float, default=0.05)
        parser.add_argument(
            "--scale", type=float, default=20.0, help="MNRL's scale (1 / temperature), all rows but gist"
        )
        parser.add_argument("--warmup-ratio", type=float, default=0.1)
        parser.add_argument(
            "--max-seq-length", type=int, default=None, help="cut training inputs (default: the model's)"
        )
        parser.add_argument("--pairs", type=int, default=None, help="use the first N pairs of the pool (default: all)")
        parser.add_argument("--mine-margin", type=float, default=0.05, help="mine_hard_negatives' relative_margin")
        parser.add_argument("--mini-batch-size", type=int, default=32, help="the +cached rows' mini-batch")
        parser.add_argument("--threads", type=int, default=1, help="torch threads of each process")
        parser.add_argument("--data-dir", default=None, help="SentEval data folder (default $QT_HARD_DATA/senteval)")

    def check(self, args) -> None:
        if args.model is None:
            raise ArgumentError("--model: give the starting model (a sentence-transformers folder, or minilm)")
        if args.model != "minilm" and not (Path(args.model) / "modules.json").is_file():
            raise ArgumentError(f"--model {args.model}: not a sentence-transformers folder (no modules.json)")
        for flag, v in (("--steps", args.steps), ("--batch-size", args.batch_size), ("--threads", args.threads)):
            if v < 1:
                raise ArgumentError(f"{flag} must be >= 1, got {v}")
        if args.batch_size < 2:
            raise ArgumentError("--batch-size must be >= 2 (a contrastive batch needs negatives)")
        pairs = self.context(args)["pairs"]
        if len(pairs) < args.batch_size:
            raise ArgumentError(f"--batch-size {args.batch_size} exceeds the {len(pairs)} training pairs")

    def context(self, args) -> dict:
        """The pool, its bookkeeping and the MRPC test pairs of this process (read once a process)."""
        if getattr(self, "_ctx", None) is None or self._ctx["args"] is not args:
            from qt_hard.data.similarity_pool import mrpc_pairs
            from qt_hard.evaluation.senteval import default_senteval_dir

            data_dir = Path(args.data_dir) if args.data_dir else default_senteval_dir()
            pairs, summary = pool_pairs(data_dir, args.pairs)
            mrpc = mrpc_pairs(data_dir / "MRPC" / "msr_paraphrase_test.txt")
            self._ctx = {"args": args, "data_dir": data_dir, "pairs": pairs, "pool": summary, "mrpc_test": mrpc}
        return self._ctx

    def setup(self, args, out: Path) -> dict:
        ctx = self.context(args)
        recipe = ("steps", "batch_size", "lr", "scale", "warmup_ratio", "max_seq_length")
        return {
            "model": args.model,
            "recipe": {k: getattr(args, k) for k in recipe},
            "pool": {"pairs": len(ctx["pairs"]), **ctx["pool"]},
            "mined": {"relative_margin": args.mine_margin, "num_negatives": 1, "sampling_strategy": "top"},
            "mini_batch_size": args.mini_batch_size,
        }

    def tables(self, records, setup, out: Path) -> dict[str, str]:
        """``table.md`` (with the memory ledger's rows when the folder has one) and ``results.csv``."""
        comparison = latest_records(out, "results.jsonl", KEY)
        if not comparison:
            return {}
        table = with_memory_table(summarize(comparison, (setup or {}).get("recipe"))[0], out)
        return {"table.md": table, "results.csv": csv_text(comparison)}


class Comparison(BeforeThenRows, _Common):
    """``before`` (the starting model, measured once), then the rows x seeds (``OUT/results.jsonl``)."""

    name = "st-compare"
    help = "Fine-tune one sentence-transformers model with each row's loss; STS and MRPC, chosen on dev"
    rows = DEFAULT_ROWS
    progress_keys = ("sts_mean", "stsb", "sickr", "mrpc_top1", "wall_s")

    def check(self, args) -> None:
        super().check(args)
        cached = any(parse_row(r)[2] for r in args.rows.split(",") if r)
        if cached and is_static(load_start(args.model)):
            raise ArgumentError(
                f"--model {args.model} is a StaticEmbedding: its inputs do not split along the batch, so the "
                "+cached rows do not apply to it"
            )

    def mined(self, args, out: Path) -> list[tuple[str, str, str]]:
        """(anchor, positive, negative) mined once with the starting model, kept in ``OUT/mined.jsonl``."""
        pairs = self.context(args)["pairs"]
        return mined_once(out / "mined.jsonl", lambda: mine_triplets(pairs, load_start(args.model), args.mine_margin))

    def run(self, cell: Cell, ctx: Context) -> dict:
        """One ledger record: ``before`` (the starting model evaluated) or a row fine-tuned with its seed."""
        import torch

        args, out, recipe = ctx.args, ctx.out, ctx.setup["recipe"]
        row, seed = cell.claim
        torch.set_num_threads(args.threads)
        data = self.context(args)
        if args.max_seq_length is not None and "eval_len" not in data:  # the starting model's own, read once
            data["eval_len"] = load_start(args.model).max_seq_length
        t0 = time.perf_counter()
        if row == BEFORE:
            model, info = load_start(args.model), {"steps": 0}
        else:
            rows = self.mined(args, out) if parse_row(row)[1] else data["pairs"]
            workdir = out / "work" / f"{row}_s{seed}"
            model, info = finetune(row, seed, args.model, recipe, rows, workdir, args.mini_batch_size)
            if recipe.get("max_seq_length") is not None:  # evaluated at the starting model's own length
                model.max_seq_length = data["eval_len"]
            info["train_rows"] = len(rows)
        info.update(evaluate(model, data["data_dir"], data["mrpc_test"]))
        wall = round(time.perf_counter() - t0, 1)
        return {"row": row, "seed": seed, **info, "wall_s": wall, "threads": args.threads}


class Memory(MemoryProbe, _Common):
    """Peak resident memory of a few training steps of ``--memory`` and of its ``+cached`` form at
    each ``--memory-batch``, each in a fresh process (``OUT/memory.jsonl``; :mod:`.st_memory`)."""

    name = "st-compare-memory"
    help = "Peak memory of a row and of its +cached form at given batch sizes, each in a fresh process"
    probe_fn = staticmethod(memory_probe)

    def check(self, args) -> None:
        super().check(args)
        if is_static(load_start(args.model)):
            raise ArgumentError(
                f"--model {args.model} is a StaticEmbedding: its inputs do not split along the batch, so the "
                "+cached rows and --memory do not apply to it"
            )

    def probe_args(self, args, out: Path, setup: dict) -> dict:
        return {
            "recipe": setup["recipe"],
            "model": args.model,
            "data_dir": str(self.context(args)["data_dir"]),
            "threads": args.threads,
            "mini_batch_size": args.mini_batch_size,
        }


EXPERIMENTS = (Comparison(), Memory())
