"""Retrieval fine-tuning on BEIR SciFact from all-MiniLM-L6-v2: which negatives, judged on dev, reported on test.

The data and its dev split (:mod:`.retrieval_data`), the recipe chosen on dev (:func:`select_recipe`), the
mined negatives, the rows (:data:`ROWS`), the guard's audit and the verdicts (:func:`summarize`) are
described on docs/guides/retrieval.md ("The setup"; the commands: "How to run it").
"""

from __future__ import annotations

import time
from pathlib import Path

from qt_hard.errors import ArgumentError
from qt_hard.experiments.contract import Cell, Context, Experiment, Row
from qt_hard.experiments.specs.st_finetuning import (
    GUARD_MARGIN,
    HARD_B1,
    SHARED_ROWS,
    BeforeThenRows,
    guard_cell,
)
from qt_hard.experiments.specs.st_finetuning import baseline_of as pair_baseline_of
from qt_hard.experiments.specs.st_finetuning import parse_row as parse_spec_row
from qt_hard.experiments.specs.st_finetuning import row_label as spec_row_label
from qt_hard.experiments.specs.st_memory import MemoryProbe, latest_records, memory_steps, with_memory_table

from .retrieval_data import (
    DEV_FRACTION,
    MINE_MARGIN,
    MINILM,
    Scifact,
    dev_split,
    input_hashes,
    mine,
    write_slice,
)

__all__ = [
    "DEV_FRACTION",
    "EXPERIMENTS",
    "ROWS",
    "Scifact",
    "baseline_of",
    "dev_split",
    "mine",
    "one_change_family",
    "parse_row",
    "run_cell",
    "select_recipe",
    "summarize",
    "write_slice",
]

# tau+ of the debiased rows, chosen among on dev: about NFCorpus's share of in-batch candidates relevant to
# the anchor's query (1.7%), and a value below and above it
TAU_PLUS = (0.01, 0.02, 0.05)
WARMUP_STEPS = 2
# "order": the batches are made before training (:meth:`Scifact.pairs_for`) and trained in that order
BASE_RECIPE = {
    "batch_size": 32,
    "scale": 20.0,
    "scheduler": "constant_with_warmup",
    "warmup_steps": WARMUP_STEPS,
    "order": "given",
}

_ROWS = {  # name: (label, what the row changes)
    **{name: SHARED_ROWS[name] for name in ("mnrl", "hard_b0.5", "hard_b1", "hard_b1_guard_abs", "hard_b1_guard_rel")},
    "hard_b1_guard_guide": (
        f"hard, beta 1, guard relative {GUARD_MARGIN} on the frozen start",
        {"loss": "hnl", "guide": True, "kwargs": {**HARD_B1, "guard": "relative", "guard_margin": GUARD_MARGIN}},
    ),
    "mnrl_kept": (
        "MNRL on the pairs the miner kept (the control of +mined)",
        {"loss": "mnrl", "kwargs": {}, "kept": True},
    ),
    "mask_relevant": (
        "label: in-batch documents judged relevant to the anchor's query masked",
        {"loss": "hnl", "relation": True, "kwargs": {"negatives": "label"}},
    ),
    # Debiased with the smooth floor: at scale 20 the papers' hard clamp puts most anchors of a batch on
    # the floor (no gradient; SciFact's starting model: 60-90% of them), so only the smooth estimate
    # tests debiasing. The hard-floor rows stay defined for the records measured with them.
    **{
        f"debiased_smooth_t{t:g}": (
            f"debiased, tau+ {t:g}, smooth floor",
            {"loss": "hnl", "kwargs": {"negatives": "debiased", "tau_plus": t, "floor": "smooth"}},
        )
        for t in TAU_PLUS
    },
    **{
        f"debiased_t{t:g}": (
            f"debiased, tau+ {t:g}, the papers' hard floor",
            {"loss": "hnl", "kwargs": {"negatives": "debiased", "tau_plus": t}},
        )
        for t in TAU_PLUS
    },
    "gist": SHARED_ROWS["gist"],
    "gist_filter": SHARED_ROWS["gist_filter"],
}
ROWS = {name: Row(name, changes, label) for name, (label, changes) in _ROWS.items()}
# The rows measured on both datasets, in the order a grid runs them. Not run (SciFact settled them: no row
# of them beat its baseline there, and NFCorpus's question is the filters): hard beta 0.5 on the mined
# triplets, the guard on the frozen start's cosines, GISTEmbedLoss itself.
DEFAULT_ROWS = (
    "mnrl",
    "mask_relevant",
    "hard_b1",
    "hard_b1_guard_rel",
    "hard_b1_guard_abs",
    "gist_filter",
    *(f"debiased_smooth_t{t:g}" for t in TAU_PLUS),
    "hard_b0.5",
    "mnrl_kept",
    "mnrl+mined",
    "hard_b1+mined",
    "hard_b1_guard_rel+mined",
    "hard_b1_guard_abs+mined",
)
KEY = ("row", "seed")
# (record field, table heading); dev first: it is what rows are chosen by.
DEV_METRICS = (("dev_ndcg@10", "dev nDCG@10"),)
TEST_METRICS = (("test_ndcg@10", "nDCG@10"), ("test_mrr@10", "MRR@10"), ("test_recall@100", "R@100"))


