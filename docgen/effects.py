"""The measured effects the decision page reports: in each setting, a row against the baseline
trained on the same data, paired by seed."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from qt_hard.experiments import report
from qt_hard.experiments.ledger import Ledger
from qt_hard.experiments.specs import graph_table, qt_table
from qt_hard.experiments.specs import scifact
from qt_hard.experiments.specs import st_compare as st

from docgen.graphs import graph_records
from docgen.images import vision_rows
from docgen.kvn import kvn_cells, kvn_pick
from docgen.text import qt_csv_records, qt_ledger


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
    judged: report.TwoLevelVerdict | None = None  # a per-query metric's verdict, over seeds and queries

    @property
    def verdict(self) -> report.PairedVerdict | report.TwoLevelVerdict:
        return self.judged or report.paired_verdict(self.base, self.row)


def _by_seed(records, row, value, key="seed") -> dict:
    return {int(r[key]): float(value(r)) for r in records if r["row"] == row}


QT_TEXT = "text encoder from scratch (QT bag of words, quick-start setting)"


def effects_text(root: Path) -> list[Effect]:
    six = lambda r: statistics.mean(r["acc"][t] for t in qt_table.TASKS)  # noqa: E731
    out = []
    readings = [r for r in qt_ledger(root, "readings") if r.get("protocol") == "senteval"]
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
    sim = [r for r in qt_ledger(root, "qt_similarity") if r.get("protocol") == "similarity"]
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
    gpu = [r for r in qt_csv_records(root / "results" / "qt_table_gpu.csv") if r["protocol"] == "senteval"]
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
    out = []
    for folder, start in (("minilm", "all-MiniLM-L6-v2"), ("bow", WEAK_START)):
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


# the start of the similarity comparison's weak start: the quick-start config with its former objective
WEAK_START = "a QT bag of words, the quick-start config trained with `hard1-rescaled-anneal`"


def _effects_retrieval(root: Path) -> list[Effect]:
    """Each retrieval dataset's rows against their one-change baselines (``results/<dataset>/``), test
    nDCG@10 x100, judged as the guide's table judges them: at two levels, Holm over the table's family
    (:func:`qt_hard.experiments.specs.scifact.one_change_family`); none while a record lacks per-query scores."""
    from docgen.retrieval import DATASETS, TABLES, comparison_records

    out = []
    for name, (title, _) in DATASETS.items():
        by = comparison_records(root, name)[0]
        if not by or any("per_query" not in r for rs in by.values() for r in rs):
            continue
        for row, (base, v) in scifact.one_change_family(by, "test", "ndcg@10").items():
            out.append(
                Effect(
                    f"retrieval_{name}_{row}",
                    f"fine-tuning for retrieval (sentence-transformers, {title}, from all-MiniLM-L6-v2)",
                    f"`{row}` vs `{base}`",
                    "test nDCG@10",
                    _by_seed(by[base], base, lambda r: r["test_ndcg@10"]),
                    _by_seed(by[row], row, lambda r: r["test_ndcg@10"]),
                    TABLES[name],
                    ("st", name, row, base),
                    judged=v,
                )
            )
    return out


def _effects_graphs(root: Path) -> list[Effect]:
    recs = graph_records(root, "graph_controls")
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
    # H-SCL against InfoGraph at each learning rate, each with its own baseline at that rate.
    for key, lr, base, row, datasets in (
        ("graphs_hscl", "0.01", "infograph_lr0.01", "hscl_b1", ("IMDB-BINARY", "MUTAG")),
        ("graphs_hscl_lr1e-3", "1e-3", "infograph", "hscl_b1_lr1e-3", ("IMDB-BINARY", "IMDB-MULTI")),
    ):
        for ds in datasets:
            out.append(
                Effect(
                    f"{key}_{ds}",
                    f"graphs with labels (H-SCL, lr {lr})",
                    f"H-SCL, beta 1 vs uniform, {graph_table.SHORT[ds]}",
                    "SVM accuracy",
                    pick(base, ds),
                    pick(row, ds),
                    "reproductions/hscl.md#the-learning-rate-control-10-repeats-one-code",
                    ("label", "all", 128),
                )
            )
    return out


def effects_images(root: Path) -> list[Effect]:
    out = []
    gpu = vision_rows(root, "results/simclr_gpu")
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
        rows = vision_rows(root, f"results/{folder}")
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


def effects_k(root: Path) -> list[Effect]:
    cells = kvn_cells(root, "main")

    def seeds(N, k, cf="False"):
        return {int(r["seed"]): float(r["mean_acc"]) for r in kvn_pick(cells, N, k, cf=cf)}

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


def effects(root: Path) -> list[Effect]:
    """Every effect the decision page reports, in its order."""
    fns = (effects_text, _effects_st, _effects_retrieval, _effects_graphs, effects_images, effects_k)
    return [e for fn in fns for e in fn(root)]
