"""A table's grid: named rows (each a set of config overrides, with its label and the paper's numbers
when a paper reports the row) crossed with the other axes (seeds, datasets, ...) into cells."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from qt_hard.errors import UserError

__all__ = ["GridError", "Row", "cells", "choose", "comma_list"]


class GridError(UserError, ValueError):
    """A grid asked for what it does not have: an unknown row, protocol or axis value."""


@dataclass(frozen=True)
class Row:
    """One row of a table: ``overrides`` of the base config (``section.key=value``) that make it,
    the ``label`` the table prints (its name when empty), and ``paper``: the paper's numbers for it
    (one per column) with ``source`` naming where they are printed."""

    name: str
    overrides: tuple[str, ...] = ()
    label: str = ""
    paper: tuple | None = None
    source: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def title(self) -> str:
        return self.label or self.name


def comma_list(text: str, cast=str) -> list:
    """``"a,b,"`` -> ``["a", "b"]`` (empty items left out), each item through ``cast``."""
    return [cast(x) for x in text.split(",") if x != ""]


def choose(known: Mapping | Sequence, names: Sequence[str], what: str) -> list[str]:
    """``names`` when each is one of ``known``, else a GridError naming the unknown ones and the choices."""
    bad = [n for n in names if n not in known]
    if bad:
        raise GridError(f"unknown {what} {bad}; choose from {', '.join(known)}")
    return list(names)


def cells(*axes: Sequence, done: set | frozenset = frozenset()) -> list[tuple]:
    """The cells of the axes' product, the first axis outermost, without those in ``done``."""
    return [c for c in itertools.product(*axes) if c not in done]
