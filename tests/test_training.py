"""Training: config errors, an end-to-end run that lowers the loss and saves a loadable model,
exact resume after a signal, and errors from the core surfacing through the loop."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import yaml

from qt_hard.training.config import ConfigError, config_from_dict, load_config
from tests._signals import signal_at

WORDS = [f"{a}{b}" for a in "bcdfghjklmnprstvz" for b in ("a", "o", "ix", "um")]


def write_books(folder, n_books=2, n_sentences=160, seed=0):
    """Small .txt books in the Gutenberg layout (paragraphs separated by blank lines). Sentences
    come in runs of 4 sharing a topic (a slice of the word list), so neighbours are predictable."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for b in range(n_books):
        paras, para = [], []
        for i in range(n_sentences):
            topic = (i // 4 + 7 * b) % 8
            pool = WORDS[topic * 8 : topic * 8 + 8]
            words = list(rng.choice(pool, size=rng.integers(4, 8)))
            para.append(" ".join(words).capitalize() + ".")
            if len(para) == 4:
                paras.append(" ".join(para))
                para = []
        (folder / f"book{b}.txt").write_text("\n\n".join(paras) + "\n", encoding="utf-8")
    return folder


def qt_config(tmp_path, **train):
    books = write_books(tmp_path / "books")
    tree = {
        "out_dir": str(tmp_path / "run"),
        "model": {"kind": "qt", "encoder": "gru", "embed_dim": 16, "hidden_dim": 16, "max_len": 12},
        "data": {"kind": "books", "path": str(books), "min_count": 1},
        "objective": {
            "negatives": "hard",
            "temperature": 1.0,
            "normalize": False,
            "context": 1,
            "options": {"beta": 1.0, "clip": "rescaled"},
        },
        "train": {
            "batch_size": 16,
            "steps": 40,
            "lr": 0.01,
            "log_every": 1,
            "progress": False,
            "trackers": ["csv"],
            "num_threads": 1,
            **train,
        },
    }
    return tree


def read_losses(run_dir):
    import csv

    with open(run_dir / "metrics.csv") as fh:
        return [float(r["loss"]) for r in csv.DictReader(fh)]


def test_unknown_config_key_is_named(tmp_path):
    with pytest.raises(ConfigError, match="train.lrr"):
        config_from_dict({"train": {"lrr": 0.1}})
    with pytest.raises(ConfigError, match="optimizer"):
        config_from_dict({"optimizer": {}})
    with pytest.raises(ConfigError, match="model.sizes"):
        config_from_dict({}, ["model.sizes=3"])
    with pytest.raises(ConfigError, match="train.batch_size"):
        config_from_dict({}, ["train.batch_size=big"])


def test_yaml_and_dotted_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump({"train": {"lr": 0.5}, "objective": {"negatives": "hard", "options": {"beta": 1.0}}})
    )
    cfg = load_config(path, ["train.lr=1e-3", "objective.k=7", "objective.options.tau_plus=0.1"])
    assert cfg.train.lr == pytest.approx(1e-3) and cfg.objective.k == 7
    assert cfg.objective.options == {"beta": 1.0, "tau_plus": 0.1}


def test_bare_no_reads_as_the_string_no(tmp_path):
    """YAML 1.1 reads a bare ``no`` as False: ``train.mixed_precision=no`` (an override or a file)
    must still mean accelerate's "no", not fail as "must be a string"."""
    assert config_from_dict({}, ["train.mixed_precision=no"]).train.mixed_precision == "no"
    path = tmp_path / "c.yaml"
    path.write_text("train:\n  mixed_precision: no\n")
    assert load_config(path).train.mixed_precision == "no"


@pytest.mark.parametrize("name", ["qt_books", "qt_books_smoke", "bow_wiki", "bow_wiki_smoke", "hf_wiki_smoke"])
def test_shipped_configs_load(name):
    root = os.path.join(os.path.dirname(__file__), "..", "configs", f"{name}.yaml")
    cfg = load_config(root)
    assert cfg.train.batch_size >= 2


def test_end_to_end_lowers_loss_and_saves_loadable_model(tmp_path):
    import qt_hard
    from qt_hard.training.loop import train

    cfg = config_from_dict(qt_config(tmp_path, steps=60))
    out = train(cfg)
    losses = read_losses(out)
    assert len(losses) == 60
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.1, losses
    assert (out / "config.yaml").is_file()
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["train"]["steps"] == 60
    enc = qt_hard.load_encoder(out)
    vecs = enc.encode(["Ba bo bix.", "Za zo zum zix bum.", ""], batch_size=2)
    assert vecs.shape == (3, enc.dim) == (3, 32) and vecs.dtype == np.float32
    # Same sentences in another order and batch size give the same rows.
    again = enc.encode(["", "Ba bo bix.", "Za zo zum zix bum."], batch_size=3)
    np.testing.assert_allclose(again[[1, 2, 0]], vecs, rtol=1e-5, atol=1e-6)


