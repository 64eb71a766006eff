"""Time preparing the local books for a word model from an empty cache: sentence splitting (Arrow
cache), the word-level tokenizer's vocabulary (``tokenizers``' trainer) and the token ids, against
NLTK's Python tokenizer on a sample (the tokenizer used before). Prints JSON, then a headline.

    python scripts/bench_prepare.py [--max-books N] [--num-proc 2] [--nltk-sample 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time

from nltk.tokenize import NLTKWordTokenizer  # the reference tokenizer (the project's dev extra)

from qt_hard.data.books import dataset_column, load_books
from qt_hard.data.wordlevel import WordTokenizer
from qt_hard.paths import data_path


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (the splitting workers): on a shared,
    oversubscribed machine the wall clock measures the neighbours, CPU time the work."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-books", type=int, default=None)
    ap.add_argument("--num-proc", type=int, default=2, help="processes for sentence splitting")
    ap.add_argument("--nltk-sample", type=int, default=20000, help="sentences tokenized by NLTK for its rate")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--max-vocab", type=int, default=50000)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="qt-prepare-") as cache:
        t0, c0 = time.perf_counter(), cpu_s()
        ds = load_books(data_path("books"), max_books=args.max_books, cache_dir=cache, num_proc=args.num_proc)
        texts = dataset_column(ds, "text")
        t_split, c_split = time.perf_counter() - t0, cpu_s() - c0
        t1, c1 = time.perf_counter(), cpu_s()
        tok = WordTokenizer.train(texts, min_count=args.min_count, max_size=args.max_vocab, length=len(texts))
        t_train, c_train = time.perf_counter() - t1, cpu_s() - c1
        t2, c2 = time.perf_counter(), cpu_s()
        n_tokens = 0
        for start in range(0, len(texts), 50_000):
            n_tokens += sum(len(x) for x in tok.encode_batch(texts[start : start + 50_000]))
        t_encode, c_encode = time.perf_counter() - t2, cpu_s() - c2
    total = time.perf_counter() - t0
    sample = texts[:: max(1, len(texts) // args.nltk_sample)][: args.nltk_sample]
    t3, c3 = time.perf_counter(), cpu_s()
    nltk_tokenize = NLTKWordTokenizer().tokenize
    for s in sample:
        [t.lower() for t in nltk_tokenize(s)]
    t_nltk, c_nltk = time.perf_counter() - t3, cpu_s() - c3
    n = len(texts)
    out = {
        "books": args.max_books or "all",
        "sentences": n,
        "tokens": n_tokens,
        "vocab": len(tok),
        "split_s": round(t_split, 1),
        "tokenizer_train_s": round(t_train, 1),
        "encode_s": round(t_encode, 1),
        "prepare_total_s": round(total, 1),
        "split_sentences_per_s": round(n / t_split),
        "hf_tokenize_sentences_per_s": round(n / (t_train + t_encode)),
        "nltk_tokenize_sentences_per_s": round(len(sample) / t_nltk),
        "cpu_s": {"split": round(c_split, 1), "tokenizer_train": round(c_train, 1), "encode": round(c_encode, 1)},
        "split_sentences_per_cpu_s": round(n / c_split),
        "hf_tokenize_sentences_per_cpu_s": round(n / (c_train + c_encode)),
        "nltk_tokenize_sentences_per_cpu_s": round(len(sample) / c_nltk),
        "load_average_1min": os.getloadavg()[0],
        "nltk_sample": len(sample),
        "num_proc": args.num_proc,
        "cpus": os.cpu_count(),
        "tokenizers_parallelism": os.environ.get("TOKENIZERS_PARALLELISM"),
    }
    print(json.dumps(out, indent=1))
    print(
        f"prepared {n} sentences in {total:.0f} s from an empty cache (split {t_split:.0f} s, "
        f"vocabulary {t_train:.0f} s, ids {t_encode:.0f} s); tokenizing: {out['hf_tokenize_sentences_per_s']} "
        f"sentences/s (trainer + ids) vs NLTK {out['nltk_tokenize_sentences_per_s']} sentences/s; per CPU-second "
        f"{out['hf_tokenize_sentences_per_cpu_s']} vs {out['nltk_tokenize_sentences_per_cpu_s']} "
        f"(1-min loadavg {out['load_average_1min']:.1f})"
    )


if __name__ == "__main__":
    main()
