"""Graph pipeline: the TU reader on small files written in the format (and its errors), the GIN /
InfoGraph shapes, batches as a pure function of (seed, step) split over processes, a tiny end-to-end
run that trains, embeds and classifies, and an interrupted-and-resumed run ending with the same
embeddings as an uninterrupted one."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from qt_hard.graph.tu import TUFormatError, read_tu
from qt_hard.training.config import ConfigError, config_from_dict


def write_tu(root, name, graphs, labels, node_labels=None, extra_a_lines=()):
    """graphs: list of (n_nodes, [(i, j) local 0-based undirected edges]); writes both directions."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    a, ind, start = [], [], 1
    for g, (n, edges) in enumerate(graphs, 1):
        for i, j in edges:
            a += [f"{start + i}, {start + j}", f"{start + j}, {start + i}"]
        ind += [str(g)] * n
        start += n
    (folder / f"{name}_A.txt").write_text("\n".join(a + list(extra_a_lines)) + "\n")
    (folder / f"{name}_graph_indicator.txt").write_text("\n".join(ind) + "\n")
    (folder / f"{name}_graph_labels.txt").write_text("\n".join(str(v) for v in labels) + "\n")
    if node_labels is not None:
        (folder / f"{name}_node_labels.txt").write_text("\n".join(str(v) for v in node_labels) + "\n")
    return root


def cycle(n):
    return n, [(i, (i + 1) % n) for i in range(n)]


def star(n):
    return n, [(0, i) for i in range(1, n)]


def toy_dataset(root, name="TOY", n_graphs=40, seed=0):
    """Cycles (label -1) and stars (label 1) of 4..9 nodes, no node labels (one-hot degree)."""
    rng = np.random.default_rng(seed)
    graphs, labels = [], []
    for g in range(n_graphs):
        n = int(rng.integers(4, 10))
        graphs.append(cycle(n) if g % 2 else star(n))
        labels.append(-1 if g % 2 else 1)
    return write_tu(root, name, graphs, labels)


def test_reader_reads_the_format(tmp_path):
    # Graph 2 lists an edge twice and a self-loop: merged / dropped as PyG does.
    write_tu(
        tmp_path,
        "T",
        [(3, [(0, 1), (1, 2)]), (2, [(0, 1), (0, 1)])],
        [6, 2],
        node_labels=[3, 5, 3, 4, 4],
        extra_a_lines=["4, 4"],
    )
    d = read_tu(tmp_path, "T")
    assert d.num_graphs == 2 and list(d.y) == [1, 0] and list(d.classes) == [2, 6]
    assert d.edge_index.shape == (2, 6)  # 2 + 2 directed edges in graph 1, 2 in graph 2
    assert list(d.graph_of_node) == [0, 0, 0, 1, 1]
    np.testing.assert_array_equal(d.x, np.eye(3, dtype=np.float32)[[0, 2, 0, 1, 1]])  # labels - min, one-hot
    # Without node labels: one-hot degree.
    write_tu(tmp_path, "U", [star(4), cycle(3)], [0, 1])
    u = read_tu(tmp_path, "U")
    np.testing.assert_array_equal(u.x.argmax(1), [3, 1, 1, 1, 2, 2, 2])


def test_reader_errors_name_file_and_line(tmp_path):
    with pytest.raises(TUFormatError, match="no such dataset"):
        read_tu(tmp_path, "NOPE")
    write_tu(tmp_path, "T", [cycle(3), cycle(3)], [0, 1])
    (tmp_path / "T" / "T_graph_labels.txt").unlink()
    with pytest.raises(TUFormatError, match=r"T_graph_labels\.txt: file not found"):
        read_tu(tmp_path, "T")
    write_tu(tmp_path, "T", [cycle(3), cycle(3)], [0, 1])
    path = tmp_path / "T" / "T_A.txt"
    lines = path.read_text().splitlines()
    lines[2] = "2; 3"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TUFormatError, match=r"T_A\.txt, line 3"):
        read_tu(tmp_path, "T")
    write_tu(tmp_path, "T", [cycle(3), cycle(3)], [0, 1], extra_a_lines=["1, 5"])
    with pytest.raises(TUFormatError, match=r"T_A\.txt, line 13: edge joins two graphs"):
        read_tu(tmp_path, "T")
    write_tu(tmp_path, "T", [cycle(3), cycle(3)], [0, 1], extra_a_lines=["1, 99"])
    with pytest.raises(TUFormatError, match=r"line 13: node id outside"):
        read_tu(tmp_path, "T")
    write_tu(tmp_path, "T", [cycle(3), cycle(3)], [0, 1, 1])
    with pytest.raises(TUFormatError, match="3 lines"):
        read_tu(tmp_path, "T")


def test_gin_infograph_shapes():
    from qt_hard.graph.model import InfoGraph

    m = InfoGraph(num_features=5, hidden=32, layers=3)
    x = torch.randn(7, 5)
    ei = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 6], [1, 0, 2, 1, 4, 3, 6, 5]])
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2])
    local, glob = m(x, ei, batch, 3)
    assert local.shape == (7, 96) and glob.shape == (3, 96)
    graphs, nodes = m.encoder(x, ei, batch, 3)
    # Graph embedding = per-layer sum pooling of the node embeddings.
    torch.testing.assert_close(graphs[1], nodes[3:5].sum(0))


