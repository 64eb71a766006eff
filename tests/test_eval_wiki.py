"""Wiki-N evaluation (Ash et al. 2022, Sec. 5 and D.1) through the CLI."""

import json

import numpy as np

from qt_hard.cli import main
from qt_hard.evaluation import models as eval_models


class WordHashEncoder:
    """Fixed random bag of words (per-word vectors from a seeded generator)."""

    def __init__(self, dim=24):
        self.dim, self.table = dim, {}

    def encode(self, sentences, batch_size=64):
        out = []
        for s in sentences:
            vecs = []
            for w in s.lower().split():
                if w not in self.table:
                    self.table[w] = np.random.default_rng(len(self.table) + 7).normal(size=self.dim)
                vecs.append(self.table[w])
            out.append(np.mean(vecs, axis=0))
        return np.stack(out)


def _write_wiki(root, N=4, per=30, seed=0):
    rng = np.random.default_rng(seed)
    topics = [
        ["river", "water", "bank"],
        ["king", "crown", "war"],
        ["atom", "energy", "quantum"],
        ["music", "song", "album"],
        ["city", "street", "mayor"],
    ]
    common = ["the", "of", "was", "in", "a", "and"]
    root.mkdir()
    for c in range(N):
        lines = [" ".join(list(rng.choice(common, 4)) + list(rng.choice(topics[c], 2))) for _ in range(per)]
        (root / f"{c}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_cli_wiki_and_compare(tmp_path, monkeypatch, capsys):
    root = _write_wiki(tmp_path / "wiki", N=4, per=30)
    monkeypatch.setattr(eval_models, "load_model", lambda spec, sentences=None: WordHashEncoder())
    out_a = tmp_path / "a.json"
    assert (
        main(
            [
                "eval",
                "wiki",
                "--model",
                "hash",
                "--data",
                str(root),
                "--classes",
                "4",
                "--split-seed",
                "0",
                "--epochs",
                "5",
                "--batch-size",
                "16",
                "--output",
                str(out_a),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "| Mean classifier | Linear classifier |" in printed
    res = json.loads(out_a.read_text())
    assert res["kind"] == "wiki" and res["results"]["classes"] == 4
    # the topic words separate the articles: both classifiers far above chance (25%)
    assert res["results"]["mean_classifier"]["acc"] > 60
    assert res["results"]["linear"]["acc"] > 60
    b = json.loads(out_a.read_text())
    b["results"]["linear"]["acc"] -= 1.5
    b["name"] = "other"
    out_b = tmp_path / "b.json"
    out_b.write_text(json.dumps(b))
    assert main(["eval", "compare", str(out_a), str(out_b)]) == 0
    cmp = capsys.readouterr().out
    assert "| linear |" in cmp and "-1.50" in cmp


def test_cli_senteval_subcommand(tmp_path, monkeypatch, capsys):
    from qt_hard.data.sources import senteval as senteval_source
    from test_eval_senteval import HashBoW, fixture_lines, write_senteval

    data = write_senteval(tmp_path / "se", n=40)
    monkeypatch.setattr(senteval_source, "SENTEVAL_LINES", fixture_lines(40))
    monkeypatch.setattr(eval_models, "load_model", lambda spec, sentences=None, tokenizer=None: HashBoW(dim=8))
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                "senteval",
                "--model",
                "hash",
                "--tasks",
                "CR,TREC",
                "--data",
                str(data),
                "--kfold",
                "3",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert table.splitlines()[0].startswith("| Model | MR | CR |")
    res = json.loads(out.read_text())
    assert set(res["results"]) == {"CR", "TREC"} and res["protocol"]["kfold"] == 3
    assert "seconds" in res["results"]["CR"]
    # a user error now: one line, exit status 2
    assert main(["eval", "senteval", "--model", "hash", "--tasks", "XX", "--data", str(data)]) == 2
    assert "unknown SentEval task 'XX'" in capsys.readouterr().err


def _trained_run(tmp_path, split_seed):
    """A folder laid out like `qt-hard train`'s output: OUT/config.yaml next to OUT/final/."""
    import yaml

    run = tmp_path / "run"
    (run / "final").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"data": {"kind": "wiki", "seed": split_seed}}))
    return run


def test_cli_wiki_tests_on_the_split_of_the_training_run(tmp_path, monkeypatch):
    """--seed is the classifier's; the split is the one the model was trained on (data.seed of its
    run), so no test sentence is one the encoder trained on."""
    import qt_hard.evaluation.wiki as wiki_eval
    from qt_hard.data.wiki import load_wiki

    root = _write_wiki(tmp_path / "wiki", N=4, per=30)
    run = _trained_run(tmp_path, split_seed=3)
    monkeypatch.setattr(eval_models, "load_model", lambda spec, sentences=None: WordHashEncoder())
    seen = {}
    real = wiki_eval.run_wiki
    monkeypatch.setattr(
        wiki_eval, "run_wiki", lambda enc, data, n, **kw: seen.update(data=data, **kw) or real(enc, data, n, **kw)
    )
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                "wiki",
                "--model",
                str(run / "final"),
                "--data",
                str(root),
                "--classes",
                "4",
                "--seed",
                "1",
                "--epochs",
                "2",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    trained_on = set(load_wiki(root, classes=4, seed=3, cache_dir=False).train_sentences)
    assert seen["seed"] == 1  # the classifier's seed
    assert not set(seen["data"].test_sentences) & trained_on
    assert json.loads(out.read_text())["protocol"]["split_seed"] == 3


def test_cli_wiki_split_seed_must_be_known_and_agree(tmp_path, monkeypatch, capsys):
    root = _write_wiki(tmp_path / "wiki", N=4, per=30)
    monkeypatch.setattr(eval_models, "load_model", lambda spec, sentences=None: WordHashEncoder())
    # a user error: one line and status 2, no traceback
    assert main(["eval", "wiki", "--model", "hash", "--data", str(root), "--classes", "4"]) == 2
    assert "pass --split-seed" in capsys.readouterr().err
    run = _trained_run(tmp_path, split_seed=3)
    argv = ["eval", "wiki", "--model", str(run / "final"), "--data", str(root), "--classes", "4", "--split-seed", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--split-seed 0 differs from data.seed=3" in err[0]


def test_readme_eval_wiki_reads_the_wiki_n_training_reads():
    """The README's `eval wiki` quick start reads the model `qt-hard train configs/bow_wiki_smoke.yaml`
    writes, and a Wiki-N folder the README builds with `qt-hard data wiki` with the config's articles
    and minimum sentences (the same classes and sentences the run trained on)."""
    import shlex
    from pathlib import Path

    from qt_hard.cli import build_parser
    from qt_hard.training.config import load_config

    repo = Path(__file__).resolve().parents[1]
    cfg = load_config(repo / "configs" / "bow_wiki_smoke.yaml")
    readme = (repo / "README.md").read_text().splitlines()
    evals = [ln for ln in readme if ln.startswith("qt-hard eval wiki") and "bow_wiki_smoke" in ln]
    builds = {}
    for ln in readme:
        if ln.startswith("qt-hard data wiki"):
            args = build_parser().parse_args(shlex.split(ln.split("#")[0])[1:])
            builds[Path(args.out)] = (args.articles, args.sentences)
    assert evals, "the README has no eval wiki quick start for bow_wiki_smoke"
    for line in evals:
        argv = shlex.split(line.split("#")[0])
        data = Path(argv[argv.index("--data") + 1])
        assert Path(argv[argv.index("--model") + 1]) == Path(cfg.out_dir) / "final"
        assert builds.get(data) == (cfg.data.articles, cfg.data.min_sentences), (data, builds)
