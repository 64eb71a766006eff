"""Semantic similarity on frozen sentence embeddings: STS12-16, the STS Benchmark and SICK-R.

Two protocols, under distinct task names:

* **unsupervised (cosine)**: the score of a pair is the cosine of its two embeddings (0 where an
  embedding is all zeros, as SentEval's ``np.nan_to_num``), correlated with the gold scores,
  Pearson's r and Spearman's rho x100. ``STS12`` .. ``STS16`` follow SentEval's ``senteval/sts.py``
  (Conneau & Kiela 2018): SentEval's sets per year (``qt_hard.data.sources.sts.STS_SETS``), a pair
  whose gold line is empty is skipped, each set gets its own correlations, and the year two
  summaries: the mean over its sets (``pearson``, ``spearman``, the headline) and the mean weighted
  by scored pairs (``pearson_wmean``, ``spearman_wmean``). ``STSBenchmark-cos`` and
  ``SICKRelatedness-cos`` are the same cosine on the test split (the STS Benchmark of Cer et al.
  2017; SICK of Marelli et al. 2014), the numbers SimCSE and sentence-transformers'
  ``EmbeddingSimilarityEvaluator`` report; the dev split's Spearman is kept as ``devspearman``
  for choosing among models without the test split.
* **supervised (SentEval's)**: ``STSBenchmark`` and ``SICKRelatedness`` as ``senteval/sick.py``
  and ``senteval/tools/relatedness.py`` run them: features ``[|u - v|, u * v]``; the gold score
  ``y`` becomes the 5-class distribution of Tai et al. (2015, section 4.2), ``p[floor(y)] = y -
  floor(y)`` and ``p[floor(y) - 1] = floor(y) - y + 1`` (classes standing for the scores 1..5;
  SentEval applies the same formula to STS Benchmark scores below 1, whose distribution then sums
  to less than one, and so does this module); a softmax regression ``softmax(W x + b)`` (5
  outputs) trained with Adam (lr 1e-3, no weight decay) on the squared error to that
  distribution (``MSELoss``, mean over batch and classes), batches of 64 in a permutation drawn
  each epoch; after every 50 epochs the dev Pearson of the expected score ``p . (1..5)`` is
  computed, the best model so far kept, and training stops at the fourth round that does not
  improve on it (not necessarily consecutive, as in SentEval) or after 1,000 epochs; the test
  split is scored by the kept model. Every split is sorted as SentEval sorts it (by the words of
  A, of B, then the score; stable), and the seed (SentEval's 1111) seeds the permutations
  (``RandomState(seed)``, SentEval's ``np.random.seed``) and the layer's initialization
  (``torch.manual_seed``), so that on the same embeddings this runs SentEval's computation. SentEval
  runs it on CUDA only (it asserts ``torch.cuda.is_available()``); here it runs on the CPU, in
  float32 as SentEval does.

Files are read as SentEval reads them (UTF-8; STS12-16 with ``str.splitlines``, the STS Benchmark
and SICK line by line, ``strip().split('\\t')``), every sentence ``.split()`` into words and
handed to the encoder as ``' '.join(words)`` (``'.'`` when empty), as for the transfer tasks. Each
file is checked first (``qt_hard.data.sources.sts.sts_file_problems``: SentEval's line and pair
counts, columns, scores); a missing or damaged file is refused naming it.

Shapes: embeddings (n, d); features (n, 2d); targets (n, 5).
"""

from __future__ import annotations

import copy
import io
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "STS_YEARS",
    "COSINE_TASKS",
    "SUPERVISED_TASKS",
    "SIMILARITY_TASKS",
    "Pairs",
    "StsTask",
    "RelatednessTask",
    "load_similarity",
    "similarity_sentences",
    "cosine_scores",
    "relatedness_targets",
    "fit_relatedness",
    "evaluate_similarity",
]

