"""Every trained model is a sentence-transformers folder.

For each model kind a run of a few steps is saved, then ``SentenceTransformer(OUT/final)`` and
``qt_hard.load_encoder(OUT/final)`` must encode alike (1e-5); the bag-of-words folder loads where
qt-hard cannot be imported; the model card names the loss and the config; an incomplete or corrupted
folder is an error naming the file; the old layout still loads; a transformer started from a
sentence-transformers folder keeps that folder's pooling and normalization; the encoders import
nothing of ``qt_hard.training``.
"""

from __future__ import annotations

from tests._synthetic import SYNTHETIC_DATA

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import qt_hard  # noqa: E402
from qt_hard.training.config import config_from_dict  # noqa: E402
from test_training import qt_config  # noqa: E402

SENTENCES = [
    "w1 w2 w3",
    "The cat sat on the mat.",
    "",
    "w7 w7 w9 w12 w3 w3 w1 " * 6,
    "<pad> w5 <unk>",
    "an unseen zebra",
]


def synthetic(tmp_path, name, model, **objective):
    return {
        "out_dir": str(tmp_path / name),
        "model": model,
        "data": dict(SYNTHETIC_DATA),
        "objective": {"negatives": "uniform", "temperature": 0.5, "normalize": False, "k": 4, **objective},
        "train": {
            "batch_size": 8,
            "steps": 3,
            "lr": 0.01,
            "log_every": 1,
            "progress": False,
            "trackers": ["csv"],
            "num_threads": 1,
        },
    }


def trained(tmp_path, kind):
    """OUT/final of a few-step run of model ``kind``."""
    from qt_hard.training.loop import train

    if kind == "bow":
        tree = synthetic(tmp_path, kind, {"kind": "bow", "dim": 16, "max_len": 6})
    elif kind in ("qt-gru", "qt-bigru", "qt-bow"):
        tree = qt_config(tmp_path, steps=3)
        tree["out_dir"] = str(tmp_path / kind)
        tree["model"]["encoder"] = kind.split("-")[1]
        tree["model"]["max_len"] = 6  # shorter than some sentences: both loaders must cut alike
    else:
        tree = synthetic(
            tmp_path, kind, {"kind": "hf", "hf_path": "minilm", "max_len": 12}, temperature=0.05, normalize=True
        )
        tree["train"].update(batch_size=4, steps=2, lr=1e-4)
    return train(config_from_dict(tree)) / "final"


def st_encode(folder, sentences, **kwargs):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", **kwargs).encode(list(sentences), batch_size=4)


@pytest.mark.parametrize("kind", ["bow", "qt-bow", "qt-gru", "qt-bigru", "hf"])
def test_sentence_transformers_encodes_as_load_encoder(tmp_path, kind):
    final = trained(tmp_path, kind)
    enc = qt_hard.load_encoder(final)
    words = enc.vocab.itos[2:12] if enc.vocab is not None else ["some", "words", "the", "model", "knows"] * 2
    sentences = [" ".join(words[:5]), " ".join(words[5:]).capitalize() + "."] + SENTENCES
    ours = enc.encode(sentences, batch_size=3)
    custom = kind in ("qt-gru", "qt-bigru")  # qt-hard's own module class: sentence-transformers 6 asks for trust
    if custom:
        with pytest.raises(ValueError, match="trust_remote_code"):
            st_encode(final, sentences)
    theirs = st_encode(final, sentences, trust_remote_code=custom)
    assert theirs.shape == ours.shape
    np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0)
    # Guard: real, distinct vectors (a constant encoder would pass the comparison).
    assert np.abs(ours[0] - ours[1]).max() > 1e-3
    meta = json.loads((final / "encoder.json").read_text())
    expected = {
        "bow": ["StaticEmbedding"],
        "qt-bow": ["StaticEmbedding"],
        "qt-gru": ["QuickThoughtsModule"],
        "qt-bigru": ["QuickThoughtsModule"],
        "hf": ["Transformer", "Pooling", "Normalize"],
    }[kind]
    assert meta["version"] == 2 and meta["modules"] == expected
    assert (final / "model.safetensors").is_file() and not (final / "weights.pt").exists()


