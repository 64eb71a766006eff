"""The results ledger under its first name: :mod:`qt_hard.experiments.ledger` holds it; the same objects
are re-exported here for grids and scripts that import ``qt_hard.ledger``."""

from qt_hard.experiments.ledger import FORMAT, Ledger, LedgerError, git_commit, provenance

__all__ = ["FORMAT", "Ledger", "LedgerError", "git_commit", "provenance"]
