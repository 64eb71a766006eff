"""The files the package reads at run time ship inside it: found through importlib.resources, and
present in a wheel built from the source, which resolves the built-in configs with no checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_FILES = [
    "qt_hard/configs/bow.yaml",
    "qt_hard/configs/bow2400.yaml",
    "qt_hard/configs/qt.yaml",
    "qt_hard/data/books_index.tsv",
]


def test_resources_are_found_through_importlib():
    from qt_hard.encoders import BUILTIN_CONFIGS, random_encoder

    for name in PACKAGE_FILES:
        assert resources.files("qt_hard").joinpath(*Path(name).parts[1:]).is_file(), name
    assert BUILTIN_CONFIGS == ("bow", "bow2400", "qt")
    assert random_encoder("bow", ["a b c"], seed=0).dim == 768
    # The 2,400-d control of configs/qt_s2v.yaml: S2V's width, its 30-token cut, cased.
    wide = random_encoder("bow2400", ["A b c"], seed=0)
    assert wide.dim == 2400 and wide.config.max_len == 30 and "A" in wide.vocab.stoi


def test_wheel_holds_the_package_data_and_reads_it_without_a_checkout(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "qt_hard", src / "qt_hard", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            str(src),
            "-w",
            str(tmp_path / "dist"),
        ],
        check=True,
        cwd=tmp_path,
        env=env,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("qt_hard-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(PACKAGE_FILES) <= names
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(tmp_path / "site"), str(wheel)],
        check=True,
        env=env,
        capture_output=True,
    )
    code = (
        "import qt_hard.encoders as e; from pathlib import Path; "
        "assert Path(e.__file__).is_relative_to(Path('site').resolve()), e.__file__; "
        "print(e.BUILTIN_CONFIGS, e._resolve_config('qt').model.kind)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(tmp_path / "site")},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["('bow',", "'bow2400',", "'qt')", "qt"]
