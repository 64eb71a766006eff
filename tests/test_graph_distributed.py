"""Two CPU processes (gloo) train the graph pipeline to the same weights as one process on the same
global batch: the graphs of the global batch are every node's candidates (gathered with gradients),
the clip bound is the global one, and the node mean is over the global batch's nodes (processes hold
different node counts). Batch norm is off (``model.batch_norm=false``): torch's SyncBatchNorm is
GPU-only, so CPU processes would normalize per shard. ``pytest -m slow tests/test_graph_distributed.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch
import yaml

from test_graph import graph_tree

pytestmark = pytest.mark.slow


def _launch(cfg_file, out, nproc):
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    if nproc == 1:
        cmd = [sys.executable, "-m", "qt_hard.cli", "train", str(cfg_file), f"out_dir={out}"]
    else:
        launcher = shutil.which("accelerate", path=os.path.dirname(sys.executable)) or "accelerate"
        cmd = [launcher, "launch", "--multi_gpu", "--num_processes", str(nproc), "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29541",
               "-m", "qt_hard.cli", "train", str(cfg_file), f"out_dir={out}"]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return torch.load(out / "final" / "model.pt", weights_only=True)


@pytest.mark.parametrize("negatives", ["uniform", "hard"])
def test_two_processes_equal_one_process(tmp_path, negatives):
    tree = graph_tree(tmp_path, steps=4)
    tree["model"]["batch_norm"] = False
    tree["eval"]["final"] = False
    if negatives == "uniform":
        tree["objective"] = {"negatives": "uniform"}
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(tree))
    one = _launch(cfg_file, tmp_path / "one", 1)
    two = _launch(cfg_file, tmp_path / "two", 2)
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=1e-4, atol=1e-5, msg=key)
