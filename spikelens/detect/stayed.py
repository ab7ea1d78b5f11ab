"""A jump the loss never came back from and stayed at: the spike carries it, the divergence is named.

An engineer reading a loss that went from 1.6 to 11.8 in one step and then sat at 10.4 to the end
(an LR of 5 that wiped the model to a uniform guess), or from 3.1 to 8.5 and stayed (a collapse back
to the first level), sees one event that is both a spike (one step) and the run's divergence (nothing
after it trained); people who label runs call it either. The spike detector finds the jump (a rise
too quick for the divergence detector's trend, which also needs its points) and stays the alarm; a
divergence note beside it, pointing at the spike, says the run diverged there, as the chance-level
plateau it settled on is a note pointing at it (`reconcile._fold_into_blowup`). A spike that came
back, or one that settled far below its peak (a loss that jumped 5x and fell back to twice its
level), has no such note.
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


def jumps_that_stayed(findings: list[Finding], ctx: RunContext) -> list[Finding]:
    """A divergence note for each loud spike that never came back and settled near its peak, far
    above its level (the spike stays the alarm: one event, its card the spike's), unless the held-out
    loss fell over the same steps (the divergence detector's own proviso)."""
    out = []
    for f in findings:
        if f.kind != "spike" or f.recovery != "none" or f.severity == "info" or f.start_step is None:
            continue
        ev = f.evidence
        settled, base, peak = ev.get("settled"), ev.get("baseline"), ev.get("peak_value")
        if not all(isinstance(x, (int, float)) and x > 0 for x in (settled, base, peak)):
            continue
        if settled < STAYED_RATIO * base or settled < STAYED_SHARE * peak:
            continue
        s = ctx.series.get(f.metric or "")
        last = int(s.step[-1]) if s is not None and len(s) else None
        note = Finding(
            kind="divergence", code=DivergenceDetector.code, run=f.run, metric=f.metric, severity="info",
            message=(f"{f.metric} diverged at step {f.start_step}: it jumped to {peak:.4g} and stayed there "
                     f"({settled:.4g} at the end, {settled / base:.1f}x its level of {base:.4g} before, "
                     f"{settled / peak:.0%} of the peak), so nothing after it trained; the spike at step "
                     f"{f.peak_step}, reported with it"),
            start_step=f.start_step, peak_step=f.peak_step, end_step=last, magnitude=float(settled / base),
            evidence={"jump_that_stayed": True, "spike_step": f.peak_step, "settled": settled, "baseline": base,
                      "peak_value": peak, "note_because": "settled_level"})
        _unless_held_out_improved(DivergenceDetector(), note, ctx)
        if "held_out_fell" in note.evidence:
            continue  # the held-out loss fell over the same steps: the model got better, no divergence
        ev["stayed"] = True
        out.append(note)
    return out
