"""Training: config dataclasses (``config``), the pipeline interface (``pipeline``), the accelerate
loop (``loop.train``) and the CLI. Modalities live in pipelines (``qt_hard.text``, ``qt_hard.graph``),
found through ``qt_hard.pipelines``."""

from qt_hard.training.config import Config, ConfigError, load_config  # noqa: F401