def test_every_quick_thoughts_parameter_gets_a_gradient_through_hard_clipped_negatives(tmp_path):
    # Whether a barely moving smoke loss could come from a detach or from tiny gradients
    # under clip + hard weights: f's and g's embeddings and GRUs must all get finite, non-zero
    # gradients from the objective (and the weights themselves are differentiated, detach=False).
    from qt_hard.text.objectives import Objective
    from qt_hard.text.build import build_run

    cfg = config_from_dict(qt_config(tmp_path))
    torch.manual_seed(0)
    run = build_run(cfg, tmp_path / "run")
    loss = Objective(cfg.objective, pair_data=False)(run.module, run.task.local_batch(0, 0, 1))
    loss.backward()
    for name, p in run.module.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().max() > 1e-6, name
    assert {n.split(".")[0] for n, _ in run.module.named_parameters()} == {"f", "g"}


def test_bow_on_synthetic_pairs_with_k_and_collision_free(tmp_path):
    import qt_hard
    from qt_hard.training.loop import train

    tree = {
        "out_dir": str(tmp_path / "bow"),
        "model": {"kind": "bow", "dim": 16},
        "data": {"kind": "synthetic", "num_classes": 6, "sentences_per_class": 60, "vocab_size": 120, "min_count": 1},
        "objective": {
            "negatives": "uniform",
            "temperature": 1.0,
            "normalize": False,
            "include_positive": False,
            "k": 20,
            "collision_free": True,
        },
        "train": {
            "batch_size": 32,
            "steps": 40,
            "lr": 0.05,
            "log_every": 1,
            "progress": False,
            "trackers": ["csv", "tensorboard"],
            "num_threads": 1,
        },
    }

    out = train(config_from_dict(tree))
    losses = read_losses(out)
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.1, losses
    assert any((out / "logs").rglob("events.out.tfevents*"))
    enc = qt_hard.load_encoder(out / "final")
    assert enc.encode(["w1 w2 w3", "w7"]).shape == (2, 16)
    # collision_free with k larger than the other-class candidates of a 32-pair batch must fail.
    tree["out_dir"] = str(tmp_path / "bow_k")
    tree["objective"]["k"] = 62
    with pytest.raises(ValueError, match="k=62"):
        train(config_from_dict(tree))


def _weights(run_dir):
    import qt_hard

    return qt_hard.load_encoder(run_dir / "final").module.state_dict()


def _straight_and_stopped(tmp_path, name):
    """One 12-step Quick-Thoughts run trained straight into ``tmp_path/straight`` and the same run into
    ``tmp_path/name``, stopped by SIGTERM at step 5 (its checkpoint written). k = 6 < all candidates,
    so the negatives' sampler draws: its generator must be restored too. Returns (the stopped run's
    config, its folder)."""
    from qt_hard.training.loop import train

    tree = qt_config(tmp_path, steps=12)
    tree["objective"]["k"] = 6
    train(config_from_dict({**tree, "out_dir": str(tmp_path / "straight")}))
    stopped = config_from_dict({**tree, "out_dir": str(tmp_path / name)})
    return stopped, train(stopped, on_step=signal_at(5))


def test_resume_after_signal_gives_identical_weights(tmp_path):
    from qt_hard.training.loop import list_checkpoints, train

    interrupted, out = _straight_and_stopped(tmp_path, "interrupted")
    assert not (out / "final").exists()
    assert [p.name for p in list_checkpoints(out)] == ["step_0000005"]
    train(interrupted, resume=True)

    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "interrupted")
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)
    # The CSV holds each step once, in order.
    import csv

    with open(out / "metrics.csv") as fh:
        assert [int(r["step"]) for r in csv.DictReader(fh)] == list(range(1, 13))


