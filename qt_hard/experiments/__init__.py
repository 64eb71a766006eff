"""Experiment grids run one way: the results ledger (:mod:`.ledger`), named rows crossed into cells
(:mod:`.grid`), the runner that claims a cell, trains it through the library's loop with resume, reads
its outputs and appends its record, with the worker pool and time estimates (:mod:`.runner`), and the
report: mean ± spread, differences paired by seed, Markdown tables and figures (:mod:`.report`).

Each table of the docs is a spec in :mod:`.specs` (base config, rows, readout, the paper's rows), an
experiment of the contract (:mod:`.contract`) run through ``qt-hard grid run NAME`` (:mod:`.gridrun`:
SciFact's, the sentence-transformers comparison, Table 2 at our scale, the graph table, the image
table, the k-versus-N grid)."""
