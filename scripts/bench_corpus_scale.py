"""Preparing a corpus K times the local books from an empty cache, and training's start-up from it.

BookCorpus has 74 M sentences, the local books about 1.5 M. This measures how preparation grows with
the corpus on the machine at hand, on synthetic multiples of the local books: the K-times corpus is
every book once as it is plus K - 1 copies of it whose sentences are in an order of their own (each
copy a seeded permutation of the book's sentences, written as paragraphs of ``PARAGRAPH``
sentences), so that the splitter and the tokenizer see the same vocabulary at K times the size.

For each multiple K (``--multiples``), in processes of their own (one at a time):

* ``prepare``: ``configs/qt_s2v.yaml``'s data (``--config``; cased, 50,001-row vocabulary, 30 tokens;
  ``data.path`` the K-times folder, no book held out) built from an empty cache by the training code
  (:func:`qt_hard.text.build.build_run`): the books split into sentences (a process pool, the Arrow
  cache), the vocabulary fitted and the token ids written. Wall seconds, CPU seconds (the process and
  its splitting workers), peak RSS of the preparing process (the workers' are reported apart) and its
  peak anonymous memory (``AnonPeak``: RSS less the pages of memory-mapped files), the seconds and
  peaks after splitting, the token arrays' bytes and the cache's bytes on disk.
* ``startup``: a training run from that prepared cache (the cache linked into a fresh run folder), its
  model shrunk to 16-d words and states so that the data's share is what is timed: seconds from the
  call of ``train`` to the start of its first step (the second step's duration taken off the first
  step's end), and the process's peak RSS and anonymous memory.

A JSON row per (K, part) is printed (with the machine, torch's threads, the load average, the command
and the commit: ``measurement_stamp``) and appended to ``--output``; the last line is a headline of
seconds and peak RSS per million sentences. The synthetic books are written once under ``--work`` (the
copies of the largest K; a smaller K links the first of them), before any clock starts.

    nice -n 5 python scripts/bench_corpus_scale.py --multiples 1,4,16 --work /tmp/corpus_scale \\
        --output results/corpus_scale.jsonl
    python scripts/bench_corpus_scale.py --multiples 1,2 --max-books 12 --work /tmp/cs   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402

ROOT = _bench.ROOT
PARAGRAPH = 6  # sentences per written paragraph of a shuffled copy
TINY_MODEL = ["model.embed_dim=16", "model.hidden_dim=16"]


# ---------------------------------------------------------------------------- the synthetic corpus


def write_copies(books: Path, work: Path, copies: int, max_books: int | None = None) -> list[Path]:
    """``copies`` shuffled copies of every book of ``books`` under ``work/copies`` (``c<j>_<name>.txt``,
    j = 1..copies), made once; returns the original book files (sorted, the loader's order)."""
    from qt_hard.data.books import book_sentences, find_books

    files = find_books(books, max_books)
    target = work / "copies"
    target.mkdir(parents=True, exist_ok=True)
    for i, f in enumerate(files):
        todo = [j for j in range(1, copies + 1) if not (target / _copy_name(j, f)).is_file()]
        if not todo:
            continue
        sents = list(book_sentences(f))
        for j in todo:
            order = sents[:]
            random.Random(1000003 * i + j).shuffle(order)
            paras = [" ".join(order[k : k + PARAGRAPH]) for k in range(0, len(order), PARAGRAPH)]
            tmp = target / f".{_copy_name(j, f)}.tmp"
            tmp.write_text("\n\n".join(paras) + "\n", encoding="utf-8")
            os.replace(tmp, target / _copy_name(j, f))
    return files


def _copy_name(j: int, f: Path) -> str:
    name = f.name.removesuffix(".xz").removesuffix(".txt")
    return f"c{j:02d}_{name}.txt"


def corpus_folder(work: Path, files: list[Path], k: int) -> Path:
    """A folder of links: every book once as it is and its copies 1..k-1."""
    folder = work / f"books_x{k}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for f in files:
        (folder / f"c00_{f.name}").symlink_to(f.resolve())
        for j in range(1, k):
            (folder / _copy_name(j, f)).symlink_to((work / "copies" / _copy_name(j, f)).resolve())
    return folder


# ---------------------------------------------------------------------------- the measured parts


def _config(args, data: Path, out: Path, extra=()):
    from qt_hard.training.config import load_config

    over = [f"data.path={data}", "data.max_books=null", "data.exclude_books=null", f"out_dir={out}"]
    over += ["train.progress=false", "train.trackers=[csv]", "train.checkpoint_every=0", "train.num_threads=1"]
    return load_config(args.config, [*over, *args.set, *extra])


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


class AnonPeak:
    """The largest anonymous resident memory (``RssAnon`` of ``/proc/self/status``, MiB) of this
    process, sampled every 50 ms by a thread: the peak RSS also counts the pages of memory-mapped
    files that were read (the Arrow cache, the token arrays), which the kernel may drop at any time;
    this is the memory the process itself holds. None where ``/proc`` has no such line."""

    def __init__(self):
        import threading

        self.peak = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self):
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("RssAnon:"):
                        mib = int(line.split()[1]) / 1024
                        self.peak = mib if self.peak is None else max(self.peak, mib)
        except OSError:
            pass

    def _run(self):
        while not self._stop.wait(0.05):
            self._sample()

    def stop(self) -> float | None:
        self._stop.set()
        self._thread.join()
        self._sample()
        return None if self.peak is None else round(self.peak)


