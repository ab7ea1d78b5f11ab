"""Level shifts: the loss steps to a new level without a spike."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from ..model.finding import Finding
from .stats import global_sigma, log_scale, median_interval, rolling_median, still_falling


@dataclass(frozen=True, kw_only=True)
class LevelShiftDetector(Detector):
    """A persistent step change of the loss level without a spike.

    Detects: the median of the next `window` points differs from the median of the
    previous `window` points by far more than the local trend explains (robust z of
    the detrended difference), and the new level persists.
    Why it matters: an upward shift at a fixed step in every run that shares a data
    order is a data boundary (a new shard, a harder mix); a downward one usually
    follows an LR drop. Either explains a bend in the curve that is not instability.
    Likely causes: a data-shard or curriculum boundary, an LR schedule step, a change
    of sequence length or batch size, a resume that changed the data mix.
    Evidence: step, level before and after, shift in percent, robust z, LR change at
    that step if any.
    """

    code = "SL204"
    kind = "level_shift"
    roles = ("loss",)

    window_fraction: float = 0.005
    min_window: int = 50
    z_min: float = 6.0
    min_shift: float = 0.015
    """Smallest shift reported, as a fraction of the level (1.5%)."""
    skip_fraction: float = 0.1
    settled_fraction: float = 0.75
    """The early, steeply curved part of a run is not judged: the first `skip_fraction`
    of the points, and for a loss that falls, everything before it has made this
    fraction of its whole (log) fall: there a window median cannot tell a shift from
    the curve bending."""

    confirm_z: float = 3.0
    confirm_quantile: float = 0.95
    """At a step given in advance (where other runs analysed together shifted) a shift
    needs robust z `confirm_z` and to beat this quantile of the same statistic over the
    run's own other places: one named place needs less evidence than a scan of every
    step, and the run's own quantile keeps correlated noise from passing."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        prof = self._profile(series)
        if prof is None:
            return []
        step, y, w, left, trend, dd, z = prof
        n = step.size
        out = []
        taken = np.zeros(n, bool)
        skip = max(3 * w, int(self.skip_fraction * n), still_falling(left, w, self.settled_fraction))
        judged = np.nan_to_num(np.abs(z), nan=0.0)
        judged[:skip] = 0.0
        order = np.argsort(-judged)
        for i in order[:50]:
            if not np.isfinite(z[i]) or abs(z[i]) < self.z_min or abs(dd[i]) < np.log1p(self.min_shift):
                break
            if taken[max(0, i - 2 * w):i + 2 * w].any():
                continue
            # abruptness: the step shows in narrow windows too (a slow drift does not)
            q = max(5, w // 4)
            narrow = np.median(y[i:i + q]) - np.median(y[max(0, i - q):i])
            if abs(narrow) < 0.6 * abs(dd[i]) or np.sign(narrow) != np.sign(dd[i]):
                continue
            if not _persists(prof, i):
                continue
            taken[i] = True
            out.append(self._finding(series, ctx, prof, i))
        return sorted(out, key=lambda f: f.start_step)

    def shift_profile(self, series: Series) -> ShiftProfile | None:
        """This series' shift statistic in a compact form that outlives the run's frame,
        so runs analysed together can ask each other "did you shift at step S too?"."""
        prof = self._profile(series)
        if prof is None:
            return None
        step, y, w, left, trend, dd, z = prof
        # (arrays of the run's length are computed in place: this runs at the analysis's memory peak)
        moved = np.full(y.size, np.nan)  # median of y[i+w : i+3w], as the persistence check ...
        moved[:-w] = rolling_median(y[::-1], 2 * w, min_samples=w)[::-1][w:]
        moved -= left  # ... less the level before and the trend: how far the curve moved
        moved -= 2 * trend
        block = max(1, w // 4)
        nb = -(-y.size // block)
        stat = np.zeros((nb * block, 2))  # up, down: |z| where the move persisted, else 0
        np.copyto(stat[:y.size, 0], z, where=(z > 0) & (moved > 0))  # a NaN z moved nothing: 0
        np.negative(z, out=stat[:y.size, 1], where=(z < 0) & (moved < 0))
        del moved
        np.nan_to_num(stat, copy=False)  # an infinite z as the largest float (no NaN is left to replace)
        stat = stat.reshape(nb, block, 2)
        at = stat.argmax(axis=1) + (np.arange(nb) * block)[:, None]  # (nb, 2) point index
        best = stat.max(axis=1)
        del stat  # (the rest reads a few rows: the run-length arrays go before its temporaries come)
        at = np.minimum(at, y.size - 1)
        # the null: the same statistic (the best of three neighbouring blocks) elsewhere in the run
        three = np.maximum(best, np.maximum(np.roll(best, 1, axis=0), np.roll(best, -1, axis=0)))[1:-1]
        judged = three[max(3 * w, int(self.skip_fraction * y.size)) // block:]
        null = np.quantile(judged, self.confirm_quantile, axis=0) if judged.size else np.full(2, np.inf)
        # only blocks that could confirm anything are kept: a few rows, not the run
        k, col = np.nonzero(best >= np.maximum(self.confirm_z, null)[None, :])
        i = at[k, col]
        return ShiftProfile(metric=series.metric, step=step[i], up=col == 0, z=best[k, col].astype(np.float32),
                            before=np.exp(left[i]).astype(np.float32),
                            after=np.exp(left[i] + dd[i] + trend[i]).astype(np.float32),
                            ratio=np.exp(dd[i]).astype(np.float32), null_z=null, window=w,
                            tolerance_steps=1.5 * block * median_interval(step), min_z=self.confirm_z)

    def _profile(self, series: Series):
        """Per point: the median level of the `w` points after minus the `w` before, less
        its own slow trend (`dd`), and that in units of its noise (`z`); the median
        before (`left`) and the trend, for the message and the persistence check.

        Remembered per series object for the detector's life (one run): `detect` and
        `shift_profile` both need it, and it is most of their cost."""
        memo = self.__dict__.setdefault("_memo", {})
        hit = memo.get(id(series))
        if hit is not None and hit[0] is series:
            return hit[1]
        prof = self._compute_profile(series)
        memo[id(series)] = (series, prof)
        return prof

    def _compute_profile(self, series: Series):
        step, value = series.finite()
        n = step.size
        w = max(self.min_window, int(self.window_fraction * n))
        if n < 6 * w:
            return None
        y, is_log = log_scale(value)
        if not is_log:
            return None
        left = rolling_median(y, w, trailing_exclusive=True, min_samples=w)
        right = rolling_median(y[::-1], w, min_samples=w)[::-1]
        d = right - left
        trend = rolling_median(d, 6 * w + 1, center=True, min_samples=w)
        dd = d - trend
        sig = global_sigma(y) * 1.2533 * np.sqrt(2.0 / w)
        if sig <= 0:
            return None
        return step, y, w, left, trend, dd, dd / sig

    def _finding(self, series: Series, ctx: RunContext, prof, i: int) -> Finding:
        step, y, w, left, trend, dd, z = prof
        s = int(step[i])
        before, after = float(np.exp(left[i])), float(np.exp(left[i] + dd[i] + trend[i]))
        pct = (np.exp(dd[i]) - 1) * 100
        lr_note = _lr_change(ctx, s, w * median_interval(step))
        msg = (shift_sentence(series.metric, dd[i] > 0, pct, s, before, after) + " without a spike"
               + (f"; {lr_note}" if lr_note else ""))
        return Finding(kind="level_shift", code=self.code, run=ctx.run, metric=series.metric,
                       severity="info", message=msg, start_step=s, peak_step=s, magnitude=float(np.exp(dd[i])),
                       evidence={"before": before, "after": after, "shift_percent": float(pct),
                                 "robust_z": float(z[i]), "window_points": w,
                                 "window_steps": float(w * median_interval(step)), "lr_change": lr_note})


@dataclass(frozen=True)
class ShiftProfile:
    """Per block of a quarter window, the strongest persistent up- and down-shift that
    reaches `min_z`: where it is, its robust z and the levels around it; rows for the
    few blocks that could confirm a shift, whatever the run's length."""

    metric: str
    step: np.ndarray
    up: np.ndarray
    z: np.ndarray
    before: np.ndarray
    after: np.ndarray
    ratio: np.ndarray
    """exp of the detrended shift: 1.024 = 2.4% beyond the trend."""
    null_z: np.ndarray
    """The `confirm_quantile` of the best z of three neighbouring blocks over the judged
    part of the run, per direction (up, down)."""
    window: int
    tolerance_steps: float
    """One and a half blocks: the best of three neighbouring blocks, as the null."""
    min_z: float

    def shift_at(self, at: int, up: bool) -> dict[str, float] | None:
        """The strongest shift in direction `up` within `tolerance_steps` of step `at`,
        when it reaches `min_z` and the run's own null quantile; else None."""
        near = np.flatnonzero((self.up == up) & (np.abs(self.step - at) <= self.tolerance_steps))
        if near.size == 0:
            return None
        k = near[int(np.argmax(self.z[near]))]
        z, null = float(self.z[k]), float(self.null_z[0 if up else 1])
        if z < max(self.min_z, null):
            return None
        return {"step": int(self.step[k]), "robust_z": z, "before": float(self.before[k]),
                "after": float(self.after[k]), "shift_percent": (float(self.ratio[k]) - 1) * 100,
                "null_z": null, "window_points": self.window}


def shift_sentence(metric: str, up: bool, pct: float, step: int, before: float, after: float) -> str:
    """'train_loss stepped up 2.4% beyond its trend at step 5864 (median 3.241 before,
    3.315 after)': the start of every level-shift message."""
    return (f"{metric} stepped {'up' if up else 'down'} {abs(pct):.1f}% beyond its trend at step {step} "
            f"(median {before:.4g} before, {after:.4g} after)")


def _persists(prof, i: int) -> bool:
    """The level a long while later still differs from the level before, the same way
    (allowing for the trend over that distance)."""
    step, y, w, left, trend, dd, z = prof
    later = y[i + w:i + 3 * w]
    return later.size >= w and np.sign(np.median(later) - left[i] - 2 * trend[i]) == np.sign(dd[i])


def _lr_change(ctx: RunContext, at: int, span: float) -> str | None:
    lr = ctx.main("lr")
    if lr is None:
        return None
    a = np.searchsorted(lr.step, at - span)
    b = np.searchsorted(lr.step, at + span)
    if b - a < 2:
        return None
    seg = lr.value[a:b]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = seg[1:] / seg[:-1]
    r = r[np.isfinite(r)]
    if r.size and (r.min() < 0.67 or r.max() > 1.5):
        k = r.min() if r.min() < 0.67 else r.max()
        return f"{lr.label} changed {k:.2g}x there"
    return None
