"""One-step jumps of a loss that has no ratio: a curve at or below zero somewhere.

A policy-gradient loss that wanders between -900 and 600 and logs 96,264 at one epoch, or a loss
printed as a -1 sentinel for its first epochs and then 1,566, 218,118, 1,595, jumped by two orders
of magnitude for one step: an engineer lists it as a spike whatever the sign of its other values.
The log-ratio test of `spikes.bad_batch_jumps` needs a positive loss, so such a curve is measured
against its own spread instead: the rise over the higher of its two neighbours, in multiples of the
10-90% spread of every other point. Short runs (ten epochs) are judged too: the size, not a noise
model, is the evidence.
"""
from __future__ import annotations

import numpy as np

from .base import RunContext, Series
from ..model.finding import Finding


def signed_jumps(value: np.ndarray, spreads: float) -> np.ndarray:
    """Indices of inner points that rose over both neighbours by `spreads` x the 10-90% spread of
    all the other points and stand `spreads` x further from zero than any other point (a curve with
    a value at or below zero; at least five points): a curve that sits at 0 with small excursions (a
    GRPO loss, a discriminator's term) has a spread near zero, but its excursions are its own scale."""
    n = value.size
    if n < 5 or value.min() > 0:
        return np.empty(0, dtype=np.int64)
    rise = value[1:-1] - np.maximum(value[:-2], value[2:])
    cand = 1 + np.flatnonzero(rise > 0)
    if spreads >= 1:  # only a point farthest from zero can stand `spreads` x beyond every other: the
        mag = np.abs(value)  # others' spread is measured for it alone, not for every local peak of a long run
        cand = cand[mag[cand] == mag.max()]
    out = []
    for i in cand:
        others = np.delete(value, i)
        spread = float(np.quantile(others, 0.9) - np.quantile(others, 0.1))
        if spread > 0 and rise[i - 1] >= spreads * spread and abs(value[i]) >= spreads * np.abs(others).max():
            out.append(int(i))
    return np.asarray(out, dtype=np.int64)


def signed_jump_finding(code: str, series: Series, ctx: RunContext, step: np.ndarray, value: np.ndarray,
                        idx: np.ndarray, spreads: float) -> Finding:
    """One spike listing the jumps, each with its rise in multiples of the others' spread."""
    sizes = []
    for i in idx:
        others = np.delete(value, i)
        spread = float(np.quantile(others, 0.9) - np.quantile(others, 0.1))
        sizes.append(float((value[i] - max(value[i - 1], value[i + 1])) / spread))
    top = int(idx[int(np.argmax(sizes))])
    named = [int(step[i]) for i in idx]
    around = max(value[top - 1], value[top + 1])
    listed = ", ".join(f"{s} ({value[i]:.4g}, {k:.0f}x)" for s, i, k in zip(named, idx, sizes))
    message = (f"{series.label} jumped for one step at {listed}: {max(sizes):.0f}x the spread of its other values "
               f"({value[top]:.4g} against {around:.4g} around it), back at the next; a curve that crosses zero has no "
               f"ratio, so its jump is measured against its own spread (at least {spreads:g}x): a bad batch or a "
               f"numerical blow-up of one step")
    return Finding(
        kind="spike", code=code, run=ctx.run, metric=series.metric, severity="warning", message=message,
        start_step=int(step[int(idx[0])]), peak_step=int(step[top]), end_step=int(step[min(int(idx[-1]) + 1, step.size - 1)]),
        recovery="fast", magnitude=float(max(sizes)),
        evidence={"one_point": True, "bad_batch": True, "steps": named, "spreads": sizes, "peak_value": float(value[top]),
                  "baseline": float(around), "signed": True, "points": int(idx.size)})