def part_prepare(args) -> dict:
    """The data built from an empty cache, in this process: seconds and peak RSS after splitting and
    at the end, the corpus's sentences, tokens and bytes."""
    from qt_hard.data.books import load_books
    from qt_hard.text.build import build_run

    out = Path(args.run)
    cfg = _config(args, Path(args.data), out)
    anon = AnonPeak()
    t0 = time.perf_counter()
    ds = load_books(cfg.data.path, cache_dir=out / "cache" / "books")  # the splitting, as build_run calls it
    split_s, split_rss, split_anon = time.perf_counter() - t0, _peak_rss_mb(), anon.peak
    sentences = len(ds)
    del ds
    run = build_run(cfg, out)
    wall = time.perf_counter() - t0
    store = run.task.batcher.store if hasattr(run.task, "batcher") else None
    token_bytes = int(store.flat.nbytes + store.offsets.nbytes) if store is not None else None
    return {
        "sentences": sentences,
        "tokens": int(store.offsets[-1]) if store is not None else None,
        "token_bytes": token_bytes,
        "split_s": round(split_s, 1),
        "split_peak_rss_mb": round(split_rss),
        "split_peak_anon_mb": None if split_anon is None else round(split_anon),
        "prepare_s": round(wall, 1),
        "peak_rss_mb": round(_peak_rss_mb()),
        "peak_anon_mb": anon.stop(),
        "cache_bytes": _du(out / "cache"),
    }


def part_startup(args) -> dict:
    """A run from the prepared cache (linked into a fresh folder): seconds to its first step."""
    from qt_hard.training.loop import train

    out = Path(args.run)
    cfg = _config(args, Path(args.data), out, [*TINY_MODEL, "train.steps=2", "train.log_every=1"])
    stamps: list[float] = []
    anon = AnonPeak()
    t0 = time.perf_counter()
    train(cfg, on_step=lambda step, loss: stamps.append(time.perf_counter()))
    step = stamps[1] - stamps[0]
    return {
        "startup_s": round(stamps[0] - step - t0, 2),
        "step_s": round(step, 3),
        "peak_rss_mb": round(_peak_rss_mb()),
        "peak_anon_mb": anon.stop(),
    }


