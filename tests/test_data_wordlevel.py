"""The Hugging Face word-level tokenizer: its trainer, ids, files, and agreement with NLTK's tokens."""

import json
import random

import pytest

from _nltk_reference import word_tokenize
from qt_hard.data.vocab import Vocab
from qt_hard.data.wordlevel import WordTokenizer, word_tokens
from qt_hard.paths import data_path

TRICKY = [
    'He said, "I won\'t go." Then he left.',
    "\"Where are you going?\" asked he; 'nowhere,' said I.",
    "It cost $3.88 (roughly 3,36 euros) at 3:30 p.m. in the U.S.",
    "I cannot; we're gonna wait -- and you'd better too...",
    "The dame's-school and the boys' books [sic] {x} <y>!",
    "“Curly,” she said, ‘quotes’ — and dashes – too.",
    "'Tis the season, ain't it?",
    "Don't, DON'T, can't.",
]


@pytest.mark.parametrize("sentence", TRICKY)
def test_tricky_sentences_match_nltk(sentence):
    assert word_tokens(sentence) == word_tokenize(sentence)


def test_case_kept_when_not_lowered():
    tok = WordTokenizer.train(["x"], lower=False)
    s = "Don't SHOUT, Mr. Smith CAN'T hear."
    assert not tok.lower and word_tokens(s, lower=False) == word_tokenize(s, lower=False)


def test_trainer_min_count_and_max_size():
    texts = ["a a a b b c", "a b d d d d"]
    tok = WordTokenizer.train(texts, min_count=2)
    v = tok.vocab()
    assert v.itos[:2] == ["<pad>", "<unk>"]
    assert set(v.itos[2:]) == {"a", "b", "d"}  # c seen once
    assert v.itos[2] in ("a", "d")  # most frequent first (a and d: 4 each)
    small = WordTokenizer.train(texts, min_count=1, max_size=2).vocab()
    assert len(small) == 4 and set(small.itos[2:]) == {"a", "d"}
    ids = tok.encode_batch(["a c zzz d", ""])
    assert ids[0] == [v["a"], 1, 1, v["d"]] and ids[1] == []
    assert tok.unk_rate(["a c zzz d"]) == pytest.approx(0.5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="min_count"):
        WordTokenizer.train(["a"], min_count=0)
    with pytest.raises(TypeError):
        WordTokenizer.train("a b c")
    with pytest.raises(TypeError):
        WordTokenizer.train(["a"]).encode_batch("a b")
    with pytest.raises(ValueError, match="<pad>"):
        WordTokenizer.from_vocab(Vocab(["a"], specials=("<unk>", "<pad>")))


def test_from_vocab_keeps_the_ids():
    v = Vocab.from_counts({"the": 2, "cat": 2, "a": 1})
    tok = WordTokenizer.from_vocab(v)
    assert tok.vocab() == v
    assert tok.encode("The cat sat.") == v.encode(word_tokenize("The cat sat."))


def test_tokenizer_json_roundtrip_and_other_loaders(tmp_path):
    tok = WordTokenizer.train(["The cat sat.", "The dog didn't."], lower=True)
    path = tok.save(tmp_path)
    assert path.name == "tokenizer.json" and json.loads(path.read_text())["model"]["type"] == "WordLevel"
    again = WordTokenizer.load(tmp_path)
    assert again.lower and again.vocab() == tok.vocab()
    assert again.encode_batch(["The DOG sat"]) == tok.encode_batch(["The DOG sat"])
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_file=str(path), unk_token="<unk>", pad_token="<pad>")
    assert fast("the dog didn't.", add_special_tokens=False)["input_ids"] == tok.encode("the dog didn't.")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="bad.json"):
        WordTokenizer.load(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError):
        WordTokenizer.load(tmp_path / "none")


def test_prefilter_gives_the_tokens_of_the_bare_alternation():
    """The look-aheads in front of the Treebank pattern only skip positions where no rule can match."""
    from qt_hard.data import wordlevel as W

    sentences = TRICKY + ["n't cannot gonna gotta wanna gimme lemme more'n d'ye", "Na TA me MEN 'n' '' `` ..."]
    try:
        from qt_hard.data.books import book_sentences, find_books

        files = find_books(data_path("books"))
        sentences += [s for f in random.Random(1).sample(files, 2) for s in book_sentences(f)]
    except FileNotFoundError:
        pass  # the hand-made sentences still run
    for lower in (True, False):
        fast, bare = W._backend(lower), W._backend(lower, W._TREEBANK_ALTERNATION)
        a = fast.pre_tokenizer.pre_tokenize_str
        b = bare.pre_tokenizer.pre_tokenize_str
        for s in sentences:
            n = fast.normalizer.normalize_str(s)
            assert a(n) == b(n), s


def _agreement(sentences):
    same = sum(word_tokens(s) == word_tokenize(s) for s in sentences)
    return same / len(sentences)


def test_agreement_with_nltk_on_books_and_wiki():
    """The share of sentences tokenized exactly as NLTK does, on a sample of the local books and of
    the Wikipedia dump behind Wiki-N (printed: ``pytest -s`` shows the figures)."""
    import _data

    books = _data.dataset("books")
    wiki = _data.dataset("wikipedia", "enwiki_wikiextractor_ge200sent.txt.xz")
    from qt_hard.data.books import book_sentences, find_books
    from qt_hard.data.wiki import iter_wiki_articles

    rng = random.Random(0)
    book_sents = []
    for f in rng.sample(find_books(books), 4):
        s = list(book_sentences(f))
        book_sents += rng.sample(s, min(500, len(s)))
    wiki_sents = []
    for art in iter_wiki_articles(wiki):
        wiki_sents += art.sentences()[:100]
        if len(wiki_sents) >= 2000:
            break
    a_books, a_wiki = _agreement(book_sents), _agreement(wiki_sents)
    print(f"\nidentical to NLTK: books {a_books:.4f} of {len(book_sents)}, wiki {a_wiki:.4f} of {len(wiki_sents)}")
    assert a_books > 0.99 and a_wiki > 0.99