def baseline_of(row: str, rows=()) -> str | None:
    """The row ``row`` is judged against, one change away (:func:`.st_finetuning.baseline_of`), except,
    where ``rows`` (the table's) hold it, a guarded row against the same row unguarded (the guard is its one
    change) and MNRL on the mined triplets against MNRL on their batches without negatives (``mnrl_kept``)."""
    own = "mnrl_kept" if row == "mnrl+mined" else row.replace("_guard_rel", "").replace("_guard_abs", "")
    return own if own != row and own in rows else pair_baseline_of(row)


def parse_row(name: str) -> tuple[str, bool, bool]:
    """(base row, mined, cached) of ``NAME[+mined][+cached]``, ``NAME`` one of :data:`ROWS`; an ArgumentError
    for an unknown name (:func:`.st_finetuning.parse_row`)."""
    return parse_spec_row(name, ROWS)


def row_label(name: str) -> str:
    return spec_row_label(name, ROWS, "before (all-MiniLM-L6-v2)", ", mined")


# -------------------------------------------------------------------------------------------- loss
def build_loss(row: str, model, recipe: dict, relation=None):
    """The loss of ``row`` for ``model`` under ``recipe`` (scale, mini-batch of ``+cached``): its spec in
    :data:`ROWS` built by :func:`.st_finetuning.row_loss`, the guide (GIST's, or the guard's) a frozen
    MiniLM on the model's device; a row that masks by the judgements gets ``relation``
    (:class:`.st_finetuning.RelevantToQuery`) as its ``label_relation``."""
    from .st_finetuning import frozen_guide, row_loss

    guide = lambda: frozen_guide(MINILM, None, str(model.device))  # noqa: E731
    return row_loss(row, ROWS, model, recipe["scale"], recipe.get("mini_batch_size", 32), guide, relation)


def memory_probe(probe: dict) -> dict:
    """A few training steps of ``probe["row"]`` at ``probe["batch"]`` on the training pairs (or the mined
    triplets of a ``+mined`` row), in this (fresh) process (:func:`.st_memory.memory_steps`)."""
    import torch

    from .st_finetuning import load_start

    torch.set_num_threads(probe["threads"])
    sf = Scifact(probe["data"])
    model = load_start(MINILM, probe["recipe"].get("max_seq_length"))
    loss = build_loss(probe["row"], model, probe["recipe"])
    rows = mine(sf, Path(probe["mined"])) if parse_row(probe["row"])[1] else sf.pairs
    return memory_steps(model, loss, sf.texts(rows), probe["batch"], probe["steps"], probe["recipe"]["lr"])


# -------------------------------------------------------------------------------------------- cell
def evaluate(model, sf: Scifact, eval_max_seq_length: int) -> dict:
    """dev and test retrieval metrics (x100) of ``model`` at ``eval_max_seq_length``
    (:class:`qt_hard.evaluation.evaluator.RetrievalEvaluator`, one encoding of the corpus), with each
    query's nDCG@10, RR@10 and Recall@100 under ``per_query`` (``{split: {"queries": [id], metric: [value]}}``,
    :func:`.report.pack_per_query`)."""
    model.eval()
    model.max_seq_length = eval_max_seq_length
    return _record(_evaluator(sf)(model))


def _evaluator(sf: Scifact):
    from qt_hard.evaluation.evaluator import RetrievalEvaluator

    return RetrievalEvaluator(sf.data, sf.eval_qrels, per_query=True)


