"""qt-hard: contrastive sentence embeddings with pluggable negatives."""

__version__ = "0.1.0"

__all__ = ["load_encoder"]


def lazy_exports(package: str, homes: dict[str, str]):
    """A package's module ``__getattr__`` that imports each name of ``homes`` from its submodule
    (``package.homes[name]``) on first use, not with the package: the command line (``qt-hard --help``,
    a config error) must not pay for torch at start-up."""
    import importlib

    def __getattr__(name):
        if name in homes:
            return getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


__getattr__ = lazy_exports(__name__, {"load_encoder": "encoders"})
