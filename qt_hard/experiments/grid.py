"""A table's grid: named rows (each a set of config overrides, with the paper's numbers when a paper
reports the row) crossed with the other axes (seeds, datasets, ...) into cells."""

from __future__ import annotations

from qt_hard.errors import ArgumentError, UserError
from qt_hard.experiments.contract import Row

__all__ = ["GridError", "Row", "by_name", "comma_list", "seed_list"]


class GridError(UserError, ValueError):
    """A grid asked for what it does not have: an unknown row, protocol or axis value."""


def by_name(*rows):
    """A table's rows by their ``name`` (the key ``--rows`` picks them by), in the order given."""
    return {r.name: r for r in rows}


def comma_list(text: str, cast=str) -> list:
    """``"a,b,"`` -> ``["a", "b"]`` (empty items left out), each item through ``cast``."""
    return [cast(x) for x in text.split(",") if x != ""]


def seed_list(text: str, flag: str = "--seeds") -> list[int]:
    """``"0,1,2"`` as integers; an :class:`ArgumentError` naming ``flag`` for anything else."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip() != ""]
    except ValueError:
        raise ArgumentError(f"{flag} must be comma-separated integers, got {text!r}") from None
    if not seeds:
        raise ArgumentError(f"{flag}: no seeds given")
    from qt_hard.seeds import check_seed

    return [check_seed(s, flag, ArgumentError) for s in seeds]