def _record(res: dict) -> dict:
    """A record's evaluation fields from the evaluator's result: the splits' metrics, each query's own
    scores (the verdicts over queries read them; the aggregate is their mean), packed
    (:func:`.report.pack_per_query`), and the seconds."""
    from qt_hard.experiments.report import pack_per_query

    out = {k: v for k, v in res.items() if k.startswith(("dev_", "test_")) and not k.endswith("_queries")}
    return {**out, "per_query": pack_per_query(res["per_query"]), "eval_s": res["seconds"]["total_seconds"]}


def mined_epochs(sf: Scifact, ctx: dict):
    """``epoch_rows`` for :meth:`Scifact.pairs_for` on the mined triplets: each epoch's pairs, in its
    order, with the negative mined for the pair (``ctx["mined"]()``); a pair without one is left out."""
    negative = {(q, d): n for q, d, n in ctx["mined"]()}
    return lambda seed, e: [(q, d, negative[q, d]) for q, d in sf.epoch_pairs(seed, e) if (q, d) in negative]


def run_cell(row: str, seed: int, ctx: dict, eval_steps=(), on_eval=None) -> dict:
    """One record: ``before`` (the starting model) or ``row`` fine-tuned with ``seed`` under
    ``ctx["recipe"]``; with ``eval_steps`` (recipe choice) dev and test are also measured at those steps."""
    import torch

    from .st_finetuning import FloorAudit, GuardAudit, RelevantToQuery, finetune, load_start, train_dataset

    sf: Scifact = ctx["scifact"]
    t0 = time.perf_counter()
    torch.manual_seed(seed if seed is not None else 0)
    model = load_start(MINILM, device=ctx.get("device", "cpu"))
    eval_len = model.max_seq_length  # evaluated at the model's own length whatever training cut
    if ctx.get("recipe", {}).get("max_seq_length"):
        model.max_seq_length = ctx["recipe"]["max_seq_length"]
    info: dict = {"steps": 0}
    if row != "before":
        base, mined, _ = parse_row(row)
        recipe = ctx["recipe"]
        kept = ROWS[base].changes.get("kept", False)
        rows = sf.pairs_for(
            seed, recipe["steps"], recipe["batch_size"], mined_epochs(sf, ctx) if mined or kept else None
        )
        if kept:  # the mined rows' batches without their negatives: the mining's pairs, not its negatives
            rows = [r[:2] for r in rows]
        loss = build_loss(row, model, recipe, RelevantToQuery(rows, sf.relevant))
        audit = GuardAudit(loss, rows, sf.relevant) if hasattr(loss, "record_guard") else None
        floor = FloorAudit(loss) if ROWS[base].changes["kwargs"].get("negatives") == "debiased" else None
        callbacks = []
        if eval_steps:  # the recipe choice: dev and test at those steps too; the run goes on as without them
            from qt_hard.integrations.sentence_transformers import EvaluatorCallback

            measured = lambda step, res: on_eval(step, _record(res))  # noqa: E731
            callbacks = [EvaluatorCallback(_evaluator(sf), set(eval_steps), measured, eval_len)]
        data = train_dataset(sf.texts(rows), {"label": list(range(len(rows)))})
        info = finetune(model, loss, recipe, data, seed, ctx["workdir"] / f"{row}_s{seed}", callbacks)
        info["train_rows"] = len(rows)
        if audit is not None:
            info.update(audit.record())
        if floor is not None:
            info.update(floor.record())
    info.update(evaluate(model, sf, eval_len))
    wall = round(time.perf_counter() - t0, 1)
    return {"row": row, "seed": seed, **info, "wall_s": wall, "inputs": ctx["inputs"]}


FLAT_NDCG = 0.3  # dev nDCG@10 a step along an axis may gain and still count as flat


def select_recipe(records: list[dict]) -> dict:
    """The recipe: the learning rate of the best dev nDCG@10 (ties: fewer steps, then the smaller rate),
    at the fewest steps whose dev nDCG@10 at that rate is within :data:`FLAT_NDCG` of the best: where a
    longer run gains less than that (well inside one seed's noise), the shorter run is the same peak at
    a fraction of every row's cost."""
    if not records:
        raise ArgumentError("no recipe records to choose from: run `qt-hard grid run scifact-recipe` first")
    best = max(records, key=lambda r: (r["dev_ndcg@10"], -r["steps"], -r["lr"]))
    near = [r for r in records if r["lr"] == best["lr"] and r["dev_ndcg@10"] >= best["dev_ndcg@10"] - FLAT_NDCG]
    steps = min(r["steps"] for r in near)
    rule = f"best dev nDCG@10 of MNRL, seed 0, at the fewest steps within {FLAT_NDCG} of it"
    return {"lr": best["lr"], "steps": steps, "rule": rule}


