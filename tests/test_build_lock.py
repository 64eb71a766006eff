"""Caches that several processes want at once (the ranks of one launch, runs sharing a cache): one
process builds under ``qt_hard.files.build_lock``, the others wait and read the finished build;
none reads or replaces a half-built one. And a launch whose processes accelerate does not join is
refused instead of training separate copies into one folder."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import queue
import threading
import time

import numpy as np
import pytest

from qt_hard.files import PARTIAL, atomic_folder, build_lock

SENTENCE_WORDS = "the a cat dog sat ran on under mat log red blue".split()


def _write_books(folder, n_books=3, n_sentences=120):
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    for b in range(n_books):
        lines = [" ".join(rng.choice(SENTENCE_WORDS, size=6)).capitalize() + "." for _ in range(n_sentences)]
        (folder / f"book{b}.txt").write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _config(books, out):
    from qt_hard.training.config import config_from_dict

    return config_from_dict(
        {
            "out_dir": str(out),
            "model": {"kind": "qt", "encoder": "bow", "embed_dim": 8, "max_len": 12},
            "data": {"kind": "books", "path": str(books), "min_count": 1},
            "objective": {"negatives": "uniform", "temperature": 1.0, "normalize": False, "context": 1},
            "train": {"batch_size": 8, "steps": 1, "progress": False, "num_threads": 1},
        }
    )


def _prepare(books, out, barrier, results) -> None:
    """One process: wait for the other, then prepare the run's data (book cache, vocabulary, token
    ids) in the shared ``out/cache`` and report a digest of what it read."""
    import torch

    import qt_hard.data.books as books_module
    from qt_hard.data.wordlevel import WordTokenizer
    from qt_hard.text.build import build_run

    torch.set_num_threads(1)
    split, fit = books_module.book_rows, WordTokenizer.train.__func__

    def slow_split(*args, **kwargs):  # a build that takes a while: the other process arrives mid-build
        results.put("split books")
        time.sleep(1.0)
        yield from split(*args, **kwargs)

    def counted_fit(cls, *args, **kwargs):
        results.put("fitted vocabulary")
        return fit(cls, *args, **kwargs)

    books_module.book_rows = slow_split
    WordTokenizer.train = classmethod(counted_fit)
    barrier.wait(timeout=60)
    run = build_run(_config(books, out), out)
    store = run.task.batcher.store
    digest = hashlib.sha1(np.asarray(store.flat).tobytes() + np.asarray(store.offsets).tobytes()).hexdigest()
    results.put((len(store.offsets) - 1, digest))


def test_a_second_builder_waits_and_finds_the_build(tmp_path):
    target = tmp_path / "cache" / "tokens_x"
    entered, times = threading.Event(), {}

    def first():
        with build_lock(target):
            entered.set()
            time.sleep(0.3)
            with atomic_folder(target, replace=False) as tmp:
                (tmp / "ids").write_text("built once")
            times["first_done"] = time.monotonic()

    def second():
        entered.wait(5)
        with build_lock(target):
            times["second_in"] = time.monotonic()
            times["found"] = target.is_dir() and (target / "ids").read_text()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert times["second_in"] >= times["first_done"]
    assert times["found"] == "built once"


def test_two_processes_prepare_one_cache_at_once(tmp_path):
    books = _write_books(tmp_path / "books")
    out = tmp_path / "run"
    import qt_hard.text.build  # noqa: F401  imported once here: forked children start at once, and together

    # fork: the children skip the imports (seconds each on a busy machine), so they build at the same
    # moment; each runs one thread.
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_prepare, args=(books, out, barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    got = []  # read before joining: a child ends only once its queue is flushed
    while sum(isinstance(g, tuple) for g in got) < 2 and all(p.is_alive() or p.exitcode == 0 for p in procs):
        try:
            got.append(results.get(timeout=1))
        except queue.Empty:
            pass
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    reads = [g for g in got if isinstance(g, tuple)]
    assert len(reads) == 2 and reads[0] == reads[1] and reads[0][0] > 0  # the same sentences, the same ids
    # One process built each cache; the other waited and read it.
    assert sorted(g for g in got if isinstance(g, str)) == ["fitted vocabulary", "split books"]
    cache = out / "cache"
    assert len(list((cache / "books").glob("books-*"))) == 1
    assert len([p for p in cache.iterdir() if p.name.startswith("tokens_")]) == 1
    leftovers = [p.name for p in cache.rglob("*") if PARTIAL in p.name or p.name.startswith(".build-")]
    assert leftovers == []


def test_processes_that_accelerate_does_not_join_are_refused(monkeypatch):
    from qt_hard.training.config import ConfigError
    from qt_hard.training.loop import check_launch

    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="ACCELERATE_USE_CPU=true"):
        check_launch(1)
    check_launch(2)
    monkeypatch.setenv("WORLD_SIZE", "1")
    check_launch(1)


def test_a_failed_build_leaves_nothing_behind(tmp_path):
    """A refused build (a bad book) under a new run folder leaves neither the lock nor the folders
    made for it; a lock that was there before stays."""
    import pytest

    from qt_hard.files import build_lock

    out = tmp_path / "run"
    with pytest.raises(ValueError, match="bad book"):
        with build_lock(out / "cache" / "books-abc"):
            raise ValueError("bad book")
    assert list(tmp_path.iterdir()) == []
    (out / "cache").mkdir(parents=True)
    (out / "cache" / ".books-abc.lock").touch()
    with pytest.raises(ValueError):
        with build_lock(out / "cache" / "books-abc"):
            raise ValueError("bad book")
    assert (out / "cache" / ".books-abc.lock").is_file()
    with build_lock(out / "cache" / "books-def"):
        pass
    assert (out / "cache" / ".books-def.lock").is_file()  # a finished build keeps its lock
