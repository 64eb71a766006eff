"""The decision page (``docs/which-negatives.md``): the table of effects per setting, and one line
of effects under each of the page's answers."""

from __future__ import annotations

from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.specs import scifact
from qt_hard.experiments.specs.nfcorpus import steps_per_epoch
from qt_hard.experiments.specs import st_compare as st

from docgen.benchmarks import LOAD_NOTE, LOSS_BENCH, loss_bench_load, loss_ratio
from docgen.effects import effects
from docgen.finetune import ST_BENCH, effect_cost
from docgen.results import latest_records
from docgen.markdown import join_lines
from docgen.pages import table


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
        "comparison links its table. "
        + LOAD_NOTE.format(load=loss_bench_load(root)).replace("It ran", "The loss benchmark ran")
    ]
    head = ["comparison", "metric", "effect [95% interval]", "pairs", "verdict", "baseline spread", "loss cost"]
    groups: dict[str, list[list[str]]] = {}
    for e in effects(root):
        v = e.verdict
        sd = f"{report.spread(e.base.values()):.2f}" if len(e.base) > 1 else "-"
        cost = "-" if not e.cost else effect_cost(root, *e.cost[1:]) if e.cost[0] == "st" else loss_ratio(root, *e.cost)
        cells = [f"[{e.what}]({e.link})", e.metric, v.cell(), str(v.n), v.verdict, sd, cost]
        groups.setdefault(e.setting, []).append(cells)
    for setting, body in groups.items():
        parts += ["", f"**{setting[0].upper()}{setting[1:]}**", "", *report.markdown_table(head, body, "llrrlrr")]
    return join_lines(*parts)


ST = "guides/sentence-transformers.md#fine-tuning-comparison-which-loss-to-start-with"
RETRIEVAL_TABLE = "guides/retrieval.md#scifact-the-rows-the-verdicts-and-the-guard-audit"


def _fx(root: Path, key: str, short: str = "") -> str:
    """``short`` linking the effect's table, then its paired mean [95% interval], seeds and verdict."""
    e = {x.key: x for x in effects(root)}[key]
    v = e.verdict
    name = f"[{short}]({e.link}) " if short else ""
    return f"{name}{v.cell()}, {v.n} seeds, **{v.verdict}**"


def _similarity_rows(root: Path) -> list[list[str]]:
    """The two similarity answers: from MiniLM (the dev choice is MNRL) and from the weak start (the dev
    choice, its dev and test effects, and why plain hard beta 1, better on test, is not the choice)."""
    recs = Ledger(root / "results" / "st_compare" / "bow", st.KEY).latest()
    c = st.choose(recs)
    base = st.baseline_of(c.row)
    test = {k: {r["seed"]: r["sts_mean"] for r in recs if r["row"] == k} for k in (base, c.row)}
    t = report.paired_verdict(test[base], test[c.row])
    minilm = st.choose(Ledger(root / "results" / "st_compare" / "minilm", st.KEY).latest())
    return [
        [
            "**Similarity, fine-tuning a pretrained transformer** (all-MiniLM-L6-v2)",
            "[MNRL](glossary.md#mnrl), `HardNegativesLoss(model)`: no loss beat it on [dev](glossary.md#dev)"
            if minilm.row == st.BASELINE
            else f"`{minilm.row}`, the best on [dev](glossary.md#dev)",
            _fx(root, "st_minilm_hard_b1", "hard beta 1 vs MNRL, STS12-16 test"),
        ],
        [
            "**Similarity, from a weak start** (a [QT](glossary.md#quick-thoughts) bag of words, the quick-start "
            "config trained with its former objective, hard beta annealed from 1, [`rescaled`](glossary.md#rescaled))",
            (
                "hard, beta 1, with the [guard](glossary.md#guard) at a relative margin of 0.05, "
                "on [mined](glossary.md#mined-negatives) triplets"
                if c.row == "hard_b1_guard_rel+mined"
                else f"`{c.row}`"
            )
            + ": the best on dev",
            f"[vs MNRL on the same data]({ST}): dev {c.verdict.cell()}, **{c.verdict.verdict}**; test {t.cell()}, "
            f"**{t.verdict}**, {t.n} seeds. "
            + _fx(root, "st_bow_hard_b1", "Plain hard beta 1")
            + " on test, but not better on dev, where the choice is made",
        ],
    ]