def recipe_edges(records: list[dict], choice: dict) -> list[str]:
    """Why dev may not have peaked at ``choice``: for each axis (learning rate; steps) on which the chosen
    value is the extreme tried, the neighbour just inside it at the chosen value of the other axis scores
    more than :data:`FLAT_NDCG` below the choice (the curve still rises towards the edge), or only one
    value of an axis was tried. [] when the choice is interior on both axes or the curve is flat at each
    edge it sits on."""
    dev = {(r["lr"], r["steps"]): r["dev_ndcg@10"] for r in records}
    best = dev[(choice["lr"], choice["steps"])]
    out = []
    for axis, name, other in (("lr", "learning rate", "steps"), ("steps", "step count", "lr")):
        values = sorted({k[0 if axis == "lr" else 1] for k in dev})
        at = choice[axis]
        if len(values) < 2:  # one value tried: nothing says the curve has turned
            out.append(f"only one {name} was tried ({at:g})")
            continue
        for edge, inside, word in ((values[-1], -2, "largest"), (values[0], 1, "smallest")):
            if at != edge:
                continue
            near = values[inside]
            key = (near, choice[other]) if axis == "lr" else (choice[other], near)
            if key in dev and best - dev[key] > FLAT_NDCG:
                out.append(f"the {word} {name} tried ({at:g}) is the best, {best - dev[key]:.2f} above {near:g}")
    return out


# ----------------------------------------------------------------------------------------- summary
def summarize(records: list[dict], recipe: dict | None = None) -> str:
    """The Markdown tables: mean ± sample std over seeds per row (dev first, then test), the guard
    audit, and each row against its one-change baseline at two levels (:func:`two_level_tables`); no
    verdict where a record holds no per-query scores."""
    from qt_hard.experiments.report import markdown_table, mean_spread

    by: dict = {}
    for r in records:
        by.setdefault(r["row"], {})[r["seed"]] = r
    order = [
        "before",
        *[r for r in DEFAULT_ROWS if r in by],
        *sorted(r for r in by if r not in (*DEFAULT_ROWS, "before")),
    ]
    order = [r for r in order if r in by]
    metrics = (*DEV_METRICS, *TEST_METRICS)
    lines = []
    if recipe:
        lines += [
            "Recipe (chosen on dev): " + ", ".join(f"{k} {v}" for k, v in recipe.items()) + ". Retrieval x100 over "
            "the whole corpus; mean ± sample std (ddof 1) over seeds.",
            "",
        ]
    body = []
    for row in order:
        runs = by[row]
        cells = []
        for m, _ in metrics:
            vals = [runs[s][m] for s in runs]
            mean, sd = mean_spread(vals)
            cells.append(f"{mean:.2f}" + (f" ± {sd:.2f}" if len(vals) > 1 else ""))
        guard = guard_cell(list(runs.values()), row, ROWS)
        body.append([f"{row_label(row)} (`{row}`)", str(len(runs)), *cells, guard])
    heads = ["row", "seeds", *(h for _, h in metrics), "guard removed (true positives)"]
    lines += markdown_table(heads, body, "lr" + "r" * (len(metrics) + 1))
    lines += catch_table(by, order)
    lines += floor_table(by, order)
    lacking = sorted(row for row in order if any("per_query" not in r for r in by[row].values()))
    if lacking:  # a verdict needs both levels: such records are re-run (--redo), not judged by seeds alone
        said = ", ".join(f"`{row}`" for row in lacking)
        lines += ["", f"Not judged: records of {said} hold no per-query scores; run them again with --redo."]
    else:
        lines += two_level_tables(by, order)
    return "\n".join(lines)


