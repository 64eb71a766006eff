"""Every time beside a README command comes from a result file: a comment line of a code block that
names ``results/FILE`` holds only seconds that FILE records (as written, or rounded to the shown
digits), and every command line follows a comment with a time or with "not measured"."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECONDS = re.compile(r"(\d[\d,]*(?:\.\d+)?) s\b")
SOURCE = re.compile(r"\(?`?(results/[\w./-]+\.jsonl?)`?\)?")


def _numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def recorded(path: Path) -> list[float]:
    """Every number of a JSON or JSON-lines file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return _numbers(json.loads(text))
    return [x for line in text.splitlines() if line.strip() for x in _numbers(json.loads(line))]


def unrecorded_times(comment: str, root: Path = ROOT) -> list[str]:
    """The times of ``comment`` that its named result file does not record."""
    m = SOURCE.search(comment)
    if not m:
        return []
    values = recorded(root / m.group(1))
    bad = []
    for shown in SECONDS.findall(comment):
        digits = len(shown.split(".")[1]) if "." in shown else 0
        x = float(shown.replace(",", ""))
        if not any(round(v, digits) == x for v in values):
            bad.append(f"{shown} s not in {m.group(1)}")
    return bad


def code_blocks(text: str) -> list[list[str]]:
    return [b.splitlines() for b in re.findall(r"(?ms)^```bash\n(.*?)^```", text)]


def test_every_readme_time_is_in_the_file_it_names():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    comments = [line for block in code_blocks(text) for line in block if line.startswith("#")]
    assert comments, "the README's command blocks carry their times as comments"
    assert [bad for c in comments for bad in unrecorded_times(c)] == []


def test_every_readme_command_has_a_time_or_says_not_measured():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = []
    for block in code_blocks(text):
        said = ""
        for line in block:
            if line.startswith("#"):
                said = line
            elif line.strip() and not line.startswith(" "):
                if not (SECONDS.search(said) or "not measured" in said or "neither measured" in said):
                    missing.append(line)
    assert missing == []


def test_a_time_missing_from_its_file_is_found(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "t.jsonl").write_text('{"wall_s": 24.2, "other": {"s": 2779.729}}\n')
    assert unrecorded_times("# a: 24.2 s, b: 2,780 s (results/t.jsonl)", tmp_path) == []
    assert unrecorded_times("# a: 25 s (`results/t.jsonl`)", tmp_path) == ["25 s not in results/t.jsonl"]
