"""Downstream evaluation: SentEval's tasks (the fast batched path and the reference loop), STS, Wiki-N's
probes, retrieval and the evaluator protocol, module by module on docs/architecture.md ("Evaluation")."""

from qt_hard import lazy_exports

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


__getattr__ = lazy_exports(__name__, _HOMES)
