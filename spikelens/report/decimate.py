"""Fewer points, same picture: which points of a long series a chart draws.

A chart 1,000 pixels wide cannot show 10^6 points, and a plain stride or a mean per
bin erases exactly what a post-mortem looks for: a one-step spike. Here every x bucket
keeps its minimum and its maximum (tsdownsample's MinMax, buckets equal in step, not
in point count, so a sparse stretch is not squeezed), so no extreme is ever lost; the
first and last point are kept so the line spans the run.
"""
from __future__ import annotations

import numpy as np
from tsdownsample import MinMaxDownsampler

_MINMAX = MinMaxDownsampler()


def keep_extremes(step: np.ndarray, value: np.ndarray, buckets: int) -> np.ndarray:
    """Sorted indices of at most `2 * buckets + 2` points: the min and max of each of
    `buckets` equal stretches of `step`, plus the first and last point.

    `step` must be non-decreasing and `value` finite (NaN and inf are drawn apart).
    """
    n = value.size
    if n <= 2 * buckets + 2:
        return np.arange(n)
    picked = _MINMAX.downsample(np.ascontiguousarray(step), np.ascontiguousarray(value, dtype=np.float64),
                                n_out=2 * buckets).astype(np.int64)
    return np.union1d(picked, [0, n - 1])


def keep_in_windows(step: np.ndarray, value: np.ndarray, windows: list[tuple[float, float]],
                    buckets: int) -> np.ndarray:
    """Sorted indices of the points inside each (lo, hi) step window, each window
    decimated on its own to `buckets` min/max pairs: a zoom on a finding shows it at
    full detail while the rest of the run stays coarse."""
    parts = [np.empty(0, np.int64)]
    for lo, hi in windows:
        a, b = np.searchsorted(step, lo, "left"), np.searchsorted(step, hi, "right")
        if b > a:
            parts.append(a + keep_extremes(step[a:b], value[a:b], buckets))
    return np.unique(np.concatenate(parts))
