"""What ``qt-hard eval senteval|wiki|retrieval|compare`` do once their arguments are parsed (the parsers
are :mod:`.cli`'s): each command's arguments checked before anything is loaded, the model loaded, the
evaluators of :mod:`.evaluator` called, the tables printed and the result files written."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from qt_hard.errors import ArgumentError, ModelNotFoundError, UserError, WriteFailedError
from qt_hard.paths import check_output_file, data_path
from qt_hard.workers import process_pool, stop_pool, usable_cpus

__all__ = ["cmd_compare", "cmd_retrieval", "cmd_senteval", "cmd_senteval_engine", "cmd_wiki"]

log = logging.getLogger("qt_hard.evaluation.cli")  # the messages keep the command's logger name


class UsageError(UserError, ValueError):
    """Options of ``qt-hard eval`` that do not go together."""


def _set_device(device: str) -> None:
    """Solve the classifiers on ``device`` (``logreg.DEFAULT_DEVICE``); a clear error without CUDA."""
    from . import logreg

    logreg.check_device(device, "--device")
    logreg.DEFAULT_DEVICE = device


def _on_device(encoder, device: str):
    """Move a qt-hard encoder's module to ``device`` (its ``encode`` runs where the module is);
    other encoders (sentence-transformers) are left as they are."""
    module = getattr(encoder, "module", None)
    if module is not None and hasattr(module, "to"):
        module.to(device)
    return encoder


def _load_for_senteval(args, tasks, data_dir):
    """The ``--model`` encoder on ``--device`` and its embedding cache (read from ``--cache`` when
    the file exists); ``data_dir`` holds the task folders (a random: model's vocabulary)."""
    from .models import EmbeddingCache, load_model, load_tokenizer, read_cache_header, weights_identity
    from .senteval import task_sentences

    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer else None
    if args.model.startswith("random:") and tokenizer is None:
        log.info(
            "note: random: without --tokenizer fits its vocabulary on the evaluated sentences (test "
            "folds included); pass --tokenizer MODEL for a control row with a trained model's vocabulary"
        )
    encoder = _on_device(
        load_model(args.model, sentences=lambda: task_sentences(tasks, data_dir), tokenizer=tokenizer), args.device
    )
    cache = EmbeddingCache(encoder, batch_size=args.batch_size)
    if args.cache:
        # Keyed by the weights loaded now: a model retrained into the same folder is another model.
        cache.weights = weights_identity(args.model)
        if os.path.exists(args.cache):
            if read_cache_header(args.cache)[1] != cache.weights:
                log.info(f"note: {args.cache} was made from other weights of {args.model}; not read, written anew")
            else:
                log.info(
                    f"read {cache.load(args.cache, args.model, cache.weights)} cached embeddings from {args.cache}"
                )
    return encoder, cache


def _check_paths(args, data_dir) -> None:
    """``--output`` and ``--cache`` through the output guard (``qt_hard.paths.guard_output``) before
    anything is loaded: neither may land on the data, the tokenizer, each other, a model's or a run's
    own files, or a file that is not of their kind; an existing ``--cache`` must be a whole cache of
    ``--model``. So the evaluation never runs only to find that its result cannot be written."""
    from .models import is_embedding_cache, read_cache_header

    inputs = {"the data folder": data_dir, "the --tokenizer": args.tokenizer}
    if args.output:
        check_output_file(args.output, "--output", inputs={**inputs, "the --cache file": args.cache})
    if args.cache:
        if args.model.startswith("random:"):
            raise UsageError("--cache is for fixed models; a random: model's vocabulary depends on the tasks")
        if os.path.exists(args.cache):
            stored = read_cache_header(args.cache)[0]  # a damaged cache is refused here, in one line
            if stored != args.model:
                raise UsageError(
                    f"--cache {args.cache} holds the embeddings of model {stored!r}, not {args.model!r}; "
                    "pass another --cache"
                )
        check_output_file(
            args.cache,
            "--cache",
            inputs={**inputs, "the --output file": args.output},
            replaceable=is_embedding_cache,
            kind="embedding cache",
        )


def _save_results(args, kind: str, name: str, protocol: dict, rows: dict, start: float, load_s=None, head=(), tail=()):
    """Write ``--output`` (when given): the result file of ``kind`` with the keys of ``head`` before
    ``protocol``, the seconds since ``start`` (and ``load_s`` of loading the model), the model's
    results (``rows[name]``), the keys of ``tail``, and the other rows of ``rows`` with ``--controls``."""
    from .report import save_results

    if not args.output:
        return
    payload = {"kind": kind, "model": args.model, "name": name, **dict(head), "protocol": protocol}
    if load_s is not None:
        payload["model_load_seconds"] = round(load_s, 3)
    payload.update(total_seconds=round(time.perf_counter() - start, 3), results=rows[name], **dict(tail))
    if getattr(args, "controls", False):
        payload["controls"] = {row: res for row, res in rows.items() if row != name}
    save_results(args.output, payload)
    log.info(f"wrote {args.output}")


def _save_cache(args, cache) -> None:
    """Write ``--cache`` after the results, so that a cache that cannot be written costs no result."""
    if not args.cache:
        return
    written = f"written to {args.output}" if args.output else "printed above"
    try:
        cache.save(args.cache, args.model, getattr(cache, "weights", None))
    except WriteFailedError as err:
        raise WriteFailedError(f"{err}; the results were {written}") from None


def cmd_senteval(args) -> int:
    """``qt-hard eval senteval``: the arguments checked before anything is loaded, the model (and its
    control rows with ``--controls``) evaluated by :func:`qt_hard.evaluation.senteval.run_senteval`,
    the tables printed, the result file and the model card written."""
    if args.engine == "senteval":
        return cmd_senteval_engine(args)
    tasks, data_dir, max_iter = _senteval_arguments(args)
    from qt_hard.files import write_text

    from .models import unk_rates
    from .report import card_with_tables, senteval_report
    from .run_config import run_note
    from .evaluator import SentEvalEvaluator

    _set_device(args.device)
    card_file = _card_file(args.model) if args.card else None
    start = time.perf_counter()
    encoder, cache = _load_for_senteval(args, tasks, data_dir)
    load_s = time.perf_counter() - start
    protocol = dict(
        kfold=args.kfold,
        seed=args.seed,
        fast=not args.reference,
        log=log.info,
        protocol=args.protocol,
        max_iter=max_iter,
    )
    name = args.name or args.model
    with _control_rows(args, encoder, tasks, data_dir, protocol) as control_results:
        results = SentEvalEvaluator(tasks, data_dir, **protocol)(encoder, cache)["result"]
        rows = {name: results, **control_results()}
    unk = dict.fromkeys(rows, unk_rates(encoder, tasks, data_dir))  # the controls share the model's tokenizer
    print(senteval_report(rows, unk, results, name, note=run_note(args.model)))
    protocol = _senteval_protocol(args, data_dir, max_iter)
    _save_results(args, "senteval", name, protocol, rows, start, load_s, tail={"unk_rate_percent": unk[name]})
    if card_file is not None:
        card = card_file.read_text(encoding="utf-8")
        tables = card_with_tables(
            card, rows, results, protocol=args.protocol, kfold=args.kfold, seed=args.seed, tasks=tasks
        )
        write_text(card_file, tables, "model card")
        log.info(f"wrote the evaluation tables into {card_file}")
    _save_cache(args, cache)
    return 0


@contextlib.contextmanager
def _control_rows(args, encoder, tasks, data_dir, protocol: dict) -> Iterator[Callable[[], dict]]:
    """The control rows of ``--controls`` (:func:`.models.control_models`: the model's tokenizer and
    vocabulary, its protocol), as a function that returns ``{row: results}`` once the model's own
    evaluation is done. With more than one ``--workers`` (default: the usable CPUs) they are evaluated
    in spawned processes that start on entering, one a row, beside the model's evaluation in this
    process; each solves at the engine's thread count, so the numbers are those of one process.
    With one, they are evaluated in this process when the function is called."""
    from .models import control_models

    if not args.controls:
        yield dict
        return
    beside = min(args.workers or usable_cpus(), 3) - 1  # this process evaluates the model

    def serial() -> dict:
        # Same tokenizer, vocabulary and protocol as the model: what training bought, row by row.
        controls = control_models(encoder, seed=args.seed)
        return {
            row: _evaluate_control(row, c, args.device, tasks, data_dir, args.batch_size, protocol)
            for row, c in controls.items()
        }

    if beside < 1:
        yield serial
        return
    import torch

    from qt_hard import logs

    with torch.random.fork_rng():  # the controls' seeding leaves this process's generator as it was
        controls = control_models(encoder, seed=args.seed)
    pool = process_pool(
        min(beside, len(controls)), initializer=_start_control_worker, initargs=(args.device, logs.configured())
    )
    same = {k: v for k, v in protocol.items() if k != "log"}
    jobs = {
        row: pool.submit(_evaluate_control, row, control, args.device, tasks, str(data_dir), args.batch_size, same)
        for row, control in controls.items()
    }
    try:
        yield lambda: {row: job.result() for row, job in jobs.items()}
    except BaseException:
        # A stop or an error ends the rows in flight at once instead of waiting minutes for them.
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def _start_control_worker(device: str, logging_state: tuple[int, bool] | None) -> None:
    """A control row's process (its signals already left to the command by the pool): its messages
    and its solver's device as the command's."""
    from qt_hard import logs

    if logging_state is not None:
        logs.configure(*logging_state)
    _set_device(device)


def _evaluate_control(row: str, control, device: str, tasks, data_dir, batch_size: int, protocol: dict) -> dict:
    """One control row's results; in its own process (a ``protocol`` without ``log``) its messages
    named by the row."""
    from .senteval import run_senteval

    own = "log" not in protocol
    log.info(f"control row: {row}" + (", in its own process" if own else ""))
    if own:
        protocol = {**protocol, "log": lambda msg: log.info(f"{row}: {msg}")}
    return run_senteval(_on_device(control, device), tasks, Path(data_dir), batch_size=batch_size, **protocol)


def _senteval_arguments(args) -> tuple[list[str], Path, int | None]:
    """(tasks, task folder, lbfgs iteration cap) of ``qt-hard eval senteval`` (the fast engine), every
    argument checked before torch, scikit-learn or the model is loaded: a typo fails at once."""
    from .senteval import check_protocol_tasks
    from .datasets import check_task_files, parse_tasks

    if args.senteval_path or args.senteval_classifier:
        raise UsageError("--senteval-path and --senteval-classifier apply to --engine senteval")
    tasks = parse_tasks(args.tasks)
    _check_counts(args)
    data_dir = args.data or data_path("senteval")
    _check_paths(args, data_dir)
    check_protocol_tasks(tasks, args.protocol)
    check_task_files(tasks, data_dir)  # a missing or damaged task file fails here, before the model is loaded
    if args.max_iter is not None and not args.reference:
        raise ValueError("--max-iter applies to --reference (the fast solver always converges)")
    return tasks, data_dir, None if args.max_iter == 0 else (args.max_iter or 100)


def _senteval_protocol(args, data_dir, max_iter: int | None) -> dict:
    """The protocol of the fast engine's result file: its name, folds, seed, classifier and data."""
    if not args.reference:
        classifier = "batched-newton"
    elif args.protocol == "skipthoughts":
        classifier = "sklearn-liblinear"
    else:
        classifier = f"sklearn-lbfgs max_iter={max_iter or 'converged'}"
    return {
        "name": args.protocol,
        "kfold": args.kfold,
        "seed": args.seed,
        "classifier": classifier,
        "data": str(data_dir),
    }


def _check_counts(args) -> None:
    """Fold, batch and worker counts a user can get wrong (those the command has), refused before any
    model or data is loaded."""
    if getattr(args, "kfold", 2) < 2:
        raise ArgumentError(f"--kfold must be >= 2 (cross-validation needs a held-out fold), got {args.kfold}")
    if args.batch_size < 1:
        raise ArgumentError(f"--batch-size must be >= 1, got {args.batch_size}")
    if getattr(args, "workers", None) is not None and args.workers < 1:
        raise ArgumentError(f"--workers must be >= 1, got {args.workers}")


def cmd_senteval_engine(args) -> int:
    """``--engine senteval``: facebookresearch/SentEval's own ``SE(params, batcher, prepare).eval``
    from the checkout ``--senteval-path``, with :mod:`.senteval_engine`'s ``prepare``/``batcher``.

    Every argument (checkout, task folders, CUDA for its PyTorch classifier) is checked before
    the model is loaded (:func:`_engine_arguments`)."""
    from .report import has_similarity, has_transfer, senteval_table, similarity_table
    from .senteval_engine import DEFAULT_CLASSIFIER, import_senteval, run_engine, task_path

    tasks, usepytorch, checkout = _engine_arguments(args)
    _set_device(args.device)
    data = args.data or checkout / "data"
    import_senteval(checkout)
    # SentEval reports its progress (the C chosen per fold, the dev scores) through logging at
    # INFO, which Python drops unless configured; its examples configure it the same way.
    import logging

    logging.basicConfig(format="%(asctime)s : %(message)s", level=logging.INFO)
    start = time.perf_counter()
    with task_path(data, tasks) as where:
        encoder, cache = _load_for_senteval(args, tasks, where / "downstream")
        load_s = time.perf_counter() - start
        engine = dict(usepytorch=usepytorch, kfold=args.kfold, seed=args.seed, batch_size=args.batch_size)
        results = run_engine(encoder, tasks, checkout, data_dir=where, cache=cache, log=log.info, **engine)
    name = args.name or args.model
    classifier = (
        "pytorch " + ",".join(f"{k}={v}" for k, v in DEFAULT_CLASSIFIER.items()) if usepytorch else "sklearn-LogReg"
    )
    if has_transfer(results):
        print(senteval_table({name: results}, engine=f"SentEval ({classifier})"))
    if has_similarity(results):
        print(similarity_table({name: results}, engine="SentEval"))
    protocol = _engine_protocol(args, checkout, data, usepytorch)
    _save_results(args, "senteval", name, protocol, {name: results}, start, load_s, head={"engine": "senteval"})
    _save_cache(args, cache)
    return 0


def _engine_arguments(args) -> tuple[list[str], bool, Path]:
    """(tasks, usepytorch, SentEval checkout) of ``--engine senteval``; the options of the fast engine
    only, the cosine tasks, and the CUDA its relatedness regression and PyTorch classifier need are
    refused here, before the model is loaded."""
    from .senteval import parse_tasks
    from .senteval_engine import CUDA_ONLY, check_checkout

    tasks = parse_tasks(args.tasks)
    _check_counts(args)
    fast_only = [
        flag
        for flag, given in (
            ("--reference", args.reference),
            ("--max-iter", args.max_iter is not None),
            ("--protocol skipthoughts", args.protocol != "senteval"),
            ("--controls", args.controls),
            ("--card", args.card),
        )
        if given
    ]
    if fast_only:
        raise UsageError(
            f"{', '.join(fast_only)}: not with --engine senteval (SentEval's engine has its "
            "own protocol and classifiers)"
        )
    cosine = [t for t in tasks if t.endswith("-cos")]
    if cosine:
        raise UsageError(
            f"--tasks {','.join(cosine)}: not a task of SentEval's engine (its STSBenchmark and SICKRelatedness are "
            "the supervised regression); the fast engine computes the cosine forms"
        )
    usepytorch = (args.senteval_classifier or "pytorch") == "pytorch"
    cuda_only = [t for t in tasks if t in CUDA_ONLY]
    if cuda_only and not _has_cuda():
        raise UsageError(
            f"--tasks {','.join(cuda_only)}: SentEval's relatedness regression (senteval/tools/relatedness.py) "
            "asserts CUDA, which this machine lacks; the fast engine runs the same regression on the CPU"
        )
    checkout = check_checkout(args.senteval_path)
    _check_paths(args, args.data or checkout / "data")
    if usepytorch and not _has_cuda():
        raise UsageError(
            "SentEval's PyTorch classifier (usepytorch=True) puts its tensors on CUDA, "
            "which this machine lacks; pass --senteval-classifier sklearn (usepytorch=False, "
            "its LogisticRegression path)"
        )
    return tasks, usepytorch, checkout


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _engine_protocol(args, checkout: Path, data, usepytorch: bool) -> dict:
    """The protocol of ``--engine senteval``'s result file: SentEval's checkout and commit, its
    classifier, folds, seed and data."""
    from .senteval_engine import DEFAULT_CLASSIFIER, checkout_commit

    return {
        "name": "senteval",
        "engine": "facebookresearch/SentEval",
        "senteval_path": str(checkout),
        "senteval_commit": checkout_commit(checkout),
        "usepytorch": usepytorch,
        "classifier": dict(DEFAULT_CLASSIFIER) if usepytorch else "sklearn-LogReg",
        "kfold": args.kfold,
        "seed": args.seed,
        "data": str(data),
    }


def _card_file(model: str):
    """The model card (README.md) of the qt-hard model folder ``model`` (or of its run's ``final/``)."""
    from .models import model_folder

    folder = model_folder(model)
    if not (folder / "encoder.json").is_file() or not (folder / "README.md").is_file():
        raise ModelNotFoundError(
            f"--card writes into the model card of a qt-hard model folder; {model!r} has no encoder.json and README.md"
        )
    return folder / "README.md"


def cmd_wiki(args) -> int:
    from qt_hard.data.wiki import load_wiki

    from .models import EmbeddingCache, load_model
    from .report import wiki_table
    from .run_config import wiki_split_seed
    from .evaluator import WikiEvaluator

    if args.output:
        check_output_file(args.output, "--output", inputs={"the Wiki-N folder": args.data})
    split_seed, origin = wiki_split_seed(args.model, args.split_seed)
    data = load_wiki(args.data, classes=args.classes, seed=split_seed)
    start = time.perf_counter()
    encoder = load_model(args.model, sentences=lambda: data.train_sentences + data.test_sentences)
    log.info(f"Wiki-N split seed {split_seed} ({origin}); classifier seed {args.seed}")
    classifier = {"epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size, "seed": args.seed}
    evaluator = WikiEvaluator(data, args.classes, **classifier)
    res = evaluator(encoder, EmbeddingCache(encoder, batch_size=args.encode_batch_size))["result"]
    name = args.name or args.model
    print(wiki_table({name: res}))
    protocol = {**classifier, "split_seed": split_seed, "split_seed_from": origin, "data": str(args.data)}
    _save_results(args, "wiki", name, protocol, {name: res}, start)
    return 0


def cmd_retrieval(args) -> int:
    """``qt-hard eval retrieval``: the folder and every argument checked before the model is loaded, the
    whole corpus ranked for the split's judged queries (:mod:`.retrieval`), the table printed and the
    result file written."""
    from .models import EmbeddingCache, control_models, load_model, load_tokenizer
    from .report import retrieval_table
    from .evaluator import RetrievalEvaluator
    from qt_hard.data.beir import load_beir

    _check_counts(args)
    folder = Path(args.data) if args.data else data_path("beir", "scifact")
    if args.output:
        inputs = {"the BEIR folder": folder, "the --tokenizer": args.tokenizer}
        if not args.model.startswith("random:") and args.model != "minilm":
            inputs["the model"] = args.model
        check_output_file(args.output, "--output", inputs=inputs)
    data = load_beir(folder, (args.split,))  # a damaged folder fails here, before the model is loaded
    start = time.perf_counter()
    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer else None
    texts = lambda: data.doc_texts + list(data.queries.values())  # a random: model's vocabulary
    encoder = _on_device(load_model(args.model, sentences=texts, tokenizer=tokenizer), args.device)
    load_s = time.perf_counter() - start
    name = args.name or args.model
    models = {name: encoder}
    if args.controls:
        models.update(control_models(encoder, seed=args.seed))
    rows = {}
    for row, model in models.items():
        log.info(f"ranking {len(data.doc_ids)} documents for {len(data.judged_queries(args.split))} queries: {row}")
        # the evaluator the grids and the plugin's callbacks use; its keys name the split, a row's do not
        res = RetrievalEvaluator(data)(None, EmbeddingCache(_on_device(model, args.device), batch_size=args.batch_size))
        prefix = f"{args.split}_"
        rows[row] = {**{k[len(prefix) :]: v for k, v in res.items() if k.startswith(prefix)}, **res["seconds"]}
    print(retrieval_table(rows, args.split))
    protocol = {
        "data": str(folder),
        "split": args.split,
        "documents": len(data.doc_ids),
        "document_text": "(title + ' ' + text).strip()",
        "score": "cosine",
        "ranking": "exact, the whole corpus; ties by corpus id",
    }
    _save_results(args, "retrieval", name, protocol, rows, start, load_s)
    return 0


def cmd_compare(args) -> int:
    from .report import compare_table, load_results

    a, b = load_results(args.a), load_results(args.b)
    print(compare_table(a, b, a.get("name", args.a), b.get("name", args.b)))
    return 0
