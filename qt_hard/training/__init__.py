"""Training: config dataclasses (``config``), batch tasks (``tasks``), objectives built from
``qt_hard.losses`` (``objectives``), the accelerate loop (``loop.train``) and the CLI."""

from qt_hard.training.config import Config, ConfigError, load_config  # noqa: F401
