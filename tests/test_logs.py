"""The package's messages go through ``logging`` (``qt_hard.logs``): the command line configures one
handler on standard error, once; a root logger configured elsewhere does not print them twice; a
spawned worker logs as its parent; and only the command lines' own error handlers print to stderr."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from qt_hard import logs
from qt_hard.experiments import runner

PACKAGE = Path(__file__).resolve().parents[1] / "qt_hard"
# The modules whose stderr prints are a command's own refusal, stop or exit-status line, not a diagnostic.
ERROR_LINES = {"cli.py", "training/cli.py", "data/cli.py"}


@pytest.fixture
def clean_logger():
    logger = logging.getLogger(logs.PACKAGE)
    saved = (list(logger.handlers), logger.level, logger.propagate)
    logger.handlers = [h for h in logger.handlers if not isinstance(h, logs._Stderr)]
    yield logger
    logger.handlers, logger.level, logger.propagate = saved


def test_configure_adds_one_handler_and_sets_the_format(clean_logger, capsys):
    assert logs.configured() is None
    logs.configure()
    logs.configure(timestamps=True)
    assert sum(isinstance(h, logs._Stderr) for h in clean_logger.handlers) == 1
    assert logs.configured() == (logging.INFO, True)
    logging.getLogger("qt_hard.training.loop").info("resumed from %s", "ckpt")
    err = capsys.readouterr().err
    assert err.endswith(" resumed from ckpt\n") and len(err.split()[0]) == len("00:00:00")


def test_a_configured_root_logger_does_not_print_twice(clean_logger, capsys):
    root = logging.getLogger()
    handler = logging.StreamHandler()  # the root handler SentEval's basicConfig adds, on stderr
    root.addHandler(handler)
    try:
        logs.configure()
        logging.getLogger("qt_hard.evaluation.cli").info("wrote %s", "r.json")
        assert capsys.readouterr().err == "wrote r.json\n"
    finally:
        root.removeHandler(handler)


def test_a_worker_logs_as_its_parent(clean_logger, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    runner._start_worker(None, None)
    assert logs.configured() is None
    runner._start_worker(None, (logging.WARNING, False))
    assert logs.configured() == (logging.WARNING, False)


def _stderr_prints(path: Path) -> list[int]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            for kw in node.keywords:
                if kw.arg == "file" and ast.unparse(kw.value) == "sys.stderr":
                    found.append(node.lineno)
    return found


def test_diagnostics_are_logged_not_printed_to_stderr():
    """A message on stderr that is not a command's error line is a diagnostic: it goes through the
    module's logger, so that a caller can silence, redirect or time-stamp it."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel not in ERROR_LINES:
            offenders += [f"{rel}:{line}" for line in _stderr_prints(path)]
    assert not offenders, f"print(..., file=sys.stderr) outside the command lines' error handlers: {offenders}"
