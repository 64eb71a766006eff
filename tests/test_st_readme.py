"""The example of the sentence-transformers guide (docs/guides/sentence-transformers.md) runs
offline as written: its python block is executed verbatim in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "guides" / "sentence-transformers.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_doc_has_one_runnable_block():
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) == 1, f"expected exactly one python example in {DOC}, found {len(blocks)}"
    compile(blocks[0], str(DOC), "exec")  # at least valid Python, even in the fast suite
    assert "HardNegativesLoss" in blocks[0]


@pytest.mark.slow
def test_readme_example_runs_offline(tmp_path):
    (code,) = python_blocks(DOC.read_text(encoding="utf-8"))
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", WANDB_DISABLED="true")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    card = tmp_path / "st-hard-negatives" / "final" / "README.md"
    assert card.exists(), "the example did not save the model"
    assert "HardNegativesLoss" in card.read_text(encoding="utf-8")
