"""``qt-hard data ...``: fetch and build data sets on disk.

* ``qt-hard data get NAME [NAME ...] [--root DIR]`` fetches datasets from their original sources,
  verifies them and installs them under the data root (``qt_hard.data.catalog``).
* ``qt-hard data list [--root DIR]`` says which datasets are present, missing or corrupt.
* ``qt-hard data wiki --source DUMP --articles 3029 --sentences 200 --out DIR``
  writes Wiki-N in the CURL archive layout from a WikiExtractor dump.
* ``qt-hard data books [PATH] [--max-books N] [--cache-dir DIR]`` splits local books into the
  Arrow cache that training reads, and prints counts and throughput.
"""

from __future__ import annotations

import json
import sys
import time


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "data",
        help="fetch, check and build data sets (get, list, wiki, books)",
        description="qt-hard data ...: fetch and build data sets on disk.",
    )
    sub = p.add_subparsers(dest="data_command", metavar="DATA_COMMAND")

    g = sub.add_parser("get", help="fetch datasets from their original sources, verified, into the data root")
    g.add_argument("names", nargs="+", metavar="NAME", help=_names_help())
    g.add_argument("--root", help="data root (default: $QT_HARD_DATA or the user cache)")
    g.add_argument("--force", action="store_true", help="fetch again even when the data is intact")
    g.add_argument("--mirror", help="fetch https://HOST/PATH from MIRROR/HOST/PATH (default $QT_HARD_MIRROR)")
    g.add_argument(
        "--source", help="bookcorpus only: a hub id or a folder of Parquet files (default bookcorpus/bookcorpus)"
    )
    g.add_argument("--no-progress", action="store_true", help="no progress bars")
    g.set_defaults(func=_get)

    ls = sub.add_parser("list", help="which datasets are present, missing or corrupt under the data root")
    ls.add_argument("--root", help="data root (default as for get)")
    ls.set_defaults(func=_list)

    w = sub.add_parser("wiki", help="write Wiki-N (one file per article) from a WikiExtractor dump")
    w.add_argument(
        "--source",
        help="WikiExtractor dump (.txt or .txt.xz); default: the data "
        "root's wikipedia/enwiki_wikiextractor_ge200sent.txt.xz",
    )
    w.add_argument("--articles", type=int, default=3029, help="N: articles to keep (default 3029)")
    w.add_argument(
        "--sentences",
        type=int,
        default=200,
        help="M: an article needs at least M sentences; M are written (default 200)",
    )
    w.add_argument("--keep-all", action="store_true", help="write every sentence, not the first M")
    w.add_argument("--out", required=True, help="output folder")
    w.add_argument(
        "--overwrite", action="store_true", help="replace the Wiki-N in --out (only a folder data wiki wrote)"
    )
    w.add_argument("--no-progress", action="store_true", help="no progress bar")
    w.set_defaults(func=_wiki)

    b = sub.add_parser("books", help="split local books into the Arrow sentence cache")
    b.add_argument("path", nargs="?", help="book file or folder; default: the data root's books/")
    b.add_argument("--max-books", type=int, default=None)
    b.add_argument("--cache-dir", default=None)
    b.add_argument("--num-proc", type=int, default=None)
    b.set_defaults(func=_books)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1] if not args.data_command else None)


def _names_help() -> str:
    """The help of ``data get``'s NAME: every dataset of the catalog's table, by name."""
    from qt_hard.data.catalog import DATASETS

    beir = [name for name, ds in DATASETS.items() if ds.home.startswith("beir/")]
    return (
        f"{', '.join(DATASETS)}; 'all' is every one but bookcorpus (several GB); sts (STS12-16, STS Benchmark, "
        "SICK; needs sacremoses) goes into senteval/STS and senteval/SICK; "
        f"{', '.join(beir)} into beir/NAME"
    )


def _root(args):
    from pathlib import Path

    from qt_hard.errors import ArgumentError
    from qt_hard.paths import default_data_root, refuse_link_loop

    if not args.root:
        return default_data_root()
    root = Path(args.root).expanduser()
    refuse_link_loop(root, "--root")
    if root.exists() and not root.is_dir():
        raise ArgumentError(f"--root {root} is a file, not a folder")
    return root


def _get(args) -> int:
    from qt_hard.data.catalog import DATASETS, Options, get

    names = args.names
    if args.names == ["all"]:
        # sts last: it needs sacremoses (an optional dependency), and the others do not wait on it
        names = sorted((n for n in DATASETS if n != "bookcorpus"), key=lambda n: n == "sts")
    opts = Options(_root(args), progress=not args.no_progress, mirror=args.mirror, source=args.source)
    for name in names:
        st = get(name, opts, force=args.force)
        print(f"{name}: {st.state} in {opts.root / (DATASETS[name].home or name)} ({st.detail})", flush=True)
    return 0


def _list(args) -> int:
    """Exit status 1 when a dataset is corrupt (missing ones are not an error: nobody needs all)."""
    from qt_hard.data.catalog import DATASETS, status

    root = _root(args)
    print(f"data root: {root}" + ("" if root.is_dir() else " (does not exist)"))
    corrupt = []
    for name in DATASETS:
        st = status(name, root)
        print(f"{name:<11} {st.state:<8} {st.detail}")
        if st.state == "corrupt":
            corrupt.append(name)
    if corrupt:
        print(
            f"qt-hard data list: corrupt: {', '.join(corrupt)} (`qt-hard data get NAME --force` fetches it again)",
            file=sys.stderr,
        )
        return 1
    return 0


def _wiki(args) -> int:
    from qt_hard.data.wiki import build_wiki
    from qt_hard.errors import ArgumentError, UserError
    from qt_hard.paths import data_path, guard_output

    source = (
        str(data_path("wikipedia", "enwiki_wikiextractor_ge200sent.txt.xz")) if args.source is None else args.source
    )
    guard_output(args.out, "--out", inputs={"the source dump": source}, folder=True)
    try:
        report = build_wiki(
            source,
            args.out,
            articles=args.articles,
            sentences=args.sentences,
            keep_all=args.keep_all,
            overwrite=args.overwrite,
            progress=not args.no_progress,
        )
    except UserError:
        raise
    except (FileNotFoundError, FileExistsError, ValueError) as err:
        raise ArgumentError(str(err)) from None
    print(report)
    return 0


def _books(args) -> int:
    from qt_hard.data.books import books_metadata, load_books
    from qt_hard.errors import ArgumentError, UserError
    from qt_hard.paths import data_path, guard_output

    path = str(data_path("books")) if args.path is None else args.path
    if args.cache_dir:
        # The cache folder only gains a books-<key>/ entry: it may hold the books, not lie inside them.
        guard_output(args.cache_dir, "--cache-dir", inputs={"the books": path}, folder=True, may_hold_inputs=True)
    t0 = time.perf_counter()
    try:
        ds = load_books(path, max_books=args.max_books, cache_dir=args.cache_dir, num_proc=args.num_proc, progress=True)
    except UserError:
        raise
    except (FileNotFoundError, ValueError) as err:
        raise ArgumentError(str(err)) from None
    dt = time.perf_counter() - t0
    meta = books_metadata(ds)
    print(
        json.dumps(
            {
                "books": len(meta["files"]),
                "skipped": meta["skipped"],
                "sentences": len(ds),
                "seconds": round(dt, 2),
                "sentences_per_s": round(len(ds) / dt),
                "cache": ds.cache_files[0]["filename"].rsplit("/", 1)[0],
            }
        )
    )
    return 0
