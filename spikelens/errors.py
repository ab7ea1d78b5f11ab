"""Typed errors. The CLI turns each into a one-line message and exit code 2.

A user mistake (a missing path, an unreadable file, a bad option) is one of these,
never a bare exception with a traceback.
"""
from __future__ import annotations

from pathlib import Path


class SpikelensError(Exception):
    """Base class: everything spikelens raises on purpose."""

    exit_code = 2


class InputError(SpikelensError):
    """A path or file the user gave cannot be used."""

    def __init__(self, path: str | Path | None, problem: str):
        from .storage import display  # a remote copy's file or an MLflow pointer: named as the user named it

        self.path = None if path is None else display(path)
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


class ReplayError(SpikelensError):
    """The replay target, checkpoint or torch install is not usable."""
