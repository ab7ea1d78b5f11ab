"""`spikelens ls` and `spikelens export`: what was found, and the frame written out."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List

import typer
from rich.markup import escape
from rich.table import Table

from .. import api, diagnostics
from ..errors import UsageError
from . import app
from .common import QUIET, Format, emit_warnings, stdout_console


@app.command("ls")
def ls_cmd(
    paths: List[Path] = typer.Argument(..., help="Log files or folders."),
    format: Format = typer.Option(Format.rich, "--format", "-f", help="rich or json."),
    quiet: bool = QUIET,
) -> None:
    """List the runs found under PATHS: format, segments, metrics with roles, steps, points.

    Example: [bold]spikelens ls runs/[/]
    """
    with diagnostics.collecting() as diag:
        runs = api.discover(*paths)
    emit_warnings(diag.lines, quiet)
    if format == Format.json:
        typer.echo(json.dumps({"schema": "spikelens.ls/1", "runs": runs}, indent=1, default=str))
        return
    table = Table(title=f"{len(runs)} run(s)")
    for col in ("run", "format", "segments", "steps", "points", "metrics (role)"):
        table.add_column(col, overflow="fold")
    for r in runs:
        pattern = r["meta"].get("pattern")
        fmt = ", ".join(r["formats"]) + (escape(f" [{pattern}]") if pattern else "")
        metrics = ", ".join(f"{m} ({role})" for m, role in r["metrics"].items())
        table.add_row(r["run"], fmt, str(len(r["segments"])), f"{r['first_step']}–{r['last_step']}",
                      str(r["points"]), metrics)
    stdout_console().print(table)


@app.command("export")
def export_cmd(
    paths: List[Path] = typer.Argument(..., help="Log files or folders."),
    output: Path = typer.Option(..., "--output", "-o", help="FILE.parquet or FILE.csv"),
    quiet: bool = QUIET,
) -> None:
    """Write the long frame of every run under PATHS to a Parquet or CSV file.

    Example: [bold]spikelens export runs/ -o all.parquet[/]
    """
    suffix = output.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise UsageError(f"{output}: output must end in .parquet or .csv")
    with diagnostics.collecting() as diag:
        frame = api.load(*paths)
    emit_warnings(diag.lines, quiet)
    write_frame(frame, output)
    if not quiet:
        typer.echo(f"wrote {frame.height} points to {output}", err=True)


def write_frame(frame, output: Path) -> None:
    """Write a frame as Parquet or CSV by the file's suffix."""
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix.lower() == ".parquet":
        frame.write_parquet(output)
    else:
        frame.write_csv(output)
