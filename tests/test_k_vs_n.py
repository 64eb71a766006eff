"""The k-versus-N ablation (``qt_hard.experiments.specs.k_vs_n``, ``qt-hard grid run k-vs-n``): grid
expansion, the results ledger (claims, setup, a CSV without its ledger refused, the committed ledgers
opened by their commands), kill-and-resume, the plan, plots (tiny synthetic grids), and the sampling
measurement of ``scripts/k_vs_n_sampling.py``."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tests._signals import signal_at

from qt_hard.cli import main
from qt_hard.experiments.ledger import LedgerError
from qt_hard.experiments.specs import k_vs_n as K
from qt_hard.experiments.specs import k_vs_n_grid as G
from qt_hard.experiments.specs import k_vs_n_tables as T

ROOT = Path(__file__).resolve().parents[1]
COMMAND = [sys.executable, "-m", "qt_hard.cli", "grid", "run", "k-vs-n"]

TINY = """
data: {kind: synthetic, min_count: 1, sentences_per_class: 30, vocab_size: 120, split_seed: 0}
train: {dim: 16, epochs: EPOCHS, linear_epochs: 2, linear_batch: 32}
seeds: [0]
blocks:
  nk: {N: [3, 4], k: [2, null], B: [8]}
  cf: {N: [4], k: [2], B: [8], collision_free: [false, true]}
"""


def _grid(tmp_path, epochs=2) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(TINY.replace("EPOCHS", str(epochs)))
    return path


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    return env


def grid_run(grid: Path, out: Path, *extra: str) -> int:
    """``qt-hard grid run k-vs-n`` into the folder ``out`` in this process, on the CPU's default device,
    one thread (the caches beside ``out``)."""
    argv = [str(grid), "--out", str(out), "--cache", str(out.parent / "cache"), "--threads", "1"]
    return main(["grid", "run", "k-vs-n", *argv, "--no-estimate", *extra])


def _ledger(out: Path, grid=None):
    """The ledger of the results folder ``out`` (``results.jsonl``) as the grid command opens it;
    with ``grid``, for appending under its setup."""
    setup = None if grid is None else T.setup_of(grid)
    return K.KversusN().ledger(out, "results.jsonl", setup)


def _metrics(path: Path) -> dict:
    rows = _ledger(path).latest()
    ids = [r["cell_id"] for r in rows]
    assert len(ids) == len(set(ids)), "a cell was written twice"
    return {r["cell_id"]: tuple(r[m] for m in T.METRICS) for r in rows}


def test_expand_leaves_out_impossible_k_and_merges_blocks(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("""
seeds: [0, 1]
blocks:
  a: {N: [10], k: [5, 20, null], B: [8, 16]}
  b: {N: [10], k: [5], B: [16], collision_free: [false, true]}