def test_word_folders_cut_sentences_at_max_len_in_both_loaders(tmp_path):
    final = trained(tmp_path, "qt-gru")
    long = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12"
    cut = "w1 w2 w3 w4 w5 w6"  # max_len 6: the rest of the sentence never reaches the encoder
    enc = qt_hard.load_encoder(final)
    assert enc.featurizer.ids(long) == enc.featurizer.ids(cut)
    theirs = st_encode(final, [long, cut], trust_remote_code=True)
    np.testing.assert_allclose(theirs[0], theirs[1], atol=1e-6)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(final / "tokenizer.json"))
    assert tok.encode(long, add_special_tokens=False).ids == enc.featurizer.ids(long)
    # A literal "<pad>" is never the pad id 0 (a bag of words would leave it out of its mean).
    assert 0 not in tok.encode("<pad> w1", add_special_tokens=False).ids


def test_bag_of_words_folder_loads_without_qt_hard(tmp_path):
    final = trained(tmp_path, "bow")
    expected = qt_hard.load_encoder(final).encode(SENTENCES)
    np.save(tmp_path / "expected.npy", expected)
    script = (
        "import sys, json, numpy as np\n"
        "sys.modules['qt_hard'] = None  # importing qt_hard now fails\n"
        "try:\n    import qt_hard\nexcept ImportError:\n    pass\nelse:\n    raise SystemExit('qt_hard imported')\n"
        "from sentence_transformers import SentenceTransformer, util\n"
        f"m = SentenceTransformer({str(final)!r}, device='cpu')\n"
        f"v = m.encode({SENTENCES!r})\n"
        f"np.testing.assert_allclose(v, np.load({str(tmp_path / 'expected.npy')!r}), atol=1e-5)\n"
        "print('cos', float(util.cos_sim(v[0], v[1])))\n"
        "assert 'qt_hard' not in {k.split('.')[0] for k, x in sys.modules.items() if x is not None}\n"
    )
    offline = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=offline)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "cos" in proc.stdout


