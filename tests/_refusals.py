"""What qt-hard refuses and why: one table for the CLI test and for ``docs/refusals.md``.

Each row is a bad input a user can fix: the command line (with placeholders filled in by the
test's tiny fixtures), what happens, and how the one line on stderr begins. The test
(``tests/test_refusals.py``) runs every row through the real command and checks exit status 2,
that one line, no traceback, and nothing written under the output folder or the data root; it
also checks that ``docs/refusals.md`` is this table rendered (``python tests/_refusals.py``
rewrites it).

Placeholders: ``{cfg}`` a tiny Quick-Thoughts config on two small books; ``{out}`` the row's
output folder; ``{data}`` a SentEval folder holding a copy of CR; ``{model}`` a trained tiny
model; ``{file}`` an existing plain file; ``{run}`` a folder holding a finished run; ``{ckpt}``
a run with a checkpoint (its config saved); ``{books}`` a folder of books; ``{json}`` a file
that is not JSON. A row's ``setup`` names the damage done to a copy first (see the test).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "refusals.md"


@dataclass(frozen=True)
class Refusal:
    input: str  # what the user typed or has on disk, in words
    args: tuple[str, ...]  # the qt-hard command line, placeholders in braces
    what: str  # what qt-hard does instead
    error: str  # how the stderr line begins (after "qt-hard: error: "), placeholders in braces
    setup: str = ""  # damage done to a copy of the fixtures before the run (see the test)


T = ("train", "{cfg}", "--out", "{out}")
E = ("eval", "senteval", "--model", "{model}", "--data", "{data}", "--tasks", "CR", "--output", "{out}/r.json")

ROWS: tuple[Refusal, ...] = (
    # ---- training config: refused while reading the config, before any data
    Refusal(
        "a negative learning rate",
        T + ("train.lr=-1",),
        "refused before any data is read",
        "train.lr must be a finite number > 0, got -1.0",
    ),
    Refusal(
        "a learning rate that is not a number",
        T + ("train.lr=nan",),
        "refused before any data is read",
        "train.lr must be a finite number > 0, got nan",
    ),
    Refusal(
        "a misspelt key",
        T + ("train.lrr=0.1",),
        "refused; the message lists the keys that exist",
        "unknown config key 'train.lrr' in section 'train'",
    ),
    Refusal(
        "zero books",
        T + ("data.max_books=0",),
        "refused before any book is read",
        "data.max_books must be >= 1 (or left out), got 0",
    ),
    Refusal(
        "a batch of one",
        T + ("train.batch_size=1",),
        "refused (a contrastive batch needs negatives)",
        "train.batch_size must be >= 2, got 1",
    ),
    Refusal("zero steps", T + ("train.steps=0",), "refused", "train.steps must be >= 1, got 0"),
    Refusal(
        "a negative gradient clip",
        T + ("train.grad_clip=-1",),
        "refused",
        "train.grad_clip must be a finite number > 0, got -1.0",
    ),
    Refusal(
        "an unknown mixed precision",
        T + ("train.mixed_precision=fp8",),
        "refused",
        "train.mixed_precision must be no | fp16 | bf16, got 'fp8'",
    ),
    Refusal(
        "an unknown tracker", T + ("train.trackers=[wandb]",), "refused", "train.trackers: unknown tracker(s) ['wandb']"
    ),
    Refusal("an unknown model kind", T + ("model.kind=lstm",), "refused", "model.kind must be one of"),
    Refusal("an unknown data kind", T + ("data.kind=imdb",), "refused", "data.kind must be books"),
    Refusal(
        "an unknown negatives strategy",
        T + ("objective.negatives=nonsense",),
        "refused before any data is read (the core's own builder, called on the config)",
        "config section 'objective' (negatives='nonsense'",
    ),
    Refusal(
        "an option the strategy does not read",
        T + ("objective.options.lower=10",),
        "refused: hard negatives read no ring percentile",
        "config section 'objective' (negatives='hard'",
    ),
    Refusal(
        "an unknown option",
        T + ("objective.options.bogus=1",),
        "refused; the message lists the options",
        "config section 'objective' (negatives='hard'",
    ),
    Refusal(
        "tau_plus outside [0, 1)",
        T + ("objective.options.tau_plus=1.5",),
        "refused before any data is read (the core would refuse it at the first step)",
        "config section 'objective' (negatives='hard'",
    ),
    Refusal(
        "a negative beta (easy negatives)",
        T + ("objective.options.beta=-1",),
        "refused: easy negatives are the graph_code reading of the clip, not a negative beta",
        "config section 'objective' (negatives='hard'",
    ),
    Refusal(
        "clip: true (the reading is not named)",
        T + ("objective.options.clip=true",),
        "refused; the message lists the readings (none, rescaled, fig14, graph_code)",
        "config section 'objective' (negatives='hard'",
    ),
    Refusal(
        "a temperature of zero",
        T + ("objective.temperature=0",),
        "refused before any data is read",
        "config section 'objective' (negatives='hard', temperature=0.0",
    ),
    Refusal(
        "a ring band with lower >= upper",
        T + ("objective.negatives=ring", "objective.options={lower: 60, upper: 40}"),
        "refused before any data is read",
        "config section 'objective' (negatives='ring'",
    ),
    Refusal(
        "a ring band outside [0, 100]",
        T + ("objective.negatives=ring", "objective.options={lower: 5, upper: 150}"),
        "refused before any data is read",
        "config section 'objective' (negatives='ring'",
    ),
    Refusal("k = 0 negatives", T + ("objective.k=0",), "refused", "config section 'objective' (negatives='hard'"),
    Refusal(
        "more negatives than a batch has candidates",
        T + ("objective.k=500",),
        "refused before any data is read (the batch size is in the config)",
        "config section 'objective' (negatives='hard'",
    ),
    Refusal(
        "a schedule that does not exist",
        T + ("objective.options.beta={schedule: nope}",),
        "refused",
        "config section 'objective' (negatives='hard'",
    ),
    Refusal(
        "a config file that does not exist",
        ("train", "{out}/nope.yaml"),
        "refused",
        "config file {out}/nope.yaml does not exist",
    ),
    Refusal("a config file that is not YAML", ("train", "{json}"), "refused", "config file {json} is not valid YAML"),
    # ---- training folders and files
    Refusal(
        "a books folder that does not exist",
        T + ("data.path={out}/no_books",),
        "refused before any data is read",
        "data.path: no such book file or folder: {out}/no_books",
    ),
    Refusal(
        "a truncated .xz book",
        T + ("data.path={books}",),
        "refused, naming the book; nothing is trained",
        "{books}/broken.txt.xz: not a valid .xz file",
        setup="truncated_xz",
    ),
    Refusal(
        "a book that is not UTF-8",
        T + ("data.path={books}",),
        "refused, naming the book and the byte",
        "{books}/latin.txt: not valid UTF-8",
        setup="latin1_book",
    ),
    Refusal(
        "--out that is an existing file",
        ("train", "{cfg}", "--out", "{file}"),
        "refused",
        "out_dir {file} is a file, not a folder",
    ),
    Refusal(
        "--out that cannot be created",
        ("train", "{cfg}", "--out", "{file}/sub"),
        "refused",
        "out_dir {file}/sub cannot be created",
    ),
    Refusal(
        "--out holding a finished run (no --overwrite)",
        ("train", "{cfg}", "--out", "{run}"),
        "refused; nothing of the old run is touched",
        "out_dir {run} already holds a run",
    ),
    Refusal("--resume with no checkpoint", T + ("--resume",), "refused", "--resume: no checkpoint under {out}"),
    Refusal(
        "--resume and --overwrite together",
        T + ("--resume", "--overwrite"),
        "refused",
        "--resume continues the run in out_dir and --overwrite replaces it",
    ),
    Refusal(
        "--resume with a changed learning rate",
        ("train", "{cfg}", "--out", "{ckpt}", "--resume", "train.lr=0.1"),
        "refused; the run's config.yaml is not rewritten",
        "--resume: the config differs from the run's {ckpt}/config.yaml in train.lr: 0.01 -> 0.1",
    ),
    Refusal(
        "--resume with a changed model shape",
        ("train", "{cfg}", "--out", "{ckpt}", "--resume", "model.embed_dim=32"),
        "refused before the weights are loaded (no size-mismatch traceback)",
        "--resume: the config differs from the run's {ckpt}/config.yaml in model.embed_dim: 16 -> 32",
    ),
    # ---- evaluation
    Refusal(
        "an unknown task",
        E[:-4] + ("--tasks", "NOPE"),
        "refused before the model is loaded",
        "--tasks: unknown SentEval task 'NOPE'",
    ),
    Refusal("no task", E[:-4] + ("--tasks", ""), "refused before the model is loaded", "--tasks: no tasks given"),
    Refusal("one fold", E + ("--kfold", "1"), "refused before the model is loaded", "--kfold must be >= 2"),
    Refusal(
        "a model folder that does not exist",
        ("eval", "senteval", "--model", "{out}/none", "--data", "{data}", "--tasks", "CR"),
        "refused",
        "model '{out}/none' not found",
    ),
    Refusal(
        "a truncated model.safetensors",
        E,
        "refused, naming the file",
        "{model}/model.safetensors is corrupted or not a safetensors file",
        setup="model:model.safetensors",
    ),
    Refusal(
        "a truncated encoder.json",
        E,
        "refused, naming the file",
        "malformed {model}/encoder.json",
        setup="model:encoder.json",
    ),
    Refusal(
        "a truncated tokenizer.json",
        E,
        "refused, naming the file",
        "{model}/tokenizer.json: not a tokenizers JSON file",
        setup="model:tokenizer.json",
    ),
    Refusal(
        "a truncated task file (CR/custrev.pos cut to 100 bytes)",
        E,
        "refused before the model is loaded; nothing is scored",
        "SentEval file {data}/CR/custrev.pos is damaged: CR/custrev.pos has 2 lines, expected 2407",
        setup="truncate_cr",
    ),
    Refusal(
        "a garbage line appended to a task file",
        E,
        "refused before the model is loaded; nothing is scored",
        "SentEval file {data}/CR/custrev.neg is damaged: CR/custrev.neg has 1369 lines, expected 1368",
        setup="garbage_cr",
    ),
    Refusal(
        "random bytes in a task file",
        E,
        "refused, naming the file and the line",
        "SentEval file {data}/CR/custrev.neg is damaged: CR/custrev.neg:1 holds the control byte '\\x00'",
        setup="binary_cr",
    ),
    Refusal(
        "eval compare on a missing file",
        ("eval", "compare", "{out}/a.json", "{out}/b.json"),
        "refused",
        "result file {out}/a.json does not exist",
    ),
    Refusal(
        "eval compare on a file that is not JSON",
        ("eval", "compare", "{json}", "{json}"),
        "refused",
        "{json} is not valid JSON",
    ),
    # ---- data
    Refusal(
        "data get --root on a file",
        ("data", "get", "senteval", "--root", "{file}"),
        "refused, nothing fetched",
        "--root {file} is a file, not a folder",
    ),
    Refusal(
        "data list --root on a file",
        ("data", "list", "--root", "{file}"),
        "refused",
        "--root {file} is a file, not a folder",
    ),
)

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
}
SETUPS = {
    "truncated_xz": "BOOKS/broken.txt.xz cut to half its bytes",
    "latin1_book": "BOOKS/latin.txt written in latin-1",
    "model:model.safetensors": "MODEL/model.safetensors cut to 50 bytes",
    "model:encoder.json": "MODEL/encoder.json cut to 50 bytes",
    "model:tokenizer.json": "MODEL/tokenizer.json cut to 50 bytes",
    "truncate_cr": "`truncate -s 100 SENTEVAL/CR/custrev.pos`",
    "garbage_cr": "a line `@@garbage@@` appended to SENTEVAL/CR/custrev.neg",
    "binary_cr": "SENTEVAL/CR/custrev.neg's first line replaced by the control bytes 0x00-0x08, 0x0e-0x1b, 0x1f",
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
        "the same table (`tests/_refusals.py`; `python tests/_refusals.py` rewrites it). Names in capitals",
        "stand for the files of the row (`OUT` its output folder, `CONFIG.yaml` a Quick-Thoughts config,",
        "`MODEL` a saved model, `SENTEVAL` a SentEval folder, `RUN` a folder holding a run).",
        "",
        "| input | command | what happens | the one-line error begins |",
        "|---|---|---|---|",
    ]
    for row in ROWS:
        given = _words(row.input) + (f" ({SETUPS[row.setup]})" if row.setup else "")
        command = "qt-hard " + " ".join(a if a and " " not in a else repr(a) for a in (_words(x) for x in row.args))
        error = "qt-hard: error: " + _words(row.error)
        lines.append(f"| {_cell(given)} | `{_cell(command)}` | {_cell(row.what)} | `{_cell(error)}` |")
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
