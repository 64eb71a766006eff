"""Experiment grids run one way: the results ledger (:mod:`.ledger`), named rows crossed into cells
(:mod:`.grid`), the runner that claims a cell, trains it through the library's loop with resume, reads
its outputs and appends its record, with the worker pool and time estimates (:mod:`.runner`), and the
report: mean ± spread, differences paired by seed, Markdown tables and figures (:mod:`.report`).

Each table of the docs is a spec in :mod:`.specs` (base config, rows, readout, the paper's rows);
``qt-hard grid run qt-table``, ``k_vs_n.py``, ``graph_table.py`` and ``vision_table.py`` are their command
lines."""
