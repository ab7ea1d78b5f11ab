"""Slow excursions: the loss climbs well above its trend over many steps, then comes back."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from ..frame import is_reinforcement
from ..model.finding import Finding
from .significance import demote
from .stats import global_sigma, log_scale, rolling_median, still_falling, true_runs


@dataclass(frozen=True, kw_only=True)
class ExcursionDetector(Detector):
    """A transient rise of the smoothed loss far above its trend that returns.

    Detects: the centred rolling median of the log-loss (`smooth_points`) stands above
    a long centred-median trend by at least `min_ratio` and `z_min` sigmas of the
    smoothed noise for at least `smooth_points` points in a row, and later falls back
    near the trend. Each step may be inside the point-to-point noise, so the spike
    detector does not see it; it comes back, so it is not a divergence. Not judged
    while the loss is still making its early fall (there the trend lags the curve).
    Why it matters: a stretch of steps where training went backwards and recovered: an
    optimizer near the edge of stability (an LR too high for that stage) or a stretch of
    harder or broken data; a bigger one next time may not come back.
    Likely causes: an LR too high for the stage of training, a gradient-norm climb, a
    harder data stretch, a resume that lost state.
    Evidence: start, peak and end step, peak ratio over the trend, robust z of the
    smoothed peak, points above the bar, the share of the loss's own fall it gave back.
    An excursion that gave back under `undone_share` of what the loss had fallen is a note:
    a loss near its floor multiplies on small absolute moves (0.002 to 0.018 after falling
    from 0.46 undid 4% of the training), while one that climbed back most of the way to where
    the run began (3 to 7.4 after falling from 8.3) lost the progress of a stretch of training.
    """

    code = "SL207"
    kind = "excursion"
    roles = ("loss",)

    smooth_points: int = 7
    """Points in the centred median that takes out point-to-point noise."""
    trend_fraction: float = 1 / 3
    """The trend's centred-median window, as a fraction of the run's points (at least
    `min_trend`): long enough that an excursion cannot carry it along."""
    min_trend: int = 60
    min_ratio: float = 1.5
    """Smoothed loss / trend at the peak must exceed this."""
    z_min: float = 6.0
    settled_fraction: float = 0.75
    undone_share: float = 0.25
    """An excursion is an alarm when its height above the trend (smoothed, absolute) is at least this
    share of what the loss had fallen before it, from the highest level its smoothed curve stood at
    before the excursion to the trend at the peak: what it undid of the training, not its ratio."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        step, value = series.finite()
        n, k = step.size, self.smooth_points
        if n < 2 * self.min_trend:
            return []
        y, is_log = log_scale(value)
        if not is_log:
            return []
        trend_w = max(self.min_trend, int(self.trend_fraction * n))
        smooth = rolling_median(y, k, center=True, min_samples=k)
        trend = rolling_median(y, trend_w, center=True, min_samples=trend_w // 2)
        above = smooth - trend
        sig = global_sigma(y) * 1.2533 / np.sqrt(k)
        bar = max(np.log(self.min_ratio), self.z_min * sig)
        hot = np.nan_to_num(above) > bar
        if not hot.any():
            return []
        w = max(20, n // 50)
        hot[:still_falling(rolling_median(y, w, trailing_exclusive=True, min_samples=5), w, self.settled_fraction)] = False
        # leaving the trend needs having been on it: the first points of a run sit above a
        # trend that their own later fall pulls down (a divergence's log has no early fall
        # for `still_falling` to find)
        on = np.flatnonzero(np.abs(np.nan_to_num(above, nan=np.inf)) < 0.5 * bar)
        hot[:int(on[0]) if on.size else n] = False
        out = []
        rl = is_reinforcement(ctx.roles)
        for a, last in true_runs(hot):
            b = last + 1
            if b - a < k:
                continue
            back = np.flatnonzero(np.nan_to_num(above[b:], nan=np.inf) < 0.5 * bar)
            if back.size == 0:
                continue  # never came back: a divergence or a level shift
            peak, end = a + int(np.argmax(above[a:b])), b + int(back[0])
            below = np.flatnonzero(np.nan_to_num(above[:a], nan=0.0) <= 0)  # where it left the trend
            start = int(below[-1]) + 1 if below.size else a
            f = self._finding(series, ctx, step, start, peak, end, float(above[peak]), sig, b - a)
            if rl:
                f.severity = "info"
                f.evidence["note_because"] = "reinforcement_surrogate"
                f.message += ("; a reinforcement learner's loss (a value or policy term) fits targets that move with "
                              "its returns: its climbs are notes, the run is judged by its reward")
            else:
                self._weigh_progress_undone(f, value, smooth, trend, start, peak)
            out.append(f)
        return out

    def _weigh_progress_undone(self, f: Finding, first: np.ndarray, smooth: np.ndarray, trend: np.ndarray, start: int,
                               peak: int) -> None:
        """A note, not an alarm, when the excursion gave back under `undone_share` of the loss's
        own fall: its height above the trend against the fall from the highest the smoothed loss
        stood before the excursion (or the run's first points) down to the trend at the peak (both on
        the loss's scale)."""
        before = smooth[:start]
        before = before[np.isfinite(before)]
        if not before.size or not np.isfinite(trend[peak]):
            return
        # where the run began (its first points: a fall of three points is too quick for the smoothing)
        began = float(np.median(first[:3]))
        top, level, high = max(float(np.exp(before.max())), began), float(np.exp(trend[peak])), float(np.exp(smooth[peak]))
        fell = top - level
        if not fell > 0:
            return  # a loss that never fell below where it stood: no progress to weigh against
        share = (high - level) / fell
        f.evidence["progress_undone"] = round(share, 4)
        if share >= self.undone_share:
            return
        demote(f, "little_progress_undone",
               f"at {high:.4g} against {level:.4g} it gave back {100 * share:.2g}% of the fall from {top:.4g}: a "
               f"loss near its floor multiplies on small moves, a note (an alarm from {100 * self.undone_share:g}% "
               f"of the progress undone)")

    def _finding(self, series, ctx, step, start, peak, end, excess, sig, points) -> Finding:
        s0, sp, s1 = int(step[start]), int(step[peak]), int(step[end])
        ratio = float(np.exp(excess))
        msg = (f"{series.label} left its trend at step {s0} and climbed to {ratio:.2f}x above it by step {sp} "
               f"(gradually, no single jump), back near it by step {s1}: a transient instability")
        return Finding(kind=self.kind, code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=s0, peak_step=sp, end_step=s1, recovery=None, magnitude=ratio,
                       evidence={"ratio_over_trend": ratio, "robust_z": excess / sig if sig > 0 else None,
                                 "points_above": int(points), "recovery_steps": s1 - sp})

