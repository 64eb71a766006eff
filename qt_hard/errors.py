"""Errors that the user can fix: the command line prints them as one line, without a traceback.

``UserError`` marks a problem in what the user asked for or has on disk (a config key that does
not exist, a data folder that is missing, a model path with no saved model, more negatives than
candidates). Each subclass also derives from the built-in exception a caller would catch for it
(``ValueError``, ``FileNotFoundError``), so library code that catches those keeps working.
Anything else that escapes a command is a bug and keeps its traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem in the user's input or files; the message says what to change."""


class ConfigError(UserError, ValueError):
    """A config file, section or override that does not fit the schema; the message names the key."""


class DataMissingError(UserError, FileNotFoundError):
    """A dataset is not under the data root; the message names the ``qt-hard data get`` command."""


class ModelNotFoundError(UserError, FileNotFoundError):
    """No saved model where the user pointed."""


class NotEnoughCandidatesError(UserError, ValueError):
    """More negatives (``k``) were asked for than some anchor has candidates."""


class DeviceUnavailableError(UserError, ValueError):
    """A device was asked for (``--device cuda``) that torch does not see on this machine."""


class DataCorruptError(UserError, ValueError):
    """A data file that is there but damaged (wrong line count, a line that does not parse, a
    truncated archive); the message names the file and how to fetch it again."""


class OutputExistsError(UserError, FileExistsError):
    """An output folder that already holds a run (or is not a folder at all)."""


class CheckpointError(UserError, FileNotFoundError):
    """``--resume`` found no checkpoint it can load, or one that does not fit the given config."""


class ArgumentError(UserError, ValueError):
    """A command-line value that is not allowed (an unknown task, a fold count below 2)."""


class ModelCorruptError(UserError, ValueError):
    """A saved model folder whose files are there but cannot be read; the message names the file."""


class MissingFileError(UserError, FileNotFoundError):
    """A file named on the command line that is not there."""


class OutputLocationError(UserError, ValueError):
    """An output path that cannot be written: a folder where a file goes, a file where a folder
    goes, or a place the file system refuses; checked before any work is done."""


class WriteFailedError(UserError, OSError):
    """A file or folder that could not be written whole (a full disk, a quota, a read-only file
    system): the message names it and says that nothing earlier was replaced."""


class NonFiniteError(UserError, ValueError):
    """A NaN or infinite value where a number is needed: loss inputs, a training loss or gradient,
    embeddings to evaluate. The message says where it was found."""


class AllocationError(UserError, MemoryError):
    """A size that cannot be allocated on this machine, refused before the allocation with the
    number of bytes it would need."""
