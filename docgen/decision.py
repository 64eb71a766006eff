"""The decision page (``docs/which-negatives.md``): the table of effects per setting, and one line
of effects under each of the page's answers."""

from __future__ import annotations

from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.specs import st_compare as st

from docgen.benchmarks import LOAD_NOTE, LOSS_BENCH, loss_bench_load, loss_ratio
from docgen.effects import effects
from docgen.finetune import ST_BENCH, effect_cost
from docgen.retrieval import TABLES, answers, disagreements
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
    itself (:func:`docgen.retrieval.dataset_answer`) with its test nDCG@10 and Recall@100, and whether
    they agree."""
    each, agree = answers(root)
    what = [f"{title} ({few}): {a['use'] if a else 'being measured'}" for _, title, few, a in each]
    evidence = [f"[{title}]({TABLES[name]}): {a['evidence']}" for name, title, _, a in each if a]
    if agree is not None:
        differ = disagreements(root, each, agree)
        if agree:
            what.append("the two agree" if not differ else "the two agree on the choice")
        else:
            what.append("the two disagree: choose by how common they are")
        if differ:
            evidence.append("where the two differ: " + "; ".join(differ))
    return [
        "**Retrieval, fine-tuning a pretrained transformer** ([SciFact, NFCorpus](guides/retrieval.md))",
        "; ".join(what),
        "; ".join(evidence) or "being measured",
    ]


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
