"""What the CLI calls and what users import: load, discover, analyze, stitch.

    import spikelens
    frame = spikelens.load("logs/")            # one long Polars frame, every run
    report = spikelens.analyze("logs/")        # findings with causes
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import polars as pl

from . import diagnostics
from .config import Config, load_config
from .coverage import note_lossless
from .discover import Run, iter_runs
from .frame import SCHEMA, concat, roles_of, validate, wide
from .naming import rename_runs

if TYPE_CHECKING:
    from .model.report import Report, RunReport

# Detection, explanation, stitching and reports are imported where they are used:
# `load` and `ls` on a big event file should not pay for them at start-up.

PathLike = str | os.PathLike


def load_runs(*paths: PathLike) -> list[Run]:
    """Every run under the paths (files or folders, any mix of formats)."""
    runs = rename_runs(list(iter_runs(paths or (".",))))
    for r in runs:
        validate(r.frame, f"import of {r.name}")
    return runs


def load(*paths: PathLike, roles: dict[str, str] | None = None) -> pl.DataFrame:
    """One long frame (`run, source, segment, seq, step, wall_time, metric, value`) for
    every run under the paths. NaN and ±inf are kept; nothing is deduplicated."""
    runs = load_runs(*paths)
    if not runs:
        return pl.DataFrame(schema=SCHEMA)
    return wide(concat([r.frame for r in runs]))  # SCHEMA's types: runs may hold narrow columns (frame.NARROW)


def discover(*paths: PathLike, config: Config | None = None) -> list[dict[str, Any]]:
    """List the runs found: name, formats, sources, segments, metrics with roles, steps, points."""
    cfg = config or load_config()
    out = []
    for run in load_runs(*paths):
        out.append(run_summary(run, cfg.roles))
    return out


def run_summary(run: Run, role_overrides: dict[str, str] | None = None) -> dict[str, Any]:
    f = run.frame
    roles = roles_of(f, role_overrides)
    return {
        "run": run.name,
        "formats": run.formats,
        "sources": run.sources,
        "segments": run.segments,
        "metrics": roles,
        "first_step": f.get_column("step").min() if f.height else None,
        "last_step": f.get_column("step").max() if f.height else None,
        "points": f.height,
        "meta": {k: v for k, v in run.meta.items() if isinstance(v, (str, int, float, bool, list))},
    }


def analyze(*paths: PathLike, config: Config | None = None, detector_params: dict | None = None,
            progress: Callable[[str], None] | None = None, jobs: int | None = None,
            keep_frames: bool = True, executor: str = "local", findings: PathLike | None = None,
            spool: bool | Path = False) -> Report:
    """Find every run under the paths and report what happened in each, with causes.

    Runs are analysed on an `executor`: "local" (worker processes, `jobs`, default all
    cores) or "ray" (one Ray task per group of files, on the cluster `ray.init` finds or a
    local one). `keep_frames=False` drops each run's frame once analysed (large sweeps
    that need no plots). `findings` (a .parquet file or a folder) receives the findings as
    data, and a later sweep with the same dataset reads only the runs whose files changed.
    `spool=True` keeps a large sweep's reports in a temporary file, each read back when
    `report.runs` is gone over (changes to a run read back are not kept); a folder instead
    of True keeps that file there (`SPIKELENS_SPOOL_DIR` comes first).

    Instead of paths, a long frame (the schema `load` returns, e.g. built from your own
    tracker) is analysed as it is: `spikelens.analyze(frame)`."""
    from .pipeline.sweep import analyze_roots

    if any(isinstance(p, pl.DataFrame) for p in paths):
        return analyze_frame(*paths, config=config, detector_params=detector_params, progress=progress,
                             keep_frames=keep_frames)
    report = analyze_roots([Path(p) for p in (paths or (".",))], config or load_config(),
                           detector_params=detector_params, executor=executor, jobs=jobs, progress=progress,
                           keep_frames=keep_frames, findings=Path(findings) if findings is not None else None,
                           spool=spool)
    note_lossless(report)
    return report


def analyze_frame(*frames: pl.DataFrame, config: Config | None = None, detector_params: dict | None = None,
                  progress: Callable[[str], None] | None = None, keep_frames: bool = True) -> Report:
    """Analyse long frames given in memory: each run in them as `analyze` would a run read from files."""
    from .errors import UsageError
    from .pipeline.sweep import analyze_runs
    from .userframe import runs_from_frame

    if not all(isinstance(f, pl.DataFrame) for f in frames):
        raise UsageError("analyze(): give paths or long frames, not both")
    frame = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
    report = analyze_runs(runs_from_frame(frame), config or load_config(), detector_params=detector_params,
                          progress=progress, keep_frames=keep_frames)
    note_lossless(report)
    return report


def stitch(*paths: PathLike, config: Config | None = None, detector_params: dict | None = None,
           name: str | None = None) -> tuple[Report, pl.DataFrame]:
    """Treat everything under the paths as segments of one run; return the report and
    the stitched frame (with `superseded`)."""
    from .model.report import Report
    from .pipeline.run import analyze_run
    from .stitching import merge_runs

    cfg = config or load_config()
    report = Report(command="stitch")
    with diagnostics.collecting() as diag:
        runs = list(iter_runs(paths))
        run = merge_runs(runs, name=name)
        validate(run.frame, f"import of {run.name}")
        report.runs.append(analyze_run(run, cfg, detector_params=detector_params))
    report.warnings = diag.lines
    note_lossless(report)
    return report, report.runs[0].frame


def watch(*paths: PathLike, interval: float = 30.0, duration: float | None = None, fail_on: str | None = None,
          webhook: str | None = None, exec: str | None = None, state: PathLike | None = None,
          config: Config | None = None, detector_params: dict | None = None,
          on_event: Callable[[Any], None] | None = None, stop: Any = None) -> Any:
    """Follow the logs under the paths while they are written and judge them as `analyze`
    would, telling each finding once (`on_event(event)`, a webhook, a command); returns a
    `WatchSummary` when `duration` seconds passed, `stop` (a `threading.Event`) was set,
    Ctrl-C was pressed, or a finding reached `fail_on` (then `summary.exit_code` is 1).

        spikelens.watch("runs/", interval=10, fail_on="error", on_event=print)
    """
    from .live.watcher import Watcher

    watcher = Watcher(list(paths) or ["."], config=config, detector_params=detector_params, state=state,
                      fail_on=fail_on, webhook=webhook, exec=exec, on_event=on_event)
    return watcher.run(interval, duration, stop)


def _bind_into_package() -> None:
    """Make `spikelens.discover` (and the other API names) the functions for good: importing
    this module loaded the `spikelens.discover` submodule, and Python binds a submodule as an
    attribute of its package, which would shadow the lazily served function."""
    import spikelens

    for name in spikelens.__all__:
        if name != "__version__":
            setattr(spikelens, name, globals()[name])


_bind_into_package()
