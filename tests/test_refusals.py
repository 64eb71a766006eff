"""Every row of ``tests/refusals.yaml`` through the real command line: exit status 2, one stderr line
``qt-hard: error: ...`` that names the key or file, no traceback, nothing written under the output
folder or the data root. And ``docs/refusals.md`` is that table rendered.

The fixtures are tiny (two small books, a copy of SentEval's CR, a 2-step model), and the rows run
as parallel processes, so the table costs a few seconds of CPU per row.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from _refusals import DOC, ROWS, fill, render
from test_training import qt_config

REPO = Path(__file__).resolve().parent.parent


def _real_cr() -> Path | None:
    from qt_hard.paths import data_root

    root = data_root()
    cr = root / "senteval" / "CR" if root is not None else None
    return cr if cr is not None and (cr / "custrev.pos").is_file() else None


def _snapshot(folder: Path) -> dict:
    if not folder.exists():
        return {}
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    } | {".": "dir" if folder.is_dir() else folder.stat().st_size}


def _damage(kind: str, place: dict, where: Path) -> None:
    """Make the row's damaged copy under ``where`` and point its placeholder at it."""
    if kind.startswith("model-rm:"):
        copy = where / "model"
        shutil.copytree(place["model"], copy)
        (copy / kind.split(":", 1)[1]).unlink()
        place["model"] = str(copy)
    elif kind.startswith("model:"):
        copy = where / "model"
        shutil.copytree(place["model"], copy)
        name = kind.split(":", 1)[1]
        (copy / name).write_bytes((copy / name).read_bytes()[:50])
        place["model"] = str(copy)
    elif kind in ("missing_sts", "truncate_sick"):
        copy = where / "senteval"
        shutil.copytree(place["data"], copy)
        if kind == "missing_sts":
            (copy / "STS" / "STS12-en-test" / "STS.gs.MSRpar.txt").unlink()
        else:
            os.truncate(copy / "SICK" / "SICK_test_annotated.txt", 1000)
        place["data"] = str(copy)
    elif kind in ("truncate_cr", "garbage_cr", "binary_cr"):
        copy = where / "senteval"
        shutil.copytree(place["data"], copy)
        pos, neg = copy / "CR" / "custrev.pos", copy / "CR" / "custrev.neg"
        if kind == "truncate_cr":
            os.truncate(pos, 100)
        elif kind == "garbage_cr":
            neg.write_bytes(neg.read_bytes() + b"@@garbage@@\n")
        else:
            lines = neg.read_bytes().split(b"\n")
            # control bytes that are not line breaks for str.splitlines (0x0b-0x0d, 0x1c-0x1e are)
            junk = bytes(range(9)) + bytes(range(14, 28)) + b"\x1f"
            neg.write_bytes(b"\n".join([junk] + lines[1:]))
        place["data"] = str(copy)
    elif kind in ("truncated_xz", "latin1_book"):
        import lzma

        books = where / "books"
        shutil.copytree(place["books"], books)
        if kind == "truncated_xz":
            data = lzma.compress((books / "book0.txt").read_bytes())
            (books / "broken.txt.xz").write_bytes(data[: len(data) // 2])
        else:
            (books / "latin.txt").write_bytes("Caf\xe9 au lait. Il fait beau.\n".encode("latin-1"))
        place["books"] = str(books)
    elif kind.startswith("beir:"):
        beir = where / "beir"
        shutil.copytree(place["beir"], beir)
        _damage_beir(kind.split(":", 1)[1], beir)
        place["beir"] = str(beir)
    elif kind == "ckpt_config_cut":
        copy = where / "ckpt"
        shutil.copytree(place["ckpt"], copy)
        text = (copy / "config.yaml").read_text()
        (copy / "config.yaml").write_text(text[: text.index("\ntrain:") + 1])
        place["ckpt"] = str(copy)
    elif kind == "cache_cut":
        import numpy as np

        cache = where / "emb.npz"
        with open(cache, "wb") as fh:
            np.savez(fh, texts=np.array(["a"], dtype=object), embeddings=np.zeros((1, 2)), model=np.array("m"))
        cache.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])
        place["file"] = str(cache)
    elif kind == "bom_cr":
        copy = where / "senteval"
        shutil.copytree(place["data"], copy)
        pos = copy / "CR" / "custrev.pos"
        pos.write_bytes(b"\xef\xbb\xbf" + pos.read_bytes())
        place["data"] = str(copy)
    elif kind == "model_config_cut":
        copy = where / "model"
        shutil.copytree(place["model"], copy)
        (where / "config.yaml").write_text("data: {kind: wiki, seed: [0\n")
        place["model"] = str(copy)
    elif kind == "link_loop":
        loop = where / "loop"
        loop.symlink_to(loop)
        place["file"] = str(loop)
    else:
        raise AssertionError(f"unknown setup {kind!r}")


