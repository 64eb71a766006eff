"""Two processes (CPU, gloo) train to the same weights as one process on the same global batch.

The global batch of B consecutive sentences is split into two consecutive halves; the core gathers
the candidates (with gradients) so both processes score against the whole batch, and DDP averages
the gradients. Run with ``pytest -m slow tests/test_training_distributed.py``.
"""

from __future__ import annotations

import pytest
import torch
import yaml

from _accelerate_launch import run_train
from test_training import qt_config

pytestmark = pytest.mark.slow


def _launch(cfg_file, out, nproc, *flags):
    run_train(cfg_file, out, nproc, *flags, port=29533, timeout=600)
    return torch.load(out / "final" / "weights.pt", weights_only=True)


@pytest.mark.parametrize("negatives", ["uniform", "hard"])
def test_two_processes_equal_one_process(tmp_path, negatives):
    tree = qt_config(tmp_path, steps=8, batch_size=16)
    tree["objective"]["negatives"] = negatives
    if negatives == "uniform":
        tree["objective"]["options"] = {}
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(tree))
    one = _launch(cfg_file, tmp_path / "one", 1)
    two = _launch(cfg_file, tmp_path / "two", 2)
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=1e-4, atol=1e-5, msg=key)
    if negatives == "uniform":
        # Guard: one process on only its local half-batch ends elsewhere, so the equality above
        # needs the gathered candidates and the gradient bookkeeping across processes.
        half = dict(tree, train={**tree["train"], "batch_size": 8})
        half_file = tmp_path / "half.yaml"
        half_file.write_text(yaml.safe_dump(half))
        alone = _launch(half_file, tmp_path / "half", 1)
        assert not torch.allclose(alone["f.rnn.weight_hh_l0"], one["f.rnn.weight_hh_l0"], atol=1e-4)


def test_two_processes_with_k_resume_exactly(tmp_path):
    """k < all candidates under 2 processes: each process draws from its own generator (seeded by
    rank) and checkpoints it, so a run stopped at step 4 and resumed ends with the weights of the
    uninterrupted 2-process run; a 2-process run is not the 1-process run (independent draws)."""
    tree = qt_config(tmp_path, steps=8, batch_size=16)
    tree["objective"]["k"] = 4
    tree["train"]["checkpoint_every"] = 4
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(tree))
    straight = _launch(cfg_file, tmp_path / "straight", 2)
    first = dict(tree, train={**tree["train"], "steps": 4})
    first_file = tmp_path / "first.yaml"
    first_file.write_text(yaml.safe_dump(first))
    _launch(first_file, tmp_path / "resumed", 2)
    shutil.rmtree(tmp_path / "resumed" / "final")
    resumed = _launch(cfg_file, tmp_path / "resumed", 2, "--resume")
    for key in straight:
        torch.testing.assert_close(resumed[key], straight[key], rtol=0, atol=0, msg=key)
    one = _launch(cfg_file, tmp_path / "one", 1)
    assert not torch.equal(one["f.rnn.weight_hh_l0"], straight["f.rnn.weight_hh_l0"])
