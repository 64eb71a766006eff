"""A run folder before training: what ``qt-hard train`` may write into, and what ``--resume``
may continue. Nothing here imports torch, so the command line checks the folder before the
objective and the data.

``list_checkpoints`` finds the complete checkpoints (``checkpoints/step_N``; one being written is
``step_N.partial``); ``check_out_dir`` refuses a folder that is a file, cannot be created, holds a
run (without ``--resume`` / ``--overwrite``), or a ``--resume`` whose config differs from the run's
saved ``config.yaml`` beyond ``RESUME_MAY_CHANGE`` / ``RESUME_MAY_GROW``.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

from qt_hard.paths import RUN_ENTRIES
from qt_hard.training.config import Config, read_yaml_mapping, to_dict

log = logging.getLogger(__name__)

CHECKPOINT_PREFIX = "step_"
PARTIAL_SUFFIX = ".partial"
_CHECKPOINT_NAME = re.compile(rf"{CHECKPOINT_PREFIX}(\d+)")

# Config keys that ``--resume`` may change: bookkeeping that does not change what is trained.
# train.steps and train.epochs may only grow (a longer budget); any other difference is an error.
RESUME_MAY_CHANGE = (
    "out_dir",
    "note",
    "train.trackers",
    "train.checkpoint_every",
    "train.keep_checkpoints",
    "train.num_threads",
    "train.progress",
    "train.log_every",
)
RESUME_MAY_GROW = ("train.steps", "train.epochs")
# What a run leaves in its folder (its entries but the cache); any of them makes it a run --overwrite must name.
RUN_FILES = tuple(name for name in RUN_ENTRIES if name != "cache")


def list_checkpoints(out_dir: str | Path) -> list[Path]:
    """The complete checkpoints of a run, oldest first. A checkpoint is written as
    ``step_N.partial`` and renamed to ``step_N`` when every process has written its part, so an
    interrupted write is never listed."""
    root = Path(out_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [
        p
        for p in root.iterdir()
        if p.is_dir() and _CHECKPOINT_NAME.fullmatch(p.name) and (p / "trainer_state_0.pt").is_file()
    ]
    return sorted(found, key=lambda p: int(p.name[len(CHECKPOINT_PREFIX) :]))


def flat_keys(tree: dict, prefix: str = "", whole: tuple[str, ...] = ("options",)) -> dict:
    """``tree``'s leaves by dotted key (``train.lr``); a mapping under a key of ``whole`` stays one value."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict) and key not in whole:
            out.update(flat_keys(value, f"{prefix}{key}.", whole))
        else:
            out[f"{prefix}{key}"] = value
    return out


def finished_differences(cfg: Config, out: Path) -> list[str]:
    """The config keys in which ``cfg`` differs from the finished run's saved ``out/config.yaml`` in a
    way that changes what was trained (``RESUME_MAY_CHANGE`` left out; nothing may grow: a finished
    run of fewer steps is another run), each as ``key: saved -> given``; [] without a saved config."""
    saved = out / "config.yaml"
    if not saved.is_file():
        return []
    return resume_differences(_saved_config(saved), _plain(cfg), may_grow=())


def resume_differences(saved: dict, given: dict, may_grow=RESUME_MAY_GROW) -> list[str]:
    """The config keys in which ``given`` (the config of a ``--resume``) differs from ``saved``
    (the run's ``config.yaml``) in a way resume does not allow, each as ``key: saved -> given``.
    ``RESUME_MAY_CHANGE`` lists the keys that may differ, ``may_grow`` (``RESUME_MAY_GROW``) those
    that may only grow. A key only one side has (a run saved by a version of qt-hard with other keys) is not
    compared."""
    a, b = flat_keys(saved), flat_keys(given)
    bad = []
    for key in sorted(set(a) & set(b)):
        old, new = a.get(key), b.get(key)
        if old == new or key in RESUME_MAY_CHANGE:
            continue
        if key in may_grow and isinstance(old, (int, float)) and isinstance(new, (int, float)) and new >= old:
            continue
        bad.append(f"{key}: {old!r} -> {new!r}")
    return bad


