"""A slowdown is a change from the pace the run held (#25): a return to the pace a run started
at after a faster stretch, and steps that alternate between two paces (a shared machine) whose
mix changed, are notes; a run whose every step got slower is still a warning. Written as
nanochat prints its step lines."""
from __future__ import annotations

import sys
from pathlib import Path

from spikelens.api import analyze

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))
from writers.nanochat import write_nanochat  # noqa: E402

LOUD = ("warning", "error")


def _nanochat(path: Path, factor) -> Path:
    """600 nanochat step lines; `factor(step, rng)` says how many times the usual 1140 ms a step took."""
    return write_nanochat(path, 600, factor, seed=3)


def _rate_findings(path: Path):
    rep = analyze(str(path), jobs=1)
    return [f for r in rep.runs for f in r.findings if f.kind in ("throughput_drop", "step_time_rise")]


def test_back_to_the_pace_the_run_started_at_after_a_fast_stretch_is_a_note(tmp_path):
    """2.5x the usual step time from the start, the usual pace over steps 350-450 only (cached
    data, a neighbour gone), 2.5x again to the end: the run went back to its own pace."""
    found = _rate_findings(_nanochat(tmp_path / "fast" / "train.log",
                                     lambda s, rng: 1.0 if 350 <= s < 450 else 2.5))
    assert found and not [f for f in found if f.severity in LOUD], found
    drop = next(f for f in found if f.kind == "throughput_drop")
    assert drop.evidence["own_pace"] == "started_there" and "nothing slowed down" in drop.message


def test_steps_alternating_between_two_paces_whose_mix_changed_are_a_note(tmp_path):
    """Each step is fast or 2.5x slow (a shared GPU): 15% slow steps before step 350, 65% after."""
    found = _rate_findings(_nanochat(tmp_path / "mix" / "train.log",
                                     lambda s, rng: 2.5 if rng.random() < (0.15 if s < 350 else 0.65) else 1.0))
    assert found and not [f for f in found if f.severity in LOUD], found
    assert all(f.evidence.get("own_pace") == "alternating" for f in found), [f.message for f in found]


def test_every_step_slower_from_a_step_to_the_end_is_still_a_warning(tmp_path):
    found = _rate_findings(_nanochat(tmp_path / "slow" / "train.log", lambda s, rng: 2.5 if s >= 350 else 1.0))
    loud = [f for f in found if f.severity in LOUD]
    assert loud and all("own_pace" not in f.evidence for f in loud)
    assert any(f.kind == "throughput_drop" and abs(f.start_step - 350) <= 15 for f in loud)
