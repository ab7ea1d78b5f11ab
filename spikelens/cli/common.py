"""Options and helpers shared by several commands (streams, verbosity, formats)."""
from __future__ import annotations

import os
import sys
from enum import Enum
from typing import TYPE_CHECKING

import typer

from ..frame import ROLES

if TYPE_CHECKING:
    from rich.console import Console


class Format(str, Enum):
    rich = "rich"
    json = "json"
    markdown = "markdown"
    github = "github"
    concise = "concise"


def _broken_pipe(console) -> None:
    """The reader of a pipe left (`| head`): raise BrokenPipeError so the entry point
    stops the way it does for plain writes (quietly, exit 141), not with Rich's exit 1,
    which `check` would read as "findings"."""
    raise BrokenPipeError


def _content_wide(console, buffer) -> str:
    """Without a terminal, lines end where their content ends (a table or padding laid out
    for the content width leaves no run of spaces after it)."""
    from rich.console import Console

    from ..report.terminal import CONTENT_WIDTH

    text = Console._render_buffer(console, buffer)
    if console.width < CONTENT_WIDTH:
        return text
    return "\n".join(line.rstrip(" ") for line in text.split("\n"))


_STDOUT_CONSOLE: type | None = None


def _stdout_console_class() -> type:
    """The report console's class (Rich's Console with `_broken_pipe` and `_content_wide`),
    made on first use: Rich is imported by the commands that draw, not at start-up (a
    `--format json` analyze never needs it; importing it costs ~0.06 s of CPU)."""
    global _STDOUT_CONSOLE
    if _STDOUT_CONSOLE is None:
        from rich.console import Console

        _STDOUT_CONSOLE = type("_StdoutConsole", (Console,),
                               {"on_broken_pipe": _broken_pipe, "_render_buffer": _content_wide})
    return _STDOUT_CONSOLE


def stdout_console() -> Console:
    """The report's console. On a terminal it wraps to the terminal's width. In a pipe or a file
    (every CI log) nothing wraps: lines are as wide as their content (or `COLUMNS`, when set), so a
    record or a run name stays on one line for grep."""
    from ..report.terminal import CONTENT_WIDTH

    console_class = _stdout_console_class()
    console = console_class(file=sys.stdout, soft_wrap=False)
    if not console.is_terminal:
        console = console_class(file=sys.stdout, soft_wrap=True,
                                width=None if os.environ.get("COLUMNS", "").isdigit() else CONTENT_WIDTH)
    return console


def stderr_console() -> Console:
    """Messages on stderr: wrapped to a terminal's width, never wrapped without one (CI logs
    keep a warning and its file path on one line, grep-able)."""
    from rich.console import Console

    console = Console(file=sys.stderr, soft_wrap=False)
    console.soft_wrap = not console.is_terminal
    return console


def emit_warnings(lines: list[str], quiet: bool) -> None:
    """Warnings go to stderr, one line each, never onto a JSON stdout."""
    if quiet or not lines:
        return
    from rich.markup import escape

    err = stderr_console()
    for line in lines:
        err.print(f"[yellow]warning:[/] {escape(line)}", markup=True, highlight=False)


QUIET = typer.Option(False, "--quiet", "-q", help="Only errors on stderr.")
QUIET_RUNS = typer.Option(False, "--quiet", "-q",
                          help="For sweeps: only the runs with problems (one line each) and the summary line; "
                               "only errors on stderr. JSON output is unchanged.")
ALLOW_EMPTY = typer.Option(False, "--allow-empty",
                           help="Exit as usual when no run has a loss that could be read (the default is exit 2: "
                                "nothing read is not a pass).")
VERBOSE = typer.Option(False, "--verbose", "-v", help="More detail on stderr.")
# analysis settings that analyze and check both take (read by analyze.build_config)
CONFIG = typer.Option(None, "--config", metavar="FILE", help="spikelens.toml or pyproject.toml to read settings from.")
ROLE = typer.Option([], "--role", metavar="TAG=ROLE",
                    help=f"Override a metric's role (TAG may be a glob); ROLE is one of {', '.join(ROLES)}. "
                         "Repeatable.")
CHARTS = typer.Option(True, "--charts/--no-charts", help="Draw a small chart under each finding.")
PARAM = typer.Option([], "--param", metavar="DETECTOR.NAME=VALUE",
                     help="Override a detector parameter, DETECTOR being a kind or a code "
                          "(e.g. spike.recovery_fast_steps=500). Repeatable.")


def force_option(outputs: str, kept: str = "") -> typer.Option:
    """`--force`: the one overwrite policy (outputs.claim) said in each command's words."""
    return typer.Option(False, "--force",
                        help=f"Replace existing outputs ({outputs}); without it an output already there is "
                             f"refused, exit 2: nothing is overwritten silently. Never the logs read.{kept}")
