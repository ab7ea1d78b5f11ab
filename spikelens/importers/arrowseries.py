"""Arrow arrays built by the text readers (lines cut out of a block's bytes) as Polars series.

Given a `pyarrow` array, Polars first imports `pyarrow.compute` (~0.3 s, once a process: in
every read of a text log) for a cast of dictionary arrays these strings never need. Handed
over through the Arrow C data interface (`__arrow_c_array__`) instead, the same array becomes
the same series without it.
"""
from __future__ import annotations

import polars as pl


class _CArray:
    """An Arrow array seen by Polars through the C data interface only."""

    def __init__(self, array) -> None:
        self.array = array

    def __arrow_c_array__(self, requested_schema=None):
        return self.array.__arrow_c_array__(requested_schema)


def series(array, name: str = "") -> pl.Series:
    """The `pyarrow` array as a Polars series named `name`."""
    return pl.Series(_CArray(array)).alias(name)