def write_beir(folder: Path) -> Path:
    """A folder in BEIR's layout: three documents, two queries, three test judgements (CRLF, as BEIR's)."""
    import json

    (folder / "qrels").mkdir(parents=True)
    docs = [("d1", "Cats", "Cats purr."), ("d2", "Dogs", "Dogs bark."), ("d3", "Birds", "Birds sing.")]
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs)
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in (("q1", "purring"), ("q2", "barking")))
    )
    (folder / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td2\t1\r\n")
    return folder


def _damage_beir(kind: str, beir: Path) -> None:
    corpus, qrels = beir / "corpus.jsonl", beir / "qrels" / "test.tsv"
    if kind == "no_corpus":
        corpus.unlink()
    elif kind in ("unknown_query", "unknown_doc"):
        qrels.write_bytes(qrels.read_bytes() + (b"q9\td1\t1\r\n" if kind == "unknown_query" else b"q1\td9\t1\r\n"))
    elif kind == "duplicate_doc":
        lines = corpus.read_bytes().splitlines(keepends=True)
        corpus.write_bytes(b"".join(lines) + lines[0])
    elif kind == "empty_corpus":
        corpus.write_bytes(b"")
    elif kind == "latin1_corpus":
        lines = corpus.read_bytes().splitlines(keepends=True)
        corpus.write_bytes(lines[0] + '{"_id": "d2", "title": "Caf\u00e9", "text": "x"}\n'.encode("latin-1") + lines[2])
    elif kind == "header_only":
        qrels.write_bytes(qrels.read_bytes().splitlines(keepends=True)[0])
    else:
        raise AssertionError(f"unknown BEIR damage {kind!r}")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The shared fixtures (placeholder -> path) and the folder they live in."""
    from qt_hard.training.config import config_from_dict, save_config
    from qt_hard.training.loop import train

    base = tmp_path_factory.mktemp("world")
    tree = qt_config(base, steps=2)  # writes base/books
    cfg = base / "config.yaml"
    cfg.write_text(yaml.safe_dump(tree))
    run = train(config_from_dict({**tree, "out_dir": str(base / "trained")}))
    finished = base / "finished_run"
    shutil.copytree(run, finished)
    shutil.rmtree(finished / "checkpoints")  # a common way to save disk; the guard must still hold
    ckpt = base / "resumable"
    save_config(config_from_dict({**tree, "out_dir": str(ckpt)}), ckpt / "config.yaml")
    (ckpt / "checkpoints" / "step_0000001").mkdir(parents=True)
    (ckpt / "checkpoints" / "step_0000001" / "trainer_state_0.pt").write_bytes(b"not loaded by a refusal")
    (base / "plain.txt").write_text("a file, not a folder\n")
    (base / "not.json").write_text("{oops: [\n")
    (base / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (base / "empty.yaml").write_text("")
    data = base / "senteval"
    cr = _real_cr()
    if cr is not None:
        shutil.copytree(cr, data / "CR")
        for folder in ("STS", "SICK"):  # the similarity rows' files, where the data root has them
            if (cr.parent / folder).is_dir():
                shutil.copytree(cr.parent / folder, data / folder)
    write_beir(base / "beir")
    (base / "dataroot").mkdir()
    (base / "cwd").mkdir()
    place = {
        "cfg": str(cfg),
        "data": str(data),
        "model": str(run / "final"),
        "file": str(base / "plain.txt"),
        "run": str(finished),
        "ckpt": str(ckpt),
        "books": str(base / "books"),
        "json": str(base / "not.json"),
        "binary": str(base / "binary.bin"),
        "empty": str(base / "empty.yaml"),
        "beir": str(base / "beir"),
    }
    return base, place, cr is not None


def _run_row(i, row, base, shared):
    place = dict(shared, out=str(base / "outs" / str(i)))
    if row.setup:
        where = base / "variants" / str(i)
        where.mkdir(parents=True)
        _damage(row.setup, place, where)
    args = [fill(a, place) for a in row.args]
    watched = [Path(place["out"])] + [Path(place[k]) for k in ("run", "ckpt") if "{" + k + "}" in " ".join(row.args)]
    before = {str(p): _snapshot(p) for p in watched}
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        QT_HARD_DATA=str(base / "dataroot"),
        QT_HARD_CACHE=str(base / "dataroot" / ".cache"),
    )
    env.pop("QT_HARD_DEBUG", None)
    r = subprocess.run(
        [sys.executable, "-m", "qt_hard.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=base / "cwd",
        timeout=300,
        check=False,
    )
    after = {str(p): _snapshot(p) for p in watched}
    return r, "qt-hard: error: " + fill(row.error, place), before, after, args


# One CLI process per row (about 50, each importing torch where the row needs it): the table is the
# content of docs/refusals.md, so it runs with the documented commands (``-m commands``, .ci/run).
@pytest.mark.commands
def test_refusal_table(world):
    base, shared, have_cr = world
    # Without the SentEval data (a copy of CR is the fixture), the evaluation rows are left out.
    rows = [(i, row) for i, row in enumerate(ROWS) if have_cr or "{data}" not in " ".join(row.args)]
    # The similarity files' rows need them copied too (STS and SICK of the data root).
    have_sts = (Path(shared["data"]) / "STS").is_dir() and (Path(shared["data"]) / "SICK").is_dir()
    rows = [(i, row) for i, row in rows if have_sts or row.setup not in ("missing_sts", "truncate_sick")]
    assert len(rows) >= 30
    root_before = _snapshot(base / "dataroot")
    shared_before = {k: _snapshot(Path(v)) for k, v in shared.items()}
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda ir: (ir[1], *_run_row(*ir, base, shared)), rows))
    failures = []
    for row, r, expected, before, after, args in results:
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        problems = []
        if r.returncode != 2:
            problems.append(f"exit status {r.returncode}")
        if "Traceback" in r.stderr:
            problems.append("a traceback")
        if len(lines) != 1:
            problems.append(f"{len(lines)} stderr lines")
        elif not lines[0].startswith(expected):
            problems.append(f"the line is {lines[0]!r}, expected it to start with {expected!r}")
        if before != after:
            problems.append("something was written under the output folder")
        if problems:
            failures.append(f"{row.input} (qt-hard {' '.join(args)}): {', '.join(problems)}\n{r.stderr[-2000:]}")
    assert not failures, "\n\n".join(failures)
    assert _snapshot(base / "dataroot") == root_before, "something was written under the data root"
    assert {k: _snapshot(Path(v)) for k, v in shared.items()} == shared_before


def test_every_row_names_a_key_or_file():
    """A row's expected line names what to fix: a config key, an option, a flag or a file."""
    for row in ROWS:
        assert any(mark in row.error for mark in (".", "--", "{", "'")), row.input


def test_docs_page_is_the_table():
    assert DOC.is_file(), "docs/refusals.md is missing: run python tests/_refusals.py"
    assert DOC.read_text() == render(), (
        "docs/refusals.md differs from tests/refusals.yaml: run python tests/_refusals.py"
    )
