"""`spikelens export`: stitch one run and write its live timeline in a tracker's format."""
from __future__ import annotations

import os
from pathlib import Path

from .. import diagnostics
from ..errors import UsageError
from ..outputs import atomic_folder
from .target import FOLDER_FORMATS as FORMATS
from .timeline import live_points, outside_inputs, run_folder


def export(*paths: str | os.PathLike, out: str | os.PathLike, fmt: str = "tensorboard", name: str | None = None,
           config=None, force: bool = False) -> tuple[Path, int]:
    """Stitch the parts of one run (as `spikelens stitch` does) and write its live timeline
    under `out/<run>/`; returns the folder written and the number of points. An earlier
    export there is refused, or with `force` replaced whole."""
    from .. import api

    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    out = Path(out)
    outside_inputs(out, [str(p) for p in paths])
    report, frame = api.stitch(*paths, config=config, name=name)
    for line in report.warnings:
        diagnostics.warn(line)
    run = report.runs[0].run
    points = live_points(frame)
    if points.height == 0:
        raise UsageError(f"{run}: no values to export")
    folder = run_folder(out, run, force=force)
    try:
        with atomic_folder(folder, replace=force) as tmp:  # a killed export leaves no half run behind
            if fmt == "tensorboard":
                from .tensorboard import write_events

                written = write_events(points, tmp)
            else:
                from .wandb_offline import write_wandb

                written = write_wandb(points, tmp, run)
    except OSError as exc:
        raise UsageError(f"{folder}: cannot write the export ({exc.strerror or exc})") from None
    return (folder if fmt == "tensorboard" else folder / written.relative_to(tmp)), points.height
