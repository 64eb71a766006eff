"""SciFact (Wadden et al. 2020) as BEIR ships it, into ``beir/scifact``: 5,183 abstracts, 1,109
claims, train and test judgements."""

from __future__ import annotations

from qt_hard.data.sources._beir_zip import BeirCounts, BeirZip
from qt_hard.data.sources._common import Source

URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"

SCIFACT = BeirZip(
    "scifact",
    # md5 published in BEIR's README (the datasets table); the size is the archive's.
    {"scifact.zip": Source(URL, md5="5f7d1de60b170fc8027bb7898e2efca1", size=2_816_079)},
    # documents, queries, and the judgement lines of each split (BEIR's scifact)
    BeirCounts(corpus=5183, queries=1109, judgements={"train": 919, "test": 339}),
)

DATASET = SCIFACT.dataset(
    "BEIR's SciFact in BEIR's layout: 5,183 abstracts, 1,109 claims, train and test qrels (3 MB zip)",
    "CC BY-NC 2.0 (SciFact, Wadden et al. 2020); cite BEIR (Thakur et al. 2021)",
)
