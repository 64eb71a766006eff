"""NLTK's English word tokens: the reference ``qt_hard.data.wordlevel`` is checked against."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _tokenizer():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_tokenize(sentence: str, lower: bool = True) -> list[str]:
    """NLTK's ``NLTKWordTokenizer`` tokens of one sentence (the tokenizer behind
    ``nltk.word_tokenize`` without its punkt step, so no NLTK data is needed), lower-cased by default."""
    tokens = _tokenizer().tokenize(sentence)
    return [t.lower() for t in tokens] if lower else tokens
