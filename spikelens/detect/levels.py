"""Level shifts and plateaus: the loss steps to a new level, or never leaves its first one."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from .finding import Finding
from .stats import global_sigma, log_scale, median_interval, rolling_median


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
    """The early, steeply curved part of a run is not judged."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        ok = np.isfinite(series.value)
        step, value = series.step[ok], series.value[ok]
        n = step.size
        w = max(self.min_window, int(self.window_fraction * n))
        if n < 6 * w:
            return []
        y, is_log = log_scale(value)
        if not is_log:
            return []
        left = rolling_median(y, w, trailing_exclusive=True, min_samples=w)
        right = rolling_median(y[::-1], w, min_samples=w)[::-1]
        d = right - left
        trend = rolling_median(d, 6 * w + 1, center=True, min_samples=w)
        dd = d - trend
        sig = global_sigma(y) * 1.2533 * np.sqrt(2.0 / w)
        if sig <= 0:
            return []
        z = dd / sig
        out = []
        taken = np.zeros(n, bool)
        skip = max(3 * w, int(self.skip_fraction * n))
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
            # persistence: the level a long while later still differs the same way
            later = y[i + w:i + 3 * w]
            if later.size < w or np.sign(np.median(later) - left[i] - 2 * trend[i]) != np.sign(dd[i]):
                continue
            taken[i] = True
            s = int(step[i])
            before, after = float(np.exp(left[i])), float(np.exp(right[i]))
            pct = (np.exp(dd[i]) - 1) * 100
            lr_note = _lr_change(ctx, s, w * median_interval(step))
            up = dd[i] > 0
            msg = (f"{series.metric} stepped {'up' if up else 'down'} {abs(pct):.1f}% beyond its trend at step {s} "
                   f"(median {before:.4g} before, {after:.4g} after) without a spike"
                   + (f"; {lr_note}" if lr_note else ""))
            out.append(Finding(kind="level_shift", code=self.code, run=ctx.run, metric=series.metric,
                               severity="info", message=msg, start_step=s, peak_step=s, magnitude=float(np.exp(dd[i])),
                               evidence={"before": before, "after": after, "shift_percent": float(pct),
                                         "robust_z": float(z[i]), "window_points": w, "lr_change": lr_note}))
        return sorted(out, key=lambda f: f.start_step)


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
        return f"{lr.metric} changed {k:.2g}x there"
    return None


@dataclass(frozen=True, kw_only=True)
class PlateauDetector(Detector):
    """A loss that barely moved over the whole run: the model is not learning.

    Detects: the median of the last part of the run within `max_drop` of the median
    of the first part, over at least `min_points` logged points; notes when the level
    sits at chance, ln(k) for a k-way classification.
    Why it matters: compute spent on a run that never learns; usually a setup bug,
    not an optimisation problem.
    Likely causes: LR far too low or zero, frozen parameters (requires_grad off, an
    optimizer over the wrong parameter list), labels disconnected from inputs, a
    loss that is not connected to the model output.
    Evidence: first and last level, relative change, the chance level matched.
    """

    code = "SL205"
    kind = "plateau"
    roles = ("loss",)

    max_drop: float = 0.05
    min_points: int = 100
    head_fraction: float = 0.1

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        v = series.value[np.isfinite(series.value)]
        n = v.size
        if n < self.min_points:
            return []
        k = max(5, int(self.head_fraction * n))
        first, last = float(np.median(v[k:2 * k])), float(np.median(v[-k:]))
        if first <= 0 or abs(last - first) / abs(first) > self.max_drop:
            return []
        chance = next((c for c in range(2, 11) if abs(last - np.log(c)) < 0.02 * np.log(c)), None)
        note = f"; {last:.3g} is ln({chance}), chance level for {chance} classes" if chance else ""
        start = int(series.step[np.isfinite(series.value)][k])
        msg = (f"{series.metric} barely moved from step {start} to the end ({first:.4g} → {last:.4g}, "
               f"{(last - first) / first * 100:+.1f}%): the model is not learning{note}")
        return [Finding(kind="plateau", code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                        message=msg, start_step=start, end_step=int(series.step[-1]),
                        evidence={"first_level": first, "last_level": last, "chance_classes": chance})]
