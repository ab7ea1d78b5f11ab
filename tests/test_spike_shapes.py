"""Spikes the windowed test cannot judge alone (SL101): a multi-x jump that stays in a run
of a few points, one giant step far outside a heavy-tailed run's own outliers, a jump at
the first epoch of a resumed launch; and their look-alikes that must stay quiet (the same
heavy-tailed run without the giant step, a short run's blip, a resume without a bump).
Fixtures: `fixtures/writers/spike_shapes.py`."""
from __future__ import annotations

import sys

import spikelens

from conftest import FIXTURES

sys.path.insert(0, str(FIXTURES))
from writers import spike_shapes as ss  # noqa: E402

ROOT = FIXTURES / "spike_shapes"


def _findings(path, kind):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return [f for f in run.findings if f.kind == kind]


def test_a_multi_x_jump_that_stays_in_a_ten_step_run_is_a_spike_that_never_recovered():
    (spike,) = _findings(ROOT / "hf_held_jump", "spike")
    assert spike.peak_step == ss.HELD_JUMP_STEP and spike.recovery == "none" and spike.severity == "error"
    assert 6.5 < spike.magnitude < 8
    assert _findings(ROOT / "hf_held_jump", "plateau")  # the chance level it settles on is still named


def test_a_multi_x_jump_that_stays_in_a_40_epoch_run_is_a_spike_that_never_recovered():
    (spike,) = _findings(ROOT / "keras_held_jump", "spike")
    assert spike.start_step == ss.KERAS_JUMP_EPOCH and spike.recovery == "none"


def test_a_one_epoch_blip_far_above_every_other_epoch_of_a_40_epoch_run_is_a_one_point_spike_note():
    # epochs move 3%; one is 1.6x: too short a run for a noise tail, but far above its own other rises
    (spike,) = _findings(ROOT / "keras_blip", "spike")
    assert spike.peak_step == ss.KERAS_BLIP_EPOCH and spike.evidence["one_point"] and spike.severity == "info"
    assert _findings(ROOT / "keras_blip", "outliers") == []


def test_one_giant_step_beyond_a_heavy_tailed_runs_own_outliers_is_its_own_spike():
    (spike,) = _findings(ROOT / "heavy_tail_giant.csv", "spike")
    assert spike.peak_step == ss.GIANT_STEP and spike.recovery == "fast"
    assert spike.evidence["one_point"] and spike.evidence["next_largest_outlier_ratio"] < 4
    assert "bad_batch" in [c.cause for c in spike.causes]
    (note,) = _findings(ROOT / "heavy_tail_giant.csv", "outliers")
    assert ss.GIANT_STEP not in note.evidence["steps"] and note.evidence["count"] > 20


def test_the_same_heavy_tailed_run_without_the_giant_step_has_only_the_outliers_note():
    assert _findings(ROOT / "heavy_tail.csv", "spike") == []
    (note,) = _findings(ROOT / "heavy_tail.csv", "outliers")
    assert note.evidence["count"] > 20 and note.evidence["largest_ratio"] < 4


def test_a_jump_at_the_first_epoch_of_a_resumed_launch_is_a_spike_caused_by_the_resume():
    (spike,) = _findings(ROOT / "tb_resumed_bump", "spike")
    assert spike.start_step == ss.RESUME_FROM and spike.recovery == "fast"
    assert spike.causes and spike.causes[0].cause == "resume"


def test_a_resume_without_a_bump_has_no_spike():
    assert _findings(ROOT / "tb_resumed", "spike") == []
    assert _findings(ROOT / "tb_resumed", "resume_overlap")
