"""The hard-weight readings' diagnostics on one Quick-Thoughts batch, as the scores grow.

For each reading of ``clip`` (qt_hard.negatives.weightings.HardWeighting) and beta, the weight
diagnostics (``NegativeStrategy.diagnostics``: effective sample size, w_max / w_min, the share of
negatives pushed up, the floor) of one batch of B consecutive sentences whose f and g encodings are
Gaussian with the score standard deviation given (0.02 is a bag of words at initialisation, larger
values are later in training). The context layout, the joint positives and the estimator are those of
``configs/qt_books_smoke.yaml`` (t = 1, unnormalized, tau+ 0, no floor unless ``--floor``).

    python scripts/readings_at_scale.py --batch 400 --dim 768 --score-std 0.02,0.2,1,3

Prints one JSON line per (score std, reading, beta) and a last line with the reading that keeps the
largest effective sample size at the smallest scores.
"""

from __future__ import annotations

import argparse
import json
import math

import torch

from qt_hard.negatives import make_strategy
from qt_hard.negatives.scores import context_scores

READINGS = ("none", "rescaled", "fig14", "graph_code")


def batch_scores(batch: int, dim: int, score_std: float, seed: int):
    """Context scores of f, g ~ N(0, sigma^2 I) with sigma chosen so that <f_i, g_j> has ``score_std``."""
    g = torch.Generator().manual_seed(seed)
    sigma = math.sqrt(score_std / math.sqrt(dim))  # Var <f, g> = dim * sigma^4
    f = torch.randn(batch, dim, generator=g) * sigma
    h = torch.randn(batch, dim, generator=g) * sigma
    return context_scores(f, h, context=1, temperature=1.0, normalize=False, doc_ids=torch.zeros(batch))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=400)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--score-std", default="0.02,0.2,1,3")
    ap.add_argument("--betas", default="1,2")
    ap.add_argument("--floor", action="store_true", help="the estimator's e^{-1/t} floor (default: none)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    stds = [float(x) for x in args.score_std.split(",")]
    betas = [float(x) for x in args.betas.split(",")]
    best = {}
    for std in stds:
        scores = batch_scores(args.batch, args.dim, std, args.seed)
        for reading in READINGS:
            for beta in betas:
                strat = make_strategy(
                    "hard",
                    beta=beta,
                    clip=reading,
                    tau_plus=0.0,
                    floor="hard" if args.floor else "none",
                    positives="joint",
                )
                d = strat.diagnostics(scores)
                row = {
                    "score_std_target": std,
                    "reading": reading,
                    "beta": beta,
                    **{k: round(v, 4) for k, v in d.items() if k != "beta"},
                }
                print(json.dumps(row), flush=True)
                if std == stds[0]:
                    best[(reading, beta)] = d["ess_frac"]
    (reading, beta), ess = max(best.items(), key=lambda kv: kv[1])
    worst = min(best.items(), key=lambda kv: kv[1])
    print(
        f"at score std {stds[0]}: largest ESS {ess:.3f} ({reading}, beta {beta:g}); smallest "
        f"{worst[1]:.3f} ({worst[0][0]}, beta {worst[0][1]:g})"
    )


if __name__ == "__main__":
    main()