def catch_table(by: dict, order: list[str]) -> list[str]:
    """How much there was to catch and what each guard caught, summed over a guarded row's runs
    (``guard_audit``: the query-to-document candidates of every training batch): the share of candidates
    the training judgements mark relevant to the anchor's query, the share the guard removed, its
    precision (removed that are relevant) and its recall (relevant that are removed). [] when no guarded
    row was audited."""

    body = []
    for row in order:
        audits = [r["guard_audit"] for r in by[row].values() if r.get("guard_audit")]
        if not audits or "guard" not in ROWS[parse_row(row)[0]].changes["kwargs"]:
            continue
        c = {k: sum(a[k] for a in audits) for k in ("candidates", "removed", "removed_tp", "candidates_tp")}
        pct = lambda a, b: f"{100 * a / b:.2f}%" if b else "-"  # noqa: E731
        body.append(
            [
                f"`{row}`",
                str(len(audits)),
                pct(c["candidates_tp"], c["candidates"]),
                pct(c["removed"], c["candidates"]),
                pct(c["removed_tp"], c["removed"]),
                pct(c["removed_tp"], c["candidates_tp"]),
            ]
        )
    heads = ["row", "runs", "relevant among candidates", "removed", "precision", "recall"]
    intro = (
        "What there was to catch and what each guard caught, over every training batch of its runs "
        "(relevant: judged relevant to the anchor's query by the training judgements; precision: removed "
        "that are relevant; recall: relevant that are removed):"
    )
    return _section(intro, heads, body, "lrrrrr")


def _section(intro: str, heads: list[str], body: list[list[str]], align: str) -> list[str]:
    """A table under its sentence, after a blank line; [] for a table without rows."""
    from qt_hard.experiments.report import markdown_table

    return ["", intro, "", *markdown_table(heads, body, align)] if body else []


