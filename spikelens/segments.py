"""Split one launch's rows into segments where the step counter goes back.

A text log or CSV appended after a resume holds several launches in one file; the
first sign is a metric whose step drops below what it had already logged. Metrics
logged on another axis (per-epoch values in a per-step file) never drop on their
own, so they never split a file.
"""
from __future__ import annotations

import re

import numpy as np
import polars as pl


INTERLEAVED_MIN = 3
"""Step-goes-back rows of one metric that at once run past its old maximum, from which
a table is read as writers side by side rather than relaunches."""


def restart_offsets(frame: pl.DataFrame) -> np.ndarray:
    """Row positions (in read order) where a new launch starts inside one table.

    A row starts a launch when its metric's step is below that metric's earlier
    maximum *and* below every step logged since the previous boundary; the second
    condition keeps the other metrics of the same restart (and sparse eval rows that
    catch up later) in the segment the first one opened.
    """
    n = frame.height
    if n < 2:
        return np.empty(0, dtype=np.int64)
    first = first_step_relogged(frame)
    if first is not None:  # a first attempt killed after one step: the rest is judged after it
        rest = restart_offsets(frame.slice(first))
        return np.concatenate([[first], rest + first]).astype(np.int64)
    if frame.get_column("step").is_sorted():
        return np.empty(0, dtype=np.int64)  # no step ever goes back: one launch (no per-metric scan)
    back = (
        frame.with_row_index("_i")
        .with_columns(
            _k=pl.int_range(pl.len()).over("metric"),
            _prev_max=pl.col("step").cum_max().shift(1).over("metric"),
            _next=pl.max_horizontal(pl.col("step").shift(-k).over("metric") for k in range(1, 4)),
        )
        .filter(pl.col("step") < pl.col("_prev_max"))
    )
    # two writers interleaved in one file (a lagging second process): right after the
    # step went back, one of the metric's next 3 rows is at or beyond everything logged
    # before; a relaunch goes on below it. Many such rows of one metric are writers side
    # by side; one per metric is a relaunch that rolled back a few steps (a Keras resume
    # from a checkpoint epoch re-logs 3 epochs and is past its old end on the 4th).
    # Counted in episodes (a stretch of the metric's consecutive rows below its old maximum): a
    # relaunch that went back a few rows is one episode, however many rows it re-logs.
    back = back.with_columns(
        _beside=(pl.col("_next") >= pl.col("_prev_max")).fill_null(False),
        _after=(pl.col("_k").shift(1).over("metric") == pl.col("_k") - 1).fill_null(False),
        _near=(pl.col("_k") - pl.col("_k").shift(1).over("metric") <= 2).fill_null(False))
    episodes = back.filter(~pl.col("_after")).group_by("metric").agg(pl.col("_beside").sum())
    most = episodes.get_column("_beside").max()
    if most is not None and int(most) >= INTERLEAVED_MIN:
        for _ in range(3):  # the lagging writer's last rows (next to its others), after the other stopped
            tail = (pl.col("_beside").shift(1).over("metric").fill_null(False) & pl.col("_near")
                    & (pl.col("step") > pl.col("step").shift(1).over("metric")).fill_null(False))
            back = back.with_columns(_beside=pl.col("_beside") | tail)
        back = back.filter(~pl.col("_beside"))
    flagged = back.get_column("_i").to_numpy()
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


def first_step_relogged(frame: pl.DataFrame) -> int | None:
    """Row where a relaunch re-logs the only step a killed first attempt logged: every row
    before it is at that one step, and a metric logged there once already comes again with
    another value, while at the next step it is logged once (ranks or hooks that log every
    step twice are not a relaunch; a Lightning `epoch` column repeated with the same value
    in the train and the val row is not either)."""
    steps = frame.get_column("step")
    s0 = steps[0]
    differ = (steps != s0).arg_true()
    end = int(differ[0]) if differ.len() else frame.height
    head = frame.slice(0, end).with_row_index("_i")
    twice = head.group_by("metric").agg(pl.len().alias("n"), pl.col("value").n_unique().alias("values"),
                                        pl.col("_i").sort().slice(1, 1).first().alias("again"))
    twice = twice.filter((pl.col("n") == 2) & (pl.col("values") == 2))
    if twice.height == 0:
        return None
    if end < frame.height:
        s1 = steps[end]
        later = (steps.slice(end) != s1).arg_true()  # the rows at the next step, up to the step after it
        block = frame.slice(end, int(later[0]) if later.len() else frame.height - end)
        nxt = block.group_by("metric").len()
        relogged = set(twice.get_column("metric").to_list())
        if nxt.filter(pl.col("metric").is_in(list(relogged)) & (pl.col("len") > 1)).height:
            return None  # logged twice at every step: two writers, not a relaunch
    return int(twice.get_column("again").min())


def split_ids(frame: pl.DataFrame) -> np.ndarray | None:
    """Per-row launch index (0, 1, ...) inside one table; None when it is all one launch."""
    bounds = restart_offsets(frame)
    if bounds.size == 0:
        return None
    return np.searchsorted(bounds, np.arange(frame.height), side="right").astype(np.int64)


