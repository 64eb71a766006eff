"""The command line starts light and says what its options do; logs get lines, not bar frames."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from qt_hard.cli import build_parser, main

REPO = Path(__file__).resolve().parent.parent


def test_help_imports_neither_torch_nor_sklearn():
    code = (
        "import json, sys\n"
        "from qt_hard.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in ('torch', 'sklearn', 'accelerate', 'transformers') if m in sys.modules)))"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert "train" in r.stdout and "eval" in r.stdout
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


def test_every_senteval_option_has_help_and_data_names_its_subcommands():
    senteval = _parser("eval", "senteval")
    for action in senteval._actions:
        assert action.help, action.option_strings
    top = build_parser().format_help()
    data_line = next(line for line in top.splitlines() if line.strip().startswith("data"))
    assert "get" in data_line and "list" in data_line


def _parser(*words):
    sub = build_parser()
    for word in words:
        sub = next(a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction").choices[word]
    return sub


def test_progress_is_lines_when_stderr_is_not_a_terminal(tmp_path, capsys):
    from test_training import qt_config

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(qt_config(tmp_path, steps=4, progress=True, log_every=2)))
    assert main(["train", str(cfg), "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert len([line for line in err.splitlines() if line.startswith("train: step")]) == 2
    assert "train: step 2/4 loss" in err and "train: step 4/4 loss" in err


def test_data_list_exits_1_on_a_corrupt_dataset(tmp_path, capsys):
    root = tmp_path / "root"
    (root / "senteval" / "CR").mkdir(parents=True)
    (root / "senteval" / "CR" / "custrev.pos").write_text("one line\n")
    assert main(["data", "list", "--root", str(root)]) == 1
    captured = capsys.readouterr()
    assert "senteval    corrupt" in captured.out and "corrupt: senteval" in captured.err
    (tmp_path / "empty").mkdir()
    assert main(["data", "list", "--root", str(tmp_path / "empty")]) == 0  # missing is not corrupt
