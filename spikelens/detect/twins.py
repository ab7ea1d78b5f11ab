"""Twin curves: the same term logged once per direction or branch of one model (CycleGAN's
`cycle_A`/`cycle_B`, `idt_A`/`idt_B`), trained by the same steps on the same schedule. When one
twin fell to a fraction of where it began and the other never moved, the steps reached one path of
the model and not the other: that path never learned (a saturated loss, a branch whose gradients
are cut), whatever the run's main loss did."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..frame import is_adversarial
from .base import RunContext, Series

_SIDE = re.compile(r"^(?P<stem>.+?[_\-/. ])(?P<side>[AB])$")
"""A name that ends in a side letter after a separator: `cycle_A`, `loss/B`."""


@dataclass(frozen=True)
class TwinRule:
    min_points: int = 20
    max_move: float = 0.05
    """The stuck twin moved less than this (log, about 5%) from its first tenth to its last."""
    min_twin_fall: float = 0.69
    """...while its twin fell at least this (log: to under half) over the same steps..."""
    min_gap: float = 0.69
    """...to a level at least this far (log: half) under where the stuck twin sat: it got somewhere
    the stuck one never did (a twin that started low and held is not stuck)."""
    max_late_start: float = 0.05
    """Both logged from the start of the run (within this share of its span)."""


def twin_of(metric: str, names) -> str | None:
    """The other side's name (`cycle_B` for `cycle_A`) when the run logs it, else None; adversarial
    terms (a discriminator's or generator's loss swings as the two networks trade the lead) have none."""
    m = _SIDE.match(metric)
    if m is None or is_adversarial(metric):
        return None
    other = m["stem"] + ("B" if m["side"] == "A" else "A")
    return other if other in names else None


def stuck_beside_twin(series: Series, ctx: RunContext, rule: TwinRule = TwinRule()) -> dict | None:
    """The numbers that say `series` never moved while its twin fell far, else None."""
    name = twin_of(series.metric, ctx.series)
    if name is None:
        return None
    twin = ctx.series[name]
    first = min(int(s.step[0]) for s in ctx.series.values() if len(s))
    out = []
    for s in (series, twin):
        step, v = s.finite()
        if v.size < rule.min_points or v.min() <= 0:
            return None
        if step[0] - first > rule.max_late_start * max(int(step[-1]) - first, 1):
            return None
        k = max(2, v.size // 10)
        y = np.log(v)
        out.append((float(np.median(y[:k])), float(np.median(y[-k:])), int(step[0]), int(step[-1]), v.size))
    (a0, a1, start, end, n), (b0, b1, *_rest) = out
    if abs(a0 - a1) > rule.max_move or b0 - b1 < rule.min_twin_fall or min(a0, a1) - b1 < rule.min_gap:
        return None
    return {"twin": name, "level": float(np.exp(a1)), "first": float(np.exp(a0)), "twin_first": float(np.exp(b0)),
            "twin_last": float(np.exp(b1)), "start": start, "end": end, "points": n}
