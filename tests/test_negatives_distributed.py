"""Two gloo processes on the CPU (torchrun --standalone --nproc_per_node 2): candidates gathered with
gradients from both processes give the same loss and gradients as one process on the whole batch."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _dist_negatives_worker import CASES, global_batch  # noqa: E402


@pytest.fixture(scope="module")
def two_process_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE.parent)}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(HERE / "_dist_negatives_worker.py"),
        str(out),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [torch.load(out / f"rank{r}.pt") for r in range(2)]


@pytest.mark.parametrize("name", list(CASES))
def test_two_processes_equal_one_process(two_process_results, name):
    a, b, n, y, d = global_batch()
    xs = [t.clone().requires_grad_() for t in (a, b, n)]
    full = CASES[name](*xs, y, d)
    full.backward()
    losses = [r[name][0] for r in two_process_results]
    # Equal halves: the mean of the per-process losses is the one-process loss ...
    assert sum(losses) / 2 == pytest.approx(full.item(), abs=1e-10)
    # ... and each process's gradient (sum over processes of d loss_r, what DDP then averages over
    # the 2 processes) is twice the one-process gradient of its own rows.
    for r, res in enumerate(two_process_results):
        sl = slice(r * 4, (r + 1) * 4)
        for x, g in zip(xs, res[name][1]):
            if x.grad is None:
                assert g is None or torch.count_nonzero(g) == 0
                continue
            assert torch.allclose(g / 2, x.grad[sl], atol=1e-10), (name, r)
