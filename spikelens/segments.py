"""Split one launch's rows into segments where the step counter goes back.

A text log or CSV appended after a resume holds several launches in one file; the
first sign is a metric whose step drops below what it had already logged. Metrics
logged on another axis (per-epoch values in a per-step file) never drop on their
own, so they never split a file.
"""
from __future__ import annotations

import numpy as np
import polars as pl


def restart_offsets(frame: pl.DataFrame) -> np.ndarray:
    """Row positions (in read order) where a new launch starts inside one table.

    A row starts a launch when its metric's step is below that metric's earlier
    maximum *and* below every step logged since the previous boundary; the second
    condition keeps the other metrics of the same restart (and sparse eval rows that
    catch up later) in the segment the first one opened.
    """
    n = frame.height
    if n < 2 or frame.get_column("step").is_sorted():
        return np.empty(0, dtype=np.int64)  # no step ever goes back: one launch (no per-metric scan)
    flagged = (
        frame.with_row_index("_i")
        .with_columns(
            _prev_max=pl.col("step").cum_max().shift(1).over("metric"),
        )
        .filter(pl.col("step") < pl.col("_prev_max"))
        .get_column("_i")
        .to_numpy()
    )
    if flagged.size == 0:
        return np.empty(0, dtype=np.int64)
    steps = frame.get_column("step").to_numpy()
    boundaries: list[int] = []
    start = 0
    seen_to, seen_max = 0, None  # max of steps[start:seen_to], extended forward only: O(n) overall
    for i in flagged:
        if i <= start:
            continue
        if i > seen_to:
            chunk_max = steps[seen_to:i].max()
            seen_max = chunk_max if seen_max is None else max(seen_max, chunk_max)
            seen_to = int(i)
        if steps[i] < seen_max:
            boundaries.append(int(i))
            start = int(i)
            seen_to, seen_max = start, None
    return np.asarray(boundaries, dtype=np.int64)


def split_ids(frame: pl.DataFrame) -> np.ndarray | None:
    """Per-row launch index (0, 1, ...) inside one table; None when it is all one launch."""
    bounds = restart_offsets(frame)
    if bounds.size == 0:
        return None
    return np.searchsorted(bounds, np.arange(frame.height), side="right").astype(np.int64)


def relogs_a_step(frame: pl.DataFrame) -> bool:
    """Does any metric log the same step twice? A relaunch from a checkpoint always does
    (it re-logs the steps after the checkpoint); rows merely out of order never do."""
    return frame.select(pl.struct("metric", "step").is_duplicated().any()).item()
