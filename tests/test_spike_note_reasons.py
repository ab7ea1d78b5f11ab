"""A spike demoted to a note says why, and only the reason that applied (#25): a curve that crosses
zero and steps up within its own spread for good is a note for its spread, not 'under 1.3x at its
peak' (a ratio it never had); a positive loss whose level steps up a fifth and stays is a note for
being under 1.3x. Written as a step/loss CSV."""
from __future__ import annotations

import numpy as np
import pytest

from loss_findings import findings_of


def _spikes(tmp_path, loss: np.ndarray) -> list:
    return findings_of(tmp_path, loss)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_zero_crossing_step_within_its_spread_names_only_the_spread(tmp_path, seed):
    rng = np.random.default_rng(seed)
    loss = -0.5 + 0.2 * np.sin(np.arange(200) / 7) + 0.01 * rng.standard_normal(200)
    loss[120:] += 0.5
    stayed = [f for f in _spikes(tmp_path, loss) if f.recovery == "none"]
    assert stayed and all(f.severity == "info" for f in stayed)
    assert all("its spread" in f.message and "under 1.3x" not in f.message for f in stayed)


def test_a_positive_loss_stepping_up_a_fifth_names_the_ratio(tmp_path):
    rng = np.random.default_rng(0)
    loss = 2.0 * np.exp(0.02 * rng.standard_normal(300))
    loss[200:] *= 1.2
    (f,) = _spikes(tmp_path, loss)
    assert f.severity == "info" and f.recovery == "none" and "under 1.3x at its peak" in f.message
