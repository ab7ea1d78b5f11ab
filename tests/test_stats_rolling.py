"""The cheaper exact rolling medians (#28, leaner runs) give the numbers of the computations
they replace: the median networks those of Polars' kernel (NaN, infinities, ties, signed
zeros, every flag of `rolling_median`), the in-cache window medians those of `np.median`."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens.detect import stats
from spikelens.detect.stats import rolling_median

from conftest import polars_rolling_median as _polars  # noqa: E402


def _awkward(rng, n, kind):
    if kind == "ties":
        x = rng.integers(-3, 4, n).astype(np.float64)
    elif kind == "zeros":
        x = rng.choice([0.0, -0.0, 1.0, -1.0], n)
    else:
        x = np.cumsum(rng.standard_normal(n))
    for value, share in ((np.nan, 10), (np.inf, 30), (-np.inf, 30)):
        x[rng.integers(0, n, n // share + 1)] = value
    return x


def _same_bits(a, b) -> bool:
    return np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("window", [3, 5, 7, 9])
def test_network_medians_are_polars_medians(window, monkeypatch):
    rng = np.random.default_rng(window)
    for trial in range(15):
        n = int(rng.integers(1, 40)) if trial % 4 == 0 else int(rng.integers(window, 3_000))
        x = _awkward(rng, n, ("ties", "zeros", "walk")[trial % 3])
        if n >= window and not stats._has_negative_zero(x):
            full = _polars(x, window)[window - 1:]
            assert np.array_equal(stats._network_median(x, window), full, equal_nan=True)
        for center, exclusive, min_samples in ((False, False, 1), (False, True, 5), (True, False, 1),
                                               (False, False, window), (True, False, 3)):
            kw = dict(center=center, trailing_exclusive=exclusive, min_samples=min_samples)
            got = rolling_median(x, window, **kw)
            want = _polars(x, window, center, exclusive, min_samples)
            assert np.array_equal(got, want, equal_nan=True), (trial, center, exclusive, min_samples)
            with monkeypatch.context() as m:
                m.setattr(stats, "_NETWORKS", {})  # Polars' kernel for every window, as before
                assert _same_bits(got, rolling_median(x, window, **kw))  # -0.0 stays -0.0 too


def test_networks_work_a_chunk_at_a_time():
    """Windows that cross the chunks' edges, and a last chunk of one window."""
    rng = np.random.default_rng(7)
    for n in (stats._NETWORK_CHUNK + 4, 2 * stats._NETWORK_CHUNK + 9, 3 * stats._NETWORK_CHUNK + 17):
        x = rng.standard_normal(n)
        for window in (5, 9):
            assert np.array_equal(stats._network_median(x, window), _polars(x, window)[window - 1:])


def test_window_medians_are_numpy_medians():
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.standard_normal(30_000))
    x[::97] = x[5]  # ties
    for window in (257, 300, 1250, 4503):
        starts = np.sort(rng.integers(0, x.size - window + 1, 60))
        want = np.median(np.lib.stride_tricks.sliding_window_view(x, window)[starts], axis=1)
        assert np.array_equal(stats._window_medians(x, starts, window), want), window


def test_wide_rolling_median_keeps_its_anchor_medians():
    """The strided path's exact anchors (window/8 apart) are np.median of their windows."""
    rng = np.random.default_rng(11)
    x = np.cumsum(rng.standard_normal(50_000))
    for window, center, exclusive in ((2000, False, False), (2001, True, False), (1250, False, True)):
        got = rolling_median(x, window, center=center, trailing_exclusive=exclusive)
        stride = window // 8
        for i in range(0, x.size, stride):
            lo = i - window // 2 if center else i + 1 - exclusive - window
            if lo >= 0 and lo + window <= x.size:
                assert got[i] == np.median(x[lo:lo + window]), (window, i)


def _noise_sigma_reference(y, window):
    """noise_sigma as written before its arrays were reused in place."""
    if y.size < 3:
        return np.full(y.shape, np.nan)
    d = np.abs(np.diff(y, prepend=y[0]))
    d[0] = d[1]
    local = rolling_median(d, window, trailing_exclusive=True, min_samples=5)
    glob = float(np.nanmedian(d)) if np.isfinite(d).any() else 0.0
    local = np.where(np.isfinite(local), local, glob)
    return np.maximum(local, max(0.25 * glob, 1e-12)) * stats.MAD_TO_SIGMA / np.sqrt(2.0)


def test_noise_sigma_is_the_same_numbers_in_place():
    rng = np.random.default_rng(5)
    for n, window in ((2, 50), (3, 5), (400, 50), (5_000, 50), (3_000, 1000)):
        for kind in ("walk", "ties", "zeros"):
            y = _awkward(rng, n, kind) if n > 3 else rng.standard_normal(n)
            for arr in (y, y.astype(np.float32), np.round(np.nan_to_num(y, posinf=9, neginf=-9) * 10).astype(np.int64)):
                with np.errstate(invalid="ignore"):  # inf - inf, in both
                    assert _same_bits(stats.noise_sigma(arr, window), _noise_sigma_reference(arr, window)), \
                        (n, kind, arr.dtype)


@pytest.mark.parametrize("window", [2, 7, 300, 301])
def test_window_medians_are_np_median_bit_for_bit(window):
    """The wide windows' exact anchors (`_window_medians`, gathered a chunk at a time) are
    np.median's numbers, bits included: the mean of the middle one or two values summed from
    0.0, so a middle -0.0 reads 0.0 as np.median gives it."""
    from spikelens.detect.stats import _window_medians

    rng = np.random.default_rng(window)
    x = np.round(rng.standard_normal(5000), 1) * np.where(rng.random(5000) < 0.5, -1.0, 1.0)  # signed zeros
    starts = np.sort(rng.integers(0, x.size - window + 1, 700))
    got = _window_medians(x, starts, window)
    want = np.array([np.median(x[s:s + window]) for s in starts.tolist()])
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
