"""Trackio projects: one SQLite database per project (`<TRACKIO_DIR>/<project>.db`).

Trackio (`trackio/sqlite_storage.py`) keeps every `trackio.log(...)` call as a row of the
`metrics` table: `run_id` (newer versions), `run_name`, `step`, `timestamp` (ISO 8601) and
`metrics`, the logged dict as JSON (non-finite floats written as the strings "NaN",
"Infinity", "-Infinity"). One database holds all runs of a project; each run is one run
here, named as Trackio shows it (`run_name`). The database is opened so that nothing (no
`-shm`, no journal) is written beside the user's file (`sqlite_files`).
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from .base import TABLE_SCHEMA, Importer, Table
from .sqlite_files import connect_read_only, read_only

SQLITE_MAGIC = b"SQLite format 3\x00"
_SPECIAL = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"),
            "nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def columns_of(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


def _flat(prefix: str, obj: Any, out: list[tuple[str, float]]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flat(f"{prefix}{k}/" if isinstance(v, dict) else f"{prefix}{k}", v, out)
    elif isinstance(obj, bool):
        return
    elif isinstance(obj, (int, float)):
        out.append((prefix, float(obj)))
    elif isinstance(obj, str) and obj in _SPECIAL:
        out.append((prefix, _SPECIAL[obj]))


def numbers_of(text: str | bytes) -> list[tuple[str, float]]:
    """The numeric values of one logged dict (nested dicts give `a/b` keys)."""
    try:
        obj = json.loads(text)
    except (ValueError, TypeError):
        return []
    out: list[tuple[str, float]] = []
    if isinstance(obj, dict):
        _flat("", obj, out)
    return out


class TrackioImporter(Importer):
    """A Trackio project database (`*.db` with a `metrics(run_name, step, metrics)` table)."""

    name = "trackio"
    looks_for = "Trackio project databases (<project>.db)"

    def claims(self, path: Path, head: bytes) -> bool:
        if not head.startswith(SQLITE_MAGIC):
            return False
        try:
            with read_only(path) as con:
                return {"run_name", "step", "metrics"} <= columns_of(con, "metrics")
        except sqlite3.Error:
            return False

    def read(self, path: Path) -> list[Table]:
        try:
            con = connect_read_only(path)
            try:
                cols = columns_of(con, "metrics")
                run_id = "run_id" if "run_id" in cols else "run_name"
                rows = con.execute(f"SELECT {run_id}, run_name, step, timestamp, metrics FROM metrics ORDER BY id").fetchall()
            finally:
                con.close()
        except sqlite3.Error as exc:
            raise FormatError(path, f"cannot read the Trackio database ({exc})") from None
        if not rows:
            diagnostics.warn(f"{path}: Trackio project without logged metrics")
            return []
        by_run: dict[str, dict[str, list]] = {}
        names: dict[str, str] = {}
        for rid, rname, step, ts, metrics in rows:
            if not isinstance(step, int):
                continue
            cols_ = by_run.setdefault(str(rid), {"step": [], "ts": [], "metric": [], "value": []})
            names.setdefault(str(rid), str(rname))
            for key, value in numbers_of(metrics):
                cols_["step"].append(step)
                cols_["ts"].append(ts)
                cols_["metric"].append(key)
                cols_["value"].append(value)
        tables = []
        for rid, c in by_run.items():
            frame = pl.DataFrame({"step": c["step"], "ts": c["ts"], "metric": c["metric"], "value": c["value"]},
                                 schema={"step": pl.Int64, "ts": pl.String, "metric": pl.String, "value": pl.Float64})
            wall = pl.col("ts").str.to_datetime(time_zone="UTC", strict=False).dt.epoch("us").cast(pl.Float64) / 1e6
            frame = frame.with_columns(wall_time=wall).select([pl.col(k).cast(t) for k, t in TABLE_SCHEMA.items()])
            if frame.height == 0:
                continue
            key = f"{path}::{rid}"
            tables.append(Table(frame=frame, source=path, format=self.name, run_key=key, segment_key=key,
                                run_name=names[rid], meta={"trackio.project": path.stem, "trackio.run_id": rid}))
        if not tables:
            diagnostics.warn(f"{path}: no numeric values found")
        return tables
