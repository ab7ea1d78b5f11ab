"""A jump the loss never came back from and stayed at: the run diverged there, not a spike.

An engineer reading a loss that went from 1.6 to 11.8 in one step and then sat at 10.4 to the end
(an LR of 5 that wiped the model to a uniform guess), or from 3.1 to 8.5 and stayed (a collapse back
to the first level), calls it a divergence at that step: the model was destroyed, nothing after the
jump trained. The spike detector finds the jump (a rise too quick for the divergence detector's
trend, which also needs its points); this names what it was, after the other folds have run, so a
spike that came back, or one that settled far below its peak (a loss that jumped 5x and fell back to
twice its level), stays a spike.
"""
from __future__ import annotations

from ..model.finding import Finding
from .base import RunContext
from .divergence import DivergenceDetector, _unless_held_out_improved

STAYED_RATIO = 2.0
"""The level the loss settled on (the median of the last fifth after the peak) stands at least this
many times its level before the jump ..."""
STAYED_SHARE = 0.7
"""... and at least this share of the peak itself: it jumped and stayed there, no spike that sank back."""


def jumps_that_stayed(findings: list[Finding], ctx: RunContext) -> None:
    """Loud spikes that never came back and settled near their peak, far above their level, become
    divergences (the severity kept: the spike's own weighing already judged the curve), under the
    divergence detector's own proviso: a training loss that rose while the held-out loss fell did not."""
    for f in findings:
        if f.kind != "spike" or f.recovery != "none" or f.severity == "info":
            continue
        ev = f.evidence
        settled, base, peak = ev.get("settled"), ev.get("baseline"), ev.get("peak_value")
        if not all(isinstance(x, (int, float)) and x > 0 for x in (settled, base, peak)):
            continue
        if settled < STAYED_RATIO * base or settled < STAYED_SHARE * peak:
            continue
        f.kind, f.code = "divergence", DivergenceDetector.code
        ev["jump_that_stayed"] = True
        f.message += (f"; it stayed there ({settled / base:.1f}x its level before, {settled / peak:.0%} of the "
                      f"peak): the run diverged at step {f.start_step} and nothing after it trained")
        _unless_held_out_improved(DivergenceDetector(), f, ctx)
