"""The decision page (``docs/which-negatives.md``): the table of effects per setting, and one line
of effects under each of the page's answers."""

from __future__ import annotations

from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.specs import st_compare as st

from docgen.benchmarks import LOSS_BENCH, loss_ratio
from docgen.effects import effects
from docgen.finetune import ST_BENCH, effect_cost
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
        "comparison links its table."
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


def _effect_line(root: Path, items: list[tuple[str, str]]) -> str:
    """One line: for each (effect key, short name) the effect's paired mean [95% interval], its seeds
    and its verdict, the name linking the effect's table."""
    fx = {e.key: e for e in effects(root)}
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
