"""Training arguments shared by the tests that run sentence-transformers' trainer on the CPU."""

from __future__ import annotations


def cpu_training_args(tmp_path, **steps):
    """``SentenceTransformerTrainingArguments`` for a few CPU steps of batch 8 at lr 1e-4, seed 0, logging
    every step, saving nothing; ``steps`` gives ``max_steps`` or ``num_train_epochs``."""
    from sentence_transformers import SentenceTransformerTrainingArguments

    return SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "run"),
        **steps,
        per_device_train_batch_size=8,
        learning_rate=1e-4,
        warmup_steps=0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=0,
        dataloader_num_workers=0,
    )
