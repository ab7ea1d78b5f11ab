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
    (a baseline that a spike cannot pull up); NaN where too few points.

    Wide windows (trends over thousands of points) are evaluated exactly at every
    window/8-th point and interpolated between: a long run's trend does not change
    within 1/8 of its own window, and this keeps a 1M-point run well under a second.
    """
    if x.size == 0:
        return x.astype(np.float64)
    window = max(1, min(int(window), x.size))
    if window > _EXACT_UP_TO:
        finite = np.isfinite(x)
        if finite.all():
            return _strided_median(np.asarray(x, np.float64), window, center, trailing_exclusive, min_samples)
        idx = np.flatnonzero(finite)
        if idx.size and idx[-1] - idx[0] + 1 == idx.size and idx.size > window:
            out = np.full(x.size, np.nan)  # NaN only at the edges (windowed inputs): solve the middle
            out[idx[0]:idx[-1] + 1] = _strided_median(np.asarray(x[idx[0]:idx[-1] + 1], np.float64), window,
                                                      center, trailing_exclusive, min_samples)
            return out
    return _polars_rolling_median(np.asarray(x, np.float64), window, center, trailing_exclusive,
                                  min(min_samples, window))


def _polars_rolling_median(x: np.ndarray, window: int, center: bool, exclusive: bool, min_samples: int) -> np.ndarray:
    """Polars' trailing rolling median, moved into place. Polars' own `center=True` and a
    `shift(1)` (a null in front) both take a 3-5x slower kernel; shifting the trailing
    result gives the same numbers (tests compare both ways)."""
    def trailing(v: np.ndarray) -> np.ndarray:
        return pl.Series(v, dtype=pl.Float64).rolling_median(window_size=window, min_samples=min_samples) \
            .to_numpy().astype(np.float64)

    if center and exclusive:
        s = pl.Series(x, dtype=pl.Float64).shift(1)
        return s.rolling_median(window_size=window, min_samples=min_samples, center=True).to_numpy().astype(np.float64)
    out = trailing(x)
    if exclusive:  # median of x[i-window : i] is the trailing median at i-1
        return np.concatenate([[np.nan], out[:-1]])
    if not center:
        return out
    # centred window at i = [i - window//2, i + after]: the trailing median at i + after,
    # except the last `after` points, whose windows are cut by the end (read backwards)
    n, after = x.size, window - 1 - window // 2
    res = np.empty(n)
    res[:n - after] = out[after:]
    if after:
        back = trailing(x[::-1][:window])
        res[n - after:] = back[n - 1 - np.arange(n - after, n) + window // 2]
    return res


_EXACT_UP_TO = 256


def _strided_median(x: np.ndarray, window: int, center: bool, exclusive: bool, min_samples: int) -> np.ndarray:
    n = x.size
    stride = max(1, window // 8)
    anchors = np.arange(0, n, stride)
    if anchors[-1] != n - 1:
        anchors = np.append(anchors, n - 1)
    # window [lo, hi) for each anchor, as polars defines it
    if center:
        lo = anchors - window // 2
        hi = lo + window
    else:
        hi = anchors + 1 - (1 if exclusive else 0)
        lo = hi - window
    out = np.full(anchors.size, np.nan)
    full = (lo >= 0) & (hi <= n)
    if full.any():
        view = np.lib.stride_tricks.sliding_window_view(x, window)
        rows = np.flatnonzero(full)
        chunk = max(1, 4_000_000 // window)  # bound the temporary copy to ~32 MB
        for c in range(0, rows.size, chunk):
            r = rows[c:c + chunk]
            out[r] = np.median(view[lo[r]], axis=1, overwrite_input=True)  # the gather is a copy already
    for j in np.flatnonzero(~full):
        a, b = max(lo[j], 0), min(hi[j], n)
        if b - a >= max(min(min_samples, window), 1):
            out[j] = np.median(x[a:b])
    ok = np.isfinite(out)
    res = np.interp(np.arange(n), anchors[ok], out[ok]) if ok.any() else np.full(n, np.nan)
    first_ok, last_ok = anchors[ok][0] if ok.any() else n, anchors[ok][-1] if ok.any() else -1
    res[:first_ok] = np.nan
    res[last_ok + 1:] = np.nan
    return res


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


def rank_correlation(x: np.ndarray) -> float:
    """Spearman correlation of x with its index (how monotone a curve is), in NumPy
    (importing scipy.stats costs a second of start-up on every command)."""
    ranks = np.argsort(np.argsort(x, kind="stable"), kind="stable").astype(np.float64)
    idx = np.arange(x.size, dtype=np.float64)
    ranks -= ranks.mean()
    idx -= idx.mean()
    denom = np.sqrt((ranks ** 2).sum() * (idx ** 2).sum())
    return float((ranks * idx).sum() / denom) if denom > 0 else 0.0


HALVING_RATIO = 0.6
"""A loss scale that drops to this fraction or less between two logged points has halved
(dynamic loss scaling halves it; 0.6 leaves room for logging between two changes)."""


def halvings(values: np.ndarray) -> np.ndarray:
    """Mask over consecutive pairs: True where the next value is a halving of this one."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = values[1:] / values[:-1]
    return np.isfinite(r) & (r <= HALVING_RATIO)


def still_falling(left: np.ndarray, w: int, fraction: float) -> int:
    """Index where the trailing median has made `fraction` of the run's whole log fall
    (0 for a loss that does not fall by at least 10%)."""
    ok = np.isfinite(left)
    if ok.sum() < 2 * w:
        return 0
    first, last = float(np.median(left[ok][:w])), float(np.median(left[ok][-w:]))
    fall = first - last
    if fall < np.log(1.1):
        return 0
    below = np.flatnonzero(ok & (left <= first - fraction * fall))
    return int(below[0]) if below.size else 0


def true_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of every run of True."""
    if not mask.any():
        return []
    d = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1) - 1
    return list(zip(starts.tolist(), ends.tolist()))
