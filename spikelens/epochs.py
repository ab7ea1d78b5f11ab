"""The epoch a finding's steps fall in, for a reader who counts in epochs.

People read a run that logs its epoch (HF's fractional `epoch`, a CSV's or Lightning's `epoch`
column, `train/epoch`) in epochs ("val loss turned up after epoch 7"), while findings sit on the
step axis. Each finding's evidence says the epoch in progress at its anchor step (`epoch`: the
last epoch value logged at or before that step) and, for one that spans steps, at its start and
end (`epoch_start`, `epoch_end`). A run whose step already is its epoch gets nothing: the step
says it.
"""
from __future__ import annotations

import re

import numpy as np

from .detect.base import RunContext
from .model.finding import Finding

_EPOCH = re.compile(r"(?:^|[/.\s_-])epoch$", re.I)
"""A metric that counts epochs: `epoch`, `train/epoch`, `trainer.epoch`, `cur_epoch`."""


def epoch_counter(ctx: RunContext) -> tuple[np.ndarray, np.ndarray] | None:
    """Steps and values of the run's logged epoch counter (the one with most points), or None
    where the run logs none, or its step is its epoch (every epoch value within one of its step)."""
    cands = [s for m, s in ctx.series.items() if _EPOCH.search(m.strip()) and len(s)]
    if not cands:
        return None
    step, value = max(cands, key=len).finite()
    if step.size == 0 or not (np.diff(value) >= 0).mean() >= 0.9:
        return None  # not a counter (an epoch that goes back on every row is no clock to read steps by)
    if np.all(np.abs(value - step) <= 1):
        return None
    return step, value


def annotate(findings: list[Finding], ctx: RunContext) -> None:
    """Add `epoch` (and `epoch_start` / `epoch_end` for a span) to the evidence of each finding
    with a step, where the run logs its epoch."""
    counter = epoch_counter(ctx)
    if counter is None:
        return
    step, value = counter
    for f in findings:
        at = f.anchor_step
        if at is None or "epoch" in f.evidence:
            continue
        f.evidence["epoch"] = _epoch_at(step, value, at)
        if f.start_step is not None and f.end_step is not None and f.end_step > f.start_step:
            f.evidence["epoch_start"] = _epoch_at(step, value, f.start_step)
            f.evidence["epoch_end"] = _epoch_at(step, value, f.end_step)


def _epoch_at(step: np.ndarray, value: np.ndarray, at: int) -> float | int:
    """The epoch in progress at step `at`: the last one logged at or before it (the first logged
    where `at` comes before any), as an int where the run counts whole epochs."""
    i = max(int(np.searchsorted(step, at, side="right")) - 1, 0)
    v = float(value[i])
    return int(v) if v.is_integer() else round(v, 4)
