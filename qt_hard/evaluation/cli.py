"""``qt-hard eval senteval|wiki|retrieval|compare``: the parsers; what each command does is :mod:`.commands`'s.

* ``qt-hard eval senteval --model SPEC [--tasks MR,CR,...] [--protocol senteval|skipthoughts]
  [--data DIR] [--output res.json] [--reference [--max-iter N]]``
* ``qt-hard eval senteval --engine senteval --senteval-path SENTEVAL_CLONE --model SPEC
  [--senteval-classifier pytorch|sklearn] [--data DIR] [--tasks ...] [--output res.json]``
* ``qt-hard eval wiki --model SPEC --data WIKI_DIR --classes N [--split-seed S] [--seed S] [--output res.json]``
* ``qt-hard eval retrieval --model SPEC [--data BEIR_DIR] [--split test] [--controls] [--output res.json]``
* ``qt-hard eval compare A.json B.json``
"""

from __future__ import annotations

from qt_hard.seeds import seed_argument

from .commands import cmd_compare, cmd_retrieval, cmd_senteval, cmd_senteval_engine, cmd_wiki

__all__ = ["register", "cmd_senteval", "cmd_senteval_engine", "cmd_wiki", "cmd_retrieval", "cmd_compare"]


def register(subparsers) -> None:
    """Add ``eval`` with its ``senteval``, ``wiki`` and ``compare`` subcommands."""
    p = subparsers.add_parser("eval", help="downstream evaluation (SentEval tasks, Wiki-N, retrieval)")
    sub = p.add_subparsers(dest="eval_command", metavar="EVAL")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    _add_senteval_engine_options(_add_senteval(sub))
    _add_wiki(sub)
    _add_retrieval(sub)
    c = sub.add_parser("compare", help="two result JSON files side by side")
    c.add_argument("a")
    c.add_argument("b")
    c.set_defaults(func=cmd_compare)


def _add_senteval(sub):
    """``eval senteval`` and the options of its fast engine; returns its parser."""
    s = sub.add_parser(
        "senteval",
        help="MR CR SUBJ MPQA TREC MRPC (SentEval or skip-thoughts protocol), STS12-16, STS Benchmark, SICK-R",
    )
    s.add_argument(
        "--model", required=True, help="qt-hard model folder, sentence-transformers folder, 'minilm' or 'random:CONFIG'"
    )
    s.add_argument(
        "--tasks",
        default="MR,CR,SUBJ,MPQA,TREC,MRPC",
        help="comma-separated tasks among MR, CR, SUBJ, MPQA, TREC, MRPC (MSRP = MRPC; default all six) and "
        "the similarity tasks STS12, STS13, STS14, STS15, STS16, STSBenchmark-cos, SICKRelatedness-cos (cosine, "
        "unsupervised), STSBenchmark, SICKRelatedness (SentEval's supervised regression)",
    )
    s.add_argument(
        "--data",
        default=None,
        help="SentEval data folder (default $QT_HARD_DATA/senteval; with --engine senteval, the checkout's data/)",
    )
    s.add_argument("--output", default=None, help="write the results as JSON here")
    _add_senteval_folds_and_cache(s)
    _add_senteval_protocol(s)
    _add_senteval_controls_and_device(s)
    s.set_defaults(func=cmd_senteval)
    return s


def _add_senteval_folds_and_cache(s) -> None:
    """``eval senteval``'s folds and seed, encoding batch, row name and embedding cache."""
    s.add_argument(
        "--kfold",
        type=int,
        default=10,
        help="cross-validation folds (>= 2; default 10, SentEval's): outer folds for MR, CR, "
        "SUBJ, MPQA, folds of the train split for TREC and MRPC",
    )
    s.add_argument("--seed", type=seed_argument, default=1111, help="seed of the fold split (default 1111, SentEval's)")
    s.add_argument("--batch-size", type=int, default=64, help="encoding batch size")
    s.add_argument("--name", default=None, help="row name in the table (default: the model spec)")
    s.add_argument(
        "--cache",
        default=None,
        help="embedding cache file (.npz): read if present and made from the same weights, written whole "
        "after the results; only for fixed models (not random:)",
    )


def _add_senteval_protocol(s) -> None:
    """``eval senteval``'s protocol (SentEval's or skip-thoughts') and its reference solver."""
    s.add_argument(
        "--protocol",
        choices=("senteval", "skipthoughts"),
        default="senteval",
        help="senteval: SentEval's scikit-learn path; skipthoughts: the skip-thoughts "
        "evaluators that S2V ran for the Quick-Thoughts / hard-negatives tables",
    )
    s.add_argument(
        "--reference",
        action="store_true",
        help="use the slow one-LogisticRegression-per-fit loop (with the default "
        "--max-iter 100: SentEval exactly, lbfgs stopped at 100 iterations)",
    )
    s.add_argument(
        "--max-iter",
        type=int,
        default=None,
        help="with --reference under --protocol senteval: lbfgs iteration cap "
        "(default 100 as SentEval; 0: run to convergence)",
    )


