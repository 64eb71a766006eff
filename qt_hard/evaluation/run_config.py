"""The saved config of the training run behind a model folder, and what evaluation reads from it:
the run's ``note`` (printed under a table) and the seed of its Wiki-N 80/20 split.

``qt-hard train`` saves the resolved config as ``OUT/config.yaml`` next to ``OUT/final/``; a model
spec is either folder."""

from __future__ import annotations

from pathlib import Path

from qt_hard.errors import ArgumentError

__all__ = ["run_config_of", "run_note", "wiki_split_seed"]


def run_config_of(model_spec: str) -> Path | None:
    """The ``config.yaml`` of the training run that wrote model folder ``model_spec``: ``qt-hard
    train`` saves it as OUT/config.yaml next to OUT/final/ (looked for in the folder, then its parent)."""
    path = Path(model_spec).expanduser()
    if not path.is_dir():
        return None
    for candidate in (path / "config.yaml", path.parent / "config.yaml"):
        if candidate.is_file():
            return candidate
    return None


def run_note(model_spec: str) -> str:
    """The ``note`` of the training run that wrote ``model_spec`` (its saved config), or ""."""
    import yaml

    config = run_config_of(model_spec)
    if config is None:
        return ""
    try:
        note = (yaml.safe_load(config.read_text()) or {}).get("note") or ""
    except (OSError, yaml.YAMLError):
        return ""
    return " ".join(str(note).split())


def wiki_split_seed(model_spec: str, explicit: int | None) -> tuple[int, str]:
    """The seed of the Wiki-N 80/20 split to evaluate on, and where it came from.

    A model trained on Wiki-N by ``qt-hard train`` must be tested on the sentences it did not see:
    the split of its run (``data.seed`` of its saved config). Another seed would re-split the
    articles and put training sentences into the test set. An explicit ``--split-seed`` must agree
    with it; without a run config (MiniLM, ``random:``, other folders) it must be given."""
    from qt_hard.training.config import read_yaml_mapping

    config = run_config_of(model_spec)
    if config is not None:
        # A damaged config.yaml is refused in one line (ConfigError names it): the split seed it holds
        # decides which sentences are test sentences, so it is never guessed.
        data = read_yaml_mapping(config, "the run config of --model:").get("data") or {}
        if not isinstance(data, dict):
            raise ArgumentError(f"the run config of --model: {config} has a 'data' that is not a section")
        if data.get("kind") == "wiki":
            seed = data.get("seed", 0)
            if not isinstance(seed, int) or isinstance(seed, bool):
                raise ArgumentError(f"the run config of --model: {config} has data.seed {seed!r}, not an integer")
            if explicit is not None and explicit != seed:
                raise ArgumentError(
                    f"--split-seed {explicit} differs from data.seed={seed} of the run that trained "
                    f"{model_spec} ({config}): its test split would hold training sentences"
                )
            return seed, f"data.seed of {config}"
    if explicit is None:
        where = f"{config} is not a Wiki-N run" if config is not None else "no run config.yaml was found"
        raise ArgumentError(
            f"cannot tell which Wiki-N 80/20 split to test {model_spec!r} on ({where}); pass "
            f"--split-seed (qt-hard train's default data.seed is 0)"
        )
    return explicit, "--split-seed"
