"""Progress of a sweep on stderr, for a person at a terminal: runs done of the total, points read,
warnings (damaged files) so far and the time left. Shown under -q too; never when stderr is not a
terminal (a CI log keeps only the warnings)."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

_RICH_TERMINAL_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
"""Settings with which Rich may call a stream that is no tty a terminal: with any of them set,
Rich decides."""


class SweepBar:
    """A `pipeline.progress.SweepProgress` drawn as one transient Rich progress line."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.task = bar.add_task("reading logs", total=None, points=0, warnings="")
        self.points = 0
        self.warnings = 0

    def start(self, total: int) -> None:
        self.bar.update(self.task, total=total, description="runs")

    def advance(self, runs, warnings: int) -> None:
        self.points += sum(r.points for r in runs)
        self.warnings += warnings
        shown = f" · {self.warnings} warning{'s' if self.warnings != 1 else ''}" if self.warnings else ""
        self.bar.update(self.task, advance=1, points=self.points, warnings=shown)


@contextmanager
def sweep_progress(console: Console | None = None) -> Iterator[SweepBar | None]:
    if console is None and not _maybe_terminal(sys.stderr):
        yield None  # a pipe or a CI log: Rich is not even imported (~0.04 s of CPU at every start)
        return
    from rich.console import Console

    err = console or Console(file=sys.stderr)
    if not err.is_terminal:
        yield None
        return
    # imported only for a terminal: rich.progress costs ~0.04 s of CPU at every start otherwise
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeRemainingColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), MofNCompleteColumn(), BarColumn(bar_width=24),
               TextColumn("{task.fields[points]:,} points{task.fields[warnings]}"), TextColumn("ETA"),
               TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        yield SweepBar(bar)


def _maybe_terminal(stream) -> bool:
    """False only where Rich would surely say the stream is no terminal: it is no tty and no
    setting forces one."""
    if any(name in os.environ for name in _RICH_TERMINAL_ENV):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
