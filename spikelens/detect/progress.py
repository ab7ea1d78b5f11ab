"""Where a training loss stopped making progress: the plateau after the early fall.

An engineer reads a loss that fell early and then sat at one level for most of the run as a
plateau, and the slow tail of a healthy run as learning. What tells them apart is how much of
the run's whole fall is still to come after the plateau starts, against the noise: a healthy
tail keeps falling a material share of what the run learned, beyond its noise, to the end; a
plateau has (almost) all of its fall behind it (an LR decayed to its floor, a capacity or data
limit, a run left going after it converged).
"""
from __future__ import annotations

import numpy as np

from .stats import MAD_TO_SIGMA

MIN_POINTS = 12
"""Fewest points judged: under it the early fall and the plateau cannot both be seen."""
MIN_FALL = 0.1
"""The run must have fallen this much (log, about 10%) from its first points to its last: a curve
that never fell is never-learned's to judge, not stopped."""
MAX_REST_SHARE = 0.1
"""From the plateau's start to the end, the loss fell at most this share of the run's whole fall..."""
NOISE_FALLS = 10.0
"""A loss read on its values (one that goes negative) must have fallen this many times its point noise."""
MAX_REST = 0.05
"""...and at most this much (log, about 5%) in itself: a regression that fell from 71 to 0.39 and on
to 0.29 still learns 26% over its last half, however small that is beside the 99.6% before; a run
whose last 60% bought 9% learned slowly, it did not stop (on the dev side's clean runs a 10% cap wrote
this note on one run in seven, 5% on one in twenty)."""
IMMATERIAL_REST = 0.01
"""...and either within its noise (three standard errors of the difference of the two windows' medians)
or under this (log, about 1%): a long run's block medians are so precise that a 0.3% creep is
significant, and significant and immaterial is still stopped. A slow tail that falls 4.8% over the
last 57% of a run, beyond its noise or in rank order (`rank_fall_z`), is learning."""


def point_sigma(y: np.ndarray) -> float:
    """Point-to-point noise (the MAD of the differences around their median, as sigma of a point)."""
    d = np.diff(y)
    return MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) / np.sqrt(2.0) if d.size else 0.0


def stopped_from(step: np.ndarray, y: np.ndarray, min_share: float, is_log: bool = True) -> dict | None:
    """The earliest point from which a falling loss `y` (its log, or its values for a loss that goes
    negative: an NLL of a density, an ELBO) made no material progress to the end, over at least
    `min_share` of the run's steps; None when it kept falling, never fell, or rose again (a divergence
    or an overfit is not a plateau). The numbers: its index `a`, the run's whole fall `total` and what
    was left of it after `a` (`rest`; log units, or the values' for a loss read on its values), and the
    noise of the test."""
    m = y.size
    if m < MIN_POINTS:
        return None
    head, tail = max(1, min(3, m // 20)), max(3, m // 10)  # (the first points: a fall may take only a few)
    total = float(np.median(y[:head]) - np.median(y[-tail:]))
    sigma = max(point_sigma(y), 1e-3 * max(abs(float(np.median(y))), 1.0))
    # a loss read on its values has no scale of its own (an NLL's offset is arbitrary): its fall must
    # stand out of its noise, and what is left of it is judged against that fall alone
    size = 1.0 if is_log else total
    if total < (MIN_FALL if is_log else NOISE_FALLS * sigma):
        return None
    span = float(step[-1] - step[0]) or 1.0
    last = int(np.searchsorted(step, step[-1] - min_share * span, side="right")) - 1
    for a in range(head, max(head, last) + 1, max(1, m // 200)):
        if (step[-1] - step[a]) < min_share * span:
            break
        w = max(3, (m - a) // 5)
        start = float(np.median(y[a:a + w]))
        end = float(np.median(y[-w:]))
        rest = start - end
        se = sigma * 1.2533 * np.sqrt(2.0 / w)
        if rest > min(MAX_REST_SHARE * total, MAX_REST * size) or (rest > IMMATERIAL_REST * size and (
                rest > 3 * se or rank_fall_z(y[a:]) > 3)):
            continue  # still falling, beyond its noise (or in order, point after point) and by a material share
        climb = max(3 * se, MAX_REST_SHARE * total)
        if -rest > climb or float(np.max(_block_medians(y[a:]))) - start > climb:
            return None  # it climbed back from here: a divergence's or an overfit's story, not a plateau
        return {"a": a, "total": total, "rest": rest, "se": se, "level": start}
    return None


def rank_fall_z(y: np.ndarray) -> float:
    """How far the points fall in rank order, in standard errors (Spearman's correlation with their order,
    negated, times sqrt(n - 1)): a slow tail whose two windows' medians differ within their noise still
    falls point after point; a loss that stopped does not."""
    n = y.size
    if n < 10 or not np.ptp(y):
        return 0.0
    rho = float(np.corrcoef(np.arange(n, dtype=np.float64), np.argsort(np.argsort(y)).astype(np.float64))[0, 1])
    return -rho * np.sqrt(n - 1) if np.isfinite(rho) else 0.0


def _block_medians(y: np.ndarray, blocks: int = 10) -> np.ndarray:
    return np.array([np.median(p) for p in np.array_split(y, min(blocks, max(1, y.size // 3)))])
