"""Small lookups the cause rules share: the companion series of a run near a step."""
from __future__ import annotations

import numpy as np

from ..detect.base import Series
from ..detect.stats import median_interval


def before(series: Series, step: int, points: int) -> tuple[np.ndarray, np.ndarray]:
    """The last `points` logged values strictly before `step`."""
    i = int(np.searchsorted(series.step, step, side="left"))
    lo = max(0, i - points)
    return series.step[lo:i], series.value[lo:i]


def between(series: Series, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    a = int(np.searchsorted(series.step, lo, side="left"))
    b = int(np.searchsorted(series.step, hi, side="right"))
    return series.step[a:b], series.value[a:b]


def interval(series: Series) -> float:
    return median_interval(series.step)


def finite_median(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(np.median(x)) if x.size else float("nan")