def _retrieval_row(root: Path) -> list[str]:
    """The retrieval answer from both datasets' ledgers: per dataset the row chosen on dev against MNRL
    itself (:func:`_dataset_answer`) with its test nDCG@10 and Recall@100, and whether they agree."""
    answers = {name: _dataset_answer(root, name) for name in ("scifact", "nfcorpus")}
    what, evidence = [], []
    for name, (title, rare) in {"scifact": ("SciFact", True), "nfcorpus": ("NFCorpus", False)}.items():
        a = answers[name]
        few = "false negatives rare" if rare else "false negatives common"
        if a is None:
            what.append(f"{title} ({few}): being measured")
            continue
        what.append(f"{title} ({few}): {a['use']}")
        evidence.append(f"[{title}]({RETRIEVAL_PAGE}#{ANCHORS[name]}): {a['evidence']}")
    chosen = [a["row"] for a in answers.values() if a is not None]
    if len(chosen) == 2:
        what.append("the two agree" if chosen[0] == chosen[1] else "the two disagree: choose by how common they are")
    return [
        "**Retrieval, fine-tuning a pretrained transformer** ([SciFact, NFCorpus](guides/retrieval.md))",
        "; ".join(what),
        "; ".join(evidence) or "being measured",
    ]


def _dataset_answer(root: Path, name: str) -> dict | None:
    """The row chosen on dev on dataset ``name`` (``results/<name>/results.jsonl``) and its test cost and
    gain against MNRL: at two levels, Holm over the candidates, where every record holds per-query
    scores (:func:`qt_hard.experiments.report.choose_retrieval_row`); else at the seed level against each
    row's own baseline (:func:`qt_hard.experiments.report.choose_on_dev`). None without MNRL's records or
    without a row to compare with it (nothing is chosen yet)."""
    folder = root / "results" / name
    everything = latest_records(folder, scifact.KEY)
    recs = [r for r in everything if r["row"] != "before"]
    by: dict = {}
    for r in recs:
        by.setdefault(r["row"], []).append(r)
    if "mnrl" not in by or len(by) < 2:
        return None
    if all("per_query" in r for r in recs):
        c = report.choose_retrieval_row(by, "mnrl", [r for r in by if r != "mnrl"])
        mnrl = _mnrl_on_test(by["mnrl"], [r for r in everything if r["row"] == "before"])
        recipe = _recipe_words(Ledger(folder, scifact.KEY).setup)
        if c.row == "mnrl":
            return {"row": "mnrl", "use": "MNRL: no row better on dev", "evidence": f"{c.why} {recipe}; {mnrl}"}
        test = {m: report.two_level_family({c.row: (by["mnrl"], by[c.row])}, "test", m)[c.row] for m in METRICS}
        return {
            "row": c.row,
            "use": f"`{c.row}`, better than MNRL on dev",
            "evidence": f"dev {c.verdicts[c.row].cell()}; test "
            + ", ".join(f"{NAMES[m]} {v.cell()} **{v.verdict}**" for m, v in test.items())
            + f". {recipe}; {mnrl}",
        }

    def seeds(field: str) -> dict:
        return {row: {r["seed"]: float(r[field]) for r in rs} for row, rs in by.items()}

    dev, test = seeds("dev_ndcg@10"), {m: seeds(f"test_{m}") for m in METRICS}
    c = report.choose_on_dev(dev, lambda row: scifact.baseline_of(row, by), "mnrl", "dev nDCG@10")
    mined = "mnrl+mined"
    use = "MNRL: no loss beat it on dev" if c.row == "mnrl" else f"`{c.row}`, the best on dev"
    if mined not in by:
        return {"row": c.row, "use": use, "evidence": f"{len(by)} rows, seed level"}
    d = report.paired_verdict(dev["mnrl"], dev[mined])
    t = {m: report.paired_verdict(test[m]["mnrl"], test[m][mined]) for m in METRICS}
    says = [_MINED_SAYS.get(v.verdict, "{m}: " + v.verdict).format(m=NAMES[m]) for m, v in t.items()]
    return {
        "row": c.row,
        "use": f"{use}; a mined hard negative per pair {' and '.join(says)} (on dev: {d.verdict})",
        "evidence": f"mined vs pairs, {d.n} seeds: dev nDCG@10 {d.cell()} **{d.verdict}**; test "
        + ", ".join(f"{NAMES[m]} {v.cell()} **{v.verdict}**" for m, v in t.items()),
    }


