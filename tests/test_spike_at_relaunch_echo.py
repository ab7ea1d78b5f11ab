"""A spike that starts at the first point of a relaunch the stitch re-based is that relaunch's echo
(#25): five versions of a model trained one after another into one file, each restarting its epoch
counter, the stitch placing each by its loss level; a loss that still jumps at that very point jumps
to where the new launch started, a note. A spike at a relaunch logged where it was (no re-basing),
or anywhere else, keeps its alarm."""
from __future__ import annotations

from spikelens.detect.echoes import spikes_at_placed_relaunches
from spikelens.model.finding import Finding


def _spike(at: int, severity: str = "warning") -> Finding:
    return Finding(kind="spike", code="SL101", run="train.out", metric="loss", severity=severity,
                   message=f"loss spiked 6.98x at step {at} (1.427 vs 0.2043 before) and recovered in 41 steps",
                   start_step=at, peak_step=at, end_step=at + 41, recovery="fast", magnitude=6.98)


def _reset(at: int, offset: int) -> Finding:
    return Finding(kind="step_reset", code="SL302", run="train.out", metric=None, severity="info",
                   message="launch 3 restarted its step counter", start_step=0,
                   evidence={"segment": 2, "logged_first_step": 0, "step_offset": offset},
                   extra={"resume_step": at, "logged_first_step": 0, "step_offset": offset})


def test_a_spike_at_the_first_point_of_a_re_based_relaunch_is_its_echo():
    spike = _spike(60)
    spikes_at_placed_relaunches([spike, _reset(60, 60)])
    assert spike.severity == "info" and spike.evidence["note_because"] == "relaunch_start"
    assert "echo of the restart" in spike.message and spike.evidence["relaunch_segment"] == 2


def test_a_spike_after_the_relaunchs_first_point_keeps_its_alarm():
    spike = _spike(75)
    spikes_at_placed_relaunches([spike, _reset(60, 60)])
    assert spike.severity == "warning" and "note_because" not in spike.evidence


def test_a_spike_at_a_relaunch_logged_where_it_was_keeps_its_alarm():
    # a launch that took over at the step it logged (no offset): a jump there is the resume's own event
    spike = _spike(60, severity="error")
    spikes_at_placed_relaunches([spike, _reset(60, 0)])
    assert spike.severity == "error"