def test_resume_check_would_notice_a_different_sampler(tmp_path):
    # Guard for the test above: the same corpus, the same seed, the same interruption, but the
    # checkpointed sampler state replaced by another one before resuming. Only the negatives'
    # draws after step 5 change, and the final weights must differ: so the equality above holds
    # because the generator is restored, not automatically.
    from qt_hard.training.loop import list_checkpoints, train

    other, out = _straight_and_stopped(tmp_path, "other_sampler")
    (ckpt,) = list_checkpoints(out)
    state_file = ckpt / "trainer_state_0.pt"
    state = torch.load(state_file, weights_only=False)
    state["generator"] = torch.Generator().manual_seed(12345).get_state()
    torch.save(state, state_file)
    train(other, resume=True)
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "other_sampler")
    assert not torch.equal(a["f.rnn.weight_hh_l0"], b["f.rnn.weight_hh_l0"])


def test_k_too_large_error_surfaces(tmp_path):
    from qt_hard.training.loop import train

    tree = qt_config(tmp_path, steps=2)
    tree["objective"]["k"] = 500  # a batch of 16 has at most 15 candidates per anchor
    with pytest.raises(ValueError, match="k=500"):
        train(config_from_dict(tree))


def test_resume_without_checkpoint_and_rerun_into_existing_run_are_errors(tmp_path):
    from qt_hard.training.loop import train

    tree = qt_config(tmp_path, steps=2)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train(config_from_dict(tree), resume=True)
    train(config_from_dict(tree))
    with pytest.raises(FileExistsError, match="--resume"):
        train(config_from_dict(tree))


def test_cli_train_registers_and_runs(tmp_path, capsys):
    from qt_hard.cli import main

    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump(qt_config(tmp_path, steps=3)))
    assert main(["train", str(cfg_file), "train.steps=2", f"out_dir={tmp_path / 'cli'}"]) == 0
    assert (tmp_path / "cli" / "final" / "encoder.json").is_file()
    capsys.readouterr()
    # a config error is a user error: one line, exit status 2 (tests/test_cli_errors.py); --debug raises it
    assert main(["train", str(cfg_file), "train.stepz=2"]) == 2
    assert "unknown config key 'train.stepz'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="train.stepz"):
        main(["train", str(cfg_file), "train.stepz=2", "--debug"])


def test_run_note_is_kept_printed_and_read_back_by_eval(tmp_path, capsys):
    """``note`` (free text) is printed when training starts, saved with the run, read back by
    ``qt-hard eval``'s ``run_note`` from the model folder, and may change on --resume."""
    from qt_hard.cli import main
    from qt_hard.evaluation.run_config import run_note

    tree = qt_config(tmp_path, steps=2)
    tree["note"] = "chosen on dev:\n uniform 77.2"
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump(tree))
    out = tmp_path / "noted"
    assert main(["train", str(cfg_file), "--out", str(out)]) == 0
    assert "note: chosen on dev:\n uniform 77.2" in capsys.readouterr().err
    assert run_note(str(out / "final")) == run_note(str(out)) == "chosen on dev: uniform 77.2"
    assert run_note(str(tmp_path)) == ""  # no run config there
    with pytest.raises(ConfigError, match="note"):
        config_from_dict({"note": ["not", "text"]})
    assert main(["train", str(cfg_file), "--out", str(out), "--resume", "train.steps=3", "note=longer"]) == 0


def test_cli_overrides_may_follow_options(tmp_path, capsys):
    """`qt-hard train CFG --out DIR key=value`: overrides after an option still apply; a stray word
    that is not key=value is an error naming it."""
    from qt_hard.cli import main

    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump(qt_config(tmp_path, steps=3)))
    out = tmp_path / "after"
    assert main(["train", str(cfg_file), "--out", str(out), "train.steps=1"]) == 0
    assert yaml.safe_load((out / "config.yaml").read_text())["train"]["steps"] == 1
    with pytest.raises(SystemExit):
        main(["train", str(cfg_file), "--out", str(out), "bogus"])
    assert "unrecognized arguments: bogus" in capsys.readouterr().err


def test_hard_run_logs_weight_diagnostics(tmp_path):
    """Every logged row of a hard-weighted run carries the weight diagnostics and the beta in effect."""
    import csv

    tree = qt_config(tmp_path, steps=6, log_every=3)
    tree["objective"]["options"]["beta"] = {"schedule": "beta_anneal", "beta": 2.0, "changes": 2}
    from qt_hard.training.loop import train

    out = train(config_from_dict(tree))
    with open(out / "metrics.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["step"]) for r in rows] == [3, 6]
    assert [float(r["beta"]) for r in rows] == [2.0, 1.0]
    for r in rows:
        assert 0.0 < float(r["ess_frac"]) < 1.0
        assert float(r["w_ratio_median"]) > 1.0
        assert 0.0 <= float(r["pushed_up_frac"]) <= 1.0
        assert float(r["score_std"]) > 0.0
        assert float(r["tilt"]) > 0.0
