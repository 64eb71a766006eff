"""Two processes (CPU, gloo, ``accelerate launch``) with the default trackers (TensorBoard + CSV).

* They train like one process on the same global batch: the global batch of B consecutive
  sentences is split into two consecutive halves, the core gathers the candidates (with gradients)
  so both processes score against the whole batch, and DDP averages the gradients. Every step's
  logged loss (the global batch's) and gradient norm equal one process's, and so do the final
  weights up to float32 rounding amplified by Adam (see ``_relative_gaps``). Both exit 0, and
  metrics.csv and the TensorBoard events are written once, by the main process.
* SIGTERM to one rank only: every rank stops at the same step with one checkpoint, and ``--resume``
  on two processes ends with the weights of an uninterrupted run.
* An exception on one rank takes the other down at once instead of leaving it in a collective.

Run with ``pytest -m slow tests/test_training_distributed.py``.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from test_training import qt_config

from tests._accelerate_launch import accelerate_command

pytestmark = pytest.mark.slow

WORKER = Path(__file__).resolve().parent / "_train_worker.py"


def _launch(cfg_file, out, nproc, *worker_args, check=True, timeout=600):
    """``qt-hard train`` (1 process) or ``accelerate launch`` of the training worker (N processes),
    on a free port (other jobs on the machine may hold accelerate's default 29500)."""
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    if nproc == 1 and not worker_args:
        cmd = [sys.executable, "-m", "qt_hard.cli", "train", str(cfg_file), f"out_dir={out}"]
    else:
        cmd = accelerate_command(nproc, 0, str(WORKER), str(_with_out(cfg_file, out)), *worker_args)
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


def _with_out(cfg_file, out):
    """A copy of the config with out_dir set (the worker takes no overrides)."""
    tree = yaml.safe_load(Path(cfg_file).read_text())
    tree["out_dir"] = str(out)
    path = Path(str(out) + ".yaml")
    path.write_text(yaml.safe_dump(tree))
    return path


def _weights(out):
    import qt_hard

    return qt_hard.load_encoder(out / "final").module.state_dict()


def _csv_rows(out):
    with open(out / "metrics.csv") as fh:
        return list(csv.DictReader(fh))


def _csv_steps(out):
    return [int(r["step"]) for r in _csv_rows(out)]


def _csv_series(out, key):
    return torch.tensor([float(r[key]) for r in _csv_rows(out)], dtype=torch.float64)


def _relative_gaps(a, b):
    """||a - b|| / ||b|| of each tensor of two state dicts.

    Norms, not elements: the word embeddings start at S2V's uniform(-0.1, 0.1), so the sentence
    vectors start nearly equal and the candidates' gradients are differences of nearly equal terms.
    Two processes add the same terms in another order (the gather's all-reduce, DDP's average), so a
    gradient element differs by float32 rounding; where that element is of the order of Adam's eps
    (1e-8), Adam's step lr * m / (sqrt(v) + eps) turns a 1% difference in it into a difference of
    a few 1e-5 in one weight (lr = 0.01). Those few weights move a tensor's norm by about 1e-5 of it;
    another batch (the half-batch guard), or candidates that are not gathered, move it by tenths."""
    return {key: float((a[key] - b[key]).norm() / b[key].norm()) for key in b}


def _event_writers(out):
    """(number of TensorBoard event files, the set of process ids that wrote them): the file names
    end in ``.<host>.<pid>.<n>``; hparams go to a file of their own in a subfolder."""
    files = list((out / "logs").rglob("events.out.tfevents.*"))
    return len(files), {f.name.split(".")[-2] for f in files}


def _default_trackers(tree):
    """qt_config turns TensorBoard off for speed; these tests run what users run."""
    tree["train"].pop("trackers")
    return tree


@pytest.mark.parametrize("negatives", ["uniform", "hard"])
def test_two_processes_equal_one_process(tmp_path, negatives):
    tree = _default_trackers(qt_config(tmp_path, steps=8, batch_size=16))
    tree["objective"]["negatives"] = negatives
    if negatives == "uniform":
        tree["objective"]["options"] = {}
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(tree))
    _launch(cfg_file, tmp_path / "one", 1)
    _launch(cfg_file, tmp_path / "two", 2)
    one, two = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    # The logged loss is the global batch's (the processes' mean), the gradient norm DDP's averaged one.
    for key, rtol in (("loss", 1e-5), ("grad_norm", 1e-3)):
        torch.testing.assert_close(
            _csv_series(tmp_path / "two", key), _csv_series(tmp_path / "one", key), rtol=rtol, atol=0, msg=key
        )
    gaps = _relative_gaps(two, one)
    assert one.keys() == two.keys() and max(gaps.values()) < 1e-3, gaps
    # Written once, by the main process: one CSV row per step, and as many TensorBoard event files
    # as one process writes, all from one process id.
    n_one, pids_one = _event_writers(tmp_path / "one")
    n_two, pids_two = _event_writers(tmp_path / "two")
    assert n_one >= 1 and n_two == n_one and len(pids_one) == len(pids_two) == 1, (n_one, n_two, pids_two)
    for run in ("one", "two"):
        assert _csv_steps(tmp_path / run) == list(range(1, 9)), run
    if negatives == "uniform":
        # Guard: one process on only its local half-batch ends elsewhere, so the equality above
        # needs the gathered candidates and the gradient bookkeeping across processes.
        half = dict(tree, train={**tree["train"], "batch_size": 8})
        half_file = tmp_path / "half.yaml"
        half_file.write_text(yaml.safe_dump(half))
        _launch(half_file, tmp_path / "half", 1)
        alone = _weights(tmp_path / "half")
        assert min(_relative_gaps(alone, one).values()) > 1e-2
        assert not torch.allclose(
            _csv_series(tmp_path / "half", "loss"), _csv_series(tmp_path / "one", "loss"), rtol=1e-3
        )


