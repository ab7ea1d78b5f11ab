"""`spikelens export`: the stitched run written back as TensorBoard events or a W&B offline run."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from . import app
from .analyze import build_config
from .common import QUIET, emit_warnings


class ExportFormat(str, Enum):
    tensorboard = "tensorboard"
    wandb = "wandb"


@app.command("export")
def export_cmd(
    paths: List[Path] = typer.Argument(..., help="The parts of ONE run (as for spikelens stitch)."),
    output: Path = typer.Option(..., "--output", "-o", metavar="DIR|FILE",
                                help="Folder to write into (created; never inside the logs read); or FILE.parquet / "
                                     "FILE.csv: the long frame of every run under PATHS, as read."),
    mkdir: bool = typer.Option(False, "--mkdir", help="Create FILE's folder when it does not exist."),
    format: ExportFormat = typer.Option(ExportFormat.tensorboard, "--format", "-f", case_sensitive=False,
                                        help="tensorboard (an event file: tensorboard --logdir DIR) or wandb "
                                             "(an offline run folder: wandb sync DIR/<run>/wandb/offline-run-*)."),
    name: Optional[str] = typer.Option(None, "--name", help="Name of the exported run (default: the run's)."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE",
                                          help="spikelens.toml or pyproject.toml to read settings from."),
    quiet: bool = QUIET,
) -> None:
    """Write the stitched timeline of one run (superseded points dropped, restarted steps
    re-based) so TensorBoard or W&B show one clean curve per metric, no step twice.

    Example: [bold]spikelens export lightning_logs/ -o fixed/ --format tensorboard[/]

    Example: [bold]spikelens export wandb/offline-run-* -o fixed/ --format wandb[/]

    Example: [bold]spikelens export runs/ -o all.parquet[/]
    """
    from ..diagnostics import collecting
    from ..export.run import export
    from .ls import FRAME_SUFFIXES, export_frame

    if output.suffix.lower() in FRAME_SUFFIXES:
        export_frame(paths, output, mkdir=mkdir, quiet=quiet)
        return

    with collecting() as diag:
        folder, points = export(*paths, out=output, fmt=format.value, name=name, config=build_config(config, []))
    emit_warnings(diag.lines, quiet)
    if not quiet:
        typer.echo(f"wrote {points:,} points to {folder}", err=True)