def graph_tree(tmp_path, **train):
    root = toy_dataset(tmp_path / "tu")
    return {
        "pipeline": "graph",
        "out_dir": str(tmp_path / "run"),
        "data": {"name": "TOY", "path": str(root)},
        "model": {"hidden": 8, "layers": 2},
        "objective": {"negatives": "hard", "options": {"beta": 1.0, "clip": "rescaled"}},
        "eval": {"folds": 3, "inner_folds": 2, "C": [0.1, 10.0]},
        "train": {
            "batch_size": 16,
            "steps": 6,
            "lr": 0.01,
            "grad_clip": None,
            "log_every": 1,
            "progress": False,
            "trackers": ["csv"],
            "num_threads": 1,
            **train,
        },
    }


def test_batches_are_a_function_of_step_and_split_over_processes(tmp_path):
    from qt_hard.pipelines import get_pipeline

    cfg = config_from_dict(graph_tree(tmp_path))
    task = get_pipeline("graph").build(cfg, tmp_path / "run").task
    assert task.batches_per_epoch() == 3  # 40 graphs in batches of 16: 16, 16, 8
    one = task.local_batch(4, 0, 1)
    parts = [task.local_batch(4, r, 2) for r in range(2)]
    assert one["num_graphs"] == sum(p["num_graphs"] for p in parts)
    torch.testing.assert_close(one["x"], torch.cat([p["x"] for p in parts]))
    torch.testing.assert_close(one["y"], torch.cat([p["y"] for p in parts]))
    assert not torch.equal(task.local_batch(0, 0, 1)["y"], task.local_batch(3, 0, 1)["y"])  # new epoch order
    torch.testing.assert_close(task.local_batch(4, 0, 1)["x"], one["x"])


def test_graph_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="objective.estimator"):
        config_from_dict({"pipeline": "graph", "objective": {"estimator": "dv"}})
    with pytest.raises(ConfigError, match="'objective.context'"):
        config_from_dict({"pipeline": "graph", "objective": {"context": 1}})


def test_tiny_end_to_end_trains_embeds_classifies(tmp_path):
    from qt_hard.training.loop import train

    tree = graph_tree(tmp_path)
    tree["eval"]["every_epochs"] = 1  # 3 steps per epoch: evaluations at steps 3 and 6 (final)
    out = train(config_from_dict(tree))
    emb = np.load(out / "final" / "embeddings.npy")
    assert emb.shape == (40, 16) and np.isfinite(emb).all()
    res = json.loads((out / "eval.json").read_text())
    assert 0.0 <= res["svm_acc"] <= 1.0 and len(res["svm_C"]) == 3
    import csv

    with open(out / "metrics.csv") as fh:
        assert all(np.isfinite(float(r["loss"])) for r in csv.DictReader(fh))
    with open(out / "eval.csv") as fh:
        assert [(int(r["step"]), float(r["epoch"])) for r in csv.DictReader(fh)] == [(3, 1.0), (6, 2.0)]


def test_interrupted_and_resumed_run_gives_the_same_embeddings(tmp_path):
    from qt_hard.training.loop import train

    tree = graph_tree(tmp_path, checkpoint_every=2)
    tree["eval"]["final"] = False
    train(config_from_dict({**tree, "out_dir": str(tmp_path / "straight")}))

    class Stop(Exception):
        pass

    def interrupt(step, loss):
        if step == 3:
            raise Stop

    cut = {**tree, "out_dir": str(tmp_path / "cut")}
    with pytest.raises(Stop):
        train(config_from_dict(cut), on_step=interrupt)
    train(config_from_dict(cut), resume=True)
    a = np.load(tmp_path / "straight" / "final" / "embeddings.npy")
    b = np.load(tmp_path / "cut" / "final" / "embeddings.npy")
    np.testing.assert_array_equal(a, b)


def test_graph_path_needs_no_text_dependencies(tmp_path):
    """The GPU machine has no ``datasets``/``nltk``: the graph pipeline must not import them (nor
    transformers) to load its config, build a run and reach the CLI."""
    import subprocess
    import sys

    root = toy_dataset(tmp_path / "tu")
    code = f"""
import sys
for name in ("datasets", "nltk", "transformers", "sentence_transformers"):
    sys.modules[name] = None  # any import of them now raises
from pathlib import Path
import qt_hard.cli
from qt_hard.training.config import load_config
from qt_hard.pipelines import get_pipeline
cfg = load_config("configs/infograph_mutag.yaml", ["data.path={root}", "data.name=TOY", "train.batch_size=16"])
run = get_pipeline("graph").build(cfg, Path("{tmp_path}"))
print(run.task.batches_per_epoch())
"""
    repo = __import__("pathlib").Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "3"  # 40 graphs in batches of 16, 16, 8