def _du(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def run_part(part: str, args, data: Path, run: Path) -> dict:
    """``part`` in a child process of its own: its row, its wall and CPU seconds (with the
    processes it waited for) and the largest RSS among them (``wait4``)."""
    cmd = [sys.executable, __file__, f"_{part}", "--config", args.config, "--data", str(data), "--run", str(run)]
    cmd += [f"--set={s}" for s in args.set]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{part} of {data} failed with status {proc.returncode}")
    row = json.loads(out.strip().splitlines()[-1])
    row.update(
        process_wall_s=round(wall, 1),
        cpu_s=round(usage.ru_utime + usage.ru_stime, 1),
        max_rss_any_process_mb=round(usage.ru_maxrss / 1024),
    )
    return row


# ---------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--multiples", default="1,4,16", help="comma list of K")
    ap.add_argument("--config", default="configs/qt_s2v.yaml")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    ap.add_argument("--books", default=None, help="the books (default $QT_HARD_DATA/books)")
    ap.add_argument("--max-books", type=int, default=None, help="only the first N books (a quick look)")
    ap.add_argument("--work", default=None, help="synthetic books and the prepared caches (GBs at K = 16)")
    ap.add_argument("--output", default=None, help="JSONL the rows are appended to")
    ap.add_argument("--keep", action="store_true", help="keep each K's prepared cache")
    ap.add_argument("--parts", default="prepare,startup")
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("part", nargs="?", help=argparse.SUPPRESS)
    return ap


def measure_multiple(args, work: Path, files: list[Path], k: int, parts: list[str], stamp: dict) -> list[dict]:
    """The rows of multiple ``k``, each part in a process of its own from an empty cache (printed and
    appended to ``--output`` as each part ends); the prepared cache removed unless ``--keep``."""
    rows = []
    data = corpus_folder(work, files, k)
    run = work / f"run_x{k}"
    shutil.rmtree(run, ignore_errors=True)  # an empty cache
    for part in parts:
        where = run if part == "prepare" else work / f"startup_x{k}"
        if part == "startup":
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir(parents=True)
            (where / "cache").symlink_to(run / "cache", target_is_directory=True)
        row = {"multiple": k, "books": len(files) * k, "part": part, **run_part(part, args, data, where)}
        row.update(config=args.config, overrides=args.set, **stamp)
        rows.append(row)
        _bench.emit([row], args.output)
    if not args.keep:
        shutil.rmtree(run, ignore_errors=True)
        shutil.rmtree(work / f"startup_x{k}", ignore_errors=True)
    return rows


def headline(rows: list[dict]) -> str:
    """Seconds and peak RSS per million sentences of each multiple (and its start-up)."""
    prep = [r for r in rows if r["part"] == "prepare"]
    start = {r["multiple"]: r for r in rows if r["part"] == "startup"}
    return "corpus scale: " + "; ".join(
        f"x{r['multiple']} {r['sentences'] / 1e6:.2f}M sentences: prepare {r['prepare_s']:.0f}s "
        f"({r['prepare_s'] / r['sentences'] * 1e6:.0f} s/M), peak RSS {r['peak_rss_mb'] / 1024:.1f} GiB "
        f"(anonymous {r['peak_anon_mb'] / 1024:.1f})"
        + (f", start-up {start[r['multiple']]['startup_s']:.1f}s" if r["multiple"] in start else "")
        for r in prep
    )


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.part in ("_prepare", "_startup"):
        row = (part_prepare if args.part == "_prepare" else part_startup)(args)
        print(json.dumps(row), flush=True)
        return 0
    if not args.work:
        ap.error("--work is required")
    from qt_hard.paths import data_path

    multiples = sorted({int(x) for x in args.multiples.split(",")})
    parts = [p for p in args.parts.split(",") if p]
    work = Path(args.work).resolve()
    books = Path(args.books) if args.books else data_path("books")
    files = write_copies(books, work, max(multiples) - 1, args.max_books)
    stamp = _bench.stamp(__file__, argv)
    rows = []
    for k in multiples:
        rows += measure_multiple(args, work, files, k, parts, stamp)
    print(headline(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
