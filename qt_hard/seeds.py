"""Seeds as numpy takes them: refused where the config or the command line is checked."""

from __future__ import annotations

from qt_hard.errors import ConfigError

__all__ = ["SEED_MAX", "check_seed", "seed_argument"]

# numpy's seeds (``np.random.seed``, ``RandomState``) are integers in [0, 2**32 - 1]; torch takes more,
# but a seed reaches both.
SEED_MAX = 2**32 - 1


def check_seed(seed: int, name: str, error: type[Exception] = ConfigError) -> int:
    """``seed`` when numpy can take it (an integer in [0, :data:`SEED_MAX`]); else ``error`` naming
    ``name`` (the key or option), raised where the config or the arguments are checked, not as
    numpy's traceback once the work has begun."""
    if not 0 <= seed <= SEED_MAX:
        raise error(f"{name} must be an integer in [0, {SEED_MAX}] (numpy's seeds), got {seed}")
    return seed


def seed_argument(text: str) -> int:
    """An ``argparse`` type for a ``--seed`` option: :func:`check_seed` of the integer ``text``."""
    import argparse

    try:
        return check_seed(int(text), "the seed", argparse.ArgumentTypeError)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the seed must be an integer, got {text!r}") from None