""")
    grid = G.load_grid(path)
    cells, notes = G.expand(grid)
    # k=20 > 2(8-1)=14 is left out at B=8; (N=10,k=5,B=16,cf=False) is in both blocks once.
    assert len(cells) == 2 * (2 + 3 + 1)
    assert len(set(cells)) == len(cells)
    assert any("k=20 B=8" in n for n in notes)
    assert len({G.cell_id(grid, c) for c in cells}) == len(cells)
    # Epochs enter the cell id: a grid with other epochs never reuses a row.
    other = G.load_grid(path, epochs=3)
    assert G.cell_id(other, cells[0]) != G.cell_id(grid, cells[0])


def test_grid_errors_name_the_problem(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("blocks:\n  a: {N: [10], kk: [5]}\n")
    with pytest.raises(ValueError, match="needs N and k"):
        G.load_grid(path)
    path.write_text("train: {optimiser: adam}\nblocks:\n  a: {N: [10], k: [5]}\n")
    with pytest.raises(ValueError, match="optimiser"):
        G.load_grid(path)


def _claims(out: Path) -> list[Path]:
    """The claims held on the cells of the results folder ``out`` (files in its ``claims/``, each named
    by its cell id)."""
    return [p for p in (out / "claims").glob("*") if not p.name.startswith(".")]


def test_killed_grid_resumes_to_identical_results_and_plots(tmp_path):
    grid = _grid(tmp_path, epochs=20)
    cache = tmp_path / "cache"
    n_cells = len(G.expand(G.load_grid(grid))[0])
    common = ["--cache", str(cache), "--device", "cpu", "--threads", "1", "--no-estimate"]
    # Uninterrupted reference, in this process.
    ref = tmp_path / "ref"
    assert grid_run(grid, ref) == 0
    expected = _metrics(ref)
    assert len(expected) == n_cells

    # Killed (SIGKILL: no chance to clean up) while a cell is in progress, after >= 1 finished.
    res = tmp_path / "res"
    cmd = [*COMMAND, str(grid), "--out", str(res), *common]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    killed_at = None
    while time.time() < deadline and proc.poll() is None:
        done = len(_ledger(res).latest())
        if 1 <= done < n_cells and _claims(res):
            proc.send_signal(signal.SIGKILL)
            killed_at = done
            break
        time.sleep(0.02)
    proc.wait()
    assert killed_at is not None, f"the grid was not caught mid-cell: {proc.stderr.read().decode()[-2000:]}"
    assert len(_ledger(res).latest()) < n_cells
    assert _claims(res), "the killed cell left no claim behind"

    # Restarted with two workers: the dead claim is taken over, no cell runs twice.
    out = subprocess.run([*cmd, "--workers", "2"], env=_env(), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = _metrics(res)
    assert got == expected
    rows = _ledger(res).latest()
    assert {r["git_commit"] for r in rows} and all(r["wall_s"] > 0 for r in rows)
    # A claim left behind names a finished cell (killed between its record and the claim's removal).
    assert all(p.name in got for p in _claims(res))
    # The CSV derived from the ledger holds the same rows.
    with open(res / "results.csv", newline="") as fh:
        in_csv = {r["cell_id"]: tuple(r[m] for m in T.METRICS) for r in csv.DictReader(fh)}
    assert in_csv == {cid: tuple(map(str, m)) for cid, m in got.items()}

    # A second run of a finished grid runs nothing.
    before = (res / "results.jsonl").read_bytes()
    assert grid_run(grid, res) == 0 and (res / "results.jsonl").read_bytes() == before

    # Plots from the records alone.
    figs = T.plot(_ledger(res).latest(), tmp_path / "figs")
    names = {p.name for p in figs}
    for metric in ("mean_acc", "linear_acc"):
        assert f"k_vs_n_{metric}.png" in names and f"collisions_{metric}.png" in names
    summary = json.loads((tmp_path / "figs" / "k_vs_n_summary.json").read_text())
    assert set(summary["mean_acc"]["best_k_by_N"]) == {"3", "4"}
    assert summary["mean_acc"]["collision_free_gain"]["4"]


def test_prepare_builds_the_wiki_folder_and_its_tokens_once(tmp_path):
    """``prepare`` of a wiki grid (``qt_hard.data.wiki.prepare_wiki``): the folder of the first
    articles with enough sentences, tokenized whole, the marker written; a grid asking for more
    articles than the folder has is refused; a second call does nothing."""
    from qt_hard.data.wiki import wiki_prefix
    from tests.test_data_wiki import DUMP

    dump = tmp_path / "dump.txt"
    dump.write_text(DUMP, encoding="utf-8")
    spec = G.DataSpec(kind="wiki", source=str(dump), articles=3, min_sentences=3, min_count=1)
    cache = tmp_path / "cache"
    marker = G.prepare(spec, [2, 3], cache)
    assert marker.is_file() and sorted(p.name for p in G.wiki_dir(cache, spec).glob("*.txt")) == [
        "0000.txt",
        "0001.txt",
        "0002.txt",
    ]
    assert wiki_prefix(G.wiki_dir(cache, spec), 2, min_count=1, cache_dir=G.token_cache(cache)).num_classes == 2
    stamp = marker.stat().st_mtime_ns
    assert G.prepare(spec, [2, 3], cache) == marker and marker.stat().st_mtime_ns == stamp
    with pytest.raises(ValueError, match="has 3 articles; the grid asks for N=4"):
        G.prepare(spec, [4], tmp_path / "other")


def test_wiki_n_from_a_larger_tokenization_equals_its_own(tmp_path):
    """prepare tokenizes the whole Wiki folder once: Wiki-N as its prefix (``data.classes``) must
    split and build its vocabulary exactly as a folder of N articles alone does."""
    from qt_hard.data.wiki import load_wiki, wiki_prefix
    from tests.test_data_wiki import make_archive

    big = make_archive(tmp_path, n_articles=6, n_sent=20)
    small_dir = tmp_path / "four"
    small_dir.mkdir()
    for f in sorted(big.iterdir())[:4]:
        shutil.copy(f, small_dir / f.name)
    small = wiki_prefix(big, 4, min_count=2, cache_dir=tmp_path / "tok")
    alone = load_wiki(small_dir, min_count=2, cache_dir=False)
    assert small.num_classes == alone.num_classes == 4
    assert small.vocab.itos == alone.vocab.itos
    assert len(small.vocab) < len(wiki_prefix(big, 6, min_count=2, cache_dir=tmp_path / "tok").vocab)
    assert small.train_labels == alone.train_labels and small.test_labels == alone.test_labels
    for x, y in zip(small.train_ids + small.test_ids, alone.train_ids + alone.test_ids):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="7 classes"):
        wiki_prefix(big, 7, cache_dir=tmp_path / "tok")


def test_wiki_n_with_the_vocabulary_of_a_larger_prefix(tmp_path):
    """``vocab_classes``: Wiki-N keeps its own sentences and split but takes the vocabulary of the
    first M articles' training split, the vocabulary Wiki-M itself builds."""
    from qt_hard.data.wiki import wiki_prefix
    from tests.test_data_wiki import make_archive

    big = make_archive(tmp_path, n_articles=6, n_sent=20)
    tok = tmp_path / "tok"
    own = wiki_prefix(big, 4, min_count=2, cache_dir=tok)
    six = wiki_prefix(big, 6, min_count=2, cache_dir=tok)
    shared = wiki_prefix(big, 4, min_count=2, cache_dir=tok, vocab_classes=6)
    assert shared.vocab.itos == six.vocab.itos != own.vocab.itos
    assert shared.train_sentences == own.train_sentences and shared.test_labels == own.test_labels
    # Every token is the one Wiki-6 gives the same sentence (Wiki-4's sentences are a prefix of its).
    for x, y in zip(shared.train_ids, six.train_ids[: len(shared.train_ids)]):
        np.testing.assert_array_equal(x, y)
    assert wiki_prefix(big, 4, min_count=2, cache_dir=tok, vocab_classes=4).vocab.itos == own.vocab.itos
    with pytest.raises(ValueError, match="vocab_classes"):
        wiki_prefix(big, 4, cache_dir=tok, vocab_classes=3)
    with pytest.raises(ValueError, match="7 classes"):
        wiki_prefix(big, 4, cache_dir=tok, vocab_classes=7)
    # The config refuses it before any data is read: without data.classes, or below it.
    from qt_hard.text.config import DataConfig

    DataConfig(kind="wiki", classes=100, vocab_classes=3029).validate()
    for bad in ({"vocab_classes": 3029}, {"classes": 100, "vocab_classes": 50}):
        with pytest.raises(ValueError, match="data.vocab_classes needs data.classes"):
            DataConfig(kind="wiki", **bad).validate()


