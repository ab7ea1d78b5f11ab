"""A spike that starts at the first point of a relaunch the stitch placed is the relaunch's echo.

A launch that restarted its step counter (`epoch 300 -> 0`: five versions of a model trained one
after another into one file) is placed on the run's timeline by the stitch, which re-bases its steps
to where its first loss best matches the earlier launch's curve. When the loss still jumps at that
very point, the jump is the relaunch's own starting level (a model starting again from its first
loss), not a batch or an instability of training: the placement is a guess the jump contradicts, and
the restart is already told by its step-reset note. The spike stays listed, as a note.
"""
from __future__ import annotations

from ..model.finding import Finding


def spikes_at_placed_relaunches(findings: list[Finding]) -> None:
    """Loud spikes whose rise starts exactly at the step where a re-based launch (a step reset the
    stitch moved by an offset) took over become notes that say so."""
    placed = {f.extra["resume_step"]: f for f in findings if f.kind == "step_reset" and f.extra.get("resume_step") is not None
              and (f.evidence.get("step_offset") or 0) != 0}
    if not placed:
        return
    for f in findings:
        if f.kind != "spike" or f.severity == "info" or f.start_step not in placed:
            continue
        reset = placed[f.start_step]
        launch = reset.evidence.get("segment")
        f.severity = "info"
        f.evidence["note_because"] = "relaunch_start"
        f.evidence["relaunch_segment"] = launch
        f.message += (f"; it starts at the first point of a relaunch that restarted its step counter (logged from step "
                      f"{reset.evidence.get('logged_first_step', '?')}, placed at step {f.start_step} by the stitch): "
                      f"the jump is the level that launch started from, an echo of the restart, not a training "
                      f"event: a note")