def test_model_card_names_the_loss_papers_and_config(tmp_path):
    final = trained(tmp_path, "qt-bow")
    card = (final / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: sentence-transformers")
    assert "ContextLoss" in card and "negatives `hard`" in card
    assert "Contrastive Learning with Hard Negative Samples" in card and "Quick-Thoughts" in card
    assert "```yaml" in card and "beta: 1.0" in card and "clip: rescaled" in card and "encoder: bow" in card
    assert "## SentEval" not in card  # none computed at training time
    from qt_hard.evaluation.report import with_senteval

    once = with_senteval(card, "| Model | CR |\n|---|---|\n| m | 70.0 |")
    twice = with_senteval(once, "| Model | CR |\n|---|---|\n| m | 71.0 |")
    assert twice.count("## SentEval") == 1 and "71.0" in twice and "70.0" not in twice


@pytest.mark.parametrize(
    "damage, word",
    [
        ("rm tokenizer.json", "tokenizer.json"),
        ("rm modules.json", "modules.json"),
        ("rm model.safetensors", "model.safetensors"),
        ("corrupt model.safetensors", "model.safetensors"),
        ("rm quick_thoughts_config.json", "quick_thoughts_config.json"),
    ],
)
def test_incomplete_or_corrupted_folder_names_the_file(tmp_path, damage, word):
    final = trained(tmp_path, "qt-gru")
    action, name = damage.split()
    if action == "rm":
        (final / name).unlink()
    else:
        (final / name).write_bytes(b"not a safetensors file")
    with pytest.raises((FileNotFoundError, ValueError), match=word.replace(".", r"\.")):
        qt_hard.load_encoder(final)


def test_other_encoder_versions_are_a_clear_error(tmp_path):
    """Only the sentence-transformers layout (version 2) loads; another version (or none) names
    the version it found."""
    from qt_hard.encoders import random_encoder

    enc = random_encoder({"kind": "bow", "dim": 8}, SENTENCES, seed=0)
    final = enc.save(tmp_path / "final")
    meta = json.loads((final / "encoder.json").read_text())
    for version in (1, None):
        meta["version"] = version
        (final / "encoder.json").write_text(json.dumps(meta))
        with pytest.raises(ValueError, match=f"unknown qt-hard encoder version {version!r}"):
            qt_hard.load_encoder(final)


def test_hf_training_starts_from_a_sentence_transformers_folder_and_keeps_its_modules(tmp_path):
    """model.hf_path = a sentence-transformers folder with CLS pooling and no Normalize (made here
    from MiniLM's transformer): training starts from its Transformer weights and the saved model keeps
    that pooling (and no normalization)."""
    from safetensors.torch import load_file
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from qt_hard.encoders.transformer import resolve_model_path
    from qt_hard.training.loop import train

    start = tmp_path / "cls_start"
    t = Transformer(resolve_model_path("minilm"), max_seq_length=16)
    SentenceTransformer(modules=[t, Pooling(t.get_embedding_dimension(), "cls")], device="cpu").save(
        str(start), create_model_card=False
    )
    tree = synthetic(
        tmp_path, "hf_cls", {"kind": "hf", "hf_path": str(start), "max_len": 12}, temperature=0.05, normalize=True
    )
    tree["train"].update(batch_size=4, steps=2, lr=1e-4)
    final = train(config_from_dict(tree)) / "final"
    modules = [m["type"].rsplit(".", 1)[1] for m in json.loads((final / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling"]  # no Normalize appeared
    pooling = json.loads((final / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode"] in ("cls", ["cls"])
    key = "encoder.layer.0.attention.self.query.weight"
    before, after = load_file(str(start / "model.safetensors")), load_file(str(final / "model.safetensors"))
    assert not torch.equal(before[key], after[key])  # trained from the folder's weights...
    assert (before[key] - after[key]).abs().max() < 0.05  # ...not from scratch
    ours = qt_hard.load_encoder(final).encode(SENTENCES)
    np.testing.assert_allclose(st_encode(final, SENTENCES), ours, atol=1e-5, rtol=0)
    assert not np.allclose(np.linalg.norm(ours[:2], axis=1), 1.0, atol=1e-3)  # unnormalized, as its start


def test_encoders_stand_alone(tmp_path):
    """A model folder loads, and a random baseline builds from a YAML, with the encoders alone."""
    final = trained(tmp_path, "qt-bow")
    script = (
        "import sys\n"
        "from qt_hard.encoders import load_encoder, random_encoder\n"
        f"v = load_encoder({str(final)!r}).encode(['w1 w2'])\n"
        "r = random_encoder('configs/bow_wiki_smoke.yaml', ['a b c'])\n"
        "assert r.dim == 128 and r.config.max_len == 128, r.config\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('qt_hard.training', 'qt_hard.text')))\n"
        "assert not bad, bad\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_eval_loads_qt_hard_folders_with_their_tokenizer_and_other_folders_with_st(tmp_path):
    from qt_hard.encoders.text import SentenceEncoder
    from qt_hard.encoders.transformer import resolve_model_path
    from qt_hard.evaluation.models import SentenceTransformerModel, load_model

    final = trained(tmp_path, "bow")
    for spec in (final, final.parent):
        assert isinstance(load_model(str(spec)), SentenceEncoder)  # --controls needs its tokenizer
    assert isinstance(load_model(resolve_model_path("minilm")), SentenceTransformerModel)
    copy = tmp_path / "plain_st"
    shutil.copytree(final, copy)
    (copy / "encoder.json").unlink()  # a folder sentence-transformers alone describes
    got = load_model(str(copy))
    assert isinstance(got, SentenceTransformerModel)
    np.testing.assert_allclose(got.encode(SENTENCES), load_model(str(final)).encode(SENTENCES), atol=1e-5)