def test_vocab_articles_reaches_the_cell_and_keeps_older_cell_ids(tmp_path):
    """``data.vocab_articles`` of a grid becomes the cell config's ``data.vocab_classes``; left at
    its default it is not part of a cell's id or of a results file's setup."""
    grid = G.load_grid(_grid(tmp_path))
    cell = G.Point(4, 2, 8, False, 0)
    assert "vocab_articles" not in G.cell_config(grid, cell)["data"]
    assert not any("vocab_articles" in key for key in T.setup_of(grid))
    assert "vocab_classes" not in G.cell_tree(grid, cell, tmp_path / "c", tmp_path / "o")["data"]
    shared = dataclasses.replace(grid, data=dataclasses.replace(grid.data, kind="wiki", vocab_articles=3029))
    assert G.cell_tree(shared, cell, tmp_path / "c", tmp_path / "o")["data"]["vocab_classes"] == 3029
    wiki = dataclasses.replace(shared, data=dataclasses.replace(shared.data, vocab_articles=None))
    assert G.cell_id(shared, cell) != G.cell_id(wiki, cell)
    assert T.setup_of(shared)["data.vocab_articles"] == 3029


def _tiny_cell(tmp_path, cf=True, epochs=3):
    grid = G.load_grid(_grid(tmp_path, epochs=epochs))
    cell = G.Point(4, 2, 8, cf, 0)
    G.prepare(grid.data, [4], tmp_path / "cache")
    return grid, cell


