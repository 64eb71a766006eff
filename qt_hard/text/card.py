"""The model card (``OUT/final/README.md``) of a text model: what it is, how it was trained, how to use it.

A Hugging Face model card: YAML front matter (``library_name: sentence-transformers``, tags,
``pipeline_tag``), then usage with plain sentence-transformers, the architecture (its modules), the
objective with the papers it implements, the data, the full run config as YAML, and a SentEval table
when one is given (``qt_hard.evaluation.report``'s :func:`with_senteval` adds or replaces it later,
:func:`with_similarity` the semantic-similarity table: the evaluation writes its sections into a card).
"""

from __future__ import annotations

import yaml

from qt_hard.evaluation.report import with_senteval

QUICK_THOUGHTS = (
    "Logeswaran & Lee, *An Efficient Framework for Learning Sentence Representations* (Quick-Thoughts, ICLR 2018)"
)


def _architecture(cfg, modules: list[str]) -> str:
    m = cfg.model
    chain = " -> ".join(modules)
    if m.kind == "bow":
        return (
            f"Bag of words (Ash et al. 2022, Sec. 5): the mean of {m.dim}-d word vectors over the sentence's "
            f"tokens, sentence-transformers' `StaticEmbedding` ({chain})."
        )
    if m.kind == "qt":
        cell = {"gru": "GRU", "bigru": "bidirectional GRU", "bow": "bag-of-words"}[m.encoder]
        how = (
            "one `StaticEmbedding` whose table concatenates f's and g's word vectors"
            if m.encoder == "bow"
            else "qt-hard's `QuickThoughtsModule`"
        )
        return (
            f"Quick-Thoughts pair f, g ({cell} cells, word vectors {m.embed_dim}-d"
            + ("" if m.encoder == "bow" else f", state {m.hidden_dim}")
            + f"); a sentence is concat(f(s), g(s)) ({QUICK_THOUGHTS}); {how} ({chain})."
        )
    return f"Transformer fine-tuned from `{m.hf_path}`, with that model's pooling and normalization ({chain})."


def _papers(cfg) -> list[str]:
    """The objective's papers, as its strategy names them (each acting part's paper in the registry, and
    Ash et al. for k, collision-free sampling or the positive left out of the denominator), then the
    model's and the data's."""
    from qt_hard.negatives import make_strategy
    from qt_hard.negatives.papers import ASH_2022

    o = cfg.objective
    structural = dict(k=o.k, include_positive=o.include_positive, collision_free=o.collision_free)
    papers = [p.reference() for p in make_strategy(o.chosen(), **structural).papers]
    if cfg.model.kind == "qt" or cfg.data.kind in ("books", "bookcorpus"):
        papers.append(QUICK_THOUGHTS)
    if cfg.model.kind == "bow":  # Ash et al.'s bag-of-words encoder
        papers.append(ASH_2022.reference())
    return list(dict.fromkeys(papers))


def _data(cfg) -> str:
    d = cfg.data
    if d.kind in ("books", "bookcorpus"):
        what = f"ordered sentences of {d.kind}" + (
            f" ({d.max_books} books)" if d.kind == "books" and d.max_books else ""
        )
        if d.kind == "books" and d.exclude_books:
            what += f", books {', '.join(map(str, d.exclude_books))} (0-based) left out"
        return f"{what}; positives are the +-{cfg.objective.context} neighbouring sentences of the same book."
    if d.kind == "wiki":
        return (
            f"Wiki-{d.articles} (Ash et al.): sentences of {d.articles} Wikipedia articles with at least "
            f"{d.min_sentences} sentences; positives are two sentences of one article (80/20 split, seed {d.seed})."
        )
    return f"{d.kind} corpus ({d.num_classes} latent classes); positives share a class."


def model_card(cfg, modules: list[str], senteval: str | None = None) -> str:
    """Markdown of the model card of a run with config ``cfg`` (a training ``Config``) whose saved model
    consists of ``modules`` (class names); ``senteval`` a markdown table, if one was computed."""
    card = "\n".join(_front_and_usage(cfg, modules) + _card_sections(cfg, modules))
    return with_senteval(card, senteval) if senteval else card


def _front_and_usage(cfg, modules: list[str]) -> list[str]:
    """The card's lines up to its sections: the Hub front matter, the title and how to load the model."""
    o = cfg.objective
    lines = [
        "---",
        "library_name: sentence-transformers",
        "pipeline_tag: sentence-similarity",
        "tags:",
        "- sentence-transformers",
        "- sentence-similarity",
        "- feature-extraction",
        "- qt-hard",
        f"- negatives-{o.negatives}",
        "---",
        "",
        f"# qt-hard {cfg.model.kind} model ({o.negatives} negatives)",
        "",
        "Trained with qt-hard (contrastive sentence embeddings with pluggable negatives). Load it with plain "
        "sentence-transformers:",
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer, util",
        'model = SentenceTransformer("PATH/TO/THIS/FOLDER"'
        + (", trust_remote_code=True" if "QuickThoughtsModule" in modules else "")
        + ")",
        'emb = model.encode(["A sentence.", "Another one."])',
        "print(util.cos_sim(emb[0], emb[1]))",
        "```",
        "",
    ]
    if "QuickThoughtsModule" in modules:
        lines += [
            "`trust_remote_code=True` lets sentence-transformers import `qt_hard.encoders.st_module."
            "QuickThoughtsModule` (qt-hard must be installed); `qt_hard.load_encoder` reads the folder too.",
            "",
        ]
    return lines


def _card_sections(cfg, modules: list[str]) -> list[str]:
    """The card's sections: Model, Objective (the loss, the objective's options and the papers), Data
    and the training config as YAML."""
    from qt_hard.training.config import to_dict

    o = cfg.objective
    ordered = cfg.data.kind in ("books", "bookcorpus")
    loss = "ContextLoss (Quick-Thoughts layout)" if ordered else "ContrastiveLoss (two-view layout)"
    options = ", ".join(f"{k}={v}" for k, v in (o.options or {}).items()) or "none"
    return [
        "## Model",
        "",
        _architecture(cfg, modules),
        "",
        "## Objective",
        "",
        f"Loss: {loss} from qt-hard's negatives core; negatives `{o.negatives}`, temperature {o.temperature}, "
        f"k = {o.k if o.k is not None else 'all candidates'}, positive in the denominator: {o.include_positive}, "
        f"normalized embeddings: {o.normalize}, options: {options}.",
        "",
        "Papers:",
        "",
        *[f"* {p}" for p in _papers(cfg)],
        "",
        "## Data",
        "",
        _data(cfg),
        "",
        "## Training config",
        "",
        "```yaml",
        yaml.safe_dump(to_dict(cfg), sort_keys=False).rstrip(),
        "```",
        "",
    ]
