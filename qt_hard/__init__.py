"""qt-hard: contrastive sentence embeddings with pluggable negatives."""

__version__ = "0.1.0"

__all__ = ["load_encoder"]


def __getattr__(name):
    # Imported on first use, not with the package: the command line (``qt-hard --help``, a config
    # error) must not pay for torch at start-up.
    if name == "load_encoder":
        from qt_hard.encoders import load_encoder

        return load_encoder
    raise AttributeError(f"module 'qt_hard' has no attribute {name!r}")
