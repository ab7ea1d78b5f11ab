"""A long frame built by the user (the schema `spikelens.load` returns), made into runs,
so `spikelens.analyze(frame)` does what `spikelens analyze FILES` does.

Only `run`, `step`, `metric` and `value` are needed; a frame without `source`,
`segment`, `seq` or `wall_time` gets the values one launch read in row order would
have. Columns are cast to the schema's types (plain strings become categoricals).
"""
from __future__ import annotations

import polars as pl

from .discover import Run, segment_rows
from .errors import UsageError
from .frame import SCHEMA, conform, validate

REQUIRED = ("run", "step", "metric", "value")
SOURCE = "<frame>"
"""The source of rows that name none."""


def runs_from_frame(frame: pl.DataFrame) -> list[Run]:
    """One Run per value of `run`, in order of first appearance, rows in their given order."""
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise UsageError(f"analyze(frame): no column {', '.join(missing)}; the frame needs the long schema "
                         f"spikelens.load() returns ({', '.join(SCHEMA)}; source, segment, seq and wall_time "
                         f"may be left out)")
    fill = []
    if "source" not in frame.columns:
        fill.append(pl.lit(SOURCE).alias("source"))
    if "segment" not in frame.columns:
        fill.append(pl.lit(0, dtype=pl.UInt32).alias("segment"))
    if "wall_time" not in frame.columns:
        fill.append(pl.lit(None, dtype=pl.Float64).alias("wall_time"))
    if "seq" not in frame.columns:
        fill.append(pl.int_range(pl.len(), dtype=pl.UInt64).over("run").alias("seq"))
    try:
        frame = conform(frame.with_columns(fill) if fill else frame)
    except pl.exceptions.PolarsError as exc:
        raise UsageError(f"analyze(frame): a column does not fit the long schema ({str(exc).splitlines()[0]})") from None
    validate(frame, "analyze(frame)")
    runs = []
    for (name,), part in frame.group_by("run", maintain_order=True):
        sources = sorted(part.get_column("source").cast(pl.String).unique().to_list())
        runs.append(Run(name=str(name), frame=part, sources=sources, formats=["frame"],
                        segments=segment_rows(part, None, sources[0])))
    return runs