def check_out_dir(
    cfg: Config, resume: bool = False, overwrite: bool = False, config_file: str | Path | None = None
) -> list[Path]:
    """Refuse, before anything is read or written, an output folder that cannot hold this run:
    a file, a path that cannot be created, a place ``qt_hard.paths.guard_output`` refuses (inside a
    saved model, on a run's own entries, inside the data it reads), the folder whose
    ``config.yaml`` is the ``config_file`` being read (training would write over it), a folder
    holding a run (without ``resume`` or ``overwrite``), ``overwrite`` of a folder that holds files
    of a run but no readable run config, ``resume`` without a checkpoint, with a saved config that
    cannot be read, or with a config that differs from the run's beyond ``RESUME_MAY_CHANGE``, a
    folder another run is training into. Returns the complete checkpoints (oldest first)."""
    from qt_hard.errors import OutputExistsError
    from qt_hard.paths import guard_output

    out = Path(cfg.out_dir).expanduser()
    if resume and overwrite:
        raise OutputExistsError("--resume continues the run in out_dir and --overwrite replaces it: pass one")
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"out_dir {out} is a file, not a folder: pick another --out")
    data = getattr(cfg, "data", None)
    inputs = {
        "the data folder": getattr(data, "path", None),
        "the data source": getattr(data, "wiki_source", None),
    }
    # A run's folder may hold its data (a Wiki-N built under OUT/cache): --overwrite removes only RUN_FILES.
    guard_output(out, "out_dir", inputs=inputs, folder=True, may_hold_inputs=True)
    if config_file is not None and not resume and _same_file(Path(config_file), out / "config.yaml"):
        raise OutputExistsError(
            f"the config file {config_file} is out_dir's config.yaml, which training writes; "
            "copy it elsewhere or pick another --out"
        )
    _check_writable(out)
    checkpoints = list_checkpoints(out)
    if not resume:
        _check_no_run_held(out, overwrite)
        return checkpoints
    _check_resumable(cfg, out, checkpoints)
    return checkpoints


def _check_writable(out: Path) -> None:
    """Refuse an out_dir that cannot be created where it is missing, or that another run is training into."""
    from qt_hard.errors import OutputExistsError
    from qt_hard.paths import creation_refused, nearest_existing

    probe = nearest_existing(out)
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise OutputExistsError(f"out_dir {out} cannot be created ({probe} is not a writable folder)")
    if probe != out:  # permissions do not tell every refusal (a superuser, a read-only or special file system)
        # Under a launcher only the main process tries (it creates the folder, run_folder_lock): another
        # rank's trial folder would collide with it.
        refused = creation_refused(out, probe) if int(os.environ.get("RANK", "0")) == 0 else None
        if refused:
            raise OutputExistsError(f"out_dir {out} cannot be created ({refused})")
    else:  # refused when another process is training into it (it holds the lock)
        with run_folder_lock(out):
            pass


def _check_no_run_held(out: Path, overwrite: bool) -> None:
    """Refuse, for a new run, a folder holding a run's files (without ``overwrite``), or, with it, one
    whose files are not a readable run's."""
    from qt_hard.errors import OutputExistsError

    held = [name for name in RUN_FILES if (out / name).exists()]
    if held and not overwrite:
        raise OutputExistsError(
            f"out_dir {out} already holds a run ({', '.join(held)}); pass --resume to continue it, "
            f"--overwrite to replace it, or pick another --out"
        )
    if held and not _holds_run_config(out):
        raise OutputExistsError(
            f"out_dir {out} holds {', '.join(held)} but no readable run config.yaml: --overwrite replaces "
            "only a folder that holds a qt-hard run; remove those files yourself or pick another --out"
        )


