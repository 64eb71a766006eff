"""NFCorpus (Boteva et al. 2016) as BEIR ships it, into ``beir/nfcorpus``: 3,633 medical abstracts,
3,237 NutritionFacts.org titles as queries, train, dev and test judgements (graded 1/2 on dev and
test). The members of BEIR's zip are written unchanged; each file's sha256 is pinned."""

from __future__ import annotations

from qt_hard.data.sources._beir_zip import BeirCounts, BeirZip
from qt_hard.data.sources._common import Source

URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/nfcorpus.zip"

NFCORPUS = BeirZip(
    "nfcorpus",
    {
        # md5 published in BEIR's README (the datasets table); size and sha256 are the archive's.
        "nfcorpus.zip": Source(
            URL,
            sha256="efe5be03f8c5b86a5870102d0599d227c8c6e2484328e68c6522560385671b0b",
            md5="a89dba18a62ef92f7d323ec890a0d38d",
            size=2_448_432,
        )
    },
    BeirCounts(
        corpus=3633,
        queries=3237,
        judgements={"train": 110_575, "dev": 11_385, "test": 12_334},
        judged_queries={"train": 2590, "dev": 324, "test": 323},
        scores={"train": (1,), "dev": (1, 2), "test": (1, 2)},
    ),
    sha256={
        "corpus.jsonl": "10cc83ef1826b1425e6a87090b5140b39b27755d5a27e48215a88611c899991f",
        "queries.jsonl": "d024e6621b84925d485ae473d316a0c3af31c62c8068a59fb29d22f7613aef2a",
        "qrels/train.tsv": "6336b80f9bffc4f063f3aa450047ad35c0b7c534efe4a6ba35e16dbace047f6a",
        "qrels/dev.tsv": "b1d38b5e8f78c4a5820bce2b7ec2db54911d7690dc601e76811846b211180bd8",
        "qrels/test.tsv": "f8fba6ef3d4dd9c3a242a8ba4ae38276fc3622fce7dcbae764766d564542fd2a",
    },
)

DATASET = NFCORPUS.dataset(
    "BEIR's NFCorpus in BEIR's layout: 3,633 medical abstracts, 3,237 queries, train, dev and test qrels "
    "(2.4 MB zip, 9 MB on disk)",
    "free for academic/non-commercial use (https://www.cl.uni-heidelberg.de/statnlpgroup/nfcorpus/); "
    "cite Boteva et al. 2016 and BEIR (Thakur et al. 2021)",
)
