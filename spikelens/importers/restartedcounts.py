"""Counters of a headerless table that a relaunch started again (`0, 0, 16.49, ...` appended to the
same file by a second launch: the epoch still 0, the iteration back at 0).

A person still reads the first columns as counts: an outer count that has not moved yet (the same
whole number on every row) over an inner one that rises by one and starts again at 0 or 1.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import polars as pl

from .columnshapes import leading_column


def restarted_count(rows: list[list[str]]) -> bool:
    """Rows as wide (two numbers or more) led by whole numbers that rise and may start again at 0 or 1."""
    first = leading_column(rows)
    if first is None:
        return False
    d = np.diff(first)
    restart = (d < 0) & np.isin(first[1:], [0.0, 1.0])
    return bool(np.all((d >= 0) | restart) and np.any(d > 0) and np.any(d == 1))


def unmoved_outer(cols: pl.DataFrame, k: int, counts: Callable[[pl.Series], bool]) -> bool:
    """Column k is one whole number on every row (an outer count that has not moved) and the column after
    it counts the rows (with a value column after that)."""
    col = cols.to_series(k)
    return (k + 2 < cols.width and not col.null_count() and col.n_unique() == 1 and bool((col % 1 == 0).all())
            and counts(cols.to_series(k + 1)))