def _recipe_words(setup: dict) -> str:
    """The recipe a comparison ran at (its ledger's setup line), its steps in epochs of the training data
    (every training query, or pair, once: :func:`qt_hard.experiments.specs.nfcorpus.steps_per_epoch`)."""
    r, data = setup["recipe"], setup["data"]
    per = steps_per_epoch(data.get("training_queries") or data["training_pairs"], r["batch_size"])
    return (
        f"Recipe (chosen on dev): lr {r['lr']:g}, {r['steps']} steps of {r['batch_size']} ({r['steps'] / per:g} epochs)"
    )


def _mnrl_on_test(mnrl: list[dict], before: list[dict]) -> str:
    """MNRL's mean test nDCG@10 and Recall@100 over its seeds, beside the starting model's."""
    mean = {m: sum(r[f"test_{m}"] for r in mnrl) / len(mnrl) for m in METRICS}
    words = ", ".join(f"{NAMES[m]} {mean[m]:.2f}" for m in METRICS)
    start = ", ".join(f"{before[0]['test_' + m]:.2f}" for m in METRICS) if before else ""
    start = f" (the starting model: {start})" if start else ""
    return f"MNRL on test, {len(mnrl)} seeds: {words}{start}"


NAMES = {"ndcg@10": "nDCG@10", "recall@100": "Recall@100"}
METRICS = ("ndcg@10", "recall@100")
RETRIEVAL_PAGE = "guides/retrieval.md"
ANCHORS = {"scifact": "scifact-the-rows-the-verdicts-and-the-guard-audit", "nfcorpus": "nfcorpus"}
# What a verdict of the mined triplets against the pairs says of a metric on test.
_MINED_SAYS = {"better": "gains {m} on test", "worse": "costs {m} on test", "level": "leaves {m} level on test"}


# The answers read from the effects table: (setting, what to use, [(effect key, its short name), ...]).
_PLAIN_ANSWERS = {
    "text": (
        "**Text, trained from scratch** (unnormalized embeddings)",
        "hard negatives, beta 2, [`clamp`](glossary.md#clamp) (`hard2-clamp`, the quick start's objective), "
        "chosen on SentEval dev",
        [("text_hard2-clamp_transfer", "transfer vs uniform"), ("text_hard2-clamp_similarity", "similarity")],
    ),
    "graphs": (
        "**Graphs** (InfoGraph)",
        "uniform; with labels, [H-SCL](glossary.md#h-scl) beta 1 at lr 1e-3",
        [
            ("graphs_hard_MUTAG", "hard vs uniform, MUTAG"),
            ("graphs_hscl_lr1e-3_IMDB-BINARY", "H-SCL vs uniform, IMDB-B"),
        ],
    ),
    "images": (
        "**Images**",
        "SimCLR: no verdict yet; a [MoCo queue](glossary.md#moco-and-the-queue): uniform, not [ring](glossary.md#ring)",
        [("images_simclr_hard", "SimCLR hard vs uniform, kNN"), ("images_moco_ring_cpu", "MoCo ring vs uniform")],
    ),
    "k": (
        "**Choosing k** ([k](glossary.md#k) negatives; [Wiki-N](glossary.md#wiki-n), N classes; no dev split)",
        "k below all in-batch candidates when the classes are few; not [collision-free](glossary.md#collision-free) "
        "sampling",
        [("k_100", "k = 50 vs all, N = 100"), ("collision_free_1000", "collision-free, N = 1000")],
    ),
}


def _plain(root: Path, name: str) -> list[str]:
    setting, use, items = _PLAIN_ANSWERS[name]
    return [setting, use, "; ".join(_fx(root, key, short) for key, short in items)]


@table("answers", spread=False)
def _answers(root: Path) -> str:
    """The decision page's first screen: per setting what to use, the effect it rests on and its verdict."""
    body = [
        _plain(root, "text"),
        *_similarity_rows(root),
        _retrieval_row(root),
        *(_plain(root, name) for name in ("graphs", "images", "k")),
    ]
    return join_lines(report.markdown_table(["setting", "use", "effect [95% interval], seeds, verdict"], body, "lll"))
