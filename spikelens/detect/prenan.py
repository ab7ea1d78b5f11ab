"""A loss that ran orders of magnitude above its level for a stretch before it turned NaN.

Most NaNs end a blow-up of a few steps: the loss climbs for a handful of points and overflows,
one event, the NaN's. Some runs come apart long before the NaN: the loss jumps by orders of
magnitude and trains on, wildly, for many logged steps until it finally overflows. That stretch
is an event of its own, a divergence: the checkpoint to roll back to is the last one before it,
not the last one before the NaN. Told as a note beside the NaN, which keeps the alarm.
"""
from __future__ import annotations

import numpy as np

from .base import RunContext, Series
from ..model.finding import Finding

ORDERS_HELD = 1.0
"""Every point of the stretch stands at least this many orders of magnitude (10x) above the level before it ..."""
ORDERS_PEAK = 2.0
"""... and its highest at least this many (100x): a loss that went that far was no longer training."""
MIN_POINTS = 10
"""... for at least this many logged points before the NaN: a blow-up of a few points straight into
the NaN is the NaN's own onset (one event); ten points trained at that level are a stretch of their own."""


def diverged_before_nan(series: Series, ctx: RunContext, first: int) -> list[Finding]:
    """The divergence note of a loss whose finite points before its first non-finite one (`first`)
    hold a stretch of at least `MIN_POINTS`, reaching to the NaN, every point `ORDERS_HELD` orders
    of magnitude above the median of the points before the stretch (two or more) and one of them
    `ORDERS_PEAK` orders."""
    if series.role not in ("loss", "eval_loss") or first < MIN_POINTS + 2:
        return []
    pre = series.value[:first]
    if not (np.isfinite(pre).all() and (pre > 0).all()):
        return []
    y = np.log10(pre)
    # the onset: the earliest point from which every point to the NaN stands an order above the one
    # before it and above the median of all the points before it
    after_min = np.minimum.accumulate(y[::-1])[::-1]
    cands = 2 + np.flatnonzero(after_min[2:first - MIN_POINTS + 1] - y[1:first - MIN_POINTS] >= ORDERS_HELD)
    j = next((int(c) for c in cands if after_min[c] - np.median(y[:c]) >= ORDERS_HELD), None)
    if j is None:
        return []
    ref = float(np.median(y[:j]))
    if y[j:first].max() - ref < ORDERS_PEAK:
        return []
    step = series.step
    a, b, nan_step = int(step[j]), int(step[first - 1]), int(step[first])
    peak = j + int(np.argmax(y[j:first]))
    ratio = float(10 ** (y[peak] - ref))
    message = (f"{series.label} diverged at step {a}: from {10 ** ref:.4g} it jumped to {pre[j]:.4g} and stayed "
               f"{10 ** (y[j:first].min() - ref):.3g}x or more above that level for {first - j} logged points (up to "
               f"{pre[peak]:.4g}, {ratio:.3g}x, at step {int(step[peak])}) before it went non-finite at step {nan_step}: "
               f"the run came apart at step {a}, roll back to before it (the NaN finding holds the alarm)")
    return [Finding(kind="divergence", code="SL202", run=ctx.run, metric=series.metric, severity="info",
                    message=message, start_step=a, peak_step=int(step[peak]), end_step=b, magnitude=ratio,
                    evidence={"before_nan": True, "nan_step": nan_step, "level_before": float(10 ** ref),
                              "ratio": ratio, "points": int(first - j)})]
