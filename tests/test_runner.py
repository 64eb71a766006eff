"""qt_hard.experiments.runner: cells side by side, each in a process of its own, on one device,
reading one data cache prepared before they start; and the qt-table grid's --workers/--device."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from qt_hard.errors import UserError
from qt_hard.experiments import runner


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def _cells(tmp_path, workers: int) -> tuple[list[dict], Path, dict]:
    """Two toy cells run by ``in_processes`` on the CPU from one prepared cache: what each saw, the
    cache, and the cache's files before the cells ran."""
    from _runner_cells import train_linked
    from test_training import qt_config

    from qt_hard.training.config import config_from_dict

    tree = qt_config(tmp_path, steps=2)
    cache = runner.prepare_shared_cache(config_from_dict(tree), tmp_path / "shared")
    assert any(cache.glob("tokens_*/tokens_flat.npy")) and any(cache.glob("books/books-*"))
    before = _snapshot(cache)
    jobs = [(tree, str(tmp_path / f"cell{i}"), str(cache)) for i in range(2)]
    seen = list(runner.in_processes(train_linked, jobs, workers=workers, fresh=True, device="cpu"))
    for i in range(2):
        assert (tmp_path / f"cell{i}" / "cache").resolve() == cache.resolve()
    return seen, cache, before


def test_cells_share_the_prepared_cache_read_only(tmp_path, monkeypatch):
    """One worker (in this process): both cells train from the cache prepared before them and leave
    it as it was (nothing written, nothing prepared twice)."""
    for var in ("ACCELERATE_USE_CPU", "CUDA_VISIBLE_DEVICES"):  # set here by use_device: restored afterwards
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    seen, cache, before = _cells(tmp_path, workers=1)
    assert all(s["saved"] and s["accelerate_cpu"] == "true" for s in seen)  # device="cpu", here
    assert _snapshot(cache) == before


@pytest.mark.slow
def test_cells_side_by_side_each_in_a_process_of_its_own(tmp_path):
    """Two workers: each cell in a spawned process of its own, told to use the CPU, and the shared
    cache untouched (about half a minute of process start-up on 2 cores)."""
    seen, cache, before = _cells(tmp_path, workers=2)
    assert len({s["pid"] for s in seen}) == 2
    assert all(s["saved"] and s["accelerate_cpu"] == "true" and s["cuda_visible"] == "" for s in seen)
    assert _snapshot(cache) == before


def test_a_device_is_checked(monkeypatch):
    import torch

    assert runner.check_device("cpu") == "cpu"
    with pytest.raises(UserError, match="--device gpu: choose one of auto, cpu, cuda"):
        runner.check_device("gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UserError, match="--device cuda: torch sees no CUDA device"):
        runner.check_device("cuda")


def test_qt_table_runs_its_cells_side_by_side_after_preparing_the_cache(tmp_path, monkeypatch, capsys):
    """--workers 3 --device cpu: the cache is prepared once in OUT/cache before the cells start, and
    every (row, seed) goes to in_processes with 3 workers on the CPU (run here in this process)."""
    from test_training import qt_config

    from qt_hard.cli import main
    from qt_hard.experiments import gridrun

    cfg = tmp_path / "toy.yaml"
    cfg.write_text(yaml.safe_dump(qt_config(tmp_path, steps=2)))
    out = tmp_path / "table"
    calls, prepared = [], []
    monkeypatch.setattr(runner, "prepare_shared_cache", lambda c, folder: prepared.append(Path(folder)))

    def in_processes(fn, jobs, workers, fresh, device):
        calls.append(([job[5].claim for job in jobs], workers, device))
        return iter(())

    monkeypatch.setattr(runner, "in_processes", in_processes)
    monkeypatch.setattr(gridrun, "write_tables", lambda *a, **k: 0)
    argv = ["grid", "run", "qt-table", "--out", str(out), "--config", str(cfg), "--seeds", "0,1"]
    argv += ["--rows", "uniform,hard2-clamp"]
    assert main([*argv, "--workers", "3", "--device", "cpu"]) == 0
    assert prepared == [out]
    assert calls == [([("uniform", 0), ("hard2-clamp", 0), ("uniform", 1), ("hard2-clamp", 1)], 3, "cpu")]
    assert main([*argv, "--device", "tpu"]) == 2
    assert "--device tpu: choose one of" in capsys.readouterr().err
