"""The loop's optimizer, learning-rate schedule, gradient clipping and float32 matmul precision,
chosen by the ``train`` section of a config (``qt_hard.training.config.TrainConfig``).

* ``train.optimizer``: ``adam`` (the default; torch's fused kernel on a CPU or a GPU), ``adamw``
  (decoupled weight decay, Loshchilov & Hutter 2019), ``sparse_adam`` (torch's ``SparseAdam``, lazy
  Adam: only the embedding rows a batch touches are updated; every parameter must belong to an
  ``nn.Embedding`` / ``nn.EmbeddingBag``, whose gradients are then made sparse).
* ``train.lr_schedule``: ``constant``, ``linear`` or ``cosine``, after ``train.warmup_steps`` of
  linear warm-up. With T total steps, w warm-up steps and t the step being taken (0-based):

      factor(t) = (t + 1) / w                                  for t < w
      constant: 1;   linear: 1 - p;   cosine: (1 + cos(pi p)) / 2,   p = (t - w) / max(1, T - w)

  and lr_t = train.lr * factor(t). A pure function of the step: a resumed run sets the same
  rates without any scheduler state.
* Clipping: the global L2 norm over all gradients (accelerate's ``clip_grad_norm_``); sparse
  gradients are coalesced first (duplicate rows summed), so the norm is that of the dense gradient.
* ``train.tf32``: on CUDA, float32 matmuls and convolutions may use TF32 tensor cores (10-bit
  mantissa products, float32 accumulation); off gives full float32. No effect on a CPU.
"""

from __future__ import annotations

import math

import torch

from qt_hard.training.config import LR_SCHEDULES, OPTIMIZERS  # noqa: F401 (their home, re-exported)


def lr_factor(step: int, total: int, schedule: str = "constant", warmup: int = 0) -> float:
    """The multiplier of ``train.lr`` for the step taken after ``step`` steps (module doc)."""
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    p = min(1.0, (step - warmup) / max(1, total - warmup))
    if schedule == "linear":
        return 1.0 - p
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * p))
    raise ValueError(f"train.lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {schedule!r}")


def set_lr(optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def make_optimizer(module: torch.nn.Module, train_cfg, device: torch.device):
    """The optimizer ``train_cfg.optimizer`` names, over ``module``'s parameters."""
    name = train_cfg.optimizer
    fused = True if torch.device(device).type in ("cpu", "cuda") else None
    if name in ("adam", "adamw"):
        adam = torch.optim.Adam if name == "adam" else torch.optim.AdamW
        return adam(module.parameters(), lr=train_cfg.lr, weight_decay=train_cfg.weight_decay, fused=fused)
    if name == "sparse_adam":
        make_gradients_sparse(module)
        return torch.optim.SparseAdam(list(module.parameters()), lr=train_cfg.lr)
    raise ValueError(f"train.optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")


def make_gradients_sparse(module: torch.nn.Module) -> None:
    """Turn on sparse gradients of every embedding table; an error names a parameter outside one."""
    tables = [m for m in module.modules() if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))]
    covered = {id(p) for m in tables for p in m.parameters(recurse=False)}
    for name, p in module.named_parameters():
        if id(p) not in covered:
            raise ValueError(
                f"train.optimizer=sparse_adam updates embedding tables only, but {name!r} is not one; "
                "use adam or adamw for this model"
            )
    for m in tables:
        m.sparse = True


def gradient_norm(module: torch.nn.Module) -> float:
    """The global L2 norm of the gradients (sparse ones by their values), without changing them; NaN
    or infinite when a gradient is (what the training loop checks before each optimizer step)."""
    norms = []
    for p in module.parameters():
        if p.grad is None:
            continue
        g = p.grad.coalesce()._values() if p.grad.is_sparse else p.grad
        norms.append(torch.linalg.vector_norm(g, dtype=torch.float32))
    return float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0


def clip_gradients(accelerator, module: torch.nn.Module, max_norm: float) -> float:
    """Clip the global gradient norm to ``max_norm``; returns the norm before clipping."""
    params = [p for p in module.parameters() if p.grad is not None]
    if not any(p.grad.is_sparse for p in params):
        return float(accelerator.clip_grad_norm_(module.parameters(), max_norm))
    grads = []
    for p in params:
        if p.grad.is_sparse:
            p.grad = p.grad.coalesce()
            grads.append(p.grad._values())
        else:
            grads.append(p.grad)
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.to(g.dtype))
    return float(total)


def set_tf32(enabled: bool, device) -> bool:
    """Allow (or forbid) TF32 in float32 matmuls and cuDNN convolutions on CUDA; returns whether
    TF32 is now allowed. A process-wide setting; nothing changes on another device."""
    if torch.device(device).type != "cuda":
        return False
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    return enabled
