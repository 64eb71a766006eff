"""qt-hard: contrastive sentence embeddings with pluggable negatives."""

__version__ = "0.1.0"
from qt_hard.encoders import load_encoder  # noqa: E402
