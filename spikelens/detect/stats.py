"""Robust rolling statistics shared by the detectors, vectorised over a whole metric.

Training-loss noise is heavy-tailed and the trend decays, so everything here is a
median or a median absolute deviation over a window of logged points, never a mean
and a standard deviation.
"""
from __future__ import annotations

import numpy as np
import polars as pl

MAD_TO_SIGMA = 1.4826


def log_scale(value: np.ndarray) -> tuple[np.ndarray, bool]:
    """Work on log(loss) when every value is positive (ratios become differences);
    losses that can be negative (RL objectives) stay on their own scale."""
    finite = value[np.isfinite(value)]
    if finite.size and finite.min() > 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(value), True
    return value.astype(np.float64, copy=True), False


def rolling_median(x: np.ndarray, window: int, *, center: bool = False, trailing_exclusive: bool = False,
                   min_samples: int = 1) -> np.ndarray:
    """Rolling median over `window` points; `trailing_exclusive` leaves the current point out
    (a baseline that a spike cannot pull up); NaN where too few points."""
    if x.size == 0:
        return x.astype(np.float64)
    window = max(1, min(int(window), x.size))
    s = pl.Series(x, dtype=pl.Float64)
    if trailing_exclusive:
        s = s.shift(1)
    out = s.rolling_median(window_size=window, min_samples=min(min_samples, window), center=center)
    return out.to_numpy().astype(np.float64)


def forward_median(x: np.ndarray, window: int) -> np.ndarray:
    """Median of x[i : i+window] for every i (what the curve does from here on)."""
    if x.size == 0:
        return x.astype(np.float64)
    return rolling_median(x[::-1], window, min_samples=1)[::-1]


def noise_sigma(y: np.ndarray, window: int) -> np.ndarray:
    """Local point-to-point noise: a rolling median of |Δy| turned into a sigma.

    Differences remove the trend; the median ignores the outliers whose size we are
    trying to judge. Floored at a quarter of the run's global level so a quantised or
    briefly flat stretch does not make every wiggle look huge.
    """
    if y.size < 3:
        return np.full(y.shape, np.nan)
    d = np.abs(np.diff(y, prepend=y[0]))
    d[0] = d[1]
    local = rolling_median(d, window, trailing_exclusive=True, min_samples=5)
    glob = float(np.nanmedian(d)) if np.isfinite(d).any() else 0.0
    local = np.where(np.isfinite(local), local, glob)
    floor = max(0.25 * glob, 1e-12)
    return np.maximum(local, floor) * MAD_TO_SIGMA / np.sqrt(2.0)


def global_sigma(y: np.ndarray) -> float:
    d = np.abs(np.diff(y))
    d = d[np.isfinite(d)]
    return float(np.median(d) * MAD_TO_SIGMA / np.sqrt(2.0)) if d.size else 0.0


def index_at_or_after(step: np.ndarray, s: int) -> int:
    return int(np.searchsorted(step, s, side="left"))


def median_interval(step: np.ndarray) -> float:
    """Typical number of steps between two logged points (1 to 50 in practice)."""
    if step.size < 2:
        return 1.0
    d = np.diff(step)
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0
