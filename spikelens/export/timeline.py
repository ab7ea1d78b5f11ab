"""The points an export writes: the stitched frame's live points, one per metric and step."""
from __future__ import annotations

from pathlib import Path

import polars as pl

from ..errors import UsageError
from ..outputs import claim, refuse_overlap


def live_points(frame: pl.DataFrame) -> pl.DataFrame:
    """`step, wall_time, metric, value` of the live timeline, sorted by step: superseded
    points and nulls dropped, and where a step still holds two points (ranks, copies) the
    last one read wins, as in the stitched view."""
    live = frame.filter(~pl.col("superseded") & pl.col("value").is_not_null()) if "superseded" in frame.columns \
        else frame.filter(pl.col("value").is_not_null())
    return (
        live.sort("step", "seq")
        .unique(["metric", "step"], keep="last", maintain_order=True)
        .select("step", "wall_time", pl.col("metric").cast(pl.String), pl.col("value").cast(pl.Float64))
    )


def outside_inputs(out: Path, inputs: list[str]) -> None:
    """Refuse an output folder that is, holds or lies inside a log folder or the folder of
    a log file that was read (the next sweep would read the export as a run)."""
    refuse_overlap(out, inputs, "-o", near_files=True)


def run_folder(out: Path, run: str, *, force: bool = False) -> Path:
    """`out/<run>` (the run name made a safe folder name), not created: the export is
    written beside it and renamed into place whole. One that already holds data (an earlier
    export) is refused unless `force`; a file there is never replaced by a folder."""
    safe = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in run).strip("._") or "run"
    folder = out / safe
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"-o {folder}: a file, not the folder of an earlier export; choose another -o")
    claim(folder, "-o", force=force)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: a file, not a folder to write the run into")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"-o {out}: cannot create the folder ({exc.strerror or exc})") from None
    return folder
