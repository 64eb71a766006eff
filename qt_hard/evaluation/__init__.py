"""Downstream evaluation: SentEval-protocol tasks and Wiki-N mean / linear classifiers.

* :mod:`.tasks`    SentEval's MR, CR, SUBJ, MPQA, TREC, MRPC files, read as SentEval reads them
* :mod:`.protocol` SentEval's classifier loop (fast batched path and the plain reference loop)
* :mod:`.logreg`   many L2 logistic regressions solved at once (batched truncated Newton)
* :mod:`.senteval` running an encoder over the tasks, with an embedding cache
* :mod:`.probes`   Ash et al.'s mean classifier and trained linear classifier on frozen embeddings
* :mod:`.wiki`     both probes on a Wiki-N split
* :mod:`.report`   Table-2-style markdown, JSON result files, comparisons
* :mod:`.cli`      ``qt-hard eval senteval|wiki|compare``
"""

from .models import EmbeddingCache, load_model
from .probes import linear_classifier, mean_classifier
from .protocol import inner_kfold, kfold_train_test
from .report import compare_table, load_results, save_results, senteval_table, wiki_table
from .senteval import TASKS, run_senteval
from .tasks import load_task
from .wiki import run_wiki

__all__ = [
    "EmbeddingCache", "load_model", "inner_kfold", "kfold_train_test", "compare_table",
    "load_results", "save_results", "senteval_table", "wiki_table", "TASKS", "run_senteval",
    "load_task", "linear_classifier", "mean_classifier", "run_wiki",
]
