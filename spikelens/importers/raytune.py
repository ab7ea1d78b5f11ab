"""Ray Tune trial folders: `progress.csv` (and `result.json`, `params.json`) per trial.

Each `tune.report()` (`train.report()`) appends a row to the trial's `progress.csv` and a
line to `result.json` (`ray/tune/logger/csv.py`, `json.py`): the reported metrics plus
Tune's bookkeeping (`training_iteration`, `timestamp`, `time_total_s`, `trial_id`,
`iterations_since_restore`, `done`, `date`, `hostname`, `config/...`). `training_iteration`
is the step; `timestamp` the wall clock. A trial restored from a checkpoint (a failure
retried, `Tuner.restore`) appends to the same files and starts
`iterations_since_restore` again at 1: each restore is a new launch (segment), and a
restore from an older checkpoint re-logs iterations (a rollback). `progress.csv` is read
(one file, read once); `result.json` only when there is no CSV.
"""
from __future__ import annotations

from pathlib import Path

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from .base import Importer, Table
from .csvlogs import decode, read_bytes, read_string_frame, to_long
from .wandb_exports import parse_jsonl, rows_to_long

STEP = "training_iteration"
WALL = "timestamp"
RESTORE_COUNTER = "iterations_since_restore"
BOOKKEEPING = (
    "done", "trial_id", "date", "hostname", "node_ip", "pid", "experiment_id", "experiment_tag",
    "time_this_iter_s", "time_total_s", "time_since_restore", "timesteps_since_restore",
    RESTORE_COUNTER, "timesteps_total", "episodes_total", "should_checkpoint", "checkpoint_dir_name",
    "warmup_time",
)


def _not_metric(col: str) -> bool:
    return col in BOOKKEEPING or col.startswith("config/") or col.startswith("config.")


def launches(restore: pl.Series) -> pl.Series:
    """Launch number of each row: a new launch wherever `iterations_since_restore` goes back."""
    r = restore.cast(pl.Float64, strict=False).fill_null(strategy="forward")
    return (r.diff().fill_null(0) < 0).cum_sum().cast(pl.Int64)


class RayTuneTrialImporter(Importer):
    """One Ray Tune trial folder (`params.json` beside `progress.csv` or `result.json`)."""

    name = "ray_tune"
    looks_for = "Ray Tune trial folders (progress.csv / result.json beside params.json)"
    claims_dirs = True

    def claims(self, path: Path, head: bytes) -> bool:
        return (path / "params.json").is_file() and ((path / "progress.csv").is_file()
                                                     or (path / "result.json").is_file())

    def read(self, path: Path) -> list[Table]:
        csv, js = path / "progress.csv", path / "result.json"
        if csv.is_file() and csv.stat().st_size > 0:
            source, parts = csv, self._from_csv(csv)
        elif js.is_file() and js.stat().st_size > 0:
            source, parts = js, self._from_json(js)
        else:
            diagnostics.warn(f"{path}: Ray Tune trial with no reported results (empty progress.csv/result.json)")
            return []
        tables = [Table(frame=long, source=source, format=self.name, run_key=str(path),
                        segment_key=f"{path}#launch{i}", order=(i,))
                  for i, long in enumerate(parts) if long.height]
        if not tables:
            diagnostics.warn(f"{source}: no numeric values found")
        return tables

    @staticmethod
    def _split(wide: pl.DataFrame) -> list[pl.DataFrame]:
        """The rows of each launch (a restore starts `iterations_since_restore` again)."""
        if RESTORE_COUNTER not in wide.columns or wide.height == 0:
            return [wide]
        numbered = wide.with_columns(__launch=launches(wide.get_column(RESTORE_COUNTER)))
        return [part.drop("__launch") for _, part in numbered.group_by("__launch", maintain_order=True)]

    @staticmethod
    def _from_csv(path: Path) -> list[pl.DataFrame]:
        parsed = read_string_frame(path, decode(path, read_bytes(path)))
        wide = parsed.frame
        if STEP not in wide.columns:
            raise FormatError(path, f"Ray Tune progress.csv without a {STEP} column")
        drop = tuple(c for c in wide.columns if _not_metric(c))
        wall = WALL if WALL in wide.columns else None
        return [to_long(path, part, parsed.sep, step_col=STEP, wall_col=wall, drop=drop)
                for part in RayTuneTrialImporter._split(wide)]

    @staticmethod
    def _from_json(path: Path) -> list[pl.DataFrame]:
        rows = parse_jsonl(path, decode(path, read_bytes(path)))
        if not any(STEP in r for r in rows):
            raise FormatError(path, f"Ray Tune result.json without {STEP}")
        rows = [{k: v for k, v in r.items() if k != "config"} for r in rows]
        skip = tuple({k for r in rows for k in r if _not_metric(k)})
        counter = pl.Series(RESTORE_COUNTER, [r.get(RESTORE_COUNTER) for r in rows], dtype=pl.Float64, strict=False)
        launch = launches(counter).to_list() if rows else []
        out = []
        for k in sorted(set(launch)) or [0]:
            mine = [r for r, n in zip(rows, launch) if n == k]
            out.append(rows_to_long(path, mine, step_key=STEP, wall_key=WALL, skip=skip))
        return out
