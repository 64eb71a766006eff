"""Two CPU processes (gloo) train the graph pipeline to the same weights as one process on the same
global batch: the graphs of the global batch are every node's candidates (gathered with gradients),
the clip bound is the global one, and the node mean is over the global batch's nodes (processes hold
different node counts). Batch norm is off (``model.batch_norm=false``): torch's SyncBatchNorm is
GPU-only, so CPU processes would normalize per shard. ``pytest -m slow tests/test_graph_distributed.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import yaml

from test_graph import graph_tree

pytestmark = pytest.mark.slow


def _launch(cfg_file, out, nproc):
    """``qt-hard train`` in one plain process, or under ``accelerate launch`` with ``nproc`` CPU processes."""
    train_args = ["-m", "qt_hard.cli", "train", str(cfg_file), f"out_dir={out}"]
    if nproc == 1:
        cmd = [sys.executable, *train_args]
    else:
        options = {
            "--num_processes": nproc,
            "--num_machines": 1,
            "--mixed_precision": "no",
            "--dynamo_backend": "no",
            "--main_process_port": 29541,
        }
        flat = [str(x) for kv in options.items() for x in kv]
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", *flat, *train_args]
    env = dict(os.environ, ACCELERATE_USE_CPU="true", OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    return torch.load(out / "final" / "model.pt", weights_only=True)


@pytest.mark.parametrize("negatives", ["uniform", "hard"])
def test_two_processes_equal_one_process(tmp_path, negatives):
    tree = graph_tree(tmp_path, steps=4)
    tree["model"]["batch_norm"] = False
    tree["eval"]["final"] = False
    if negatives == "uniform":
        tree["objective"] = {"negatives": "uniform"}
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(tree))
    weights = {n: _launch(tmp_path / "graph.yaml", tmp_path / f"procs{n}", n) for n in (1, 2)}
    for name, single in weights[1].items():
        torch.testing.assert_close(weights[2][name], single, rtol=1e-4, atol=1e-5, msg=name)
