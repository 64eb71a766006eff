"""From a config to (encoder module, batch task): data loading, vocabulary, token cache.

Token ids are cached under ``OUT/cache/`` (vocabulary + flat id arrays), keyed by a hash of the
data settings, so a resumed or repeated run does not re-tokenize.

Word models (``bow``, ``qt``) get word-token ids from a Hugging Face word-level tokenizer
(:mod:`qt_hard.data.wordlevel`) whose vocabulary is fitted on the training text; a
transformer (``hf``) gets its own tokenizer's ids (special tokens included, cut at
``model.max_len``) and batches ``{input_ids, attention_mask}``. Both read the same sentences and
build the same tasks (``ContextTask`` for ordered books, ``PairTask`` for Wiki-N / synthetic), so
every objective applies to every encoder.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import torch

from qt_hard.encoders.text import SentenceEncoder, build_module, make_encoder
from qt_hard.data.books import dataset_column, text_chunks
from qt_hard.files import atomic_folder, build_lock, write_text
from qt_hard.training.config import Config
from qt_hard.text.batches import ContextTask, PairTask, TokenBatcher, TokenStore

log = logging.getLogger(__name__)


@dataclass
class Split:
    """Labelled sentences of a pair-data run, for its readouts: training and held-out batches."""

    train: TokenBatcher
    train_labels: np.ndarray
    test: TokenBatcher
    test_labels: np.ndarray
    num_classes: int


@dataclass
class Run:
    module: torch.nn.Module
    task: object
    pair_data: bool
    make_encoder: Callable[[torch.nn.Module], SentenceEncoder]
    split: Split | None = None


def _key(obj) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _vocab_and_store(cfg: Config, cache: Path, chunks: Callable[[], Iterable[list[str]]], n: int):
    """(WordTokenizer, TokenStore) of ``n`` sentences that ``chunks()`` yields a list at a time: the
    word-level tokenizer is fitted on them by ``tokenizers``' own trainer (``data.min_count``,
    ``data.max_vocab``) and encodes them in Rust (:mod:`qt_hard.data.wordlevel`); both are cached in
    ``cache``. The sentences are read twice, a chunk at a time, and the ids written as they come, so
    preparing holds one chunk of sentences and ids, never the corpus's; a cached store is loaded
    without reading a sentence (its flat ids memory-mapped)."""
    from qt_hard.data.wordlevel import WordTokenizer

    if not cache.is_dir():
        # One process builds, the others (ranks of one launch, runs sharing the cache) wait and read it.
        with build_lock(cache, "token cache"):
            if not cache.is_dir():
                tok = WordTokenizer.train(
                    (t for chunk in chunks() for t in chunk),
                    min_count=cfg.data.min_count,
                    max_size=cfg.data.max_vocab,
                    lower=cfg.model.lower,
                    length=n,
                )
                max_len = cfg.model.max_len
                # Whole or not at all: a kill or a full disk mid-write leaves no cache that looks complete;
                # the ids are written a chunk at a time as they come.
                with atomic_folder(cache, "token cache", replace=False) as tmp:
                    TokenStore.write(tmp / "tokens", ([x[:max_len] for x in tok.encode_batch(c)] for c in chunks()))
                    tok.save(tmp / "tokenizer.json")
    return _read_token_cache(cache, n)


def _read_token_cache(cache: Path, n_texts: int, word: bool = True):
    """(WordTokenizer, or None unless ``word``; TokenStore) of a token cache folder, checked: a damaged
    one (a file missing or cut short, another corpus's sentence count) is refused in one line naming it."""
    from qt_hard.data.wordlevel import WordTokenizer
    from qt_hard.errors import DataCorruptError, UserError

    try:
        tok = WordTokenizer.load(cache / "tokenizer.json") if word else None
        store = TokenStore.load(cache / "tokens")
        ok = len(store.offsets) == n_texts + 1 and int(store.offsets[-1]) == len(store.flat)
        reason = f"{len(store.offsets) - 1} sentences, expected {n_texts}"
    except (UserError, OSError, ValueError, EOFError) as err:
        ok, reason = False, " ".join(str(err).split())[:120] or type(err).__name__
    if not ok:
        raise DataCorruptError(f"token cache {cache} is damaged ({reason}); delete it and it is made again")
    return tok, store


def _text_key(texts) -> str:
    """A hash of the sentences themselves (cache key of transformer token ids)."""
    h = hashlib.sha1()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()[:12]


def _hf_parts(cfg: Config, cache_root: Path, texts):
    """(module, TokenBatcher, make_encoder) for a transformer over ``texts``.

    The token ids are the model's own tokenizer's (``HFFeaturizer.ids_many``), cached under
    ``cache_root/hf_tokens_<key>`` (key: model path, max_len, the sentences).
    """
    from qt_hard.encoders.transformer import resolve_model_path

    encoder = make_encoder(cfg.model)  # loads AutoModel + AutoTokenizer, offline
    feat = encoder.featurizer
    key = _key([resolve_model_path(cfg.model.hf_path), cfg.model.max_len, len(texts), _text_key(texts)])
    cache = cache_root / f"hf_tokens_{key}"
    if not cache.is_dir():
        with build_lock(cache, "token cache"):  # one process builds, the others wait and read it
            if not cache.is_dir():
                # Whole or not at all, the ids written a chunk at a time (bounded memory for a large corpus).
                with atomic_folder(cache, "token cache", replace=False) as tmp:
                    TokenStore.write(
                        tmp / "tokens", (feat.ids_many(texts[i : i + 10_000]) for i in range(0, len(texts), 10_000))
                    )
    _, store = _read_token_cache(cache, len(texts), word=False)
    # Padded as the model's tokenizer pads (HFFeaturizer.collate), with its attention mask.
    pad_id = feat.tokenizer.pad_token_id
    batcher = TokenBatcher(
        store,
        pad_id=0 if pad_id is None else int(pad_id),
        attention_mask=True,
        left=getattr(feat.tokenizer, "padding_side", "right") == "left",
    )
    return encoder.module, batcher, lambda m: make_encoder(cfg.model, None, m)


def _word_run(cfg: Config, vocab, task, pair_data: bool, tokenizer=None) -> Run:
    module = build_module(cfg.model, len(vocab))
    # The featurizer of the saved model must cut sentences exactly as training did.
    return Run(module, task, pair_data, lambda m: make_encoder(cfg.model, vocab, m, tokenizer))


def _word_batcher(cfg: Config, store: TokenStore) -> TokenBatcher:
    """Word-id batches cut at ``model.max_len``, padded with 0 (as ``WordFeaturizer.collate``)."""
    return TokenBatcher(store, max_len=cfg.model.max_len)


def _bars(cfg: Config) -> bool:
    """Progress bars while the data is prepared: only on a terminal (a log file would get every
    ``\\r`` frame of the bar)."""
    import sys

    return bool(cfg.train.progress) and sys.stderr.isatty()


def check_data_paths(cfg: Config) -> None:
    """The folders and files ``build_run`` will read exist (``DataMissingError`` naming the path
    and how to fetch it otherwise); nothing is read."""
    from qt_hard.errors import DataMissingError
    from qt_hard.paths import data_path

    d = cfg.data
    if d.kind == "books":
        if d.path is None:
            root = data_path("books")
        elif not Path(d.path).expanduser().exists():
            raise DataMissingError(f"data.path: no such book file or folder: {d.path}")
        else:
            root = Path(d.path).expanduser()
        if d.exclude_books:
            _check_excluded_books(d, root)
    elif d.kind == "bookcorpus" and d.path is not None and not Path(d.path).expanduser().is_dir():
        raise DataMissingError(f"data.path: no BookCorpus Parquet folder at {d.path}")
    elif d.kind == "wiki" and not (d.path and Path(d.path).expanduser().exists()):
        # Wiki-N is built from its source when the folder is not there yet.
        if d.wiki_source is None:
            data_path("wikipedia", "enwiki_wikiextractor_ge200sent.txt.xz")
        elif not Path(d.wiki_source).expanduser().is_file():
            raise DataMissingError(f"data.wiki_source: no such file: {d.wiki_source}")


def _check_excluded_books(d, root: Path) -> None:
    """``data.exclude_books`` names books of the folder and leaves at least one (a file listing only)."""
    from qt_hard.data.books import find_books

    n = len(find_books(root, d.max_books))
    if max(d.exclude_books) >= n:
        raise ValueError(f"data.exclude_books: book {max(d.exclude_books)} does not exist ({root} has books 0-{n - 1})")
    if len(d.exclude_books) >= n:
        raise ValueError(f"data.exclude_books leaves no book of {root} to train on")


def without_books(ds, excluded):
    """The rows of ``ds`` (a :func:`qt_hard.data.books.load_books` dataset) whose ``doc_id`` is not in
    ``excluded``, in their order; ``ds`` itself when nothing is excluded."""
    if not excluded:
        return ds
    doc_ids = dataset_column(ds, "doc_id", numpy=True)
    keep = np.nonzero(~np.isin(doc_ids, np.asarray(excluded, dtype=doc_ids.dtype)))[0]
    return ds.select(keep)


def build_run(cfg: Config, out: Path) -> Run:
    """Load the data named by ``cfg.data`` and build the encoder and batch task."""
    kind = cfg.data.kind
    cache_root = out / "cache"
    if kind in ("books", "bookcorpus"):
        return _books_run(cfg, cache_root)
    if kind == "wiki":
        return _wiki_run(cfg, out, cache_root)
    if kind == "synthetic":
        return _synthetic_run(cfg, cache_root)
    raise ValueError(f"unknown data.kind {kind!r}")


def _books_run(cfg: Config, cache_root: Path) -> Run:
    """The Quick-Thoughts run on ordered sentences (local books or BookCorpus): the batches are runs of
    consecutive sentences, their neighbours in the same book the positives (:class:`ContextTask`)."""
    B, seed = cfg.train.batch_size, cfg.train.seed
    ds = _book_sentences(cfg, cache_root)
    key = _book_tokens_key(cfg, ds)
    # Whole-column Arrow reads: ds["doc_id"] converts row by row in datasets 4+ (minutes on all books).
    doc_ids = dataset_column(ds, "doc_id", numpy=True).astype(np.int64)
    if cfg.model.kind == "hf":
        module, batcher, wrap = _hf_parts(cfg, cache_root, dataset_column(ds, "text"))
        return Run(module, ContextTask(batcher, doc_ids, B, seed), False, wrap)
    tok, store = _vocab_and_store(cfg, cache_root / f"tokens_{key}", lambda: text_chunks(ds), len(ds))
    vocab = tok.vocab()
    task = ContextTask(_word_batcher(cfg, store), doc_ids, B, seed)
    return _word_run(cfg, vocab, task, pair_data=False, tokenizer=tok)


def _book_sentences(cfg: Config, cache_root: Path):
    """The sentence dataset of ``cfg.data`` (the local books, less the excluded ones, or BookCorpus: the
    Parquet shards under the data root, else the hub's), cut to ``max_sentences``."""
    from qt_hard.paths import data_path

    if cfg.data.kind == "books":
        from qt_hard.data.books import load_books

        root = cfg.data.path or str(data_path("books"))
        ds = load_books(root, max_books=cfg.data.max_books, cache_dir=cache_root / "books", progress=_bars(cfg))
        ds = without_books(ds, cfg.data.exclude_books)
    else:
        from qt_hard.data.books import load_hf_bookcorpus

        local = cfg.data.path or data_path("bookcorpus", required=False)
        shards = {}
        if local is not None and Path(local).is_dir():
            # `qt-hard data get bookcorpus` wrote Parquet shards under the data root.
            from qt_hard.data.sources.bookcorpus import bookcorpus_files

            shards = {"name": "parquet", "data_files": bookcorpus_files(local)}
        ds = load_hf_bookcorpus(cache_dir=cache_root / "bookcorpus", max_rows=cfg.data.max_sentences, **shards)
    if cfg.data.max_sentences is not None:
        ds = ds.select(range(min(cfg.data.max_sentences, len(ds))))
    return ds


def _book_tokens_key(cfg: Config, ds) -> str:
    """The key of the token cache of the sentences ``ds``: the data and tokenizer settings and the
    sentence cache they were read from."""
    from qt_hard.data.wordlevel import TOKENIZER_VERSION

    return _key(
        [
            cfg.data.kind,
            cfg.data.path,
            cfg.data.max_books,
            *([cfg.data.exclude_books] if cfg.data.exclude_books else []),  # older caches keep their key
            cfg.data.max_sentences,
            cfg.data.min_count,
            cfg.data.max_vocab,
            cfg.model.lower,
            cfg.model.max_len,
            len(ds),
            TOKENIZER_VERSION,
            "no-added-tokens",  # since a literal "<pad>" no longer encodes to id 0
            # The sentence cache it is made from, whose name is keyed by the books' paths, sizes and
            # times: a book edited in place is another corpus, never served old tokens.
            sorted(Path(f["filename"]).parent.name for f in ds.cache_files),
        ]
    )


def _pair_run(cfg: Config, wd, cache_root: Path) -> Run:
    """A PairTask over ``WikiData``'s training split (pairs redrawn every epoch)."""
    labels = np.asarray(wd.train_labels, dtype=np.int64)
    seed = cfg.train.seed

    def pairs_for_epoch(epoch: int) -> np.ndarray:
        return wd.positive_pair_indices(epoch, seed)[:, :2]

    hf = cfg.model.kind == "hf"
    if hf:
        module, batcher, wrap = _hf_parts(cfg, cache_root, wd.train_sentences)
    else:
        batcher = _word_batcher(cfg, TokenStore.from_lists(wd.train_ids))
    task = PairTask(batcher, labels, pairs_for_epoch, cfg.train.batch_size, seed, cfg.data.shuffle_labels)
    run = Run(module, task, True, wrap) if hf else _word_run(cfg, wd.vocab, task, pair_data=True)
    if cfg.eval.readouts:
        if hf:
            _, test, _ = _hf_parts(cfg, cache_root, wd.test_sentences)
        else:
            test = _word_batcher(cfg, TokenStore.from_lists(wd.test_ids))
        run.split = Split(batcher, labels, test, np.asarray(wd.test_labels, dtype=np.int64), wd.num_classes)
    return run


def _wiki_run(cfg: Config, out: Path, cache_root: Path) -> Run:
    from qt_hard.data.wiki import build_wiki, wiki_prefix
    from qt_hard.files import file_key
    from qt_hard.paths import data_path

    def default_source() -> str:
        return cfg.data.wiki_source or str(data_path("wikipedia", "enwiki_wikiextractor_ge200sent.txt.xz"))

    # A run's own build: a stable name, stamped with the identity of what it was built from (the dump's
    # path, size and time): another source, or the same file changed, is built again in its place,
    # never served the old build.
    wiki_dir = (
        Path(cfg.data.path) if cfg.data.path else cache_root / f"wiki_{cfg.data.articles}_{cfg.data.min_sentences}"
    )
    key = None if cfg.data.path else file_key(default_source())

    def ready() -> bool:
        # A run's own build counts once it carries the stamp of this source; a given data.path as it is.
        if not wiki_dir.exists() or key is None:
            return wiki_dir.exists()
        stamp = wiki_dir / ".source_key"
        return stamp.is_file() and stamp.read_text(encoding="utf-8") == key

    if not ready():
        # One process builds, the others (ranks of one launch, runs sharing the folder) wait and read
        # it: none removes or reads a folder that another is still building or stamping.
        with build_lock(wiki_dir, "Wiki-N folder"):
            if not ready():
                if wiki_dir.exists():  # built from another source, or never stamped
                    shutil.rmtree(wiki_dir)
                source = default_source()
                log.info("building Wiki-%d from %s into %s", cfg.data.articles, source, wiki_dir)
                build_wiki(
                    source, wiki_dir, articles=cfg.data.articles, sentences=cfg.data.min_sentences, progress=_bars(cfg)
                )
                if key is not None:
                    write_text(wiki_dir / ".source_key", key, "Wiki-N source stamp")
    token_cache = Path(cfg.data.token_cache) if cfg.data.token_cache else cache_root / "wiki_tokens"
    # Without data.classes the whole folder (wiki_prefix of all its articles is load_wiki's WikiData).
    wd = wiki_prefix(
        wiki_dir,
        cfg.data.classes,
        min_count=cfg.data.min_count,
        seed=cfg.data.seed,
        lower=cfg.model.lower,
        cache_dir=token_cache,
        vocab_classes=cfg.data.vocab_classes,
    )
    return _pair_run(cfg, wd, cache_root)


def _synthetic_run(cfg: Config, cache_root: Path) -> Run:
    from qt_hard.data.synthetic import latent_class_corpus
    from qt_hard.data.wiki import WikiData

    d = cfg.data
    sentences, labels = latent_class_corpus(
        d.num_classes, d.sentences_per_class, d.vocab_size, (d.min_length, d.max_length), seed=d.seed
    )
    wd = WikiData.from_sentences(sentences, labels, min_count=d.min_count, seed=d.seed, lower=cfg.model.lower)
    return _pair_run(cfg, wd, cache_root)
