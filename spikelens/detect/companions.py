"""Info-level findings on the companion metrics: grad-norm outliers, loss-scale
collapse, LR discontinuities."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext, Series
from ..model.finding import Finding
from .stats import halvings, rolling_median


@dataclass(frozen=True, kw_only=True)
class GradNormOutlierDetector(Detector):
    """Gradient-norm outliers the loss did not react to.

    Detects: grad-norm points above `min_ratio` times their trailing median, and
    whether the loss moved at those steps.
    Why it matters: isolated gradient outliers that the loss shrugs off are usually
    clipped or harmless; many of them, or ones the loss follows, announce instability.
    Likely causes: rare hard batches, attention-logit growth, a too-high LR with
    clipping doing its job.
    Evidence: count, largest ratio, steps, the loss ratio at the largest.
    """

    code = "SL401"
    kind = "grad_norm_outlier"
    roles = ("grad_norm",)

    min_ratio: float = 4.0
    window: int = 50

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        v = series.value
        ok = np.isfinite(v) & (v > 0)
        if ok.sum() < 2 * self.window:
            return []
        step, g = series.step[ok], v[ok]
        base = rolling_median(g, self.window, trailing_exclusive=True, min_samples=10)
        ratio = g / base
        idx = np.flatnonzero(np.isfinite(ratio) & (ratio > self.min_ratio))
        if idx.size == 0:
            return []
        loss = ctx.main("loss")
        reacted = []
        if loss is not None:
            lb = rolling_median(loss.value, 20, trailing_exclusive=True, min_samples=3)
            for i in idx:
                j = int(np.searchsorted(loss.step, step[i]))
                window = loss.value[j:j + 3]
                if j < loss.step.size and np.isfinite(lb[j]) and lb[j] > 0 and window.size and np.nanmax(window) / lb[j] > 1.15:
                    reacted.append(int(step[i]))
        top = int(idx[np.argmax(ratio[idx])])
        quiet = idx.size - len(reacted)
        msg = (f"{series.label} had {idx.size} outlier{'s' if idx.size > 1 else ''} above {self.min_ratio:g}x its "
               f"median (largest {ratio[top]:.1f}x at step {int(step[top])})"
               + (f"; the loss did not react to {quiet}" if loss is not None and quiet else "")
               + (f"; the loss jumped with {len(reacted)}" if reacted else ""))
        return [Finding(kind="grad_norm_outlier", code=self.code, run=ctx.run, metric=series.metric,
                        severity="info", message=msg, start_step=int(step[idx[0]]), peak_step=int(step[top]),
                        end_step=int(step[idx[-1]]), magnitude=float(ratio[top]),
                        evidence={"count": int(idx.size), "largest_ratio": float(ratio[top]),
                                  "steps": [int(s) for s in step[idx][:50]], "loss_reacted_at": reacted[:50]})]


@dataclass(frozen=True, kw_only=True)
class LossScaleCollapseDetector(Detector):
    """The fp16 loss scale halving again and again.

    Detects: stretches where the loss scale halves at least `min_halvings` times
    within `window` logged points, or ends below `floor`.
    Why it matters: each halving is a skipped optimizer step; a collapsing scale
    means gradients overflow fp16 persistently and training is quietly not updating.
    Likely causes: fp16 overflow from large activations or gradients, an LR too high,
    a missing or late gradient clip; bf16 avoids it.
    Evidence: halvings, scale before and after, the steps.
    """

    code = "SL402"
    kind = "loss_scale_collapse"
    roles = ("loss_scale",)

    min_halvings: int = 3
    window: int = 20
    floor: float = 1.0

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        v = series.value
        if v.size < 3:
            return []
        halv = np.flatnonzero(halvings(v)) + 1
        out = []
        i = 0
        while i < halv.size:
            j = i
            while j + 1 < halv.size and halv[j + 1] - halv[j] <= self.window:
                j += 1
            count = j - i + 1
            a, b = int(halv[i]), int(halv[j])
            low = float(np.nanmin(v[a:b + 1]))
            if count >= self.min_halvings or low < self.floor:
                frm = float(v[a - 1])
                if a <= max(2, min(20, 0.02 * v.size)) and low >= self.floor:
                    # dynamic loss scaling starts high and halves down to a workable scale
                    out.append(Finding(
                        kind="loss_scale_collapse", code=self.code, run=ctx.run, metric=series.metric,
                        severity="info",
                        message=(f"{series.label} calibrated from {frm:.6g} down to {low:.6g} over the first "
                                 f"{count} halvings (steps {int(series.step[a])}–{int(series.step[b])}): normal "
                                 f"start-up of dynamic loss scaling; those steps were skipped"),
                        start_step=int(series.step[a]), end_step=int(series.step[b]),
                        evidence={"halvings": count, "from": frm, "to": low, "startup": True}))
                    i = j + 1
                    continue
                # halvings the scaler doubled back between (net drop under 2**min_halvings) are
                # dynamic loss scaling at work, not a collapse
                fell = frm / low >= 2.0 ** self.min_halvings if low > 0 else True
                out.append(Finding(
                    kind="loss_scale_collapse", code=self.code, run=ctx.run, metric=series.metric,
                    severity="warning" if low < self.floor or (count >= 2 * self.min_halvings and fell) else "info",
                    message=(f"{series.label} halved {count} times between steps {int(series.step[a])} and "
                             f"{int(series.step[b])} ({frm:.6g} → {low:.6g}): fp16 overflow, steps skipped"
                             + ("" if fell else "; it doubled back in between: dynamic loss scaling at work")),
                    start_step=int(series.step[a]), end_step=int(series.step[b]),
                    evidence={"halvings": count, "from": frm, "to": low, "net_drop": frm / low if low > 0 else None}))
            i = j + 1
        return out


@dataclass(frozen=True, kw_only=True)
class LrDiscontinuityDetector(Detector):
    """A learning rate that jumps up between two logged points after warm-up.

    Detects: consecutive LR values whose ratio exceeds `min_ratio` (up) once the
    warm-up ramp is over.
    Why it matters: schedulers do not jump up; a jump is a restart with the wrong
    schedule state, a config change at resume, or a scheduler bug, and spikes follow.
    Likely causes: scheduler state not restored on resume, a warm restart, a manual
    LR change, a per-group LR mix-up.
    Evidence: step, LR before and after, ratio.
    """

    code = "SL403"
    kind = "lr_discontinuity"
    roles = ("lr",)

    min_ratio: float = 1.5

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        v = series.value
        if v.size < 5:
            return []
        with np.errstate(divide="ignore", invalid="ignore"):
            r = v[1:] / v[:-1]
        peak = int(np.nanargmax(np.where(np.isfinite(v), v, np.nan))) if np.isfinite(v).any() else 0
        ramp_end = peak if np.all(np.diff(v[:peak + 1]) >= 0) else 0
        out = []
        for i in np.flatnonzero(np.isfinite(r) & (r > self.min_ratio) & (v[:-1] > 0)):
            if i + 1 <= ramp_end:
                continue
            s = int(series.step[i + 1])
            out.append(Finding(kind="lr_discontinuity", code=self.code, run=ctx.run, metric=series.metric,
                               severity="info",
                               message=f"{series.label} jumped {r[i]:.1f}x at step {s} ({v[i]:.3g} → {v[i + 1]:.3g})",
                               start_step=s, peak_step=s, magnitude=float(r[i]),
                               evidence={"before": float(v[i]), "after": float(v[i + 1]), "ratio": float(r[i])}))
        return out[:20]