def with_declared(local: np.ndarray | None, offsets, steps: np.ndarray) -> np.ndarray | None:
    """Per-row launch index with the launch starts an importer declared added (rows of
    one table; e.g. nanoGPT's `mfu -100.00%` lines, which mark a relaunch even where its
    steps never go back); None when it is all one launch. A step-goes-back boundary
    just after a declared one, with only rows at or below its step between them (the
    relaunch's eval line printed before its first step line), is the same launch start."""
    n = steps.size
    declared = sorted({int(o) for o in (offsets or ()) if 0 < int(o) < n})
    if not declared:
        return local
    bounds = set(declared)
    if local is not None:
        for b in (np.flatnonzero(np.diff(local)) + 1).tolist():
            d = declared[int(np.searchsorted(declared, b, side="right")) - 1] if b >= declared[0] else None
            if d is None or d == b or steps[d:b].max() > steps[b]:
                bounds.add(b)
    return np.searchsorted(np.asarray(sorted(bounds)), np.arange(n), side="right").astype(np.int64)


def relogs_a_step(frame: pl.DataFrame) -> bool:
    """Does any metric log the same step twice? A relaunch from a checkpoint always does
    (it re-logs the steps after the checkpoint); rows merely out of order never do."""
    return frame.select(pl.struct("metric", "step").is_duplicated().any()).item()


EPOCH_DROP = 0.5
"""How far below its highest value so far an `epoch` must fall to say the training started again."""
RECORD_ORDER = ("order", "list index")
"""How a reader says its step is the place of a record (`step.from`): no counter of the writer's, so a
second training appended shows only in a counter the records carry."""
_EPOCH = re.compile(r"(?i)^(?:.*[/_.])?epoch$")
_RUN_COUNTER = re.compile(r"(?i)^(?:.*[/_.])?(?:episode|iteration|update|round)s?$")
"""Counters that count a training's records from its start and go back only with a new training (an
RL session's `episode`, a `round` of federated learning); an iteration of an epoch is no such counter
where an epoch is logged beside it (it starts again with every epoch), which `_training_counter` checks."""


def _training_counter(frame: pl.DataFrame) -> pl.DataFrame | None:
    """The rows (`_i`, `value`) of the counter that says where a training starts: `epoch`, else a run
    counter (`_RUN_COUNTER`) when no epoch is logged; None when the records carry neither."""
    names = frame.get_column("metric").cast(pl.String).unique().to_list()
    epoch = [m for m in names if _EPOCH.match(m)]
    picked = epoch or [m for m in names if _RUN_COUNTER.match(m)]
    if not picked:
        return None
    rows = frame.with_row_index("_i").filter((pl.col("metric").cast(pl.String) == sorted(picked)[0])
                                             & pl.col("value").is_finite())
    return rows if rows.height >= 2 else None


def _training_starts(values: np.ndarray, *, epoch: bool) -> list[int]:
    """Positions in a counter's values where a new training starts: an epoch that falls more than
    `EPOCH_DROP` below the highest so far (HF's 3.0 then 1.0); a run counter that goes back to where
    it started (within one of its usual increments: a per-session `episode` 299 then 0), not merely
    down (workers writing their episodes to one list, each behind the others now and then)."""
    found, at = [], 0
    rise = np.diff(values)
    step = float(np.median(rise[rise > 0])) if (rise > 0).any() else 1.0
    while at < values.size - 1:  # the highest so far starts again with each training
        top = np.maximum.accumulate(values[at:])
        tail = values[at + 1:]
        back = tail < top[:-1] - EPOCH_DROP
        if not epoch:
            back &= np.abs(tail - values[at]) <= step
        fall = np.flatnonzero(back)
        if fall.size == 0:
            break
        at += int(fall[0]) + 1
        found.append(at)
    return found


def restart_record_order(frame: pl.DataFrame, how: str = "order") -> pl.DataFrame:
    """A table whose step is the order of its records (HF Trainer's console dicts carry no step; a JSON
    list of per-episode records) where a training counter falls back (`epoch` 3.0, then 1.0; `episode`
    299, then 0): a second training appended to the log. Each training's records are counted from the
    table's first step again, so the step goes back where the counter did and the launches are told
    apart as any appended run is. The rows from the one after the previous counter row on belong to the
    new training (the epoch is the last key of a Trainer dict; a record's other keys follow its
    counter's row at the same step; `how` is the reader's `step.from`: a record count of console
    dicts, `order`, ends each record with its epoch). The frame unchanged when the counter never falls back."""
    ep = _training_counter(frame)
    if ep is None:
        return frame
    epoch = bool(_EPOCH.match(str(ep.get_column("metric")[0])))
    values, rows = ep.get_column("value").to_numpy(), ep.get_column("_i").to_numpy()
    found = _training_starts(values, epoch=epoch)
    if not found:
        return frame
    steps = frame.get_column("step").to_numpy().copy()
    first = int(steps.min())
    if epoch and how == "order":  # the rows after the previous epoch row (its dict's last key) are the new training's
        starts = np.asarray([int(rows[k - 1]) + 1 for k in found], dtype=np.int64)
        part = np.searchsorted(starts, np.arange(frame.height), side="right")
        base = np.concatenate([[0], steps[starts] - first])
    else:  # a record's keys share its step: the training starts at the step of the record that fell back
        at = np.asarray([int(steps[rows[k]]) for k in found], dtype=np.int64)
        part = np.searchsorted(at, steps, side="right")
        base = np.concatenate([[0], at - first])
    return frame.with_columns(step=pl.Series(steps - base[part], dtype=frame.schema["step"]))
