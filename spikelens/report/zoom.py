"""Where a finding sits on the step axis, and the stretch a zoomed view of it shows:
the event plus enough before it to see the baseline and after it to see the recovery.
Shared by the HTML report and the per-finding PNGs so both zoom to the same steps.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model.finding import Finding

LINE_KINDS = frozenset({"resume_overlap", "step_reset", "step_gap", "wallclock_gap"})
"""Kinds that happen at one step (a relaunch, a gap): drawn as a line, not a band."""
OPEN_KINDS = frozenset({"nan", "divergence"})
"""Kinds that run to the end of the run when they have no end step."""


@dataclass(frozen=True)
class Extent:
    """The steps a finding covers; `line` for an event at one step (a relaunch)."""

    x0: float
    x1: float
    line: bool


def extent(f: Finding, last_step: float | None) -> Extent | None:
    """Where to draw a finding; None when it names no step (a run-wide note)."""
    if f.kind in LINE_KINDS:
        at = f.extra.get("resume_step", f.start_step if f.start_step is not None else f.anchor_step)
        return None if at is None else Extent(float(at), float(at), True)
    x0 = f.start_step if f.start_step is not None else f.anchor_step
    if x0 is None:
        return None
    x1 = f.end_step
    if x1 is None:
        open_ended = f.kind in OPEN_KINDS or f.recovery == "none"
        x1 = last_step if open_ended and last_step is not None else (f.peak_step or x0)
    x1 = max(float(x1), float(x0))
    return Extent(float(x0), x1, False)


def window(ext: Extent, first_step: float, last_step: float) -> tuple[float, float]:
    """The stretch a zoom on `ext` shows: its width again on each side (at least 2% of
    the run and 10 steps), clipped to the run."""
    width = ext.x1 - ext.x0
    pad = max(width, 0.02 * (last_step - first_step), 10.0)
    return max(first_step, ext.x0 - pad), min(last_step, ext.x1 + pad)
