"""Property tests for two speed-ups made for the sweep benchmark: each must give exactly
what the plain computation gives.

- `stats.rolling_median` moves Polars' trailing rolling median into place instead of
  asking Polars for `center=True` or rolling a `shift(1)`-ed series (both take a slower
  kernel); the reference here is that direct Polars call.
- `resume._locate_step` finds the best step split from suffix sums; the reference is
  the least-squares fit of every candidate split, one `np.linalg.lstsq` each.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spikelens.detect.resume import _locate_step
from spikelens.detect.stats import rolling_median


from conftest import polars_rolling_median as polars_reference  # noqa: E402


def lstsq_reference(y: np.ndarray, i: int, w: int) -> int:
    lo, hi = max(0, i - 2 * w), min(y.size, i + 2 * w + 1)
    seg = y[lo:hi]
    ok = np.isfinite(seg)
    t = np.arange(lo, hi, dtype=np.float64)[ok]
    v = seg[ok]
    if v.size < 8:
        return i
    t = (t - t.mean()) / max(t.std(), 1.0)
    best, best_rss = i, np.inf
    for c in range(max(lo + 3, i - w), min(hi - 3, i + w + 1)):
        x = np.column_stack([np.ones_like(t), t, (np.arange(lo, hi)[ok] >= c).astype(np.float64)])
        coef, *_ = np.linalg.lstsq(x, v, rcond=None)
        rss = float(np.sum((x @ coef - v) ** 2))
        if rss < best_rss:
            best, best_rss = c, rss
    return best


@st.composite
def series(draw, max_size: int = 300):
    n = draw(st.integers(1, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.standard_normal(n)) * 0.05 + np.linspace(3, 1, n)
    if draw(st.booleans()):
        x[rng.integers(0, n, size=int(rng.integers(1, n + 1)))] = np.nan
    if draw(st.booleans()):
        x[rng.integers(0, n, size=2)] = np.inf
    if n > 10 and draw(st.booleans()):
        x[int(rng.integers(0, n)):] -= draw(st.sampled_from([0.5, -0.3, 1e-9]))
    return x


@settings(max_examples=300, deadline=None)
@given(x=series(), window=st.integers(1, 256), center=st.booleans(), exclusive=st.booleans(),
       min_samples=st.integers(1, 260))
def test_rolling_median_equals_polars_direct(x, window, center, exclusive, min_samples):
    got = rolling_median(x, window, center=center, trailing_exclusive=exclusive, min_samples=min_samples)
    want = polars_reference(x, window, center, exclusive, min_samples)
    assert np.array_equal(got, want, equal_nan=True)


@settings(max_examples=200, deadline=None)
@given(y=series(max_size=600), where=st.floats(0, 1), w=st.integers(1, 80))
def test_locate_step_equals_the_lstsq_search(y, where, w):
    i = min(int(where * y.size), y.size - 1)
    assert _locate_step(y, i, w) == lstsq_reference(y, i, w)