STS_YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
COSINE_TASKS = STS_YEARS + ("STSBenchmark-cos", "SICKRelatedness-cos")
SUPERVISED_TASKS = ("STSBenchmark", "SICKRelatedness")
SIMILARITY_TASKS = COSINE_TASKS + SUPERVISED_TASKS

# SentEval's relatedness regression (senteval/tools/relatedness.py).
N_CLASSES = 5
BATCH_SIZE = 64
MAX_EPOCH = 1000
EPOCHS_PER_ROUND = 50
PATIENCE = 3  # rounds without improvement tolerated; the next one stops


def words_to_text(words: list[str]) -> str:
    """The string an encoder sees for one tokenized SentEval sentence (transfer and similarity tasks)."""
    return " ".join(words) if words else "."


@dataclass
class Pairs:
    """Sentence pairs (each a list of words) and their gold scores, in one split or set."""

    a: list[list[str]]
    b: list[list[str]]
    scores: np.ndarray

    def texts(self) -> tuple[list[str], list[str]]:
        return [words_to_text(w) for w in self.a], [words_to_text(w) for w in self.b]

    def embed(self, cache) -> tuple[np.ndarray, np.ndarray]:
        """The (n, d) embeddings of the A sides and of the B sides, from ``cache``."""
        a, b = self.texts()
        return cache.embed(a), cache.embed(b)

    def sorted(self) -> "Pairs":
        """SentEval's order: by (words of A, words of B, score), stable."""
        order = sorted(range(len(self.scores)), key=lambda i: (len(self.a[i]), len(self.b[i]), self.scores[i]))
        return Pairs([self.a[i] for i in order], [self.b[i] for i in order], self.scores[order])


@dataclass
class StsTask:
    """One STS year: its sets (SentEval's order), each with its scored pairs."""

    name: str
    sets: dict[str, Pairs]

    def texts(self) -> list[str]:
        return _texts_of(self.sets.values())


@dataclass
class RelatednessTask:
    """The STS Benchmark or SICK: train, dev and test pairs (each sorted as SentEval sorts them)."""

    name: str
    train: Pairs
    dev: Pairs
    test: Pairs

    def texts(self) -> list[str]:
        return _texts_of((self.train, self.dev, self.test))


def _texts_of(splits) -> list[str]:
    """The sentences of ``splits`` (each :class:`Pairs`): of each, the A sides, then the B sides."""
    return [t for pairs in splits for side in pairs.texts() for t in side]


def _checked(folder: Path, rel: str) -> Path:
    """``folder/rel`` after the checks of ``qt-hard data list``; a one-line error otherwise."""
    from qt_hard.data.sources.sts import sts_file_problems
    from qt_hard.errors import DataCorruptError, DataMissingError
    from qt_hard.paths import get_command

    path = folder / rel
    if not path.is_file():
        raise DataMissingError(f"similarity file missing: {path}; {get_command('sts')}")
    problems = sts_file_problems(folder, rel)
    if problems:
        raise DataCorruptError(
            f"similarity file {path} is damaged: {'; '.join(problems)}; `qt-hard data get sts --force` fetches it again"
        )
    return path


def _read(path: Path) -> str:
    with io.open(path, "r", encoding="utf-8-sig") as f:
        return f.read()


def load_sts(year: str, folder) -> StsTask:
    """One of STS12-16 from ``folder/STS/<year>-en-test`` (``folder``: the SentEval folder)."""
    from qt_hard.data.sources.sts import STS_SETS

    folder = Path(folder)
    sets = {}
    for name in STS_SETS[year]:
        base = f"STS/{year}-en-test"
        inputs = _read(_checked(folder, f"{base}/STS.input.{name}.txt")).splitlines()
        gold = _read(_checked(folder, f"{base}/STS.gs.{name}.txt")).splitlines()
        kept = [(line.split("\t"), g) for line, g in zip(inputs, gold) if g != ""]
        sets[name] = Pairs(
            [s1.split() for (s1, _), _ in kept],
            [s2.split() for (_, s2), _ in kept],
            np.array([float(g) for _, g in kept]),
        )
    return StsTask(year, sets)


