"""Result files and tables: the layout of Table 2 of Robinson et al. (2021), JSON, comparisons.

Table 2 of "Contrastive Learning with Hard Negative Samples" has one row per model and the
columns ``MR CR SUBJ MPQA TREC MSRP (Acc) MSRP (F1)``; :func:`senteval_table` prints that,
plus a row of seconds per task. Those published numbers came from the skip-thoughts evaluators
(S2V's ``src/evaluate.py``), i.e. ``--protocol skipthoughts`` here, not from SentEval's protocol:
a table's numbers are comparable with it only under the same protocol (the result file's
``protocol.name`` says which). The similarity tasks (STS12-16, STS Benchmark, SICK-R) get a table
of their own, :func:`similarity_table` (correlations x100, not accuracies), and join the same
result file under their task names. A result file is JSON::

    {"model": "...", "kind": "senteval", "protocol": {...}, "results": {"MR": {"acc": ..}, ..}}

or ``"kind": "wiki"`` with ``results`` = ``{"mean_classifier": {"acc": ..}, "linear": {..}}``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from qt_hard.errors import ArgumentError, MissingFileError

from .similarity import STS_YEARS

__all__ = [
    "TABLE2_COLUMNS",
    "SIMILARITY_COLUMNS",
    "senteval_table",
    "similarity_table",
    "similarity_mean",
    "has_transfer",
    "has_similarity",
    "six_task_mean",
    "unk_table",
    "senteval_report",
    "card_with_tables",
    "wiki_table",
    "save_results",
    "load_results",
    "compare_table",
    "measured_on",
]

# (column header, task, metric) in Table 2's order.
TABLE2_COLUMNS = (
    ("MR", "MR", "acc"),
    ("CR", "CR", "acc"),
    ("SUBJ", "SUBJ", "acc"),
    ("MPQA", "MPQA", "acc"),
    ("TREC", "TREC", "acc"),
    ("MSRP (Acc)", "MRPC", "acc"),
    ("MSRP (F1)", "MRPC", "f1"),
)


# (column header, task) of the similarity table: Spearman x100 (Pearson on a row below).
SIMILARITY_COLUMNS = (
    ("STS12", "STS12"),
    ("STS13", "STS13"),
    ("STS14", "STS14"),
    ("STS15", "STS15"),
    ("STS16", "STS16"),
    ("STS-B cos", "STSBenchmark-cos"),
    ("SICK-R cos", "SICKRelatedness-cos"),
    ("STS-B sup.", "STSBenchmark"),
    ("SICK-R sup.", "SICKRelatedness"),
)


def has_transfer(res: dict) -> bool:
    """Whether ``{task: result}`` holds one of the six transfer tasks."""
    return any(t in res for _, t, _ in TABLE2_COLUMNS)


def has_similarity(res: dict) -> bool:
    """Whether ``{task: result}`` holds a similarity task."""
    return any(t in res for _, t in SIMILARITY_COLUMNS)


def _cell(v, fmt="{:.1f}") -> str:
    return "–" if v is None else fmt.format(v)


def senteval_table(rows: dict[str, dict], seconds: bool = True, engine: str | None = None) -> str:
    """Markdown table; ``rows`` maps a row name (model) to its ``{task: result}``. ``engine``
    (e.g. ``"SentEval (sklearn-LogReg)"``) adds an ``Engine`` column naming the evaluator."""
    head = "| Model | " + ("Engine | " if engine else "") + " | ".join(c for c, _, _ in TABLE2_COLUMNS) + " |"
    sep = "|---|" + ("---|" if engine else "") + "---:|" * len(TABLE2_COLUMNS)
    lines = [head, sep]
    for name, res in rows.items():
        cells = [_cell(res.get(t, {}).get(m)) for _, t, m in TABLE2_COLUMNS]
        lines.append(f"| {name} | " + (f"{engine} | " if engine else "") + " | ".join(cells) + " |")
        if seconds:
            secs = [_cell(res.get(t, {}).get("seconds"), "{:.1f}s") if m == "acc" else "" for _, t, m in TABLE2_COLUMNS]
            lines.append("| (seconds) | " + (" | " if engine else "") + " | ".join(secs) + " |")
    return "\n".join(lines)


def similarity_mean(res: dict) -> float | None:
    """The unsupervised similarity summary: the mean of three Spearman x100 numbers, the STS12-16
    mean (of each year's mean over its sets), STSBenchmark-cos and SICKRelatedness-cos (test);
    None if one of the seven tasks is missing."""
    years = [res.get(t, {}).get("spearman") for t in STS_YEARS]
    others = [res.get(t, {}).get("spearman") for t in ("STSBenchmark-cos", "SICKRelatedness-cos")]
    if any(v is None for v in years + others):
        return None
    return (sum(years) / len(years) + sum(others)) / 3


def similarity_table(rows: dict[str, dict], seconds: bool = True, engine: str | None = None) -> str:
    """Markdown table of the similarity tasks, apart from the accuracy table: per model a row of
    Spearman x100 (STS12-16: the mean over each year's sets; ``cos``: cosine on the test split;
    ``sup.``: SentEval's supervised regression, test), a ``(Pearson)`` row and a ``(seconds)`` row;
    ``Sim. mean`` is :func:`similarity_mean`. ``engine`` adds an ``Engine`` column."""
    cols = list(SIMILARITY_COLUMNS)
    head = "| Model | " + ("Engine | " if engine else "") + " | ".join(c for c, _ in cols) + " | Sim. mean |"
    sep = "|---|" + ("---|" if engine else "") + "---:|" * (len(cols) + 1)
    lines = [head, sep]
    pad = " | " if engine else ""
    for name, res in rows.items():
        spear = [_cell(res.get(t, {}).get("spearman")) for _, t in cols]
        mean = similarity_mean(res)
        lines.append(f"| {name} | " + (f"{engine} | " if engine else "") + " | ".join(spear) + f" | {_cell(mean)} |")
        pear = [_cell(res.get(t, {}).get("pearson")) if t in res else "" for _, t in cols]
        lines.append("| (Pearson) | " + pad + " | ".join(pear) + " |  |")
        if seconds:
            secs = [_cell(res.get(t, {}).get("seconds"), "{:.1f}s") if t in res else "" for _, t in cols]
            lines.append("| (seconds) | " + pad + " | ".join(secs) + " |  |")
    return "\n".join(lines)


def six_task_mean(res: dict) -> float | None:
    """Mean accuracy over the six tasks of Table 2 (MR CR SUBJ MPQA TREC MSRP acc); None if one is missing."""
    accs = [res.get(t, {}).get("acc") for t in ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC")]
    return None if any(a is None for a in accs) else sum(accs) / 6


def unk_table(rows: dict[str, dict]) -> str:
    """Markdown table of unknown-word rates (%) per task; ``rows`` maps a row name to ``{task: %}``."""
    tasks = [t for t in dict.fromkeys(t for r in rows.values() for t in r)]
    lines = ["| Unknown words (%) | " + " | ".join(tasks) + " |", "|---|" + "---:|" * len(tasks)]
    for name, r in rows.items():
        lines.append(f"| {name} | " + " | ".join(_cell(r.get(t), "{:.1f}") for t in tasks) + " |")
    return "\n".join(lines)


def senteval_report(
    rows: dict[str, dict], unk: dict[str, dict | None], results: dict, name: str, note: str = ""
) -> str:
    """What ``qt-hard eval senteval`` prints: the transfer table and the six-task means, the
    similarity table and its means (each when the model's ``results``, row ``name``, have such
    tasks), the training run's ``note``, and the unknown-word rates of the rows that have them."""
    transfer, similarity = has_transfer(results), has_similarity(results)
    lines = []
    if transfer:
        lines.append(senteval_table(rows))
        means = {row: six_task_mean(res) for row, res in rows.items()}
        if len(rows) > 1 and all(m is not None for m in means.values()):
            lines.append("six-task mean accuracy: " + ", ".join(f"{row} {m:.1f}" for row, m in means.items()))
    if similarity:
        if transfer:
            lines.append("")
        lines.append(
            "Semantic similarity, Spearman x100 (STS12-16: mean over each year's sets; cos: cosine, test split; "
            "sup.: SentEval's regression, test split)"
        )
        lines.append(similarity_table(rows))
        sims = {row: similarity_mean(res) for row, res in rows.items()}
        if len(rows) > 1 and all(m is not None for m in sims.values()):
            lines.append("similarity mean (Spearman): " + ", ".join(f"{row} {m:.1f}" for row, m in sims.items()))
    if note:
        lines.append(f"note ({name}'s run config): {note}")
    if any(u is not None for u in unk.values()):
        lines += ["", unk_table({k: v for k, v in unk.items() if v is not None})]
    return "\n".join(lines)


# A model card's sections that evaluations write (and rewrite) between these markers.
SENTEVAL_START = "<!-- senteval -->"
SENTEVAL_END = "<!-- /senteval -->"
SIMILARITY_START = "<!-- similarity -->"
SIMILARITY_END = "<!-- /similarity -->"


def with_senteval(card: str, table: str) -> str:
    """``card`` with its SentEval section set to ``table`` (markdown), replacing an earlier one."""
    return _with_section(card, table, SENTEVAL_START, SENTEVAL_END, "SentEval")


def with_similarity(card: str, table: str) -> str:
    """``card`` with its semantic-similarity section (STS12-16, STS Benchmark, SICK-R) set to ``table``,
    replacing an earlier one; the SentEval section is left as it is."""
    return _with_section(card, table, SIMILARITY_START, SIMILARITY_END, "Semantic similarity")


def _with_section(card: str, table: str, start: str, end: str, title: str) -> str:
    section = f"{start}\n## {title}\n\n{table.strip()}\n{end}\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.S)
    if pattern.search(card):
        return pattern.sub(lambda _: section, card)
    return card.rstrip("\n") + "\n\n" + section


def card_with_tables(
    card: str, rows: dict[str, dict], results: dict, *, protocol: str, kfold: int, seed: int, tasks: list[str]
) -> str:
    """``card`` (a model card's markdown) with its SentEval and similarity sections set to the tables
    of ``rows``, each when the model's ``results`` have such tasks, with the protocol and the
    command that produced them."""
    if has_transfer(results):
        card = with_senteval(
            card,
            senteval_table(rows) + f"\n\nProtocol: {protocol}, {kfold}-fold, seed {seed} (`qt-hard eval senteval`).",
        )
    if has_similarity(results):
        card = with_similarity(
            card,
            similarity_table(rows) + "\n\nSpearman x100 (Pearson below): STS12-16 the mean over each year's "
            "sets; cos the cosine on the test split; sup. SentEval's regression (train, dev, test), seed "
            f"{seed} (`qt-hard eval senteval --tasks {','.join(t for t in tasks if t in results)}`).",
        )
    return card


def wiki_table(rows: dict[str, dict]) -> str:
    """Markdown table of Wiki-N top-1 accuracies (mean classifier, trained linear classifier)."""
    lines = ["| Model | N | Mean classifier | Linear classifier |", "|---|---:|---:|---:|"]
    for name, res in rows.items():
        mc = res.get("mean_classifier", {}).get("acc")
        lin = res.get("linear", {}).get("acc")
        lines.append(f"| {name} | {res.get('classes', '–')} | {_cell(mc)} | {_cell(lin)} |")
    return "\n".join(lines)


RETRIEVAL_COLUMNS = (
    ("ndcg@10", "nDCG@10"),
    # sentence-transformers' InformationRetrievalEvaluator reads the judgements as sets: every relevant
    # document's gain 1 (equal to the graded form wherever every grade is 1)
    ("ndcg@10_binary", "nDCG@10 binary"),
    ("mrr@10", "MRR@10"),
    ("recall@100", "Recall@100"),
    ("map@100", "MAP@100"),
    ("accuracy@1", "Acc@1"),
)


def retrieval_table(rows: dict[str, dict], split: str) -> str:
    """Rows (name -> metrics of :func:`qt_hard.evaluation.retrieval.evaluate_retrieval`) as a Markdown
    table of the headline metrics (x100) with the query count and the encoding seconds."""
    lines = [
        f"| Model ({split}) | " + " | ".join(h for _, h in RETRIEVAL_COLUMNS) + " | queries | encode s |",
        "|---|" + "---:|" * (len(RETRIEVAL_COLUMNS) + 2),
    ]
    for name, res in rows.items():
        cells = [f"{res[k]:.2f}" for k, _ in RETRIEVAL_COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {res['queries']} | {res.get('encode_seconds', 0):.1f} |")
    return "\n".join(lines)


def save_results(path, payload: dict) -> None:
    """Write a result file whole or not at all (:func:`qt_hard.files.write_text`): a signal or a full
    disk mid-write leaves the previous file and no half file under the name."""
    from qt_hard.files import write_text

    write_text(path, json.dumps(payload, indent=2, sort_keys=False) + "\n", "result file")


def load_results(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"result file {path} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ArgumentError(f"{path} is not valid JSON: {err}") from None
    except UnicodeDecodeError as err:
        raise ArgumentError(f"{path} is not valid JSON: not UTF-8 text (byte {err.start})") from None
    if not isinstance(data, dict) or "results" not in data or "kind" not in data:
        raise ArgumentError(f"{path} is not a qt-hard result file (needs 'kind' and 'results')")
    if not isinstance(data["results"], dict):
        raise ArgumentError(f"{path} is not a qt-hard result file ('results' must be a mapping)")
    return data


def _metrics(data: dict) -> dict[str, float]:
    """Flatten a result file to {column: value}."""
    res = data["results"]
    if data["kind"] == "senteval":
        res = {t: v for t, v in res.items() if isinstance(v, dict)}
        out = {c: res[t][m] for c, t, m in TABLE2_COLUMNS if t in res and m in res[t]}
        for c, t in SIMILARITY_COLUMNS:
            for metric in ("spearman", "pearson"):
                if metric in res.get(t, {}):
                    out[f"{c} ({metric.capitalize()})"] = res[t][metric]
        mean = similarity_mean(res)
        if mean is not None:
            out["Sim. mean (Spearman)"] = mean
        return out
    if data["kind"] == "wiki":
        return {k: v["acc"] for k, v in res.items() if isinstance(v, dict) and "acc" in v}
    if data["kind"] == "retrieval":
        return {k: v for k, v in res.items() if isinstance(v, (int, float)) and k != "queries"}
    raise ArgumentError(f"unknown result kind {data['kind']!r}")


def measured_on(data: dict) -> dict[str, str]:
    """What a result file was measured on, as a comparison names it: ``dataset`` (the name of the
    protocol's data folder), ``split`` and ``protocol`` (the evaluation protocol's name), each where
    the file records it."""
    proto = data.get("protocol") if isinstance(data.get("protocol"), dict) else {}
    on = {"dataset": Path(str(proto["data"])).name if proto.get("data") else None}
    on.update(split=proto.get("split"), protocol=proto.get("name"))
    return {k: str(v) for k, v in on.items() if v not in (None, "")}


def compare_table(a: dict, b: dict, name_a: str = "A", name_b: str = "B") -> str:
    """Two result files side by side with the difference B - A per metric, under a line naming what
    both were measured on (:func:`measured_on`). Results of two kinds, or of another dataset, split or
    protocol, are refused: their difference would not be the models'."""
    if a["kind"] != b["kind"]:
        raise ArgumentError(
            f"cannot compare a {a['kind']!r} result with a {b['kind']!r} result; compare two results of one kind"
        )
    on_a, on_b = measured_on(a), measured_on(b)
    differ = [k for k in on_a if k in on_b and on_a[k] != on_b[k]]
    if differ:
        detail = "; ".join(f"{k} {on_a[k]!r} in {name_a}, {on_b[k]!r} in {name_b}" for k in differ)
        raise ArgumentError(f"cannot compare results measured on different data ({detail}); compare two of one")
    on = {k: on_a.get(k) or on_b.get(k) for k in ("dataset", "split", "protocol")}
    said = ", ".join(f"{k} {v}" for k, v in on.items() if v)
    missing = [k for k in on if on[k] and (k not in on_a or k not in on_b)]
    said += "".join(f" ({k} not recorded in {name_a if k not in on_a else name_b})" for k in missing)
    ma, mb = _metrics(a), _metrics(b)
    cols = [c for c in list(ma) + [c for c in mb if c not in ma]]
    caption = f"{a['kind']} results" + (f" on {said}" if said else "") + "; each row one metric, B - A its difference"
    lines = [caption, "", f"| Metric | {name_a} | {name_b} | B - A |", "|---|---:|---:|---:|"]
    for c in cols:
        va, vb = ma.get(c), mb.get(c)
        diff = None if va is None or vb is None else vb - va
        lines.append(f"| {c} | {_cell(va, '{:.2f}')} | {_cell(vb, '{:.2f}')} | {_cell(diff, '{:+.2f}')} |")
    return "\n".join(lines)
