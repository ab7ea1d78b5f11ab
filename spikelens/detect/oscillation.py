"""Oscillation: a sustained stretch of abnormally large swings, reported once."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from ..model.finding import Finding
from .stats import log_scale, rolling_median, true_runs


@dataclass(frozen=True, kw_only=True)
class OscillationDetector(Detector):
    """A stretch where the loss swings far more than its usual noise, for a long time.

    Detects: the rolling median absolute deviation of the detrended log-loss rising
    to `min_amp_ratio` times its run-wide median and staying there for at least
    `min_points` logged points (one spike barely moves a median, so it never counts);
    the stretch is reported once, with its start and end.
    Why it matters: the optimizer is bouncing across a valley instead of descending;
    progress stalls and a spike or NaN often follows.
    Likely causes: an LR too high (often right after an LR jump or a restart), too
    little warm-up, β2 too low, batch size too small for the LR.
    Evidence: start and end steps, amplitude against the usual noise, number of swings.
    """

    code = "SL203"
    kind = "oscillation"
    roles = ("loss",)

    detrend_points: int = 15
    """Centred median that removes the trend (at least; grows with long runs)."""
    window_points: int = 45
    """Window of the swing amplitude (at least; grows with long runs)."""
    scale_fraction: float = 0.006
    """Long runs: the detrend window is this fraction of the points (swings span more points)."""
    min_amp_ratio: float = 3.0
    """Local swing amplitude / run-wide amplitude that opens a stretch."""
    keep_amp_ratio: float = 2.0
    """A stretch extends while the amplitude stays above this ratio and 40% of its core."""
    min_abs_amp: float = 0.03
    """Minimum swing amplitude on the log scale (≈3%) so quiet runs never qualify."""
    keep_abs_fraction: float = 0.6
    """A stretch extends while the amplitude stays above this fraction of `min_abs_amp`."""
    min_points: int = 25
    min_fraction: float = 0.02
    merge_gap_points: int = 20
    """Stretches closer than this (or half the earlier stretch) are one oscillation."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        step, value = series.finite()
        n = step.size
        if n < 3 * self.window_points:
            return []
        y, is_log = log_scale(value)
        detrend = max(self.detrend_points, int(self.scale_fraction * n)) | 1
        window = max(self.window_points, 3 * detrend) | 1
        resid = y - rolling_median(y, detrend, center=True)
        amp = rolling_median(np.abs(resid), window, center=True)
        typical = float(np.nanmedian(amp))
        if not np.isfinite(typical) or typical <= 0:
            return []
        ratio = amp / typical
        loud = amp > self.min_abs_amp if is_log else np.ones(n, bool)
        # hysteresis: a stretch opens above the floor and lasts while above most of it, so an
        # amplitude that hovers at the floor does not cut one oscillation into fragments
        still_loud = amp > self.keep_abs_fraction * self.min_abs_amp if is_log else loud
        regions = []
        for c0, c1 in true_runs((ratio > self.min_amp_ratio) & loud):
            if c1 - c0 < 4:
                continue
            core = float(np.nanmedian(amp[c0:c1 + 1]))
            keep = (amp > max(self.keep_amp_ratio * typical, 0.4 * core)) & still_loud
            while c0 > 0 and keep[c0 - 1]:
                c0 -= 1
            while c1 + 1 < n and keep[c1 + 1]:
                c1 += 1
            gap_ok = max(self.merge_gap_points, 0.5 * (regions[-1][1] - regions[-1][0])) if regions else 0
            if regions and c0 <= regions[-1][1] + gap_ok:
                regions[-1] = (regions[-1][0], max(c1, regions[-1][1]))
            else:
                regions.append((c0, c1))
        min_len = max(self.min_points, int(self.min_fraction * n))
        out = []
        stretches: list[tuple[int, int]] = []
        for a, b in regions:
            seg = resid[a:b + 1]
            if b - a + 1 < min_len or int(np.sum(np.diff(np.sign(seg[np.abs(seg) > typical])) != 0)) < 6:
                continue  # judged on the stretch the amplitude marks; only then are its edges refined
            a, b = _swing_edges(resid, amp, a, b, window // 2)
            if stretches and a <= stretches[-1][1] + max(self.merge_gap_points, 0.5 * (stretches[-1][1] - stretches[-1][0])):
                a = stretches.pop()[0]  # the refined edges close the gap: one oscillation
            stretches.append((a, b))
        for a, b in stretches:
            seg = resid[a:b + 1]
            swings = int(np.sum(np.diff(np.sign(seg[np.abs(seg) > typical])) != 0))
            r = float(np.nanmedian(ratio[a:b + 1]))
            s0, s1 = int(step[a]), int(step[b])
            msg = (f"{series.label} oscillated from step {s0} to {s1}: swings {r:.1f}x its usual noise "
                   f"({swings} reversals over {b - a + 1} points)")
            out.append(Finding(kind="oscillation", code=self.code, run=ctx.run, metric=series.metric,
                               severity="warning", message=msg, start_step=s0, end_step=s1, magnitude=r,
                               evidence={"amplitude_ratio": r, "swings": swings, "points": b - a + 1,
                                         "typical_amplitude": typical,
                                         "amplitude": float(np.nanmedian(amp[a:b + 1]))}))
        return out



def _swing_edges(resid: np.ndarray, amp: np.ndarray, a: int, b: int, reach: int) -> tuple[int, int]:
    """Move a stretch's edges out to its first and last large swing.

    The amplitude is a centred median over many points, so it crosses its bar only once half
    its window is inside the stretch: the stretch it marks starts late and ends early. The
    first swing is the earliest point, within half a window before, that is as large as half
    the stretch's typical swing and from which on at least half the points are that large."""
    big = np.abs(resid) > 0.5 * float(np.nanmedian(amp[a:b + 1]))
    lo = max(0, a - reach)
    if lo < a:
        tail_share = np.cumsum(big[lo:a][::-1])[::-1] / np.arange(a - lo, 0, -1)
        ok = np.flatnonzero(big[lo:a] & (tail_share >= 0.5))
        if ok.size:
            a = lo + int(ok[0])
    hi = min(resid.size - 1, b + reach)
    if hi > b:
        head_share = np.cumsum(big[b + 1:hi + 1]) / np.arange(1, hi - b + 1)
        ok = np.flatnonzero(big[b + 1:hi + 1] & (head_share >= 0.5))
        if ok.size:
            b = b + 1 + int(ok[-1])
    return a, b
