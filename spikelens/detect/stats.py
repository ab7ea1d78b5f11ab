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
        if window in _NETWORKS and v.size >= window and not _has_negative_zero(v):
            out = np.empty(v.size)
            out[:window - 1] = _polars_trailing(v[:window - 1], window, min_samples)  # cut windows
            out[window - 1:] = _network_median(v, window)
            return out
        return _polars_trailing(v, window, min_samples)

    if center and exclusive:
        s = pl.Series(x, dtype=pl.Float64).shift(1)
        return s.rolling_median(window_size=window, min_samples=min_samples, center=True).to_numpy().astype(np.float64)
    out = trailing(x)
    if exclusive:  # median of x[i-window : i] is the trailing median at i-1
        out[1:] = out[:-1]  # moved in place (NumPy copies an overlapping slice through a buffer)
        out[:1] = np.nan
        return out
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


def _polars_trailing(v: np.ndarray, window: int, min_samples: int) -> np.ndarray:
    return pl.Series(v, dtype=pl.Float64).rolling_median(window_size=window, min_samples=min_samples) \
        .to_numpy(writable=True).astype(np.float64, copy=False)


_NETWORKS = {
    3: ((0, 1), (1, 2), (0, 1)),
    5: ((0, 1), (3, 4), (0, 3), (1, 4), (1, 2), (2, 3), (1, 2)),
    7: ((0, 5), (0, 3), (1, 6), (2, 4), (0, 1), (3, 5), (2, 6), (2, 3), (3, 6), (4, 5), (1, 4), (1, 3), (3, 4)),
    9: ((1, 2), (4, 5), (7, 8), (0, 1), (3, 4), (6, 7), (1, 2), (4, 5), (7, 8), (0, 3), (5, 8), (4, 7), (3, 6),
        (1, 4), (2, 5), (4, 7), (4, 2), (6, 4), (4, 2)),
}
"""Compare-exchange networks whose middle wire ends as the median of 3, 5, 7 or 9 values
(N. Devillard's `opt_med*`, after Paeth and Knuth)."""
_NETWORK_CHUNK = 8192


def _network_median(x: np.ndarray, window: int) -> np.ndarray:
    """Median of every full window x[i : i+window] (odd window <= 9), the same numbers as
    Polars' kernel at ~5x less CPU: the network's compare-exchanges run on all windows at
    once, a cache-sized chunk at a time. Each exchange keeps the order Polars sorts by:
    NaN above +inf (`fmin` keeps the number, `maximum` the NaN); -0.0 and 0.0, which that
    order tells apart, are left to Polars by the caller."""
    m = x.size - window + 1
    out = np.empty(m)
    net, mid = _NETWORKS[window], window // 2
    pool = [np.empty(min(_NETWORK_CHUNK, m)) for _ in range(window + 1)]
    for start in range(0, m, _NETWORK_CHUNK):
        stop = min(start + _NETWORK_CHUNK, m)
        wires = [x[start + k:stop + k] for k in range(window)]
        owned = [False] * window  # a wire still reading x must not be written over
        spare = [b[:stop - start] for b in pool]
        for i, j in net:
            a, b = wires[i], wires[j]
            lo = np.fmin(a, b, out=spare.pop())
            hi = np.maximum(a, b, out=b if owned[j] else spare.pop())
            if owned[i]:
                spare.append(a)
            wires[i], wires[j], owned[i], owned[j] = lo, hi, True, True
        out[start:stop] = wires[mid]
    return out


def _has_negative_zero(x: np.ndarray) -> bool:
    zero = x == 0
    return bool(zero.any() and np.signbit(x[zero]).any())


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
        rows = np.flatnonzero(full)
        out[rows] = _window_medians(x, lo[rows], window)
    for j in np.flatnonzero(~full):
        a, b = max(lo[j], 0), min(hi[j], n)
        if b - a >= max(min(min_samples, window), 1):
            out[j] = np.median(x[a:b])
    ok = np.isfinite(out)
    # (float positions: np.interp would convert integer ones in a copy of the run's length)
    res = np.interp(np.arange(n, dtype=np.float64), anchors[ok], out[ok]) if ok.any() else np.full(n, np.nan)
    first_ok, last_ok = anchors[ok][0] if ok.any() else n, anchors[ok][-1] if ok.any() else -1
    res[:first_ok] = np.nan
    res[last_ok + 1:] = np.nan
    return res


def _window_medians(x: np.ndarray, starts: np.ndarray, window: int) -> np.ndarray:
    """np.median of each x[s : s+window] (finite values), the same numbers: the windows are
    copied a few at a time into one buffer that stays in cache (~256 KB), partitioned in
    place, and the middle read as np.median reads it (the mean of the middle two when the
    window is even). A gather of every window at once (~8 points a point) page-faulted
    tens of MB and ran partitions out of cache."""
    out = np.empty(starts.size)
    per = max(1, (1 << 15) // window)
    rows = np.lib.stride_tricks.sliding_window_view(x, window)  # row s is x[s : s+window], no copy
    k = window // 2
    kth = [k - 1, k] if window % 2 == 0 else [k]
    for c in range(0, starts.size, per):
        part = rows[starts[c:c + per]]  # the windows copied in one gather (~256 KB), not a row at a time
        part.partition(kth, axis=1)
        # the middle as np.mean of the middle one or two values reads it: summed from 0.0 (so a
        # median of -0.0 is 0.0), divided by their count
        middle = part[:, k] + 0.0 if len(kth) == 1 else (part[:, k - 1] + 0.0 + part[:, k]) / 2
        out[c:c + part.shape[0]] = middle
    return out


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
    d = np.empty(y.shape, dtype=y.dtype)  # |Δy|, the first point's copied from the second, in one array
    np.subtract(y[1:], y[:-1], out=d[1:])
    np.abs(d, out=d)
    d[0] = d[1]
    local = rolling_median(d, window, trailing_exclusive=True, min_samples=5)
    glob = float(np.nanmedian(d)) if np.isfinite(d).any() else 0.0
    del d
    local[~np.isfinite(local)] = glob
    floor = max(0.25 * glob, 1e-12)
    np.maximum(local, floor, out=local)
    local *= MAD_TO_SIGMA
    local /= np.sqrt(2.0)
    return local


def global_sigma(y: np.ndarray) -> float:
    d = np.abs(np.diff(y))
    d = d[np.isfinite(d)]
    return float(np.median(d) * MAD_TO_SIGMA / np.sqrt(2.0)) if d.size else 0.0


def first_and_last_thirds(v: np.ndarray) -> tuple[float, float]:
    """Medians of a curve's first and last thirds (one point each at the least): where it began and
    where it ended up, each robust to a few odd points."""
    k = max(1, v.size // 3)
    return float(np.median(v[:k])), float(np.median(v[-k:]))


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