def _floor_share(runs: list[dict], part: str) -> str:
    """The mean over ``runs`` of the mean share of anchors on the floor over ``part`` of each run's batches
    ("all", or the "first" or "last" tenth, at least one batch), as a percentage cell."""
    vals = []
    for r in runs:
        b = r["floor_by_batch"]
        tenth = max(1, len(b) // 10)
        b = {"all": b, "first": b[:tenth], "last": b[-tenth:]}[part]
        vals.append(sum(b) / len(b))
    return f"{100 * sum(vals) / len(vals):.1f}%"


def floor_table(by: dict, order: list[str]) -> list[str]:
    """Where the debiased rows' estimator sat on its floor (:class:`.st_finetuning.FloorAudit`): per
    debiased row, the mean over its runs of the share of anchors on the floor (no gradient) over all
    training batches, over the first and over the last tenth of them; "not recorded" for runs made
    before the audit. [] when the table has no debiased row."""

    body = []
    for row in (r for r in order if r != "before"):
        kwargs = ROWS[parse_row(row)[0]].changes["kwargs"]
        if kwargs.get("negatives") != "debiased":
            continue
        runs = [r for r in by[row].values() if r.get("floor_by_batch")]
        cells = [_floor_share(runs, part) for part in ("all", "first", "last")] if runs else ["not recorded"] * 3
        body.append([f"`{row}`", kwargs.get("floor", "hard"), f"{len(runs)} of {len(by[row])}", *cells])
    heads = ["row", "floor", "runs recorded", "anchors on the floor", "first tenth", "last tenth"]
    intro = (
        "Where the debiased estimate sat on its floor, over every training batch of the row's runs (an anchor "
        "on the floor gets no gradient; Chuang et al. 2020, eq. 6; first and last tenth: of the batches, in "
        "training order):"
    )
    return _section(intro, heads, body, "llrrrr")


# (record metric, heading) of the two-level table: dev decides, test reports, Recall@100 is the cost a
# retrieve-then-rerank user reads beside nDCG@10.
TWO_LEVEL = (
    ("dev", "ndcg@10", "dev nDCG@10"),
    ("test", "ndcg@10", "test nDCG@10"),
    ("test", "recall@100", "test R@100"),
)


def one_change_family(records: dict[str, list[dict]], split: str, metric: str) -> dict[str, tuple]:
    """``{row: (baseline, TwoLevelVerdict)}``: each row of ``records`` (row -> its records, in table
    order) against its one-change baseline (:func:`baseline_of`) on ``split`` and ``metric``, at two
    levels, Holm across the family (:func:`qt_hard.experiments.report.two_level_family`)."""
    from qt_hard.experiments.report import two_level_family

    pairs = {row: baseline_of(row, records) for row in records if row != "before"}
    pairs = {row: base for row, base in pairs.items() if base in records}
    verdicts = two_level_family({row: (records[base], records[row]) for row, base in pairs.items()}, split, metric)
    return {row: (base, verdicts[row]) for row, base in pairs.items()}


def two_level_tables(by: dict, order: list[str]) -> list[str]:
    """Each row against its one-change baseline on dev nDCG@10, test nDCG@10 and test Recall@100
    (:func:`one_change_family`, a family per column, named under the table); then the row chosen on dev
    against MNRL itself (:func:`.report.choose_retrieval_row`)."""
    from qt_hard.experiments.report import choose_retrieval_row, family_note, markdown_table

    records = {row: list(by[row].values()) for row in order}
    columns = [one_change_family(records, split, metric) for split, metric, _ in TWO_LEVEL]
    if not columns[0]:
        return []
    body = []
    for row, (base, v) in columns[0].items():
        cells = [c for family in columns for c in (family[row][1].cell(), family[row][1].verdict)]
        body.append([f"`{row}`", f"`{base}`", str(v.n_seeds), *cells])
    heads = ["row", "against", "pairs", *(h for *_, h in TWO_LEVEL for h in (h, "verdict"))]
    lines = [
        "",
        "Each row against its one-change baseline (row - baseline; seeds: mean [interval] / q: over queries):",
        "",
    ]
    lines += markdown_table(heads, body, "llrrlrlrl")
    notes = [{row: v for row, (_, v) in family.items()} for family in columns]
    lines += [""] + [family_note(v, split, metric) for v, (split, metric, _) in zip(notes, TWO_LEVEL)]
    if "mnrl" in by:
        candidates = [r for r in order if r not in ("before", "mnrl")]
        lines += ["", "Chosen on dev: " + choose_retrieval_row(records, "mnrl", candidates).why]
    return lines


# --------------------------------------------------------------------------------------- the contract
MINED_SETUP = {"relative_margin": MINE_MARGIN, "margin_of": "the pair's positive", "searched": "the corpus"}


class _Common(Experiment):
    """The options and the per-process context the recipe choice and the grid share."""

    default_out = "runs/scifact"
    dataset = "scifact"  # its folder under $QT_HARD_DATA/beir, and the prefix of the grid's names
    title = "SciFact"
    data_class = Scifact  # what reads the dataset's folder, once a process

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--data", default=None, help=f"BEIR {self.title} folder (default $QT_HARD_DATA/beir/{self.dataset})"
        )
        parser.add_argument("--threads", type=int, default=1, help="torch threads of each process")
        parser.add_argument("--batch-size", type=int, default=BASE_RECIPE["batch_size"], help="pairs a step")
        parser.add_argument(
            "--max-seq-length", type=int, default=None, help="cut the training inputs (default: the model's own, 256)"
        )

    def check(self, args) -> None:
        for flag, v, low in (("--threads", args.threads, 1), ("--batch-size", args.batch_size, 2)):
            if v < low:
                raise ArgumentError(f"{flag} must be >= {low}, got {v}")
        self.context(args)  # the folder is read and checked before anything is trained

    def context(self, args) -> dict:
        """The data and settings of this process (read once a process)."""
        if getattr(self, "_ctx", None) is None or self._ctx["args"] is not args:
            from qt_hard.paths import data_path

            sf = self.data_class(Path(args.data) if args.data else data_path("beir", self.dataset))
            device = args.device
            if device == "auto":  # the GPU where there is one
                import torch

                device = "cuda" if torch.cuda.is_available() else "cpu"
            self._ctx = {"args": args, "scifact": sf, "device": device, "inputs": input_hashes(sf.folder)}
        return self._ctx

    def base_recipe(self, args) -> dict:
        recipe = {**BASE_RECIPE, "batch_size": args.batch_size}
        dev = self.context(args)["device"]
        if dev != "cpu":  # recorded: runs on another device differ by rounding, so they are another setup
            recipe["device"] = dev
        if args.max_seq_length is not None:
            recipe["max_seq_length"] = args.max_seq_length
        return recipe

    def setup(self, args, out: Path) -> dict:
        """The recipe chosen on dev (``OUT/recipe.jsonl``), the data's summary and the mining's settings."""
        from qt_hard.experiments.ledger import Ledger

        if not (out / "recipe.jsonl").is_file():
            raise ArgumentError(
                f"--out {out}: no recipe.jsonl; choose the recipe on dev first (grid run {self.dataset}-recipe)"
            )
        choice = select_recipe(Ledger(out, ("lr", "steps"), name="recipe.jsonl").latest())
        recipe = {**self.base_recipe(args), "lr": choice["lr"], "steps": choice["steps"]}
        data = self.context(args)["scifact"].summary()
        return {"model": MINILM, "recipe": recipe, "recipe_rule": choice["rule"], "data": data, "mined": MINED_SETUP}

    def tables(self, records, setup, out) -> dict[str, str]:
        """``table.md``: the comparison (``results.jsonl``) and, when the folder has one, the memory
        probe's records (``memory.jsonl``)."""
        comparison = latest_records(out, "results.jsonl", KEY)
        if not comparison:
            return {}
        return {"table.md": with_memory_table(summarize(comparison, (setup or {}).get("recipe")), out)}

    def mined(self, args, out: Path) -> list[tuple[str, str, str]]:
        """The mined triplets of ``OUT/mined.jsonl``, mined first when missing (:func:`.retrieval_data.mine`)."""
        ctx = self.context(args)
        return mine(ctx["scifact"], out / "mined.jsonl", args.threads, ctx["device"])

    def cell_context(self, args, out: Path, recipe: dict) -> dict:
        import torch

        torch.set_num_threads(args.threads)
        workdir = Path("runs") / f"{self.dataset}_work"
        return {**self.context(args), "recipe": recipe, "workdir": workdir, "mined": lambda: self.mined(args, out)}