def test_sigterm_to_one_rank_stops_every_rank_at_one_step_and_resume_is_exact(tmp_path):
    from qt_hard.training.loop import list_checkpoints

    tree = _default_trackers(qt_config(tmp_path, steps=12, batch_size=16))
    tree["objective"]["k"] = 6  # the per-process sampler generators must be restored as well
    tree["train"]["checkpoint_every"] = 0
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(tree))
    _launch(cfg_file, tmp_path / "straight", 2)

    out = tmp_path / "interrupted"
    res = _launch(cfg_file, out, 2, "--rank", "1", "--signal-at", "5")
    assert "stopped by signal at step 5/12" in res.stderr, res.stderr[-2000:]  # logged (qt_hard.logs)
    assert not (out / "final").exists()
    (ckpt,) = list_checkpoints(out)
    states = [torch.load(ckpt / f"trainer_state_{r}.pt", weights_only=False) for r in (0, 1)]
    assert [s["step"] for s in states] == [5, 5] and ckpt.name == "step_0000005"

    _launch(cfg_file, out, 2, "--resume")
    a, b = _weights(tmp_path / "straight"), _weights(out)
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=0, atol=0, msg=key)
    assert _csv_steps(out) == list(range(1, 13))
    assert len(_event_writers(out)[1]) == 2  # the main process of the first run and of the resumed one


def test_an_error_on_one_rank_stops_the_other_at_once(tmp_path):
    """Rank 1 raises after step 3 while a non-daemon thread would keep an ordinary exit waiting;
    rank 0, already in the step's stop-flag all-reduce, must fail as soon as rank 1's process ends
    (the CLI's exit_at_once_on_error), and the launcher must return. Without that, rank 0 would wait
    for gloo's 30-minute timeout and this launch would hit its own."""
    tree = _default_trackers(qt_config(tmp_path, steps=12, batch_size=16))
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(tree))
    res = _launch(
        cfg_file, tmp_path / "run", 2, "--rank", "1", "--raise-at", "3", "--linger", "300", check=False, timeout=150
    )
    assert res.returncode != 0
    assert "injected failure on rank 1 at step 3" in res.stderr, res.stderr[-3000:]
    assert "Connection closed by peer" in res.stderr or "[rank 0] training failed" in res.stderr, res.stderr[-3000:]
