"""Warnings that must reach the user without stopping the work.

Importers, detectors and the stitcher report damage they recovered from here
(a corrupt record skipped, a detector that crashed). The CLI prints them on stderr;
library users get them as `SpikelensWarning` through the `warnings` module and in
the report's `warnings` list.
"""
from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator


class SpikelensWarning(UserWarning):
    """Something was damaged or surprising, and spikelens carried on."""


@dataclass
class Diagnostics:
    """Collects warning lines during one call of the library."""

    lines: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        self.lines.append(message)


_local = threading.local()


def _stack() -> list[Diagnostics]:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def warn(message: str) -> None:
    """Record a warning line (and emit it through `warnings` for library users)."""
    from .sanitize import shown
    from .storage import display_text

    # a remote copy's temporary path is shown as its URL; no escapes or credentials reach an output
    message = shown(display_text(message))
    stack = _stack()
    if stack:
        stack[-1].warn(message)
    else:
        warnings.warn(message, SpikelensWarning, stacklevel=2)


@contextmanager
def collecting() -> Iterator[Diagnostics]:
    """Collect every `warn()` made inside the block instead of emitting it."""
    diag = Diagnostics()
    _stack().append(diag)
    try:
        yield diag
    finally:
        _stack().pop()
