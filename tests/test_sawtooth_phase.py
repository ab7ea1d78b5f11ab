"""A sawtooth that stops long before the run ends is a phase of the schedule, not the data order
(`reconcile._sawtooth`, issue 25): an unshuffled data order puts the same hard batches at the same
place in every epoch to the last one, while a hook that runs for a phase (3D Gaussian Splatting
resets the opacities every 3000 iterations until densification ends at 15000 of 30000) stops.
Dev: gs_3dgs_tqdm_truck's 4 resets were a loud 'sawtooth ... unshuffled data order'.
Fixtures: TensorBoard event files written by the real writer."""
from __future__ import annotations

import sys

import numpy as np

from conftest import FIXTURES, only_run

sys.path.insert(0, str(FIXTURES))
from writers.curve_kinds import _tb  # noqa: E402


def _resets(root, every: int = 300, until: int = 1500, n: int = 3000):
    """An L1 photometric loss falling 0.27 -> 0.04, jumping 5x at every `every` iterations up to
    `until` and decaying back within ~60 (the opacity reset of a splatting run)."""
    rng = np.random.default_rng(21)
    s = np.arange(n)
    loss = 0.035 + 0.23 * np.exp(-s / 250)
    for r in range(every, until + 1, every):
        after = s - r
        loss = loss * np.where(after >= 0, 1 + 4 * np.exp(-np.clip(after, 0, None) / 15), 1)
    return _tb(root, {"Loss": loss * np.exp(0.04 * rng.standard_normal(n))})


def _periodic(run):
    return [f for f in run.findings if f.kind == "oscillation" and f.evidence.get("periodic")]


def test_resets_that_stop_halfway_through_the_run_are_a_schedule_phase_a_note(tmp_path):
    (saw,) = _periodic(only_run(_resets(tmp_path / "phase")))
    assert saw.severity == "info" and saw.evidence["note_because"] == "schedule_phase"
    assert saw.evidence["cycles_missing_after"] >= 4 and "not the data order" in saw.message


def test_the_same_resets_to_the_end_of_the_run_stay_a_warning(tmp_path):
    (saw,) = _periodic(only_run(_resets(tmp_path / "always", until=2700)))
    assert saw.severity == "warning" and saw.evidence["cycles_missing_after"] < 2
