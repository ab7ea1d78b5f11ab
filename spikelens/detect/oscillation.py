"""Oscillation: a sustained stretch of abnormally large swings, reported once."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from .finding import Finding
from .stats import log_scale, rolling_median


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
    window_points: int = 31
    min_amp_ratio: float = 4.0
    """Local swing amplitude / run-wide amplitude to open a stretch."""
    keep_amp_ratio: float = 2.5
    """…and to keep it open (hysteresis)."""
    min_abs_amp: float = 0.03
    """Minimum swing amplitude on the log scale (≈3%) so quiet runs never qualify."""
    min_points: int = 25
    min_fraction: float = 0.02
    merge_gap_points: int = 20

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        ok = np.isfinite(series.value)
        step, value = series.step[ok], series.value[ok]
        n = step.size
        if n < 3 * self.window_points:
            return []
        y, is_log = log_scale(value)
        resid = y - rolling_median(y, self.detrend_points, center=True)
        amp = rolling_median(np.abs(resid), self.window_points, center=True)
        typical = float(np.nanmedian(amp))
        if not np.isfinite(typical) or typical <= 0:
            return []
        ratio = amp / typical
        hot = (ratio > self.min_amp_ratio) & (amp > self.min_abs_amp if is_log else True)
        warm = ratio > self.keep_amp_ratio
        regions = _regions(hot, warm, self.merge_gap_points)
        min_len = max(self.min_points, int(self.min_fraction * n))
        out = []
        for a, b in regions:
            if b - a + 1 < min_len:
                continue
            seg = resid[a:b + 1]
            swings = int(np.sum(np.diff(np.sign(seg[np.abs(seg) > typical])) != 0))
            if swings < 6:
                continue
            r = float(np.nanmedian(ratio[a:b + 1]))
            s0, s1 = int(step[a]), int(step[b])
            msg = (f"{series.metric} oscillated from step {s0} to {s1}: swings {r:.1f}x its usual noise "
                   f"({swings} reversals over {b - a + 1} points)")
            out.append(Finding(kind="oscillation", code=self.code, run=ctx.run, metric=series.metric,
                               severity="warning", message=msg, start_step=s0, end_step=s1, magnitude=r,
                               evidence={"amplitude_ratio": r, "swings": swings, "points": b - a + 1,
                                         "typical_amplitude": typical,
                                         "amplitude": float(np.nanmedian(amp[a:b + 1]))}))
        return out


def _regions(hot: np.ndarray, warm: np.ndarray, gap: int) -> list[tuple[int, int]]:
    """Index ranges that contain a `hot` point, widened while `warm`, merged across short gaps."""
    idx = np.flatnonzero(hot)
    if idx.size == 0:
        return []
    regions: list[list[int]] = []
    for i in idx:
        if regions and i <= regions[-1][1] + gap:
            regions[-1][1] = int(i)
        else:
            regions.append([int(i), int(i)])
    out = []
    for a, b in regions:
        while a > 0 and warm[a - 1]:
            a -= 1
        while b + 1 < warm.size and warm[b + 1]:
            b += 1
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out