def _check_resumable(cfg: Config, out: Path, checkpoints: list[Path]) -> None:
    """Refuse ``--resume`` without a checkpoint, without a readable saved config, or with a config that
    differs from the saved one beyond ``RESUME_MAY_CHANGE`` and ``RESUME_MAY_GROW``."""
    from qt_hard.errors import CheckpointError

    if not checkpoints:
        raise CheckpointError(f"--resume: no checkpoint under {out / 'checkpoints'} (only complete ones count)")
    saved_file = out / "config.yaml"
    if not saved_file.is_file():
        raise CheckpointError(f"--resume: {saved_file} is missing, so the config cannot be checked against the run's")
    saved = _saved_config(saved_file)
    given = _plain(cfg)
    bad = resume_differences(saved, given)
    if bad:
        raise CheckpointError(
            f"--resume: the config differs from the run's {saved_file} in {'; '.join(bad)}. On resume only "
            f"{', '.join(RESUME_MAY_CHANGE[1:])} may change, and {', '.join(RESUME_MAY_GROW)} may grow"
        )


def _plain(cfg: Config) -> dict:
    """``cfg`` as plain data, as its saved ``config.yaml`` reads back."""
    import yaml

    return yaml.safe_load(yaml.safe_dump(to_dict(cfg)))


def _saved_config(saved_file: Path) -> dict:
    """The run's saved config, every key filled (defaults included), as plain data; a
    ``CheckpointError`` when it cannot be read as a config (damaged, cut short, foreign keys): a
    resume could then not be checked against the run."""
    from qt_hard.errors import CheckpointError
    from qt_hard.training.config import ConfigError, config_from_dict

    try:
        tree = read_yaml_mapping(saved_file, "the run's config")
        return _plain(config_from_dict(tree, check_pipeline=False))
    except ConfigError as err:
        raise CheckpointError(
            f"--resume: the run's {saved_file} cannot be read as a config ({' '.join(str(err).split())[:300]}), "
            "so a resume cannot be checked against the run; start a new run instead"
        ) from None


def _holds_run_config(out: Path) -> bool:
    """Whether ``out/config.yaml`` reads as a qt-hard run config (YAML with a ``train`` section)."""
    from qt_hard.training.config import ConfigError

    try:
        tree = read_yaml_mapping(out / "config.yaml", "config")
    except ConfigError:
        return False
    return isinstance(tree.get("train"), dict) and "out_dir" in tree


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


# Run folders this process holds (``run_folder_lock``): its own checks must not find them in use.
_HELD: set[str] = set()


@contextmanager
def run_folder_lock(out: Path):
    """Hold an exclusive lock (``flock``) on the run folder, created here, while the block runs, so
    that a second run started into the same folder is refused instead of writing over the first
    (``check_out_dir`` takes the lock for a moment). Under a launcher only the main process (``RANK``
    0) takes it; every process of one run shares the folder."""
    out = Path(out).expanduser()
    key = str(out.resolve()) if out.exists() else None
    if int(os.environ.get("RANK", "0")) != 0 or os.name != "posix" or key in _HELD:
        yield
        return
    import fcntl

    from qt_hard.errors import OutputExistsError

    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    key = str(out.resolve())
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OutputExistsError(
            f"out_dir {out} is in use by another training run (two runs into one folder would write over "
            "each other); wait for it to finish or pick another --out"
        ) from None
    _HELD.add(key)
    try:
        yield
    except BaseException:
        if created and not any(out.iterdir()):  # refused before writing anything: leave no folder
            out.rmdir()
        raise
    finally:
        _HELD.discard(key)
        os.close(fd)


def clear_run(out: Path) -> None:
    """--overwrite: remove the old run's files (not the token cache) when training starts, saying
    which (``check_out_dir`` has made sure the folder holds a run)."""
    held = [name for name in RUN_FILES if (out / name).exists()]
    if held:
        log.info("--overwrite: replacing the run in %s (%s)", out, ", ".join(held))
    for name in RUN_FILES:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
