"""Downstream evaluation: SentEval-protocol tasks and Wiki-N mean / linear classifiers.

* :mod:`.tasks`    SentEval's MR, CR, SUBJ, MPQA, TREC, MRPC files, read as SentEval reads them
* :mod:`.protocol` SentEval's classifier loop (fast batched path and the plain reference loop)
* :mod:`.logreg`   many L2 logistic regressions solved at once (batched truncated Newton)
* :mod:`.similarity` STS12-16, STS Benchmark, SICK-R: cosine and SentEval's supervised regression
* :mod:`.senteval` running an encoder over the tasks, with an embedding cache
* :mod:`.probes`   Ash et al.'s mean classifier and trained linear classifier on frozen embeddings
* :mod:`.wiki`     both probes on a Wiki-N split
* :mod:`.heldout`  next-sentence top-1 and uniform loss of a Quick-Thoughts encoder on held-out books
* :mod:`.report`   Table-2-style markdown, JSON result files, comparisons
* :mod:`.cli`      ``qt-hard eval senteval|wiki|compare``
"""

import importlib

# Where each public name lives; the submodules (torch, scikit-learn) load on first use, so that
# importing ``qt_hard.evaluation.cli`` for ``qt-hard --help`` stays light.
_HOMES = {
    "EmbeddingCache": "models",
    "load_model": "models",
    "inner_kfold": "protocol",
    "kfold_train_test": "protocol",
    "compare_table": "report",
    "load_results": "report",
    "save_results": "report",
    "senteval_table": "report",
    "similarity_table": "report",
    "SIMILARITY_TASKS": "similarity",
    "evaluate_similarity": "similarity",
    "wiki_table": "report",
    "TASKS": "senteval",
    "run_senteval": "senteval",
    "load_task": "datasets",
    "linear_classifier": "probes",
    "mean_classifier": "probes",
    "run_wiki": "wiki",
}
__all__ = list(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
