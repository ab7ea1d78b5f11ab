"""`spikelens version` and `spikelens --version`: what is installed, for bug reports.

How a log is read depends on the libraries underneath (a protobuf or wandb upgrade can
change what an event file or a .wandb file yields), so the JSON names their versions.
"""
from __future__ import annotations

import json
import platform
from importlib import metadata

import typer

from .. import __version__
from . import app

LIBRARIES = ("polars", "numpy", "scipy", "pyarrow", "protobuf", "tensorboard", "wandb", "crc32c", "mlflow",
             "pandas", "torch", "typer", "rich")
"""The readers' and renderers' libraries; optional ones are null when not installed."""


def installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    from ..discover import importers

    return {"spikelens": __version__, "python": platform.python_version(), "platform": platform.platform(),
            "readers": list(dict.fromkeys(imp.name for imp in importers())),
            "libraries": {name: installed(name) for name in LIBRARIES}}


@app.command("version")
def version_cmd() -> None:
    """Print spikelens's version and those of the libraries it reads logs with, as JSON.

    Example: [bold]spikelens version[/]
    """
    typer.echo(json.dumps(versions(), indent=1))
