"""Runs exported from Neptune by `neptune-exporter`: `<out>/<project>/<run id>_part_<n>.parquet`.

The exporter (github.com/neptune-ai/neptune-exporter, `src/neptune_exporter/model.py`) writes
one long table per run, split into parts of ~50 MB: `project_id, run_id, attribute_path,
attribute_type, step (decimal 18,6), timestamp (ms, UTC), int_value, float_value,
string_value, bool_value, datetime_value, string_set_value, file_value, histogram_value`.
Metric series are the rows whose `attribute_type` is `float_series`; the run's display name
is its `sys/name` attribute (else the run id). Neptune steps are decimals: whole steps are
read as they are, fractional ones are scaled to whole numbers (with a warning), since a
step axis must be integers here. A part still named `.parquet.tmp` is an export that did
not finish and is not claimed.
"""
from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from .. import diagnostics
from ..errors import FormatError
from .base import TABLE_SCHEMA, Importer, Table

SERIES_TYPE = "float_series"
NAME_ATTRIBUTES = ("sys/name", "sys/custom_run_id")
REQUIRED = frozenset({"run_id", "attribute_path", "attribute_type", "step", "float_value"})
_PART = re.compile(r"^(?P<run>.+)_part_(?P<n>\d+)\.parquet$")
MAX_STEP_SCALE = 10 ** 6


def part_number(path: Path) -> int:
    m = _PART.match(path.name)
    return int(m.group("n")) if m else 0


def whole_steps(path: Path, steps: pl.Series) -> tuple[pl.Series, int]:
    """Decimal steps as Int64, scaled by the smallest power of ten that makes them whole."""
    x = steps.cast(pl.Float64)
    scale = 1
    while scale < MAX_STEP_SCALE and not ((x * scale).round(0) - x * scale).abs().max() < 1e-6:
        scale *= 10
    if scale > 1:
        diagnostics.warn(f"{path}: Neptune steps are fractional; the step axis is the step x {scale}")
    return (x * scale).round(0).cast(pl.Int64), scale


class NeptuneParquetImporter(Importer):
    """The parts of one run exported by neptune-exporter, read together."""

    name = "neptune"
    looks_for = "neptune-exporter Parquet (<project>/<run>_part_<n>.parquet)"

    def claims(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() != ".parquet" or not head.startswith(b"PAR1"):
            return False
        try:
            return REQUIRED <= set(pl.read_parquet_schema(path))
        except Exception:  # noqa: BLE001 - not readable as Parquet: not ours
            return False

    def group_key(self, path: Path) -> str:
        m = _PART.match(path.name)
        return f"neptune:{path.parent / (m.group('run') if m else path.stem)}"

    def read(self, path: Path) -> list[Table]:
        return self.read_many([path])

    def read_many(self, paths: list[Path]) -> list[Table]:
        parts = sorted(paths, key=part_number)
        frames = []
        for p in parts:
            try:
                frames.append(pl.read_parquet(p, columns=["run_id", "attribute_path", "attribute_type", "step",
                                                          "timestamp", "float_value", "string_value"]))
            except Exception as exc:  # noqa: BLE001 - a damaged part: keep the others
                if len(parts) == 1:
                    raise FormatError(p, f"cannot read Parquet ({exc})") from None
                diagnostics.warn(f"{p}: cannot read Parquet ({exc}); part skipped")
        if not frames:
            raise FormatError(parts[0], "no readable part of this Neptune run")
        data = pl.concat(frames, how="vertical_relaxed")
        source = parts[0]
        names = data.filter(pl.col("attribute_path").is_in(NAME_ATTRIBUTES) & pl.col("string_value").is_not_null())
        run_ids = data.get_column("run_id").drop_nulls().unique(maintain_order=True).to_list()
        by_attr = dict(zip(names["attribute_path"].to_list(), names["string_value"].to_list()))
        name = next((by_attr[a] for a in NAME_ATTRIBUTES if a in by_attr), None) or (run_ids[0] if run_ids else None)
        series = data.filter((pl.col("attribute_type") == SERIES_TYPE) & pl.col("step").is_not_null())
        if series.height == 0:
            diagnostics.warn(f"{source}: Neptune run without metric series (float_series)")
            return []
        steps, scale = whole_steps(source, series.get_column("step"))
        wall = series.get_column("timestamp")
        wall_s = (wall.dt.epoch("ms").cast(pl.Float64) / 1000.0) if wall.dtype != pl.Null else pl.Series([None] * series.height, dtype=pl.Float64)
        long = pl.DataFrame({
            "step": steps, "wall_time": wall_s,
            "metric": series.get_column("attribute_path"), "value": series.get_column("float_value"),
        }).filter(pl.col("value").is_not_null())
        # parts hold series one after another; order by time, then step, as they were logged
        long = long.sort(["wall_time", "step"], nulls_last=True, maintain_order=True)
        long = long.select([pl.col(c).cast(t) for c, t in TABLE_SCHEMA.items()])
        meta = {"neptune.run_id": run_ids[0]} if run_ids else {}
        if scale > 1:
            meta["neptune.step_scale"] = scale
        key = str(source.parent / _PART.sub(r"\g<run>", source.name))
        return [Table(frame=long, source=source, format=self.name, run_key=key, segment_key=key,
                      run_name=name, meta=meta)]
