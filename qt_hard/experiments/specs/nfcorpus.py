"""Retrieval fine-tuning on BEIR NFCorpus from all-MiniLM-L6-v2: which negatives where false negatives are common.

SciFact's comparison, recipe choice and memory probe (:mod:`.scifact`) on NFCorpus, with BEIR's own dev and
test splits (graded nDCG@10 the headline): docs/guides/retrieval.md (NFCorpus) and docs/cli.md say why this
corpus and how to run it.

**Training pairs.** An *epoch* is every training query once, with **one** of its relevant abstracts drawn
uniformly (a fresh draw each epoch, seeded by the run's seed and the epoch): 2,590 pairs, 80 steps of 32.
Taking every judgement as a pair instead would weight a query by its number of relevant abstracts (from 1
to several hundred), while every metric weights the queries equally; and one epoch of 110,575 pairs would
be 43 passes over the queries. The batches are made before training from epoch after epoch (a batch never
holds a query or an abstract twice; a pair that does not fit waits for the next batch), and trained in that
order: a run stopped at step s has trained what a longer run trains first, so the recipe's curve measured
inside one run is the curve of runs of each length.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from . import scifact as sf_spec
from .retrieval_data import Scifact


def steps_per_epoch(n_queries: int, batch_size: int) -> int:
    """Full batches in one epoch (every training query once)."""
    return max(1, n_queries // batch_size)


class NFCorpus(Scifact):
    """The folder read once: training queries with their relevant abstracts, BEIR's dev and test
    judgements, texts by id (the interface of :class:`.scifact.Scifact`)."""

    def __init__(self, folder: str | os.PathLike):
        from qt_hard.data.beir import load_beir

        self.folder = Path(folder)
        self.data = load_beir(folder, ("train", "dev", "test"))
        train = self.data.qrels["train"]
        self.doc_text = dict(zip(self.data.doc_ids, self.data.doc_texts))
        self.relevant = {q: {d for d, s in docs.items() if s > 0} for q, docs in train.items()}
        self.train_claims = sorted(q for q, docs in self.relevant.items() if docs)
        self._ranked = {q: sorted(self.relevant[q]) for q in self.train_claims}  # what an epoch draws from
        self.dev_claims = sorted(self.data.qrels["dev"])
        # every judgement, for the miner and the summary; a run trains on :meth:`pairs_for`
        self.pairs = [(q, d) for q in self.train_claims for d in self._ranked[q]]
        self.eval_qrels = {"dev": self.data.qrels["dev"], "test": self.data.qrels["test"]}

    def epoch_pairs(self, seed: int | None, epoch: int) -> list[tuple[str, str]]:
        """Epoch ``epoch`` of seed ``seed``: every training query once with one relevant abstract drawn
        uniformly (the abstracts in id order), the pairs in a shuffled order; both depend on the seed and
        the epoch only. :meth:`.scifact.Scifact.pairs_for` makes the batches of epoch after epoch."""
        rng = random.Random(f"nfcorpus-pairs/{seed or 0}/{epoch}")
        rows = [(q, rng.choice(self._ranked[q])) for q in self.train_claims]
        rng.shuffle(rows)
        return rows

    def summary(self) -> dict:
        return {
            "training_queries": len(self.train_claims),
            "training_judgements": len(self.pairs),
            "dev_queries": len(self.eval_qrels["dev"]),
            "test_queries": len(self.eval_qrels["test"]),
            "corpus": len(self.data.doc_ids),
            "pairs": "one relevant abstract per training query per epoch, drawn uniformly by (seed, epoch)",
        }


def write_slice(src: str | os.PathLike, dst: str | os.PathLike, queries: int, docs: int) -> Path:
    """A small BEIR folder cut from ``src``: the first ``queries`` queries (by id) of each split, the
    first ``docs`` abstracts that any of them judges (highest grade first, then by id), and their judgements of those abstracts (the dry
    runs and the tests of this comparison)."""
    src, dst = Path(src), Path(dst)
    (dst / "qrels").mkdir(parents=True)
    kept: dict[str, tuple[str, list[list[str]]]] = {}
    for split in ("train", "dev", "test"):
        head, *lines = (src / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        rows = [ln.split("\t") for ln in lines]
        chosen = set(sorted({r[0] for r in rows})[:queries])
        kept[split] = (head, [r for r in rows if r[0] in chosen])
    grade: dict[str, int] = {}
    for _, rows in kept.values():
        for r in rows:
            grade[r[1]] = max(grade.get(r[1], 0), int(r[2]))
    judged = sorted(grade, key=lambda d: (-grade[d], d))[:docs]  # the higher grades first: the slice keeps some 2s
    corpus = [json.loads(x) for x in (src / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    (dst / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus if d["_id"] in set(judged)))
    keep_q = set()
    for split, (head, rows) in kept.items():
        rows = [r for r in rows if r[1] in set(judged)]
        keep_q |= {r[0] for r in rows}
        (dst / "qrels" / f"{split}.tsv").write_text(head + "\n" + "".join("\t".join(r) + "\n" for r in rows))
    queries_all = [json.loads(x) for x in (src / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    (dst / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries_all if q["_id"] in keep_q))
    return dst


class _OnNFCorpus:
    """Mixed in before a SciFact experiment: the same experiment on NFCorpus."""

    default_out = "runs/nfcorpus"
    dataset = "nfcorpus"
    title = "NFCorpus"
    data_class = NFCorpus


class RecipeChoice(_OnNFCorpus, sf_spec.RecipeChoice):
    """MNRL, seed 0, once per learning rate, dev measured after each of ``--epochs`` (converted to steps
    of the batch; ``OUT/recipe.jsonl``); the recipe is the best dev nDCG@10 (:func:`.scifact.select_recipe`)."""

    name = "nfcorpus-recipe"
    help = "NFCorpus: choose MNRL's learning rate and epochs on dev (seed 0)"

    def add_length_argument(self, parser) -> None:
        parser.add_argument(
            "--epochs",
            default="0.5,1,2,4",
            help="epochs at which dev is measured (an epoch: every training query once)",
        )

    def measured_steps(self, args) -> list[int]:
        """``--epochs`` in steps of the batch (rounded; an epoch is :func:`steps_per_epoch` steps)."""
        epochs = sf_spec.positive_floats(args.epochs, "--epochs")
        per = steps_per_epoch(len(self.context(args)["scifact"].train_claims), args.batch_size)
        return sorted({max(1, round(e * per)) for e in epochs})

    def setup(self, args, out: Path) -> dict:
        setup = super().setup(args, out)
        setup["steps_per_epoch"] = steps_per_epoch(len(self.context(args)["scifact"].train_claims), args.batch_size)
        return setup


class Comparison(_OnNFCorpus, sf_spec.Comparison):
    name = "nfcorpus"
    help = "NFCorpus: fine-tune all-MiniLM-L6-v2 with each row's negatives; judged on dev, reported on test"


EXPERIMENTS = (RecipeChoice(), Comparison())
