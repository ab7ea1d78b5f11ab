"""Divergence: the loss trend turns and keeps rising, without one abrupt jump."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from ..model.finding import Finding
from .stats import global_sigma, log_scale, rank_correlation, rolling_median


@dataclass(frozen=True, kw_only=True)
class DivergenceDetector(Detector):
    """A loss whose trend turned upward and kept rising to the end of the run.

    Detects: the minimum of the smoothed log-loss (a centred rolling median), followed
    by a sustained, mostly monotone rise to the end of the run that is large against
    the noise and not made of one abrupt jump (that is a spike that never recovered).
    Why it matters: every step after the turn makes the model worse; the checkpoint
    near the turn is the one to keep, and the run should have been stopped.
    Likely causes: an LR too high for this stage (or a schedule that never decays),
    loss of precision, accumulating numerical error, a data-order problem; also
    over-fitting when it is an eval loss.
    Evidence: step and value where the trend turned, value at the end, total rise,
    rank correlation of the rise, largest single jump's share of it.
    """

    code = "SL202"
    kind = "divergence"
    roles = ("loss",)

    smooth_fraction: float = 0.025
    """Smoothing window as a fraction of the run's points (at least `min_smooth`)."""
    min_smooth: int = 11
    min_rise_ratio: float = 1.08
    """End / turning-point ratio the rise must exceed (positive losses)."""
    min_rise_sigmas: float = 12.0
    """The rise must also exceed this many sigmas of the smoothed noise."""
    min_monotonic: float = 0.7
    """Spearman correlation of the smoothed loss with the step after the turn."""
    max_jump_share: float = 0.4
    """Largest one-point jump of the smoothed loss, as a share of the rise."""
    min_duration_fraction: float = 0.05
    skip_fraction: float = 0.05
    """The first points of a run (warm-up humps) never hold the turning point."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        ok = np.isfinite(series.value)
        if not ok.all():
            last = int(np.argmax(~ok))  # only the finite stretch before a NaN
            ok = np.zeros_like(ok)
            ok[:last] = True
        step, value = series.step[ok], series.value[ok]
        n = step.size
        if n < 40:
            return []
        y, is_log = log_scale(value)
        w = max(self.min_smooth, int(n * self.smooth_fraction)) | 1
        sm = rolling_median(y, w, center=True, min_samples=1)
        lo = int(n * self.skip_fraction)
        i_min = lo + int(np.nanargmin(sm[lo:]))
        post = sm[i_min:]
        if post.size < max(20, int(n * self.min_duration_fraction)):
            return []
        tail = float(np.median(y[-max(5, n // 40):]))
        rise = tail - sm[i_min]
        sig = global_sigma(y) * 1.2533 / np.sqrt(w)
        big = rise > (np.log(self.min_rise_ratio) if is_log else (self.min_rise_ratio - 1) * abs(sm[i_min]))
        if not big or rise < self.min_rise_sigmas * sig:
            return []
        if tail < np.nanmax(post) - 0.3 * rise:
            return []  # rose and came back down: a hump, not a divergence
        rho = rank_correlation(post) if post.size > 2 else 0.0
        if not np.isfinite(rho) or rho < self.min_monotonic:
            return []
        jumps = np.diff(y[i_min:])
        jump = float(np.max(rolling_median(jumps, 3, center=True))) if jumps.size > 3 else 0.0
        big_jump = float(np.nanmax(np.diff(sm[i_min:])))
        if max(big_jump, jump) > self.max_jump_share * rise:
            return []
        start_step = int(step[i_min])
        v0 = float(np.exp(sm[i_min])) if is_log else float(sm[i_min])
        v1 = float(np.exp(tail)) if is_log else tail
        ratio = v1 / v0 if is_log else None
        msg = (f"{series.metric} diverged: the trend turned at step {start_step} ({v0:.4g}) and rose "
               + (f"{ratio:.2f}x" if ratio else f"by {v1 - v0:.4g}") + f" to {v1:.4g} by step {int(step[-1])}")
        return [Finding(kind="divergence", code=self.code, run=ctx.run, metric=series.metric, severity="error",
                        message=msg, start_step=start_step, peak_step=None, end_step=None,
                        magnitude=ratio, evidence={"turn_value": v0, "end_value": v1, "rise_ratio": ratio,
                                                   "spearman": float(rho), "largest_jump_share": max(big_jump, jump) / rise,
                                                   "last_step": int(step[-1])})]
