"""What every importer returns, and the small helpers they share.

An importer reads one file (or one run folder) and returns `Table`s: scalars in long
form (`step, wall_time, metric, value`, in the order they were read) plus where they
belong (run key, segment key, ordering). It never judges a curve; discovery groups
tables into runs and numbers the segments.
"""
from __future__ import annotations

import re

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

TABLE_SCHEMA: dict[str, pl.DataType] = {
    "step": pl.Int64,
    "wall_time": pl.Float64,
    "metric": pl.Categorical(),
    "value": pl.Float64,
}


TEXT_SUFFIXES = frozenset({".log", ".txt", ".out", ".err", ""})
"""Suffixes of text logs (a file with none is a text log too): the console and bare-number readers' files."""
_NUMBERED = re.compile(r"(?:\.\d[\d_\-]*)+$")


def kind_suffix(path: Path) -> str:
    """The suffix that says what a file is, lower-cased, past the numbers a rotation or a launcher appended:
    `train.log.1` and `run.log.2024-01-02` are `.log`; Paddle's `workerlog.0` has none before its number, as
    a `stdout` has none (a text log either way)."""
    return Path(_NUMBERED.sub("", path.name.lower())).suffix


@dataclass
class Table:
    """Scalars read from one source, with the keys that place them in a run.

    - `run_key`: tables with the same key belong to one run (a TensorBoard folder,
      a W&B run id, a CSV file, a W&B export's run name).
    - `run_name`: display name when the format has one (W&B display name); None lets
      discovery name the run from its path.
    - `segment_key`: tables of one run with the same key are one launch (one segment);
      W&B chart exports split one launch over several files, so they share a key.
    - `order`: sorts the segments of a run (start time, then file name).
    - An empty `frame` is a launch that logged nothing (a process that crashed before its
      first step left a header-only file): discovery keeps it as a segment with 0 points
      when the run has data elsewhere, so the timeline counts it.
    """

    frame: pl.DataFrame
    source: Path | str
    """The file read, or a URI (an MLflow database's or server's run) that is no local path."""
    format: str
    run_key: str
    segment_key: str
    order: tuple = ()
    run_name: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    start_time: float | None = None
    """When the launch started (unix seconds), where the format says so: the only time an
    empty launch has."""


class Importer(ABC):
    """One family of formats. Subclasses are listed in `importers.REGISTRY`."""

    name: ClassVar[str]
    looks_for: ClassVar[str]
    """Human description used in 'nothing readable' errors, e.g. 'events.out.tfevents.*'."""
    claims_dirs: ClassVar[bool] = False
    """True when the unit is a folder (a W&B offline run, an MLflow run)."""

    @abstractmethod
    def claims(self, path: Path, head: bytes) -> bool:
        """Cheap check: is this file (or folder) ours? `head` is its first 4 KiB (b'' for folders)."""

    def group_key(self, path: Path) -> str:
        """Sources with the same key are read together (default: each on its own)."""
        return str(path)

    @abstractmethod
    def read(self, path: Path) -> list[Table]:
        """Read every scalar; raise FormatError for a file that is not this format,
        warn (diagnostics.warn) and keep what is readable for a damaged one."""

    def read_many(self, paths: list[Path]) -> list[Table]:
        """Read the sources of one group together (default: one at a time; a file that is
        not this format is skipped with a warning while others of the group read).
        Formats whose files only make sense side by side (HF checkpoint copies) override this."""
        if len(paths) == 1:
            return self.read(paths[0])
        from .. import diagnostics
        from ..errors import FormatError

        tables: list[Table] = []
        errors: list[FormatError] = []
        for p in paths:
            try:
                tables.extend(self.read(p))
            except FormatError as exc:
                errors.append(exc)
        if errors and len(errors) == len(paths):
            raise errors[0]
        for exc in errors:
            diagnostics.warn(f"{exc} (skipped)")
        return tables


def long_table(steps, wall_times, metrics, values) -> pl.DataFrame:
    """Build the importer frame from column sequences (lists or NumPy arrays)."""
    return pl.DataFrame(
        {"step": steps, "wall_time": wall_times, "metric": metrics, "value": values},
        schema=TABLE_SCHEMA,
    )


_NUMBER_SPELLINGS = {
    "nan": "NaN", "+nan": "NaN", "-nan": "NaN", "nan(ind)": "NaN", "-nan(ind)": "NaN",
    "#qnan": "NaN", "1.#qnan": "NaN", "-1.#ind": "NaN", "1.#ind": "NaN",
    "inf": "inf", "+inf": "inf", "infinity": "inf", "+infinity": "inf", "1.#inf": "inf",
    "-inf": "-inf", "-infinity": "-inf", "-1.#inf": "-inf",
}
_NULL_SPELLINGS = ("", "na", "n/a", "null", "none", "nil", "-")


def to_float(expr: pl.Expr) -> pl.Expr:
    """Cast a String expression to Float64 accepting every NaN/Inf spelling.

    `NA`, empty and the like become null ("not logged"); text that is no number
    becomes null too (callers that care find those with `non_numeric`).
    """
    s = expr.str.strip_chars().str.strip_chars('"')
    low = s.str.to_lowercase()
    s = (
        pl.when(low.is_in(list(_NULL_SPELLINGS)))
        .then(pl.lit(None, pl.String))
        .otherwise(low.replace_strict(_NUMBER_SPELLINGS, default=s))
    )
    return s.cast(pl.Float64, strict=False)


def non_numeric(expr: pl.Expr) -> pl.Expr:
    """True where a String cell holds text that `to_float` could not turn into a number."""
    raw = expr.str.strip_chars()
    return raw.is_not_null() & ~raw.str.to_lowercase().is_in(list(_NULL_SPELLINGS)) & to_float(expr).is_null()


def read_head(path: Path, size: int = 4096) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return b""