def _read_columns(path: Path, a: int, b: int, score: int, header: bool) -> Pairs:
    A, B, y = [], [], []
    with io.open(path, "r", encoding="utf-8-sig") as f:
        for i, line in enumerate(f):
            if header and i == 0:
                continue
            cols = line.strip().split("\t")
            A.append(cols[a].split())
            B.append(cols[b].split())
            y.append(float(cols[score]))
    return Pairs(A, B, np.array(y)).sorted()


def load_relatedness(name: str, folder) -> RelatednessTask:
    """``STSBenchmark`` (``STS/STSBenchmark/sts-{train,dev,test}.csv``: columns 5 and 6 the
    sentences, 4 the score) or ``SICKRelatedness`` (``SICK/SICK_{train,trial,test_annotated}.txt``,
    a header line, columns 1 and 2 the sentences, 3 the score); the ``-cos`` names read the same."""
    folder = Path(folder)
    if name.startswith("STSBenchmark"):
        files, columns = [f"STS/STSBenchmark/sts-{s}.csv" for s in ("train", "dev", "test")], (5, 6, 4, False)
    else:
        files, columns = [f"SICK/SICK_{s}.txt" for s in ("train", "trial", "test_annotated")], (1, 2, 3, True)
    return RelatednessTask(name, *[_read_columns(_checked(folder, f), *columns) for f in files])


def load_similarity(name: str, folder) -> StsTask | RelatednessTask:
    """Load a task of :data:`SIMILARITY_TASKS` (canonical name) from the SentEval folder ``folder``."""
    if name in STS_YEARS:
        return load_sts(name, folder)
    if name in SIMILARITY_TASKS:
        return load_relatedness(name, folder)
    from qt_hard.errors import ArgumentError

    raise ArgumentError(f"unknown similarity task {name!r}; known: {', '.join(SIMILARITY_TASKS)}")


def similarity_sentences(tasks: Sequence[str], folder) -> list[str]:
    """The encoder-ready sentences of the given similarity tasks, each once, in first-seen order."""
    texts = []
    for name in tasks:
        task = load_similarity(name, folder)
        cosine = isinstance(task, RelatednessTask) and name in COSINE_TASKS  # dev and test only
        texts += _texts_of((task.dev, task.test)) if cosine else task.texts()
    return list(dict.fromkeys(texts))


# ------------------------------------------------------------------------------------------------
# unsupervised


