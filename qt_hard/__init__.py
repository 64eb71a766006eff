"""qt-hard: contrastive sentence embeddings with pluggable negatives."""

__version__ = "0.1.0"