class RecipeChoice(_Common):
    """MNRL, seed 0, once per learning rate; dev and test measured at each of ``--select-steps``
    (``OUT/recipe.jsonl``). :func:`select_recipe` reads the choice, on dev."""

    name = "scifact-recipe"
    help = "SciFact: choose MNRL's learning rate and steps on dev (seed 0)"
    key = ("lr", "steps")
    ledger_name = "recipe.jsonl"
    seeds = ""

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--lrs", default="2e-5,5e-5,1e-4", help="learning rates, comma-separated")
        self.add_length_argument(parser)

    def add_length_argument(self, parser) -> None:
        """The option that says where dev is measured (here in steps)."""
        parser.add_argument("--select-steps", default="22,44", help="steps at which dev is measured")

    def measured_steps(self, args) -> list[int]:
        """The steps at which dev is measured, ascending (after the folder is read)."""
        from qt_hard.experiments.grid import seed_list

        return sorted(seed_list(args.select_steps, "--select-steps"))

    def check(self, args) -> None:
        self.lrs = positive_floats(args.lrs, "--lrs")
        super().check(args)
        self.steps = self.measured_steps(args)

    def setup(self, args, out: Path) -> dict:
        data = self.context(args)["scifact"].summary()
        return {"model": MINILM, "row": "mnrl", "seed": 0, "base_recipe": self.base_recipe(args), "data": data}

    def cells(self, args, rows, seeds) -> list[Cell]:
        return [Cell(("lr", lr), tuple((lr, s) for s in self.steps)) for lr in self.lrs]

    def run(self, cell: Cell, ctx: Context) -> list[dict]:
        args, out, setup = ctx.args, ctx.out, ctx.setup

        lr, steps = cell.claim[1], [k[1] for k in cell.keys]
        ctx = self.cell_context(args, out, {**setup["base_recipe"], "lr": lr, "steps": max(steps)})
        records = []

        def keep(step, rec):
            rec = {k: v for k, v in rec.items() if k != "per_query"}  # the choice reads dev's aggregate
            records.append({"lr": lr, "steps": step, **rec, "inputs": ctx["inputs"]})

        rec = run_cell("mnrl", 0, ctx, eval_steps=steps[:-1], on_eval=keep)
        keep(max(steps), {k: v for k, v in rec.items() if k.startswith(("dev_", "test_", "train_")) or k == "eval_s"})
        return records

    def tables(self, records, setup, out) -> dict[str, str]:
        from qt_hard.experiments.report import markdown_table

        body = [
            [f"{r['lr']:g}", str(r["steps"]), f"{r['dev_ndcg@10']:.2f}"]
            for r in sorted(records, key=lambda r: (r["lr"], r["steps"]))
        ]
        choice = select_recipe(records)
        lines = markdown_table(["lr", "steps", "dev nDCG@10"], body, "rrr")
        lines += ["", f"Chosen: lr {choice['lr']:g}, {choice['steps']} steps ({choice['rule']})."]
        edges = recipe_edges(records, choice)
        if edges:
            lines[-1] += f" Dev has not peaked: {'; '.join(edges)}, so a wider range could choose another recipe."
        else:
            lines[-1] += (
                f" Dev has peaked: the choice is interior on both axes, or the curve beyond it is flat within "
                f"{FLAT_NDCG} nDCG@10."
            )
        return {"recipe.md": "\n".join(lines)}

    def progress(self, record: dict) -> str:
        return f"lr {record['lr']:g} at step {record['steps']}: dev nDCG@10 {record['dev_ndcg@10']:.2f}"

    def figures(self, args, out: Path, records, setup) -> None:
        """``OUT/recipe.png``: dev nDCG@10 against steps, a line per learning rate, the choice ringed."""
        from qt_hard.experiments.report import pyplot

        plt, choice = pyplot(), select_recipe(records)  # (tables() has refused an empty ledger)
        fig, ax = plt.subplots(figsize=(6, 3.5), layout="tight")
        for lr in sorted({r["lr"] for r in records}):
            ax.plot(
                *zip(*sorted((r["steps"], r["dev_ndcg@10"]) for r in records if r["lr"] == lr)),
                "o-",
                label=f"lr {lr:g}",
            )
        at = next(r["dev_ndcg@10"] for r in records if (r["lr"], r["steps"]) == (choice["lr"], choice["steps"]))
        ax.scatter([choice["steps"]], [at], s=220, facecolors="none", edgecolors="k", label="chosen")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r["steps"] for r in records}), minor=False)
        ax.xaxis.set_major_formatter("{x:g}"), ax.minorticks_off()
        ax.set(xlabel="steps of the batch", ylabel="dev nDCG@10", title=f"{self.title}: MNRL, seed 0, on dev")
        ax.legend(fontsize=7)
        fig.savefig(out / "recipe.png", dpi=100)
        plt.close(fig)


