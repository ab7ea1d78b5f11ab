"""`spikelens ls`: what was found; and how a long frame is written out (`export`, `stitch -o`)."""
from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import List

import typer
from rich.markup import escape
from rich.table import Table

from .. import api, diagnostics
from ..errors import UsageError
from ..outputs import write_output
from . import app
from .common import QUIET, emit_warnings, stdout_console


class LsFormat(str, Enum):
    rich = "rich"
    json = "json"
    markdown = "markdown"


@app.command("ls")
def ls_cmd(
    paths: List[Path] = typer.Argument(None, help="Log files or folders."),
    format: LsFormat = typer.Option(LsFormat.rich, "--format", "-f", case_sensitive=False,
                                    help="rich (terminal), json (schema spikelens.ls/1) or markdown."),
    formats: bool = typer.Option(False, "--formats", help="List the readers and what each looks for, then exit."),
    quiet: bool = QUIET,
) -> None:
    """List the runs found under PATHS: format, segments, metrics with roles, steps, points.

    Example: [bold]spikelens ls runs/[/]

    Example: [bold]spikelens ls runs/ --format json[/]

    Example: [bold]spikelens ls --formats[/] (what each reader looks for)
    """
    if formats:
        _list_readers(format)
        return
    if not paths:
        raise UsageError("spikelens ls: give log files or folders (or --formats to list the readers)")
    with diagnostics.collecting() as diag:
        runs = api.discover(*paths)
    emit_warnings(diag.lines, quiet)
    if format == LsFormat.json:
        typer.echo(json.dumps({"schema": "spikelens.ls/1", "runs": runs}, indent=1, default=str))
    elif format == LsFormat.markdown:
        typer.echo(runs_markdown(runs), nl=False)
    else:
        stdout_console().print(runs_table(runs))


def _list_readers(format: "LsFormat") -> None:
    from ..discover import readers

    rows = readers()
    if format == LsFormat.json:
        typer.echo(json.dumps({"schema": "spikelens.formats/1",
                               "readers": [{"name": n, "looks_for": what} for n, what in rows]}, indent=1))
    elif format == LsFormat.markdown:
        typer.echo("| reader | looks for |\n|---|---|\n" + "".join(f"| {n} | {w} |\n" for n, w in rows), nl=False)
    else:
        table = Table(title=f"{len(rows)} readers, tried in this order", title_justify="left")
        table.add_column("reader", no_wrap=True)
        table.add_column("looks for")
        for name, what in rows:
            table.add_row(escape(name), escape(what))
        stdout_console().print(table)


def _row(r: dict) -> list[str]:
    pattern = r["meta"].get("pattern")
    fmt = ", ".join(r["formats"]) + (f" [{pattern}]" if pattern else "")
    metrics = ", ".join(f"{m} ({role})" for m, role in r["metrics"].items())
    return [r["run"], fmt, str(len(r["segments"])), f"{r['first_step']}–{r['last_step']}", str(r["points"]), metrics]


LS_COLUMNS = ("run", "format", "segments", "steps", "points", "metrics (role)")


def runs_table(runs: list[dict]) -> Table:
    table = Table(title=f"{len(runs)} run(s)")
    for col in LS_COLUMNS:
        table.add_column(col, overflow="fold")
    for r in runs:
        table.add_row(*(escape(cell) for cell in _row(r)))
    return table


def runs_markdown(runs: list[dict]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [f"**{len(runs)} run(s)**", "", "| " + " | ".join(LS_COLUMNS) + " |",
             "|" + "---|" * len(LS_COLUMNS)]
    lines += ["| " + " | ".join(cell(c) for c in _row(r)) + " |" for r in runs]
    return "\n".join(lines) + "\n"


def output_folder(output: Path, mkdir: bool) -> None:
    """The folder an output file goes into must exist, or be created on request (--mkdir):
    a mistyped folder is an error, not a new tree somewhere."""
    folder = output.parent
    if folder.is_dir():
        return
    if folder.exists():
        raise UsageError(f"{folder}: not a folder (cannot write {output.name} into it)")
    if not mkdir:
        raise UsageError(f"{folder}: no such folder (create it, or pass --mkdir)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{folder}: cannot create the folder ({exc.strerror or exc})") from None


def write_frame(frame, output: Path, *, force: bool) -> None:
    """Write a frame as Parquet or CSV by the file's suffix (into a folder that exists),
    atomically: a killed or failed write leaves the previous file as it was; an existing
    file only with `force` (outputs.write_output). CSV text cells a spreadsheet would run
    as a formula are escaped (`csv_safe`). Columns held narrow in memory are written with
    the frame's public types (`frame.wide`)."""
    from ..frame import wide

    frame = wide(frame)
    if output.suffix.lower() == ".parquet":
        write_output(output, frame.write_parquet, "-o", force=force)
    else:
        write_output(output, csv_safe(frame).write_csv, "-o", force=force)


FORMULA_START = r"^[=+\-@\t\r]"
"""What makes a spreadsheet read a cell as a formula (OWASP's CSV injection list)."""


def csv_safe(frame):
    """Text cells that start as a formula does get a leading single quote, as OWASP's CSV
    injection guidance says (`=HYPERLINK(...)` from a run or metric name stays text);
    numbers are never touched."""
    import polars as pl

    text = [name for name, dtype in frame.schema.items()
            if dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))]
    return frame.with_columns(
        pl.when(pl.col(c).cast(pl.String).str.contains(FORMULA_START))
        .then(pl.lit("'") + pl.col(c).cast(pl.String))
        .otherwise(pl.col(c).cast(pl.String)).alias(c)
        for c in text
    )