def test_a_cell_is_a_qt_hard_train_run(tmp_path):
    """The cell's metrics through k_vs_n equal those of `qt-hard train` on the config it writes."""
    import yaml

    grid, cell = _tiny_cell(tmp_path)
    tree = G.cell_tree(grid, cell, tmp_path / "cache", tmp_path / "cell")
    got = G.run_cell(tree)
    cli = dict(tree, out_dir=str(tmp_path / "cli"))
    (tmp_path / "cli.yaml").write_text(yaml.safe_dump(cli))
    res = subprocess.run(
        [sys.executable, "-m", "qt_hard.cli", "train", str(tmp_path / "cli.yaml")],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    want = G.cell_metrics(tmp_path / "cli")
    for key in "mean_acc linear_acc linear_best_epoch final_loss steps vocab_size n_train n_test diagnostics".split():
        assert got[key] == want[key], key
    assert got["steps"] > 0 and got["steps"] % 3 == 0 and 0 <= got["mean_acc"] <= 100  # whole epochs


def test_a_cell_stopped_mid_way_resumes_to_the_uninterrupted_metrics(tmp_path):
    grid, cell = _tiny_cell(tmp_path, cf=G.SHUFFLED, epochs=4)
    cache = tmp_path / "cache"
    straight = G.run_cell(G.cell_tree(grid, cell, cache, tmp_path / "straight"))

    tree = G.cell_tree(grid, cell, cache, tmp_path / "cut")
    assert G.run_cell(tree, on_step=signal_at(5)) is None
    assert (tmp_path / "cut" / "checkpoints").is_dir()
    resumed = G.run_cell(tree)
    for key in ("train_s", "eval_s", "sentences_per_s"):
        straight.pop(key), resumed.pop(key)
    assert resumed == straight


SHUFFLED_GRID = """
data: {kind: synthetic, min_count: 1, sentences_per_class: 30, vocab_size: 120, split_seed: 0}
train: {dim: 16, epochs: 2, linear_epochs: 2, linear_batch: 32}
seeds: [0]
blocks:
  cf: {N: [4], k: [4], B: [8], collision_free: [false, true, shuffled]}
"""


@pytest.fixture(scope="module")
def shuffled_grid(tmp_path_factory):
    """The three collision modes of one cell, run by the grid command while this process holds the
    claim of the first cell (skipped), then with a dead process's claim on it (taken over)."""
    tmp = tmp_path_factory.mktemp("shuffled")
    grid_path = tmp / "g.yaml"
    grid_path.write_text(SHUFFLED_GRID)
    grid = G.load_grid(grid_path)
    cells, _ = G.expand(grid)
    first = G.cell_id(grid, cells[0])
    cache, res = tmp / "cache", tmp / "res"
    G.prepare(grid.data, [4], cache)
    ledger = _ledger(res, grid)
    with ledger.claim((first,)) as mine:
        assert mine
        (claim,) = _claims(res)
        assert grid_run(grid_path, res) == 0
    assert (first,) not in ledger.done() and len(ledger.done()) == 2 and not _claims(res)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    claim.write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid}))
    assert grid_run(grid_path, res) == 0
    assert (first,) in ledger.done() and len(ledger.done()) == 3 and not _claims(res)
    return grid_path, res