def cosine_scores(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Row-wise cosine of (n, d) ``A`` and ``B``; 0 where either row is all zeros (SentEval's
    ``nan_to_num`` of the 0/0).

    Computed pair by pair with SentEval's arithmetic (``np.dot(u, v) / (norm(u) * norm(v))``): a
    vectorized sum rounds differently in the last bit, which reorders pairs whose cosines are
    equal (identical sentences, bag-of-words duplicates) and moved Spearman's rho by up to 0.04
    points on STS12."""
    A = np.nan_to_num(np.asarray(A, dtype=np.float64))
    B = np.nan_to_num(np.asarray(B, dtype=np.float64))
    out = np.empty(len(A))
    for i, (u, v) in enumerate(zip(A, B)):
        norms = np.linalg.norm(u) * np.linalg.norm(v)
        out[i] = np.dot(u, v) / norms if norms > 0 else 0.0
    return out


def _correlations(pred: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    """(Pearson, Spearman) x100; 0 where undefined (a constant prediction or gold), as SentEval's
    supervised tasks report it (``pr != pr``); its STS12-16 would report nan there."""
    from scipy.stats import pearsonr, spearmanr

    if np.ptp(pred) == 0 or np.ptp(gold) == 0:
        return 0.0, 0.0
    return 100.0 * float(pearsonr(pred, gold)[0]), 100.0 * float(spearmanr(pred, gold)[0])


def evaluate_sts(task: StsTask, cache) -> dict:
    """SentEval's STS12-16: per-set Pearson and Spearman, their mean over sets and their mean
    weighted by each set's scored pairs (x100)."""
    sets = {}
    for name, pairs in task.sets.items():
        pr, sr = _correlations(cosine_scores(*pairs.embed(cache)), pairs.scores)
        sets[name] = {"pearson": pr, "spearman": sr, "npairs": int(len(pairs.scores))}
    weights = np.array([s["npairs"] for s in sets.values()], dtype=np.float64)
    pear = np.array([s["pearson"] for s in sets.values()])
    spear = np.array([s["spearman"] for s in sets.values()])
    return {
        "pearson": float(pear.mean()),
        "spearman": float(spear.mean()),
        "pearson_wmean": float(np.average(pear, weights=weights)),
        "spearman_wmean": float(np.average(spear, weights=weights)),
        "npairs": int(weights.sum()),
        "sets": sets,
    }


def evaluate_cosine(task: RelatednessTask, cache) -> dict:
    """Cosine on the test split (Pearson, Spearman x100), and the dev split's Spearman."""
    pr, sr = _correlations(cosine_scores(*task.test.embed(cache)), task.test.scores)
    _, dev_sr = _correlations(cosine_scores(*task.dev.embed(cache)), task.dev.scores)
    return {
        "pearson": pr,
        "spearman": sr,
        "devspearman": dev_sr,
        "npairs": int(len(task.test.scores)),
        "ndev": int(len(task.dev.scores)),
    }


# ------------------------------------------------------------------------------------------------
# supervised (SentEval's relatedness regression)


def relatedness_targets(scores: np.ndarray, n_classes: int = N_CLASSES) -> np.ndarray:
    """(n, n_classes) float32: Tai et al.'s sparse distribution of each score (module docstring);
    class i stands for the score i + 1."""
    scores = np.asarray(scores, dtype=np.float64)
    out = np.zeros((len(scores), n_classes), dtype=np.float32)
    floor = np.floor(scores).astype(np.int64)
    rows = np.arange(len(scores))
    up = (floor >= 0) & (floor < n_classes)  # class floor(y) (score floor(y) + 1) gets y - floor(y)
    out[rows[up], floor[up]] = (scores - floor)[up]
    down = (floor >= 1) & (floor <= n_classes)  # class floor(y) - 1 (score floor(y)) gets floor(y) - y + 1
    out[rows[down], floor[down] - 1] = (floor - scores + 1)[down]
    return out


def pair_features(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """SentEval's ``np.c_[|u - v|, u * v]``: (n, 2d)."""
    return np.c_[np.abs(A - B), A * B]


def fit_relatedness(
    train_x: np.ndarray,
    train_scores: np.ndarray,
    dev_x: np.ndarray,
    dev_scores: np.ndarray,
    test_x: np.ndarray,
    seed: int = 1111,
) -> dict:
    """Train SentEval's relatedness regression (module docstring) and predict the test scores.

    ``*_x``: (n, 2d) pair features; scores: the gold scores in the same rows. Returns ``devpearson``
    (the best dev Pearson, as a fraction), ``yhat`` (test expected scores, (n_test,)), ``epochs``
    (epochs trained when the kept model was reached) and ``epochs_run``."""
    import torch
    from scipy.stats import pearsonr

    from .logreg import DEFAULT_THREADS, torch_threads

    rng = np.random.RandomState(seed)
    torch.manual_seed(seed)
    X = torch.from_numpy(np.asarray(train_x)).float()
    Y = torch.from_numpy(relatedness_targets(train_scores))
    dev = torch.from_numpy(np.asarray(dev_x)).float()
    test = torch.from_numpy(np.asarray(test_x)).float()
    r = np.arange(1, N_CLASSES + 1)
    with torch_threads(DEFAULT_THREADS):
        model = torch.nn.Sequential(torch.nn.Linear(X.shape[1], N_CLASSES), torch.nn.Softmax(dim=-1))
        optimizer = torch.optim.Adam(model.parameters(), weight_decay=0.0)
        loss_fn = torch.nn.MSELoss()
        epoch, best, best_epoch, misses, kept = 0, -1.0, 0, 0, None
        while epoch <= MAX_EPOCH:
            _train_round(model, optimizer, loss_fn, X, Y, rng)
            epoch += EPOCHS_PER_ROUND
            yhat = _expected_scores(model, dev, r)
            pr = float(pearsonr(yhat, dev_scores)[0]) if np.ptp(yhat) > 0 else 0.0
            pr = 0.0 if pr != pr else pr
            if pr > best:
                best, best_epoch, kept = pr, epoch, copy.deepcopy(model.state_dict())
            else:
                if misses >= PATIENCE:
                    break
                misses += 1
        model.load_state_dict(kept)
        return {"devpearson": best, "yhat": _expected_scores(model, test, r), "epochs": best_epoch, "epochs_run": epoch}


def _train_round(model, optimizer, loss_fn, X, Y, rng: np.random.RandomState) -> None:
    """EPOCHS_PER_ROUND epochs of mini-batch MSE between the model's (n, N_CLASSES) class probabilities and
    the targets ``Y``, each epoch in a new permutation drawn from ``rng``."""
    import torch

    model.train()
    for _ in range(EPOCHS_PER_ROUND):
        perm = rng.permutation(len(X))
        for i in range(0, len(X), BATCH_SIZE):
            idx = torch.from_numpy(perm[i : i + BATCH_SIZE]).long()
            loss = loss_fn(model(X[idx]), Y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def _expected_scores(model, Z, r: np.ndarray) -> np.ndarray:
    """(n,) the expected score ``sum_k r_k p_k`` of each row of ``Z`` (n, 2d) under the model, in batches."""
    import torch

    model.eval()
    with torch.no_grad():
        probs = np.concatenate([model(Z[i : i + BATCH_SIZE]).numpy() for i in range(0, len(Z), BATCH_SIZE)], axis=0)
    return probs @ r


def evaluate_relatedness(task: RelatednessTask, cache, seed: int = 1111) -> dict:
    """SentEval's supervised protocol on one task: test Pearson, Spearman (x100) and MSE of the
    regression chosen on dev."""
    from sklearn.metrics import mean_squared_error

    feats = {split: pair_features(*getattr(task, split).embed(cache)) for split in ("train", "dev", "test")}
    fit = fit_relatedness(feats["train"], task.train.scores, feats["dev"], task.dev.scores, feats["test"], seed=seed)
    pr, sr = _correlations(fit["yhat"], task.test.scores)
    return {
        "pearson": pr,
        "spearman": sr,
        "mse": float(mean_squared_error(task.test.scores, fit["yhat"])),
        "devpearson": 100.0 * fit["devpearson"],
        "ndev": int(len(task.dev.scores)),
        "ntest": int(len(task.test.scores)),
        "epochs": fit["epochs"],
        "epochs_run": fit["epochs_run"],
    }


def evaluate_similarity(name: str, folder, cache, seed: int = 1111) -> dict:
    """Load and evaluate one similarity task (canonical name) with the embeddings of ``cache``;
    adds ``encode_seconds`` (new sentences encoded for it), ``score_seconds`` and ``seconds``."""
    task = load_similarity(name, folder)
    enc_before = cache.seconds
    start = time.perf_counter()
    if isinstance(task, StsTask):
        res = evaluate_sts(task, cache)
    elif name in COSINE_TASKS:
        res = evaluate_cosine(task, cache)
    else:
        res = evaluate_relatedness(task, cache, seed=seed)
    encode = cache.seconds - enc_before
    res["encode_seconds"] = round(encode, 3)
    res["score_seconds"] = round(time.perf_counter() - start - encode, 3)
    res["seconds"] = round(time.perf_counter() - start, 3)
    return res
