"""The stitched run as a W&B offline run folder, written by the real wandb client in offline
mode (`wandb sync FOLDER` uploads it later): one `run.log(row, step=step)` per step, with
the logged wall time as `_timestamp`, steps strictly increasing, so the W&B chart has one
point per step. Nothing goes to the network: the client is started with `mode="offline"`,
and its config, cache and data folders are pointed inside the output folder."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import polars as pl

from ..errors import UsageError

WANDB_ENV = ("WANDB_MODE", "WANDB_DIR", "WANDB_SILENT", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR",
             "WANDB_ARTIFACT_DIR", "WANDB_CONSOLE")


@contextmanager
def offline_env(folder: Path) -> Iterator[None]:
    keep = {k: os.environ.get(k) for k in WANDB_ENV}
    private = folder / ".wandb-client"
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_CONSOLE="off",
                      WANDB_CONFIG_DIR=str(private / "config"), WANDB_CACHE_DIR=str(private / "cache"),
                      WANDB_DATA_DIR=str(private / "data"), WANDB_ARTIFACT_DIR=str(private / "artifacts"))
    try:
        yield
    finally:
        for k, v in keep.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def write_wandb(points: pl.DataFrame, folder: Path, run: str, project: str = "spikelens-export") -> Path:
    try:
        import wandb
    except ImportError as exc:
        raise UsageError("--format wandb needs the wandb package: pip install wandb") from exc
    negative = points.filter(pl.col("step") < 0).height
    if negative:  # W&B steps start at 0
        from .. import diagnostics

        diagnostics.warn(f"{run}: {negative} point(s) at negative steps not exported (W&B steps start at 0)")
        points = points.filter(pl.col("step") >= 0)
    with offline_env(folder):
        settings = wandb.Settings(mode="offline", x_disable_stats=True, x_disable_meta=True, disable_git=True,
                                  save_code=False, x_save_requirements=False, console="off",
                                  disable_job_creation=True, silent=True)
        handle = wandb.init(dir=str(folder), project=project, name=run, settings=settings,
                            config={"spikelens.export": "stitched"})
        try:
            by_step = points.group_by("step", maintain_order=True).agg(
                pl.col("wall_time").min(), pl.col("metric"), pl.col("value"))
            for step, wall, metrics, values in by_step.iter_rows():
                row = dict(zip(metrics, values))
                if wall is not None:  # the logged time, not the export's (wandb keeps a given _timestamp)
                    row["_timestamp"] = wall
                handle.log(row, step=int(step))
        finally:
            handle.finish()
            # wandb keeps one process-wide setup (its settings, the dirs of this export); tear
            # it down so a later wandb.init in the same process (the user's own) starts afresh
            wandb.teardown()
    runs = sorted((folder / "wandb").glob("offline-run-*"))
    return runs[-1] if runs else folder
