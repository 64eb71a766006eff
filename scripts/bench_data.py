"""Data preparation and augmentation speed, each case against its reference in one run; a JSON row per
measurement (appended to ``--output`` / ``--out`` with the machine, threads, load average, command and
commit) and a one-line headline.

* ``corpus``: preparing K times the local books from an empty cache, and training's start-up from it.
  The K-times corpus is every book once plus K - 1 copies of it whose sentences are in an order of
  their own (a seeded permutation, written as paragraphs of ``PARAGRAPH`` sentences), so that the
  splitter and the tokenizer see the same vocabulary at K times the size. Per K, each part in a process
  of its own: ``prepare``, ``configs/qt_s2v.yaml``'s data built by the training code
  (``qt_hard.text.build.build_run``) with its wall and CPU seconds, peak RSS and peak anonymous memory
  (``RssAnon``: RSS less the pages of memory-mapped files), after splitting and at the end, and its
  bytes; ``startup``, a 16-d model's run from that cache: seconds from ``train`` to its first step.
* ``prepare``: the local books for a word model from an empty cache (sentence splitting, the
  ``tokenizers`` trainer's vocabulary, the token ids) against NLTK's Python tokenizer on a sample,
  in wall and CPU seconds (on a shared machine the wall clock measures the neighbours).
* ``augment``: images/s of SimCLR's batch augmentation (``qt_hard.vision.augment``, plain torch)
  against kornia's equivalent pipeline where kornia is installed, best of ``--repeats``, on the same batch.

    nice -n 5 python scripts/bench_data.py corpus --multiples 1,4,16 --work /tmp/corpus_scale --output results/corpus_scale.jsonl
    python scripts/bench_data.py prepare --num-proc 2 --nltk-sample 20000
    python scripts/bench_data.py augment --device cpu --threads 1 --batch 512 --repeats 3 --out results/bench_augment.jsonl
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
import tempfile
import threading
import time
from pathlib import Path

import _bench  # beside this file: python puts a script's own folder first on its path


PARAGRAPH = 6  # sentences per written paragraph of a shuffled copy
TINY_MODEL = ["model.embed_dim=16", "model.hidden_dim=16"]


def write_copies(books: Path, work: Path, copies: int, max_books: int | None = None) -> list[Path]:
    """``copies`` shuffled copies of every book of ``books`` under ``work/copies`` (``c<j>_<name>.txt``,
    j = 1..copies), made once; returns the original book files (sorted, the loader's order)."""
    from qt_hard.data.books import book_sentences, find_books

    files, target = find_books(books, max_books), work / "copies"
    target.mkdir(parents=True, exist_ok=True)
    for i, f in enumerate(files):
        todo = [j for j in range(1, copies + 1) if not (target / _copy_name(j, f)).is_file()]
        sents = list(book_sentences(f)) if todo else []
        for j in todo:
            order = sents[:]
            random.Random(1000003 * i + j).shuffle(order)
            paras = [" ".join(order[k : k + PARAGRAPH]) for k in range(0, len(order), PARAGRAPH)]
            tmp = target / f".{_copy_name(j, f)}.tmp"
            tmp.write_text("\n\n".join(paras) + "\n", encoding="utf-8")
            os.replace(tmp, target / _copy_name(j, f))
    return files


def _copy_name(j: int, f: Path) -> str:
    return f"c{j:02d}_{f.name.removesuffix('.xz').removesuffix('.txt')}.txt"


def corpus_folder(work: Path, files: list[Path], k: int) -> Path:
    """A folder of links: every book once as it is and its copies 1..k-1."""
    folder = work / f"books_x{k}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in files:
        (folder / f"c00_{f.name}").symlink_to(f.resolve())
        for j in range(1, k):
            (folder / _copy_name(j, f)).symlink_to((work / "copies" / _copy_name(j, f)).resolve())
    return folder


class AnonPeak:
    """The largest anonymous resident memory (``RssAnon``, MiB) of this process, sampled every 50 ms
    by a thread: the peak RSS also counts read pages of memory-mapped files (the Arrow cache, the token
    arrays), which the kernel may drop at any time. None where ``/proc`` has no such line."""

    def __init__(self):
        self.peak, self._stop = None, threading.Event()
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


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _part_config(args, extra=()):
    over = [f"data.path={args.data}", "data.max_books=null", "data.exclude_books=null", "train.num_threads=1"]
    return _bench.timed_config(args.config, Path(args.run), [*over, *args.set, *extra])


def part_prepare(args) -> dict:
    """The data built from an empty cache, in this process: seconds and peak memory after splitting
    and at the end, the corpus's sentences, tokens and bytes."""
    from qt_hard.data.books import load_books
    from qt_hard.text.build import build_run

    out, cfg, anon = Path(args.run), _part_config(args), AnonPeak()
    t0 = time.perf_counter()
    sentences = len(load_books(cfg.data.path, cache_dir=out / "cache" / "books"))  # the splitting, as build_run does it
    row = {
        "sentences": sentences,
        "split_s": round(time.perf_counter() - t0, 1),
        "split_peak_rss_mb": round(_peak_rss_mb()),
    }
    row["split_peak_anon_mb"] = None if anon.peak is None else round(anon.peak)
    run = build_run(cfg, out)
    wall, store = time.perf_counter() - t0, getattr(getattr(run.task, "batcher", None), "store", None)
    row["tokens"] = int(store.offsets[-1]) if store is not None else None
    row["token_bytes"] = int(store.flat.nbytes + store.offsets.nbytes) if store is not None else None
    row.update(prepare_s=round(wall, 1), peak_rss_mb=round(_peak_rss_mb()), peak_anon_mb=anon.stop())
    row["cache_bytes"] = sum(p.stat().st_size for p in (out / "cache").rglob("*") if p.is_file() and not p.is_symlink())
    return row


def part_startup(args) -> dict:
    """A run from the prepared cache (linked into a fresh folder): seconds to its first step (the
    second step's duration taken off the first step's end)."""
    from qt_hard.training.loop import train

    cfg = _part_config(args, [*TINY_MODEL, "train.steps=2", "train.log_every=1"])
    stamps, anon = [], AnonPeak()
    t0 = time.perf_counter()
    train(cfg, on_step=lambda step, loss: stamps.append(time.perf_counter()))
    step = stamps[1] - stamps[0]
    row = {"startup_s": round(stamps[0] - step - t0, 2), "step_s": round(step, 3), "peak_rss_mb": round(_peak_rss_mb())}
    return {**row, "peak_anon_mb": anon.stop()}


def run_part(part: str, args, data: Path, run: Path) -> dict:
    """``part`` in a child process of its own: its row, its wall and CPU seconds (with the processes
    it waited for) and the largest RSS among them (``wait4``)."""
    cmd = [sys.executable, __file__, "corpus", "--part", part, "--config", args.config, "--data", str(data)]
    cmd += ["--run", str(run), *[f"--set={s}" for s in args.set]]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=_bench.ROOT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{part} of {data} failed with status {os.waitstatus_to_exitcode(status)}")
    row = json.loads(out.strip().splitlines()[-1])
    row.update(process_wall_s=round(time.perf_counter() - t0, 1), cpu_s=round(usage.ru_utime + usage.ru_stime, 1))
    return {**row, "max_rss_any_process_mb": round(usage.ru_maxrss / 1024)}


def measure_multiple(args, work: Path, files: list[Path], k: int, stamp: dict) -> list[dict]:
    """The rows of multiple ``k``, each part from an empty cache (emitted as each part ends); the
    prepared cache removed after."""
    rows, data, run, start = [], corpus_folder(work, files, k), work / f"run_x{k}", work / f"startup_x{k}"
    for folder in (run, start):
        shutil.rmtree(folder, ignore_errors=True)  # an empty cache
    start.mkdir(parents=True)
    (start / "cache").symlink_to(run / "cache", target_is_directory=True)  # the start-up reads the prepared cache
    for part, where in (("prepare", run), ("startup", start)):
        rows.append({"multiple": k, "books": len(files) * k, "part": part, **run_part(part, args, data, where)})
        rows[-1].update(config=args.config, overrides=args.set, **stamp)
        _bench.emit(rows[-1:], args.output)
    for folder in (run, start):
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def corpus_arguments(p):
    p.add_argument("--multiples", default="1,4,16", help="comma list of K")
    p.add_argument("--config", default="configs/qt_s2v.yaml")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    p.add_argument("--books", default=None, help="the books (default $QT_HARD_DATA/books)")
    p.add_argument("--max-books", type=int, default=None, help="only the first N books (a quick look)")
    p.add_argument("--work", default=None, help="synthetic books and the prepared caches (GBs at K = 16)")
    p.add_argument("--output", default=None, help="JSONL the rows are appended to")
    for hidden in ("--part", "--data", "--run"):  # a part's own process
        p.add_argument(hidden, help=argparse.SUPPRESS)


def corpus(args):
    """Preparing a corpus K times the local books from an empty cache, and training's start-up from it."""
    if args.part:
        print(json.dumps((part_prepare if args.part == "prepare" else part_startup)(args)), flush=True)
        return
    if not args.work:
        args.parser.error("--work is required")
    from qt_hard.paths import data_path

    multiples, work = sorted({int(x) for x in args.multiples.split(",")}), Path(args.work).resolve()
    files = write_copies(
        Path(args.books) if args.books else data_path("books"), work, max(multiples) - 1, args.max_books
    )
    stamp = _bench.stamp(__file__, args.argv)
    rows = [r for k in multiples for r in measure_multiple(args, work, files, k, stamp)]
    start = {r["multiple"]: r for r in rows if r["part"] == "startup"}
    print(
        "corpus scale: "
        + "; ".join(
            f"x{r['multiple']} {r['sentences'] / 1e6:.2f}M sentences: prepare {r['prepare_s']:.0f}s "
            f"({r['prepare_s'] / r['sentences'] * 1e6:.0f} s/M), peak RSS {r['peak_rss_mb'] / 1024:.1f} GiB "
            f"(anonymous {(r['peak_anon_mb'] or 0) / 1024:.1f})"
            + (f", start-up {start[r['multiple']]['startup_s']:.1f}s" if r["multiple"] in start else "")
            for r in rows
            if r["part"] == "prepare"
        )
    )


# ---------------------------------------------------------------------------- prepare


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (the splitting workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def prepare_arguments(p):
    p.add_argument("--max-books", type=int, default=None)
    p.add_argument("--num-proc", type=int, default=2, help="processes for sentence splitting")
    p.add_argument("--nltk-sample", type=int, default=20000, help="sentences tokenized by NLTK for its rate")
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--max-vocab", type=int, default=50000)


def prepare(args):
    """Preparing the local books for a word model from an empty cache, against NLTK's tokenizer."""
    from nltk.tokenize import NLTKWordTokenizer  # the reference tokenizer (the project's dev extra)

    from qt_hard.data.books import dataset_column, load_books
    from qt_hard.data.wordlevel import WordTokenizer
    from qt_hard.paths import data_path

    marks = [(time.perf_counter(), cpu_s())]
    mark = lambda: marks.append((time.perf_counter(), cpu_s()))
    with tempfile.TemporaryDirectory(prefix="qt-prepare-") as cache:
        ds = load_books(data_path("books"), max_books=args.max_books, cache_dir=cache, num_proc=args.num_proc)
        texts = dataset_column(ds, "text")
        mark()
        tok = WordTokenizer.train(texts, min_count=args.min_count, max_size=args.max_vocab, length=len(texts))
        mark()
        n_tokens = sum(sum(map(len, tok.encode_batch(texts[s : s + 50_000]))) for s in range(0, len(texts), 50_000))
        mark()
    sample = texts[:: max(1, len(texts) // args.nltk_sample)][: args.nltk_sample]
    mark()
    nltk_tokenize = NLTKWordTokenizer().tokenize
    for s in sample:
        [t.lower() for t in nltk_tokenize(s)]
    mark()
    (split, c_split), (train, c_train), (ids, c_ids), _, (nltk, c_nltk) = [
        (b[0] - a[0], b[1] - a[1]) for a, b in zip(marks, marks[1:])
    ]
    n, total = len(texts), marks[3][0] - marks[0][0]
    row = {"books": args.max_books or "all", "sentences": n, "tokens": n_tokens, "vocab": len(tok)}
    row.update(
        split_s=round(split, 1),
        tokenizer_train_s=round(train, 1),
        encode_s=round(ids, 1),
        prepare_total_s=round(total, 1),
    )
    row.update(split_sentences_per_s=round(n / split), hf_tokenize_sentences_per_s=round(n / (train + ids)))
    row["nltk_tokenize_sentences_per_s"] = round(len(sample) / nltk)
    row["cpu_s"] = {"split": round(c_split, 1), "tokenizer_train": round(c_train, 1), "encode": round(c_ids, 1)}
    row.update(
        split_sentences_per_cpu_s=round(n / c_split), hf_tokenize_sentences_per_cpu_s=round(n / (c_train + c_ids))
    )
    row.update(
        nltk_tokenize_sentences_per_cpu_s=round(len(sample) / c_nltk), nltk_sample=len(sample), num_proc=args.num_proc
    )
    row.update(tokenizers_parallelism=os.environ.get("TOKENIZERS_PARALLELISM"), **_bench.stamp(__file__, args.argv))
    _bench.emit([row])
    print(
        f"prepared {n} sentences in {total:.0f} s from an empty cache (split {split:.0f} s, vocabulary {train:.0f} s, "
        f"ids {ids:.0f} s); tokenizing: {row['hf_tokenize_sentences_per_s']} sentences/s (trainer + ids) vs NLTK "
        f"{row['nltk_tokenize_sentences_per_s']} sentences/s; per CPU-second {row['hf_tokenize_sentences_per_cpu_s']} "
        f"vs {row['nltk_tokenize_sentences_per_cpu_s']} (1-min loadavg {row['load_average_1min']:.1f})"
    )


# ---------------------------------------------------------------------------- augment


def augment_arguments(p):
    import torch

    _bench.common(p)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")


def augment(args):
    """Images/s of SimCLR's batch augmentation, ours against kornia's."""
    import torch

    from qt_hard.vision.augment import SimCLRAugment

    torch.set_num_threads(args.threads)
    dev, gen = torch.device(args.device), torch.Generator().manual_seed(1)
    shape = (args.batch, 3, args.size, args.size)
    x = torch.randint(0, 256, shape, generator=torch.Generator().manual_seed(0), dtype=torch.uint8).to(dev)
    best = lambda fn: (fn(), min(_bench.timed(fn, 1, dev) for _ in range(args.repeats)))[1]  # after a warm-up call
    ours = SimCLRAugment(size=args.size)
    t = best(lambda: ours(x, gen, float_output=True))
    rows = [{"impl": "qt_hard (plain torch)", "images_per_s": round(args.batch / t, 1), "seconds": t}]
    try:
        import kornia
        import kornia.augmentation as K

        pipe = torch.nn.Sequential(
            K.RandomResizedCrop((args.size, args.size), scale=(0.08, 1.0)),
            K.RandomHorizontalFlip(),
            K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=0.8),
            K.RandomGrayscale(p=0.2),
        ).to(dev)
        t = best(lambda: pipe(x.float() / 255.0))
        rows.append({"impl": f"kornia {kornia.__version__}", "images_per_s": round(args.batch / t, 1), "seconds": t})
    except ImportError:
        rows.append({"impl": "kornia", "images_per_s": None, "note": "not installed"})
    common = {
        "batch": args.batch,
        "size": args.size,
        "device": str(dev),
        "threads": args.threads,
        "torch": torch.__version__,
    }
    _bench.emit([{**common, **_bench.stamp(__file__, args.argv), **r} for r in rows], args.out)
    ours_s, other = rows[0]["images_per_s"], rows[1]["images_per_s"]
    tail = f", kornia {other:.0f} images/s, ratio {ours_s / other:.2f}x" if other else " (kornia not installed)"
    print(f"augmentation on {dev}: ours {ours_s:.0f} images/s{tail}")


main = _bench.main_of(__name__)  # its cases: each NAME_arguments(parser) with its NAME(args)


if __name__ == "__main__":
    sys.exit(main())
