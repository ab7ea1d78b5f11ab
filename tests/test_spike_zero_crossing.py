"""A curve that crosses zero has no ratio (#25): '7.99x' over a level of -0.41 means nothing. Its
spike is measured against its own 10-90% spread: an inner-loop objective printed once an outer epoch
that moves between -1 and 0.5 from block to block has no spike, while an RL objective around +-300
that leaps to 9,800 for a few updates does, its message naming the rise and the spread. Written as a
step/loss CSV."""
from __future__ import annotations

import numpy as np
import pytest

from loss_findings import findings_of


def _spikes(tmp_path, loss: np.ndarray) -> list:
    return findings_of(tmp_path, loss)


@pytest.mark.parametrize("seed", [0, 1])
def test_blocks_that_move_within_the_curves_spread_are_no_spikes(tmp_path, seed):
    rng = np.random.default_rng(seed)
    blocks = rng.uniform(-1.0, 0.5, 20)
    blocks[3], blocks[4] = -0.4, 0.6
    found = _spikes(tmp_path, np.repeat(blocks, 10) + 0.001 * rng.standard_normal(200))
    assert found and all(f.severity == "info" and "spread" in f.message for f in found)


def test_a_leap_of_many_spreads_is_a_spike(tmp_path):
    rng = np.random.default_rng(1)
    loss = 300 * rng.standard_normal(300)
    loss[150:156] = [5200, 9800, 7400, 4100, 2300, 900]
    (f,) = [f for f in _spikes(tmp_path, loss) if f.severity != "info"]
    assert f.peak_step == 151 and "jumped by 9836" in f.message and f.evidence["spread"] > 0
