"""One file written by several ranks that says which in a column (`rank`, `global_rank`,
`local_rank`, `process_index`): each rank read as a run of its own, as per-rank folders
and `[rankN]:` tags are (`ranksplit`), so the rank that went bad is not averaged away
(`detect.ranks.link_ranks` puts them back side by side).

Only when the column is a dimension (whole numbers, two or more ranks logging at most
steps) and the ranks print values of their own: ranks that echo the same numbers are read
as one run, the rank column left out of the metrics. Rows without a rank (a summary
logged once) go with the lowest rank, the one that logs for the whole job.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np
import polars as pl

from ..naming import key_name
from .base import Table
from .ranksplit import SHARE, several_ranks

NAMES = ("global_rank", "rank", "process_index", "process_rank", "local_rank")
"""Column or key names that hold the writer's rank, the job-wide ones first (two nodes
repeat every `local_rank`)."""


def rank_key(columns: list[str]) -> str | None:
    """The column naming the writer's rank, else None."""
    low = {str(c).strip().lower(): c for c in columns}
    return next((low[n] for n in NAMES if n in low), None)


def row_ranks(step: pl.Series, rank: pl.Series) -> np.ndarray | None:
    """Each row's rank when the column is a dimension (whole numbers >= 0, two or more of
    them, and at `SHARE` or more of the steps two or more ranks logged), rows without one
    given the lowest rank; None otherwise."""
    r = rank.cast(pl.Float64, strict=False)
    known = r.drop_nulls()
    if known.len() == 0 or not bool(((known >= 0) & (known == known.floor()) & (known < 1e5)).all()):
        return None
    if known.n_unique() < 2:
        return None
    both = pl.DataFrame({"step": step.cast(pl.String, strict=False), "rank": r}).drop_nulls()
    per = both.group_by("step").agg(pl.col("rank").n_unique().alias("n"))
    if per.height == 0 or float((per.get_column("n") > 1).mean()) < SHARE:
        return None
    return r.fill_null(known.min()).cast(pl.Int64).to_numpy()


def split(ranks: np.ndarray, read: Callable[[np.ndarray], pl.DataFrame]) -> list[tuple[int, pl.DataFrame]]:
    """Each rank's long table (`read` turns the row indices of one rank into it) when the
    ranks print values of their own; [] when they echo one another's numbers."""
    parts = [(int(r), read(np.flatnonzero(ranks == r))) for r in np.unique(ranks)]
    parts = [(r, long) for r, long in parts if long.height]
    if len(parts) < 2 or not several_ranks(pl.concat([long for _, long in parts])):
        return []
    return parts


def rank_tables(table: Table, parts: list[tuple[int, pl.DataFrame]]) -> list[Table]:
    """The one table of a file, one a rank: `name[rankN]`, as `[rankN]:` logs are named."""
    name = table.run_name or key_name(table.run_key)
    return [replace(table, frame=long, run_key=f"{table.run_key}[rank{r}]",
                    segment_key=f"{table.segment_key}[rank{r}]", run_name=f"{name}[rank{r}]",
                    meta={**table.meta, "rank": r})
            for r, long in parts]
