"""Experiment grids run one way: the ledger, the grid, the runner and the report (docs/architecture.md,
Experiments); each table of the docs is a spec in :mod:`.specs`, run through ``qt-hard grid run NAME``."""
