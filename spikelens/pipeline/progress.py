"""How a sweep tells its caller how far it got: runs done of the total, points read, warnings.

`api.analyze(progress=...)` takes a plain callable (called with each run's name, as before) or an
object with `start(total)` and `advance(runs, warnings)`; the CLI's progress bar is the latter.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

from ..model.report import RunReport


class SweepProgress(Protocol):
    def start(self, total: int) -> None:
        """The number of log groups (usually runs) the sweep will report."""

    def advance(self, runs: list[RunReport], warnings: int) -> None:
        """One group done: the runs it gave and how many warnings (damaged files) it raised."""


class _Names:
    """A plain callable told each run's name."""

    def __init__(self, callback: Callable[[str], Any]) -> None:
        self.callback = callback

    def start(self, total: int) -> None:
        return None

    def advance(self, runs: list[RunReport], warnings: int) -> None:
        for run in runs:
            self.callback(run.run)


def as_progress(progress: Any) -> SweepProgress | None:
    if progress is None:
        return None
    if hasattr(progress, "advance") and hasattr(progress, "start"):
        return progress
    return _Names(progress)
