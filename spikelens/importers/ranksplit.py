"""One text log written by several ranks (`[rank3]:`, `[default3]:` tags from torchrun
`--tee`/`--log-line-prefix`): each rank read as a run of its own, so that the rank that
went bad is not averaged away (`detect.ranks.link_ranks` puts them back side by side).

Only when ranks print values of their own: a log where only rank 0 prints metrics, or
every rank echoes the same numbers, is read as one run, as before.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

import polars as pl

RANK_TAG = r"^\s*\[(?:rank|default)?(\d{1,5})\]:"
"""The launcher's tag at the start of a line (`[rank7]:`, `[default7]:`)."""
SHARE = 0.5
"""Ranks print their own values when at least this share of the steps holds several
different values of the main metric."""


def several_ranks(rows: pl.DataFrame) -> bool:
    """The parsed rows hold several different values of a metric at most steps (the metric
    logged most often, the first by name among equals): more than one rank printed its own numbers."""
    if rows.height == 0:
        return False
    counts = rows.group_by("metric").len().with_columns(pl.col("metric").cast(pl.String))
    top = counts.sort(["len", "metric"], descending=[True, False]).get_column("metric")[0]  # ties: by name
    mine = rows.select("metric", "step", "value").filter(pl.col("metric") == top)
    if mine.height < 2 or mine.select((pl.col("step").diff().slice(1) > 0).all()).item():
        return False  # one value a step (steps rise row by row): no group_by of a million steps
    per = mine.group_by("step").agg(pl.col("value").n_unique().alias("n"))
    return per.height > 0 and float((per.get_column("n") > 1).mean()) >= SHARE


Parse = Callable[[Iterable[pl.DataFrame]], tuple[pl.DataFrame, dict]]


def per_rank(path: Path, blocks: Callable[[], Iterable[pl.DataFrame]],
             parse: Parse) -> list[tuple[int, pl.DataFrame, dict]]:
    """Each rank's rows (and parse info), its lines parsed alone, when the log's lines carry
    two or more rank tags; [] otherwise. The lines are read once more and held while the
    ranks are parsed."""
    chunks = [c.with_columns(pl.col("text").str.extract(RANK_TAG, 1).cast(pl.Int64, strict=False).alias("_rank"))
              for c in blocks()]
    ranks = sorted({int(r) for c in chunks for r in c.get_column("_rank").drop_nulls().unique().to_list()})
    if len(ranks) < 2:
        return []
    out = []
    for r in ranks:
        mine = [c.filter(pl.col("_rank") == r).drop("_rank") for c in chunks]
        rows, info = parse([c for c in mine if c.height])
        if rows.height:
            out.append((r, rows, info))
    return out if len(out) >= 2 else []
