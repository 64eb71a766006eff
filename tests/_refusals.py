"""What qt-hard refuses and why: one table (``tests/refusals.yaml``) for the CLI test and for
``docs/refusals.md``.

Each row is a bad input a user can fix: the command line (with placeholders filled in by the
test's tiny fixtures), what happens, and how the one line on stderr begins. The test
(``tests/test_refusals.py``) runs every row through the real command and checks exit status 2,
that one line, no traceback, and nothing written under the output folder or the data root; it
also checks that ``docs/refusals.md`` is this table rendered (``python tests/_refusals.py``
rewrites it).

Placeholders: ``{cfg}`` a tiny Quick-Thoughts config on two small books; ``{out}`` the row's
output folder; ``{data}`` a SentEval folder holding a copy of CR (and of STS and SICK); ``{model}`` a trained tiny
model; ``{file}`` an existing plain file; ``{run}`` a folder holding a finished run; ``{ckpt}``
a run with a checkpoint (its config saved); ``{books}`` a folder of books; ``{json}`` a file
that is not JSON; ``{binary}`` 1 KiB of every byte value; ``{empty}`` an empty file; ``{beir}`` a folder in BEIR's layout
(three documents, two queries, ``qrels/test.tsv``). A row's ``setup`` names the damage done to a copy first (see the test).

:func:`assert_refused` is that check for the tests that run their refusals themselves.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

DOC = Path(__file__).resolve().parent.parent / "docs" / "refusals.md"


@dataclass(frozen=True)
class Refusal:
    input: str  # what the user typed or has on disk, in words
    args: tuple[str, ...]  # the qt-hard command line, placeholders in braces
    error: str  # how the stderr line begins (after "qt-hard: error: "), placeholders in braces
    what: str = "refused"  # what qt-hard does instead
    setup: str = ""  # damage done to a copy of the fixtures before the run (see the test)


T = ("train", "{cfg}", "--out", "{out}")
E = ("eval", "senteval", "--model", "{model}", "--data", "{data}", "--tasks", "CR", "--output", "{out}/r.json")

PREFIXES = {"$T": T, "$E": E}
TABLE = Path(__file__).resolve().parent / "refusals.yaml"


def load_rows(path: Path = TABLE) -> tuple[Refusal, ...]:
    """The rows of ``refusals.yaml``: ``args`` split as a shell would, a leading ``$T`` or ``$E`` replaced
    by its command prefix; a row with a key this class does not have is an error."""
    rows = []
    for i, entry in enumerate(yaml.safe_load(path.read_text(encoding="utf-8")), 1):
        unknown = set(entry) - {f.name for f in fields(Refusal)}
        if unknown:
            raise ValueError(f"{path.name} row {i}: unknown keys {sorted(unknown)}")
        words = shlex.split(entry.pop("args"))
        args = tuple(PREFIXES.get(words[0], (words[0],))) + tuple(words[1:])
        rows.append(Refusal(args=args, **entry))
    return tuple(rows)


ROWS = load_rows()


def assert_refused(status: int, err: str, expected: str, out: Path) -> None:
    """A command refused as every refusal is: exit status 2, one line on stderr (``err``) that begins
    with ``expected``, and nothing at ``out``, the output it was given."""
    assert status == 2, (status, err)
    assert err.startswith(expected) and len(err.splitlines()) == 1, err
    assert not out.exists(), out


PLACEHOLDERS = {
    "cfg": "CONFIG.yaml",
    "out": "OUT",
    "data": "SENTEVAL",
    "model": "MODEL",
    "file": "FILE",
    "run": "RUN",
    "ckpt": "RUN",
    "books": "BOOKS",
    "json": "NOT_JSON",
    "binary": "BINARY_FILE",
    "empty": "EMPTY.yaml",
    "beir": "BEIR",
}
SETUPS = {
    "truncated_xz": "BOOKS/broken.txt.xz cut to half its bytes",
    "latin1_book": "BOOKS/latin.txt written in latin-1",
    "model:model.safetensors": "MODEL/model.safetensors cut to 50 bytes",
    "model-rm:encoder.json": "MODEL/encoder.json deleted",
    "model:encoder.json": "MODEL/encoder.json cut to 50 bytes",
    "model:tokenizer.json": "MODEL/tokenizer.json cut to 50 bytes",
    "truncate_cr": "`truncate -s 100 SENTEVAL/CR/custrev.pos`",
    "garbage_cr": "a line `@@garbage@@` appended to SENTEVAL/CR/custrev.neg",
    "binary_cr": "SENTEVAL/CR/custrev.neg's first line replaced by the control bytes 0x00-0x08, 0x0e-0x1b, 0x1f",
    "missing_sts": "SENTEVAL/STS/STS12-en-test/STS.gs.MSRpar.txt removed",
    "truncate_sick": "`truncate -s 1000 SENTEVAL/SICK/SICK_test_annotated.txt`",
    "beir:no_corpus": "BEIR/corpus.jsonl deleted",
    "beir:unknown_query": "a line `q9, d1, 1` appended to BEIR/qrels/test.tsv",
    "beir:unknown_doc": "a line `q1, d9, 1` appended to BEIR/qrels/test.tsv",
    "beir:duplicate_doc": "BEIR/corpus.jsonl's first line appended again",
    "beir:empty_corpus": "BEIR/corpus.jsonl emptied",
    "beir:latin1_corpus": "BEIR/corpus.jsonl's second document written in latin-1",
    "beir:header_only": "BEIR/qrels/test.tsv cut to its header",
    "ckpt_config_cut": "RUN/config.yaml cut before its train section",
    "cache_cut": "FILE an embedding cache cut to half its bytes",
    "bom_cr": "the bytes EF BB BF put before SENTEVAL/CR/custrev.pos",
    "model_config_cut": "the config.yaml beside MODEL cut short mid-list",
    "link_loop": "FILE a symbolic link to itself",
}


def fill(text: str, places: dict) -> str:
    """``text`` with each ``{name}`` of ``places`` replaced (other braces, YAML's, kept)."""
    for name, value in places.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def _words(text: str) -> str:
    return fill(text, PLACEHOLDERS)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    """``text`` as one Markdown code span: fenced by two backticks and spaces when it holds one."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def render() -> str:
    """``docs/refusals.md``: the table above as Markdown."""
    lines = [
        "# What qt-hard refuses and why",
        "",
        "Each input below is refused with exit status 2 and one line on stderr that starts with",
        "`qt-hard: error:` and names the key or file; there is no traceback (`--debug` shows one), and",
        "nothing is written under the output folder or the data root. Configs are checked as a whole",
        "before any data is read, the objective by the core's own builder run on random embeddings of",
        "the configured batch size, so a typo fails in seconds rather than after the books are prepared.",
        "",
        "`tests/test_refusals.py` runs every row through the real command; this page is generated from",
        "the same table (`tests/refusals.yaml`; [contributing](contributing.md)). Names in capitals",
        "stand for the files of the row (`OUT` its output folder, `CONFIG.yaml` a Quick-Thoughts config,",
        "`MODEL` a saved model, `SENTEVAL` a SentEval folder, `RUN` a folder holding a run, `BEIR` a folder",
        "in BEIR's layout).",
        "",
        "| input | command | what happens | the one-line error begins |",
        "|---|---|---|---|",
    ]
    for row in ROWS:
        given = _words(row.input) + (f" ({SETUPS[row.setup]})" if row.setup else "")
        command = "qt-hard " + " ".join(a if a and " " not in a else repr(a) for a in (_words(x) for x in row.args))
        error = "qt-hard: error: " + _words(row.error)
        lines.append(f"| {_cell(given)} | {_code(_cell(command))} | {_cell(row.what)} | {_code(_cell(error))} |")
    lines += [
        "",
        "Interruptions are not errors: a run stopped by SIGINT or SIGTERM writes a checkpoint and exits",
        "with status 130 or 143 (a second signal stops at once, leaving an unfinished `.partial`",
        "checkpoint folder that `--resume` never takes); `--resume` continues from the newest checkpoint",
        "that loads and says which newer ones it skipped and why. `qt-hard data list` exits with status 1",
        "when a dataset is corrupt.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    DOC.write_text(render())
    print(f"wrote {DOC} ({len(ROWS)} rows)")