def _add_senteval_controls_and_device(s) -> None:
    """``eval senteval``'s control rows, their tokenizer, the device and the model card."""
    s.add_argument(
        "--controls",
        action="store_true",
        help="also evaluate the model's control rows on its own tokenizer: the same "
        "architecture untrained and random:bow (word models)",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=None,
        help="with --controls: processes for the model and its control rows side by side, one a row "
        "(default: the usable CPUs, at most 3); each solves at the engine's thread count, so the "
        "numbers are those of one process",
    )
    s.add_argument(
        "--tokenizer",
        default=None,
        help="for random: models, the vocabulary of this tokenizer.json or model folder "
        "(default: fitted on the evaluated sentences, test folds included)",
    )
    s.add_argument(
        "--device",
        default="cpu",
        help="cpu or cuda: where the model encodes and the classifiers are solved (the same "
        "solver and protocol; on a GPU the results agree with the CPU's to rounding)",
    )
    s.add_argument(
        "--card",
        action="store_true",
        help="write the table into the model card (README.md) of the qt-hard model folder",
    )


def _add_senteval_engine_options(s) -> None:
    """The options of ``eval senteval --engine senteval`` (SentEval's own engine)."""
    engines = (
        "fast: qt-hard's own SentEval-protocol evaluator; senteval: facebookresearch/SentEval's engine from the "
        "checkout --senteval-path (its protocol, its classifiers)"
    )
    s.add_argument("--engine", choices=("fast", "senteval"), default="fast", help=engines)
    s.add_argument(
        "--senteval-path",
        default=None,
        help="with --engine senteval: the SentEval clone to import senteval from; its data/ "
        "holds the task files unless --data is given",
    )
    s.add_argument(
        "--senteval-classifier",
        choices=("pytorch", "sklearn"),
        default=None,
        help="with --engine senteval: pytorch (usepytorch=True, SentEval's default config; "
        "needs CUDA) or sklearn (usepytorch=False: LogisticRegression, the path the fast "
        "engine reproduces); default pytorch",
    )


def _add_wiki(sub) -> None:
    """``eval wiki``."""
    w = sub.add_parser("wiki", help="Wiki-N mean classifier and linear classifier")
    w.add_argument("--model", required=True)
    w.add_argument("--data", required=True, help="Wiki-N folder")
    w.add_argument("--classes", type=int, required=True, help="N, the number of articles")
    w.add_argument("--epochs", type=int, default=50)
    w.add_argument("--lr", type=float, default=0.01)
    w.add_argument("--batch-size", type=int, default=1000, help="linear classifier batch size")
    w.add_argument("--encode-batch-size", type=int, default=256)
    w.add_argument("--seed", type=seed_argument, default=0, help="seed of the linear classifier (not of the split)")
    w.add_argument(
        "--split-seed",
        type=int,
        default=None,
        help="seed of the 80/20 split; default: data.seed of the model's training run (its "
        "config.yaml); required for models without one (minilm, random:)",
    )
    w.add_argument("--name", default=None)
    w.add_argument("--output", default=None)
    w.set_defaults(func=cmd_wiki)


def _add_retrieval(sub) -> None:
    """``eval retrieval``."""
    r = sub.add_parser(
        "retrieval", help="nDCG@10, MRR@10, Recall@100, MAP@100, Acc@1 on a folder in BEIR's layout (cosine, exact)"
    )
    r.add_argument(
        "--model", required=True, help="qt-hard model folder, sentence-transformers folder, 'minilm' or 'random:CONFIG'"
    )
    r.add_argument(
        "--data",
        default=None,
        help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv (default $QT_HARD_DATA/beir/scifact)",
    )
    r.add_argument("--split", default="test", help="the qrels file to evaluate, qrels/SPLIT.tsv (default test)")
    r.add_argument("--batch-size", type=int, default=64, help="encoding batch size")
    r.add_argument("--name", default=None, help="row name in the table (default: the model spec)")
    r.add_argument("--output", default=None, help="write the results as JSON here")
    r.add_argument(
        "--controls",
        action="store_true",
        help="also rank with the model's control rows on its own tokenizer: the same architecture untrained and "
        "random:bow (word models)",
    )
    r.add_argument(
        "--tokenizer",
        default=None,
        help="for random: models, the vocabulary of this tokenizer.json or model folder (default: fitted on the "
        "corpus and queries)",
    )
    r.add_argument("--seed", type=seed_argument, default=0, help="seed of the control rows' random weights")
    r.add_argument("--device", default="cpu", help="cpu or cuda: where the model encodes")
    r.set_defaults(func=cmd_retrieval)
