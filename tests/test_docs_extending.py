"""The extension guide's examples (docs/guides/extending.md) run as they are: the negatives part joins
every strategy once its module is imported, a config takes its option typed (and a clashing option is
refused), and the experiment runs
through ``qt-hard grid run`` with its ledger, provenance and table. Each in a process of its own, so
that the registry of this one is left as it is."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guides" / "extending.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)


def run(argv: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)]), **env}
    return subprocess.run(argv, cwd=cwd, env=environ, capture_output=True, text=True, timeout=300)


def test_the_guides_part_joins_every_strategy_and_a_clashing_option_is_refused(tmp_path):
    part, use, config, _ = blocks("python")
    clash = """
import pytest
from dataclasses import dataclass
from typing import ClassVar
from qt_hard.negatives.registry import Part, option, register, option_table

with pytest.raises(ValueError, match="similarity_cap"):
    @register
    @dataclass
    class Other(Part):
        name: ClassVar[str] = "other_cap"
        similarity_cap: float | None = option(0.5, "another default")

with pytest.raises(TypeError, match="unknown option"):
    make_strategy("uniform", similarity_capp=0.5)
assert "`cap`" in option_table()
print("ok")
"""
    (tmp_path / "guide_part.py").write_text("\n".join([part, use, config, clash]), encoding="utf-8")
    done = run([sys.executable, "guide_part.py"], tmp_path)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]


def test_the_guides_experiment_runs_through_the_grid_command(tmp_path):
    (tmp_path / "scaled.py").write_text(blocks("python")[-1], encoding="utf-8")
    commands = [c.strip() for block in blocks("console") for c in block.splitlines() if c.startswith("$ ")]
    assert len(commands) == 2
    for command in commands:
        words = command[2:].split()
        env = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
        argv = [w for w in words if w not in {f"{k}={v}" for k, v in env.items()}]
        assert argv[0] == "qt-hard"
        done = run([sys.executable, "-m", "qt_hard.cli", *argv[1:]], tmp_path, **env)
        assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "runs" / "scaled"
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()[1:]]
    assert sorted((r["row"], r["seed"], r["value"]) for r in records) == sorted(
        (row, s, s * scale) for row, scale in (("small", 1.0), ("large", 10.0)) for s in (0, 1, 2)
    )
    assert all({"commit", "machine", "versions", "utc"} <= set(r) for r in records)  # the grid's, not the spec's
    assert "| scale 10 | 2 | 20 |" in (out / "table.md").read_text()
