"""Absolute settings the log shows: values no schedule makes right, read off the logged
learning rate and loss scale, not off the loss curve."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Detector, RunContext
from ..model.finding import Finding


@dataclass(frozen=True, kw_only=True)
class SettingsDetector(Detector):
    """A logged setting that is wrong whatever the curve does.

    Detects: a learning rate above `max_lr` (an Adam-style optimizer's LR is 1e-6 to 1e-2;
    above 1 only plain SGD with a tiny model survives); a loss scale of exactly 1 on every
    logged row (dynamic loss scaling off); an LR at its peak from the first logged step of a
    run that starts at step 0 and later decays (no warm-up).
    Why it matters: an LR of 5 destroys an Adam model in a few steps and every later step is
    wasted; fp16 without loss scaling underflows small gradients to zero; no warm-up is the
    most common reason for an early spike or divergence in a transformer.
    Likely causes: a typo (5 for 5e-5), a schedule multiplier logged as the LR, a config
    that turned scaling off, a warm-up given in epochs where steps were meant.
    Evidence: the logged values, the rows that show them, the first and peak LR.
    """

    code = "SL501"
    kind = "settings"
    roles = ()

    max_lr: float = 1.5
    """A learning rate above this is named (a warning when it is on most rows)."""
    share: float = 0.9
    """'On every row': at least this share of the logged rows."""
    min_rows: int = 20
    """Fewest logged LR rows for the warm-up reading."""

    def detect_run(self, ctx: RunContext) -> list[Finding]:
        out = []
        lr = ctx.main("lr")
        if lr is not None:
            _, v = lr.finite()
            if v.size:
                out += self._lr_too_high(ctx, lr, v) + self._no_warmup(ctx, lr)
        sc = ctx.main("loss_scale")
        if sc is not None:
            out += self._scale_one(ctx, sc)
        return out

    def _lr_too_high(self, ctx, lr, v) -> list[Finding]:
        high = v > self.max_lr
        if not high.any():
            return []
        top = float(v.max())
        most = float(np.mean(high)) >= self.share
        every = "on every logged row" if most else f"on {int(high.sum())} of {v.size} logged rows"
        msg = (f"{lr.label} is {top:.4g} {every}: an Adam-style optimizer's learning rate is 1e-6 to 1e-2, "
               f"and at {top:.3g} it destroys the model in a few steps (a typo for {top:g}e-5, or a schedule "
               f"multiplier logged as the LR?)")
        return [Finding(kind="settings", code=self.code, run=ctx.run, metric=lr.metric,
                        severity="warning" if most else "info", message=msg,
                        start_step=int(lr.step[np.argmax(np.isfinite(lr.value) & (lr.value > self.max_lr))]),
                        evidence={"setting": "learning_rate", "value": top, "rows": int(high.sum()),
                                  "of": int(v.size), "limit": self.max_lr})]

    def _no_warmup(self, ctx, lr) -> list[Finding]:
        step, v = lr.finite()
        if v.size < self.min_rows or step[0] > 0.01 * max(step[-1], 1) or v.max() <= 0:
            return []
        peak = float(v.max())
        if v[0] < 0.999 * peak or float(np.median(v[-max(3, v.size // 10):])) > 0.5 * peak:
            return []  # a warm-up ramp, or an LR that never decays (constant: nothing to warm towards)
        if np.unique(v).size < 0.1 * v.size:
            return []  # a step schedule (a CNN's): it is not expected to warm up
        msg = (f"{lr.label} was at its peak {peak:.3g} from the first logged step ({int(step[0])}) and decays "
               f"later: no warm-up, the usual cause of an early spike in a transformer")
        return [Finding(kind="settings", code=self.code, run=ctx.run, metric=lr.metric, severity="info",
                        message=msg, start_step=int(step[0]),
                        evidence={"setting": "warmup_steps", "value": 0, "first_lr": float(v[0]), "peak_lr": peak})]

    def _scale_one(self, ctx, sc) -> list[Finding]:
        step, v = sc.finite()
        if v.size < 3 or float(np.mean(v == 1.0)) < self.share:
            return []
        msg = (f"{sc.label} is 1 on {int((v == 1.0).sum())} of {v.size} logged rows: no dynamic loss scaling "
               f"(right in bf16 or fp32; in fp16 small gradients underflow to zero)")
        return [Finding(kind="settings", code=self.code, run=ctx.run, metric=sc.metric, severity="info",
                        message=msg, start_step=int(step[0]),
                        evidence={"setting": "loss_scale", "value": 1.0, "rows": int((v == 1.0).sum()),
                                  "of": int(v.size)})]
