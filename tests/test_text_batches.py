"""Batches gathered where the model runs (``qt_hard.text.batches``): the gathered batches equal the
per-sentence collation they replace, prefetched host batches equal resident ones, shuffled labels
are a pure function of (seed, step), and W processes together see one process's batch."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from qt_hard.encoders.text import HFFeaturizer, WordFeaturizer
from qt_hard.text.batches import ContextTask, PairTask, TokenBatcher, TokenStore


def _store(n=200, seed=0, longest=20):
    rng = np.random.default_rng(seed)
    lists = [rng.integers(1, 50, size=int(rng.integers(0, longest))).tolist() for _ in range(n)]
    return lists, TokenStore.from_lists(lists)


def _equal(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            _equal(a[key], b[key])
            continue
        assert a[key].dtype == b[key].dtype, key
        assert torch.equal(a[key].cpu(), b[key].cpu()), key


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("max_len", [None, 7])
def test_word_batches_equal_the_featurizer_collate(max_len, padded):
    lists, store = _store()
    batcher = TokenBatcher(store, max_len=max_len, padded=padded)
    feat = WordFeaturizer.__new__(WordFeaturizer)
    feat.max_len = max_len or 10_000
    rng = np.random.default_rng(1)
    for _ in range(5):
        rows = rng.choice(len(lists), 16, replace=False)
        _equal(batcher.batch(rows), feat.collate([lists[i] for i in rows]))
    # Rows of empty sentences only: one column of padding, as collate gives.
    empty = [i for i, x in enumerate(lists) if not x][:3]
    _equal(batcher.batch(np.array(empty)), feat.collate([lists[i] for i in empty]))


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("side", ["right", "left"])
def test_transformer_batches_equal_the_tokenizer_padding(side, padded):
    lists, store = _store(seed=3)
    batcher = TokenBatcher(store, pad_id=99, left=side == "left", attention_mask=True, padded=padded)
    feat = HFFeaturizer(SimpleNamespace(pad_token_id=99, padding_side=side))
    rows = np.random.default_rng(2).choice(len(lists), 32, replace=False)
    _equal(batcher.batch(rows), feat.collate([lists[i] for i in rows]))


def _pair_task(shuffle=False, resident=True, device="cpu"):
    _, store = _store(n=400, seed=5)
    labels = np.arange(400) % 10
    members = [np.flatnonzero(labels == c) for c in range(10)]

    def pairs(epoch):
        rng = np.random.default_rng([epoch, 9])
        pairs = np.concatenate([rng.permutation(m)[:20].reshape(-1, 2) for m in members])
        return pairs[rng.permutation(len(pairs))]  # mixed across classes, as batches take them

    task = PairTask(TokenBatcher(store, max_len=12), labels, pairs, 16, seed=4, shuffle_labels=shuffle)
    task.to_device(device, resident=resident)
    return task, labels


def test_the_layout_follows_the_size(monkeypatch):
    from qt_hard.text import batches

    _, store = _store()
    assert TokenBatcher(store).padded
    monkeypatch.setattr(batches, "PADDED_MAX_BYTES", 100)
    small = TokenBatcher(store)
    assert not small.padded and small.nbytes < TokenBatcher(store, padded=True).nbytes


def test_prefetched_host_batches_equal_resident_batches_through_a_jump():
    resident, _ = _pair_task(resident=True)
    host, _ = _pair_task(resident=False)
    assert host._host_batch is not None and resident._host_batch is None
    for step in [0, 1, 2, 9, 3, 4, 30, 31]:  # a jump back and forth, as a resume makes
        _equal(host.local_batch(step, 0, 1), resident.local_batch(step, 0, 1))


def test_shuffled_labels_permute_each_batch_as_a_function_of_the_step():
    plain, labels = _pair_task()
    shuffled, _ = _pair_task(shuffle=True)
    differs = 0
    for step in range(6):
        a, b = plain.local_batch(step, 0, 1), shuffled.local_batch(step, 0, 1)
        _equal({"a": a["a"], "b": a["b"]}, {"a": b["a"], "b": b["b"]})  # the same sentences
        assert torch.equal(a["labels"].sort().values, b["labels"].sort().values)  # the same multiset
        assert torch.equal(a["labels"], torch.as_tensor(labels[plain.global_rows(step)[:, 0]]))
        differs += not torch.equal(a["labels"], b["labels"])
        _equal(b, _pair_task(shuffle=True)[0].local_batch(step, 0, 1))  # a fresh task: the same draw
    assert differs >= 5


@pytest.mark.parametrize("shuffle", [False, True])
def test_processes_together_see_one_process_batch(shuffle):
    task, _ = _pair_task(shuffle=shuffle)
    one = task.local_batch(7, 0, 1)
    parts = [task.local_batch(7, r, 2) for r in range(2)]
    assert torch.equal(torch.cat([p["labels"] for p in parts]), one["labels"])
    for key in ("a", "b"):
        width = one[key]["ids"].shape[1]
        ids = [torch.nn.functional.pad(p[key]["ids"], (0, width - p[key]["ids"].shape[1])) for p in parts]
        assert torch.equal(torch.cat(ids), one[key]["ids"])


def test_context_batches_carry_the_document_ids_of_their_rows():
    _, store = _store(n=300, seed=8)
    doc_ids = np.repeat(np.arange(30), 10)
    task = ContextTask(TokenBatcher(store, max_len=9), doc_ids, 32, seed=2)
    task.to_device("cpu")
    for step in (0, 5, task.batches_per_epoch() + 1):
        rows = task.global_rows(step)
        batch = task.local_batch(step, 1, 2)
        half = rows[16:]
        assert torch.equal(batch["doc_ids"], torch.as_tensor(doc_ids[half]))
        assert torch.equal(batch["x"]["ids"], task.batcher.batch(half)["ids"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("resident", [True, False])
def test_cuda_batches_equal_cpu_batches(resident):
    cpu, _ = _pair_task(shuffle=True)
    gpu, _ = _pair_task(shuffle=True, resident=resident, device="cuda")
    for step in range(4):
        batch = gpu.local_batch(step, 0, 1)
        if resident:
            assert batch["a"]["ids"].is_cuda and batch["labels"].is_cuda
        else:
            assert batch["a"]["ids"].is_pinned()
        _equal(batch, cpu.local_batch(step, 0, 1))


def test_a_store_written_chunk_by_chunk_is_the_store_of_the_lists(tmp_path):
    rng = np.random.default_rng(3)
    lists = [rng.integers(0, 500, size=rng.integers(0, 9)).tolist() for _ in range(1000)]
    chunks = [lists[i : i + 137] for i in range(0, len(lists), 137)]
    written = TokenStore.write(tmp_path / "w", iter(chunks))
    ref = TokenStore.from_lists(lists)
    assert np.array_equal(written.flat, ref.flat) and np.array_equal(written.offsets, ref.offsets)
    assert isinstance(written.flat, np.memmap) and not (tmp_path / "w_flat.bin").exists()
    empty = TokenStore.write(tmp_path / "e", iter([]))
    assert len(empty) == 0 and empty.flat.size == 0


def test_a_run_from_the_prepared_cache_reads_no_sentence(tmp_path, monkeypatch):
    """Preparing reads the sentences a chunk at a time (never the whole column at once); a second
    build from the prepared cache reads none of them (its start-up does not grow with the corpus)."""
    from test_training import qt_config

    import qt_hard.data.books as books
    from qt_hard.text import build
    from qt_hard.training.config import config_from_dict

    cfg = config_from_dict(qt_config(tmp_path, steps=2))
    whole = books.dataset_column

    def no_text_column(ds, name, numpy=False):
        assert name != "text", "the whole text column was read"
        return whole(ds, name, numpy)

    monkeypatch.setattr(build, "dataset_column", no_text_column)
    sizes = []
    monkeypatch.setattr(
        build, "text_chunks", lambda ds: (sizes.append(len(c)) or c for c in books.text_chunks(ds, 100))
    )
    first = build.build_run(cfg, tmp_path / "run")
    assert sizes and max(sizes) == 100 and sum(sizes) == 2 * first.task.n  # fitted, then encoded
    sizes.clear()
    second = build.build_run(cfg, tmp_path / "run")
    assert sizes == [] and np.array_equal(second.task.batcher.store.flat, first.task.batcher.store.flat)