def test_shuffled_control_removes_matched_random_candidates_and_writes_diagnostics(shuffled_grid, tmp_path):
    """collision_free: shuffled permutes each batch's labels before the same-label mask: the cell
    runs, differs from both the plain and the collision-free cell, lands in the CSV as 'shuffled'
    (never mixed into the plain rows), and every row has its diagnostics line beside the CSV."""
    grid_path, res = shuffled_grid
    grid = G.load_grid(grid_path)
    cells, _ = G.expand(grid)
    assert sorted(str(c.collision_free) for c in cells) == ["False", "True", "shuffled"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(grid_path.read_text().replace("shuffled", "random"))
    with pytest.raises(ValueError, match="shuffled"):
        G.expand(G.load_grid(bad))

    with open(res / "results.csv", newline="") as fh:
        rows = {r["collision_free"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"False", "True", "shuffled"}
    losses = {c: float(r["final_loss"]) for c, r in rows.items()}
    assert len(set(losses.values())) == 3, losses
    diag = [json.loads(line) for line in (res / "results.diag.jsonl").read_text().splitlines()]
    assert {d["cell_id"] for d in diag} == {r["cell_id"] for r in rows.values()}
    for d in diag:
        assert 0 <= d["same_class_mass"] <= 1 and 0 < d["same_class_share"] < 1
        assert 0 <= d["mean_cos_acc"] <= 100 and d["test_norm_mean"] > 0
    records = _ledger(res).latest()
    assert sorted(str(r["collision_free"]) for r in records) == ["False", "True", "shuffled"]
    summary = T.summarize(records)
    assert set(summary["mean_acc"]["shuffled_control_gain"][4]) == {4}
    assert set(summary["mean_acc"]["collision_free_gain"][4]) == {4}
    table = T.diagnose(records).splitlines()
    assert len(table) == 2 + 3 and "same-class softmax mass" in table[0]
    assert [line.split(" | ")[3] for line in table[2:]] == [
        "none (plain)",
        "same-class (collision-free)",
        "random, matched (shuffled)",
    ]


def test_a_results_file_holds_one_setup(shuffled_grid, tmp_path):
    """The ledger's setup is the grid's data and train settings: another budget is refused,
    naming the setting; another seed or block goes on in the same file."""
    grid_path, res = shuffled_grid
    with pytest.raises(LedgerError, match=r"train\.epochs: 2 there, 3 here"):
        _ledger(res, G.load_grid(grid_path, epochs=3))
    grown = G.load_grid(grid_path, seeds=[0, 1])
    assert len(_ledger(res, grown).done()) == 3


def test_a_csv_without_its_ledger_is_refused(shuffled_grid, tmp_path, capsys):
    """A results CSV with no ledger beside it (written before the ledger, or by hand) is neither read
    as empty nor rewritten: the grid refuses it, naming the file, and leaves it as it was."""
    grid_path, res = shuffled_grid
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    shutil.copy(res / "results.csv", legacy / "results.csv")
    before = (legacy / "results.csv").read_bytes()
    assert grid_run(grid_path, legacy) == 2
    refused = f"--out {legacy / 'results.csv'} exists and is not a table qt-hard wrote"
    assert refused in capsys.readouterr().err.splitlines()[-1]
    assert main(["grid", "run", "k-vs-n", "--out", str(legacy), "--summary-only"]) == 2
    assert f"--out {legacy}: no results.jsonl to summarize" in capsys.readouterr().err.splitlines()[-1]
    assert (legacy / "results.csv").read_bytes() == before and not (legacy / "results.jsonl").exists()


def test_the_plan_runs_nothing_and_max_cells_stops_the_grid(shuffled_grid, tmp_path, capsys):
    """``--plan`` prints the cells (and what is finished) and runs none; ``--max-cells 1`` runs one;
    ``--summary-only`` reads the results alone (no grid YAML), ``--diagnose`` adds the diagnostics
    table; a run without the grid YAML is refused."""
    grid_path, res = shuffled_grid
    out = tmp_path / "r"
    assert grid_run(grid_path, out, "--plan") == 0
    assert "grid: 3 cells (0 already finished, 3 to run)" in capsys.readouterr().err
    assert not _ledger(out).done()
    assert grid_run(grid_path, out, "--max-cells", "1") == 0 and len(_ledger(out).done()) == 1
    assert main(["grid", "run", "k-vs-n", "--out", str(out)]) == 2
    assert "give the grid YAML" in capsys.readouterr().err
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(res / "results.jsonl", copy / "results.jsonl")
    assert main(["grid", "run", "k-vs-n", "--out", str(copy), "--summary-only", "--diagnose"]) == 0
    assert (copy / "results.csv").read_bytes() == (res / "results.csv").read_bytes()
    table = (copy / "results.diagnostics.md").read_text()
    assert table.rstrip("\n") in capsys.readouterr().out and "same-class softmax mass" in table


# The commands of the committed ledgers (docs/reproductions/k-vs-n.md): the grid and its overrides.
COMMITTED = {
    "main": ("configs/k_vs_n.yaml", "10", "10"),
    "rerun_cpu": ("configs/k_vs_n.yaml", "10", "10"),
    "rerun_cpu_old_loop": ("configs/k_vs_n.yaml", "10", "10"),
    "collisions": ("configs/k_vs_n_collisions.yaml", "10", "10"),
    "collisions_1000": ("configs/k_vs_n_collisions_1000.yaml", "10", "10"),
    "vocab": ("configs/k_vs_n_vocab.yaml", "10", "10"),
    "steps_100": ("configs/k_vs_n_steps.yaml", "100", "10"),
    "b1000_long": ("configs/k_vs_n_b1000_long.yaml", "50", "50"),
}


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_a_committed_ledger_opens_with_the_setup_its_command_makes(name, monkeypatch):
    """The setup the grid command builds from a committed ledger's grid YAML and options is the one
    stored in the ledger, and every recorded cell is a cell of that grid (a rerun skips it)."""
    import argparse

    monkeypatch.chdir(ROOT)
    config, epochs, linear = COMMITTED[name]
    out = ROOT / "results" / "k_vs_n" / name
    parser = argparse.ArgumentParser()
    K.KversusN().add_arguments(parser)
    args = parser.parse_args([config, "--epochs", epochs, "--linear-epochs", linear])
    exp = K.KversusN()
    stored = _ledger(out)
    assert exp.setup(args, out) == stored.setup
    _ledger(out, K.grid_of(args))  # the ledger accepts the setup
    ids = {cell.keys[0] for cell in exp.cells(args, [], [])}
    assert stored.done() <= ids and stored.done()
    assert sorted(COMMITTED) == sorted(p.parent.name for p in out.parent.glob("*/results.jsonl"))


def test_sampling_measurement_on_pair_batches():
    """The sampling measurement (``scripts/k_vs_n_sampling.py``) on PairTask batches of 12 classes: k drawn in every
    mode, the control removes as many candidates as collision-free sampling, and where the draw
    count is the same for every mask (random keys, k above half the candidates) the streams stay
    paired."""
    from qt_hard.experiments.specs import k_vs_n_sampling as S
    from qt_hard.text.batches import PairTask

    labels = np.repeat(np.arange(12), 10)

    def pairs(epoch):  # any pairing, a function of the epoch alone (as the training loop's)
        return np.random.default_rng(epoch).permutation(len(labels)).reshape(-1, 2)

    tasks = {s: PairTask(None, labels, pairs, 16, 0, shuffle_labels=s) for s in (False, True)}
    out = S.measure_sampling(labels, tasks, k=20, steps=6, seed=0)
    cands = out["candidates"]
    assert cands["plain"] == 30 and cands["collision_free"] == cands["shuffled"] == 30 - cands["same_article"] < 30
    assert out["drawn"]["k_in_every_mode"] and 0 < out["drawn"]["same_article_per_anchor"]
    assert out["paired"] == {"generator_states_equal_every_step": True, "anchors_replaced_only": 1.0}


def test_sampling_runs_on_the_grids_wiki_batches_and_writes_nothing(tmp_path, capsys, monkeypatch):
    """``scripts/k_vs_n_sampling.py`` builds the caches and prints the measurement of the grid's cells
    (its data, its first seed) and a line per k, with nothing else written; a (N, k, B) that is no
    cell of the grid and another data kind are refused in one line."""
    from tests._scripts import load_script
    from tests.test_data_wiki import DUMP

    script = load_script("k_vs_n_sampling")
    dump = tmp_path / "dump.txt"
    dump.write_text(DUMP, encoding="utf-8")
    grid = tmp_path / "wiki.yaml"
    grid.write_text(
        f"data: {{kind: wiki, source: {json.dumps(str(dump))}, articles: 3, min_sentences: 3, min_count: 1}}\n"
        "train: {dim: 8, epochs: 1, linear_epochs: 1}\nseeds: [1, 0]\nblocks:\n  b: {N: [3], k: [1, 2], B: [2]}\n"
    )
    monkeypatch.chdir(tmp_path)
    cache = ["--cache", str(tmp_path / "cache")]
    assert script.main([str(grid), *cache, "--N", "3", "--B", "2", "--k", "1,2", "--steps", "3"]) == 0
    text = capsys.readouterr().out
    out = json.loads(text[: text.rindex("}") + 1])
    assert (out["N"], out["B"], out["seed"], [s["k"] for s in out["sampling"]]) == (3, 2, 1, [1, 2])
    assert all(s["steps"] == 3 and s["drawn"]["k_in_every_mode"] for s in out["sampling"])
    assert text.count("\nN=3 k=") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "dump.txt", "wiki.yaml"]
    for path, extra, message in (
        (grid, ("--N", "3", "--B", "2", "--k", "5"), "N=3 k=5 B=2 is not a cell of the grid"),
        (_grid(tmp_path), (), "the sampling is measured on Wiki-N's batches"),
    ):
        with pytest.raises(SystemExit) as stop:
            script.main([str(path), *cache, *extra])
        assert stop.value.code == 2 and message in capsys.readouterr().err
