"""Images/s of SimCLR's batch augmentation: ours (plain torch, ``qt_hard.vision.augment``) against
kornia's equivalent pipeline where kornia is installed, side by side on the same batches.

    python scripts/bench_augment.py [--batch 512] [--size 32] [--repeats 5] [--device cpu] [--threads 1] [--out F.jsonl]

Prints one JSON object per implementation (appended to ``--out`` with machine, date, commit, torch, threads,
load average and command), then a headline with the ratio (ours / kornia).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench, when this file is loaded by its path
import _bench  # noqa: E402


def _kornia_pipeline(size: int):
    import kornia.augmentation as K

    return torch.nn.Sequential(
        K.RandomResizedCrop((size, size), scale=(0.08, 1.0)),
        K.RandomHorizontalFlip(),
        K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=0.8),
        K.RandomGrayscale(p=0.2),
    )


def _best(fn, repeats: int, device) -> float:
    """The fastest of ``repeats`` calls, after one to warm up."""
    fn()
    _bench.sync(device)
    return min(_bench.timed(fn, 1, device) for _ in range(repeats))


def main(argv=None) -> int:
    ap = _bench.parser(__doc__)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from qt_hard.vision.augment import SimCLRAugment

    dev = torch.device(args.device)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (args.batch, 3, args.size, args.size), generator=g, dtype=torch.uint8).to(dev)
    ours = SimCLRAugment(size=args.size)
    gen = torch.Generator().manual_seed(1)
    rows = []
    t = _best(lambda: ours(x, gen, float_output=True), args.repeats, dev)
    rows.append({"impl": "qt_hard (plain torch)", "images_per_s": round(args.batch / t, 1), "seconds": t})
    try:
        pipe = _kornia_pipeline(args.size).to(dev)
        import kornia

        t = _best(lambda: pipe(x.float() / 255.0), args.repeats, dev)
        rows.append({"impl": f"kornia {kornia.__version__}", "images_per_s": round(args.batch / t, 1), "seconds": t})
    except ImportError:
        rows.append({"impl": "kornia", "images_per_s": None, "note": "not installed"})
    common = {
        "batch": args.batch,
        "size": args.size,
        "device": str(dev),
        "threads": args.threads,
        "torch": torch.__version__,
    }
    common.update(_bench.stamp(__file__, argv))
    _bench.emit([{**common, **r} for r in rows], args.out)
    if rows[1]["images_per_s"]:
        ratio = rows[0]["images_per_s"] / rows[1]["images_per_s"]
        print(
            f"augmentation on {dev}: ours {rows[0]['images_per_s']:.0f} images/s, kornia "
            f"{rows[1]['images_per_s']:.0f} images/s, ratio {ratio:.2f}x"
        )
    else:
        print(f"augmentation on {dev}: ours {rows[0]['images_per_s']:.0f} images/s (kornia not installed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
