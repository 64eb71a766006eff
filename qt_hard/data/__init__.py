"""Text data: sentence splitting/tokens, vocabularies, ordered-sentence book corpora,
the Wiki-3029 archive format, and a synthetic latent-class corpus.

    from qt_hard.data.tokenize import split_sentences
    from qt_hard.data.vocab import Vocab
    from qt_hard.data.books import load_books, load_hf_bookcorpus
    from qt_hard.data.wiki import build_wiki, load_wiki, WikiData
    from qt_hard.data.synthetic import latent_class_corpus

Importing this package is cheap: ``datasets`` loads on first use.
"""

from .books import dataset_column, load_books, load_hf_bookcorpus
from .synthetic import latent_class_corpus
from .tokenize import split_sentences
from .vocab import Vocab
from .wiki import WikiData, build_wiki, load_wiki

__all__ = [
    "split_sentences",
    "Vocab",
    "load_books",
    "load_hf_bookcorpus",
    "dataset_column",
    "build_wiki",
    "load_wiki",
    "WikiData",
    "latent_class_corpus",
]
