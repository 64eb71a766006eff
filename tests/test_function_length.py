"""No function of the library, the docs tool or the scripts runs over 60 lines (a longer one is split
into named steps, as ``train()`` is)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60


def long_functions(folders=("qt_hard", "docgen", "scripts")) -> list[str]:
    """``path:line name (N lines)`` of every function longer than ``MAX_LINES``, decorators excluded."""
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    if n > MAX_LINES:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_no_function_runs_over_60_lines():
    assert long_functions() == []


def test_the_check_sees_a_long_function(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "pkg" / "m.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert long_functions(("pkg",)) == [f"pkg/m.py:5 long ({MAX_LINES + 1} lines)"]
