"""The papers the negatives' parts implement: :class:`Paper` and one constant per paper.

A part of :mod:`qt_hard.negatives.registry` names its papers in its ``paper``; the assembled strategy
cites those of the parts that act (``NegativeStrategy.papers``), which the sentence-transformers plugin's
``citation`` (BibTeX), qt-hard's model cards (:meth:`Paper.reference`) and the docs' option table
(:meth:`Paper.cite`) read.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    """A paper a part implements: a BibTeX entry (sentence-transformers' model card reads a loss's
    ``citation``) and the short and one-line references of qt-hard's own tables and model cards.

    ``authors`` are "Last, First" (BibTeX's unambiguous form; "others" ends a truncated list), ``venue``
    the proceedings (an ``inproceedings`` entry; empty for a preprint) with ``short`` its acronym."""

    key: str
    title: str
    authors: tuple[str, ...]
    year: str
    venue: str = ""
    short: str = ""
    eprint: str = ""

    def bibtex(self) -> str:
        """The BibTeX entry, between newlines (an arXiv ``eprint`` brings its ``archivePrefix``)."""
        fields = {"title": self.title, "author": " and ".join(self.authors), "booktitle": self.venue}
        fields.update(year=self.year, eprint=self.eprint, archivePrefix="arXiv" if self.eprint else "")
        body = "".join(f"      {name}={{{value}}},\n" for name, value in fields.items() if value)
        return f"\n@{'inproceedings' if self.venue else 'misc'}{{{self.key},\n{body}}}\n"

    def _last_names(self) -> list[str]:
        return [a.split(",")[0].strip() for a in self.authors if a != "others"]

    def cite(self) -> str:
        """The short citation, "Robinson et al. 2021" (two authors: "A & B 2021")."""
        names = self._last_names()
        if len(names) == 1 and "others" not in self.authors:
            who = names[0]
        elif len(names) == 2 and "others" not in self.authors:
            who = " & ".join(names)
        else:
            who = f"{names[0]} et al."
        return f"{who} {self.year}"

    def reference(self) -> str:
        """One line: "Robinson, Chuang, Sra & Jegelka, *Title* (ICLR 2021)"; five authors or more: "A et al."."""
        names = self._last_names()
        if len(names) >= 5 or "others" in self.authors:
            who = f"{names[0]} et al."
        else:
            who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " & " + names[-1]
        where = f"{self.short} {self.year}" if self.short else (f"arXiv {self.eprint}" if self.eprint else self.year)
        return f"{who}, *{self.title}* ({where})"


_ICLR = "International Conference on Learning Representations"
OORD_2018 = Paper(
    "oord2018representation",
    "Representation Learning with Contrastive Predictive Coding",
    ("van den Oord, Aaron", "Li, Yazhe", "Vinyals, Oriol"),
    "2018",
    eprint="1807.03748",
)
CHUANG_2020 = Paper(
    "chuang2020debiased",
    "Debiased Contrastive Learning",
    ("Chuang, Ching-Yao", "Robinson, Joshua", "Lin, Yen-Chen", "Torralba, Antonio", "Jegelka, Stefanie"),
    "2020",
    "Advances in Neural Information Processing Systems",
    "NeurIPS",
    "2007.00224",
)
ROBINSON_2021 = Paper(
    "robinson2021contrastive",
    "Contrastive Learning with Hard Negative Samples",
    ("Robinson, Joshua", "Chuang, Ching-Yao", "Sra, Suvrit", "Jegelka, Stefanie"),
    "2021",
    _ICLR,
    "ICLR",
    "2010.04592",
)
WU_2021 = Paper(
    "wu2021conditional",
    "Conditional Negative Sampling for Contrastive Learning of Visual Representations",
    ("Wu, Mike", "Mosse, Milan", "Zhuang, Chengxu", "Yamins, Daniel", "Goodman, Noah"),
    "2021",
    _ICLR,
    "ICLR",
    "2010.02037",
)
JIANG_2022 = Paper(
    "jiang2022supervised",
    "Supervised Contrastive Learning with Hard Negative Samples",
    ("Jiang, Ruijie", "Nguyen, Thuan", "Ishwar, Prakash", "Aeron, Shuchin"),
    "2022",
)
JIANG_OT = Paper(
    "jiang2021hard",
    "Hard Negative Sampling via Regularized Optimal Transport for Contrastive Representation Learning",
    ("Jiang, Ruijie", "Ishwar, Prakash", "Aeron, Shuchin"),
    "2021",
)
ASH_2022 = Paper(
    "ash2022investigating",
    "Investigating the Role of Negatives in Contrastive Representation Learning",
    ("Ash, Jordan T.", "Goel, Surbhi", "Krishnamurthy, Akshay", "Misra, Dipendra"),
    "2022",
    "International Conference on Artificial Intelligence and Statistics",
    "AISTATS",
    "2106.09943",
)
SUN_2020 = Paper(
    "sun2020infograph",
    "InfoGraph: Unsupervised and Semi-supervised Graph-Level Representation Learning via Mutual Information "
    "Maximization",
    ("Sun, Fan-Yun", "Hoffmann, Jordan", "Verma, Vikas", "Tang, Jian"),
    "2020",
    _ICLR,
    "ICLR",
    "1908.01000",
)
LAN_2025 = Paper(
    "lan2025llave",
    "LLaVE: Large Language and Vision Embedding Models with Hardness-Weighted Contrastive Learning",
    ("Lan, Zhibin", "Niu, Liqiang", "Meng, Fandong", "Zhou, Jie", "Su, Jinsong"),
    "2025",
    eprint="2503.04812",
)
VERA_2025 = Paper(
    "vera2025embeddinggemma",
    "EmbeddingGemma: Powerful and Lightweight Text Representations",
    ("Schechter Vera, Henrique", "others"),
    "2025",
    eprint="2509.20354",
)
SOLATORIO_2024 = Paper(
    "solatorio2024gistembed",
    "GISTEmbed: Guided In-sample Selection of Training Negatives for Text Embedding Fine-tuning",
    ("Solatorio, Aivin V.",),
    "2024",
    eprint="2402.16829",
)
MOREIRA_2024 = Paper(
    "moreira2024nvretriever",
    "NV-Retriever: Improving text embedding models with effective hard-negative mining",
    (
        "Moreira, Gabriel de Souza P.",
        "Osmulski, Radek",
        "Xu, Mengyao",
        "Ak, Ronay",
        "Schifferer, Benedikt",
        "Oldridge, Even",
    ),
    "2024",
    eprint="2407.15831",
)
