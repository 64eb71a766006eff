"""A token vocabulary: specials first (``<pad>`` = 0, ``<unk>`` = 1), then tokens by count."""

from __future__ import annotations

from typing import Iterable, Sequence

PAD = "<pad>"
UNK = "<unk>"


class Vocab:
    """Token <-> id mapping. Build with :meth:`from_counts`; unknown tokens encode to ``unk_id``."""

    def __init__(
        self, tokens: Sequence[str], specials: Sequence[str] = (PAD, UNK), counts: dict[str, int] | None = None
    ):
        specials = tuple(specials)
        if len(specials) < 2:
            raise ValueError("specials must hold at least a pad and an unk token, e.g. ('<pad>', '<unk>')")
        itos = list(specials) + [t for t in tokens if t not in specials]
        if len(set(itos)) != len(itos):
            raise ValueError("duplicate tokens in the vocabulary")
        self.specials = specials
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(itos)}
        self.counts: dict[str, int] = dict(counts or {})

    # ------------------------------------------------------------------ building
    @classmethod
    def from_counts(
        cls,
        counter: dict[str, int],
        min_count: int = 1,
        max_size: int | None = None,
        specials: Sequence[str] = (PAD, UNK),
    ) -> "Vocab":
        """The tokens of ``counter`` seen at least ``min_count`` times (the rest become ``<unk>``),
        most frequent first (ties by token), at most ``max_size`` non-special tokens."""
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        if max_size is not None and max_size < 0:
            raise ValueError(f"max_size must be >= 0, got {max_size}")
        kept = sorted(
            ((t, c) for t, c in counter.items() if c >= min_count and t not in specials),
            key=lambda tc: (-tc[1], tc[0]),
        )
        if max_size is not None:
            kept = kept[:max_size]
        return cls([t for t, _ in kept], specials=specials, counts=dict(kept))

    # ------------------------------------------------------------------ use
    @property
    def pad_id(self) -> int:
        return 0

    @property
    def unk_id(self) -> int:
        return 1

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        return self.stoi.get(token, 1)

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, specials={self.specials})"

    def encode(self, tokens: Iterable[str]) -> list[int]:
        get = self.stoi.get
        return [get(t, 1) for t in tokens]