class Comparison(BeforeThenRows, _Common):
    """The rows x seeds under the recipe chosen on dev, after the starting model's ``before`` row
    (``OUT/results.jsonl``; the mined triplets built first when a row needs them)."""

    name = "scifact"
    help = "SciFact: fine-tune all-MiniLM-L6-v2 with each row's negatives; judged on dev, reported on test"
    rows = DEFAULT_ROWS
    parse_row = staticmethod(parse_row)
    row_table = ROWS
    progress_keys = ("dev_ndcg@10", "test_ndcg@10", "guard_removed_frac", "wall_s")

    def run(self, cell: Cell, ctx: Context) -> dict:
        args, out, setup = ctx.args, ctx.out, ctx.setup
        row, seed = cell.claim
        return run_cell(row, seed, self.cell_context(args, out, setup["recipe"]))


def positive_floats(text: str, flag: str) -> list[float]:
    """The comma-separated numbers of option ``flag``, each positive; an ``ArgumentError`` otherwise."""
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ArgumentError(f"{flag} must be comma-separated numbers, got {text!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise ArgumentError(f"{flag} must be positive numbers, got {text!r}")
    return vals


class Memory(MemoryProbe, _Common):
    """Peak resident memory of a few training steps of ``--memory`` (e.g. the dev-best row) and of its
    ``+cached`` form at each ``--memory-batch``, each in a fresh process (``OUT/memory.jsonl``;
    :mod:`.st_memory`), under the comparison's recipe."""

    name = "scifact-memory"
    help = "SciFact: peak memory of a row and of its +cached form at given batch sizes, each in a fresh process"
    probe_fn = staticmethod(memory_probe)
    mined_ok = True
    parse_row = staticmethod(parse_row)
    row_table = ROWS

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--mini-batch-size", type=int, default=32, help="the +cached form's mini-batch")

    def probe_args(self, args, out: Path, setup: dict) -> dict:
        sf = self.context(args)["scifact"]
        return {
            "recipe": {**setup["recipe"], "mini_batch_size": args.mini_batch_size},
            "data": str(sf.folder),
            "mined": str(out / "mined.jsonl"),
            "threads": args.threads,
        }


EXPERIMENTS = (RecipeChoice(), Comparison(), Memory())
