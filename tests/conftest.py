"""Shared pytest setup: the header names the data root the real-data tests read.

Real-data tests read ``$QT_HARD_DATA`` (or the per-user cache) through ``qt_hard.paths``, as the
library does; export ``QT_HARD_DATA`` to the data folder before running them.
"""


def pytest_report_header(config):
    from qt_hard.paths import data_root

    root = data_root(required=False)
    return f"qt-hard data root: {root if root else 'none (real-data tests skip; export QT_HARD_DATA)'}"
