"""Typed errors. The CLI turns each into a one-line message and exit code 2.

A user mistake (a missing path, an unreadable file, a bad option) is one of these,
never a bare exception with a traceback.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

path_shown: Callable[[str | os.PathLike], str] = os.fspath
"""How an error names a path. `storage` installs its own when it is imported (a file of a
remote copy or an MLflow pointer is named as the user named it): errors import nothing."""


class SpikelensError(Exception):
    """Base class: everything spikelens raises on purpose."""

    exit_code = 2

    def __str__(self) -> str:
        """Fit to print wherever it is shown: no terminal escapes from names or log text,
        no credentials from URLs (`sanitize.shown`)."""
        from .sanitize import shown

        return shown(super().__str__())


class InputError(SpikelensError):
    """A path or file the user gave cannot be used."""

    def __init__(self, path: str | Path | None, problem: str):
        self.path = None if path is None else path_shown(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path else problem)

    def __reduce__(self):  # rebuilt from its fields when it crosses a process (a worker, a Ray task)
        return type(self), (self.path, self.problem)


class NothingFound(InputError):
    """A folder held no file that any importer can read."""


class FormatError(InputError):
    """A file was claimed by an importer but its content is not that format."""


class ConfigError(SpikelensError):
    """The [tool.spikelens] table or a spikelens.toml is wrong."""


class SchemaError(SpikelensError):
    """A stage handed over a frame that does not follow the long-frame schema (a bug)."""

    def __init__(self, stage: str, problem: str):
        self.stage, self.problem = stage, problem
        super().__init__(f"{stage}: frame does not follow the schema: {problem}")

    def __reduce__(self):
        return type(self), (self.stage, self.problem)


class UsageError(SpikelensError):
    """Options that contradict each other or name unknown things."""


class OutputOverlap(UsageError):
    """An output path that is an input, holds one or lies inside one: never written (the
    user's logs are never replaced, deleted or added to)."""


class OutputExists(UsageError):
    """An output that is already there and that the command was not told to replace
    (`--force`): never overwritten silently."""


class ReplayError(SpikelensError):
    """The replay target, checkpoint or torch install is not usable."""
