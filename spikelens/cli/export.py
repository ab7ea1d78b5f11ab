"""`spikelens export`: a run written for other tools. The stitched timeline of one run as
TensorBoard events or a W&B offline run (a folder), or the long frame of every run as one
Parquet or CSV file; the format is given (`--format`) or read from `-o`'s extension, and
the two must agree."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from . import app
from .analyze import build_config
from .common import QUIET, emit_warnings, force_option


class ExportFormat(str, Enum):
    parquet = "parquet"
    csv = "csv"
    tensorboard = "tensorboard"
    wandb = "wandb"


@app.command("export")
def export_cmd(
    paths: List[Path] = typer.Argument(..., help="The parts of ONE run (as for spikelens stitch); for parquet "
                                                 "and csv, any logs (every run under PATHS)."),
    output: Path = typer.Option(..., "--output", "-o", metavar="DIR|FILE",
                                help="FILE.parquet or FILE.csv: the long frame of every run under PATHS, as read; "
                                     "DIR (no extension): the run is written under DIR/<run> (DIR created; never "
                                     "inside the logs read)."),
    format: Optional[ExportFormat] = typer.Option(None, "--format", "-f", case_sensitive=False,
                                                  help="parquet or csv (one file), tensorboard (an event file: "
                                                       "tensorboard --logdir DIR) or wandb (an offline run folder: "
                                                       "wandb sync DIR/<run>/wandb/offline-run-*). Default: from "
                                                       "-o's extension (.parquet, .csv; none: tensorboard); one "
                                                       "that disagrees with -o is an error."),
    mkdir: bool = typer.Option(False, "--mkdir", help="Create FILE's folder when it does not exist."),
    name: Optional[str] = typer.Option(None, "--name", help="Name of the exported run (default: the run's)."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE",
                                          help="spikelens.toml or pyproject.toml to read settings from."),
    force: bool = force_option("FILE, or the run's folder DIR/<run>"),
    quiet: bool = QUIET,
) -> None:
    """Write the stitched timeline of one run (superseded points dropped, restarted steps
    re-based) so TensorBoard or W&B show one clean curve per metric, no step twice; or the
    long frame of every run under PATHS as Parquet or CSV.

    Example: [bold]spikelens export lightning_logs/ -o fixed/ --format tensorboard[/]

    Example: [bold]spikelens export wandb/offline-run-* -o fixed/ --format wandb[/]

    Example: [bold]spikelens export runs/ -o all.parquet[/]
    """
    from ..diagnostics import collecting
    from ..export.run import export
    from ..export.target import FILE_FORMATS, export_format

    fmt = export_format(output, format.value if format is not None else None)
    if fmt in FILE_FORMATS:
        _export_frame(paths, output, mkdir=mkdir, force=force, quiet=quiet)
        return
    with collecting() as diag:
        folder, points = export(*paths, out=output, fmt=fmt, name=name, config=build_config(config, []),
                                force=force)
    emit_warnings(diag.lines, quiet)
    if not quiet:
        typer.echo(f"wrote {points:,} points to {folder}", err=True)


def _export_frame(paths: List[Path], output: Path, *, mkdir: bool, force: bool, quiet: bool) -> None:
    """The long frame of every run under PATHS, as one Parquet or CSV file."""
    from .. import api, diagnostics
    from ..errors import UsageError
    from ..outputs import claim, refuse_overlap
    from .ls import output_folder, write_frame

    refuse_overlap(output, paths, "-o")  # the logs read are never written over, nor added to (even --force)
    claim(output, "-o", force=force)  # before reading: a refusal should not cost the whole read
    output_folder(output, mkdir)
    with diagnostics.collecting() as diag:
        frame = api.load(*paths)
    emit_warnings(diag.lines, quiet)
    try:
        write_frame(frame, output, force=force)
    except OSError as exc:
        raise UsageError(f"{output}: cannot write ({exc.strerror or exc})") from None
    if not quiet:
        typer.echo(f"wrote {frame.height} points to {output}", err=True)
