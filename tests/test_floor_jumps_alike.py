"""One-step jumps of a loss at its floor, compared on a log scale (#25, session 23): a loss that fell from 2.0
to 0.0007 and jumps to 0.25 for one batch among dozens of batches that jump 20-400x is the floor's own noise
(near zero a loss multiplies on small absolute moves), a note, however large 0.25 is beside its neighbours;
a jump that stands alone at the floor (350x where the others stay under 5x) is still a bad batch, and so are
many jumps of a loss that is not at its floor (`significance._floor_noise`). Written as pandas' `to_csv`
writes a step/loss table."""
from __future__ import annotations

import numpy as np
import pytest

from loss_findings import findings_of


def _spikes(tmp_path, loss: np.ndarray) -> list:
    return findings_of(tmp_path, loss, digits=8)


def _floor(seed: int, floor: float, n: int = 3000, start: float = 2.0, sigma: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (floor + (start - floor) * np.exp(-np.arange(n) / 40)) * np.exp(sigma * rng.standard_normal(n))


def _with_jumps(loss: np.ndarray, seed: int, count: int, lo: float, hi: float) -> np.ndarray:
    rng = np.random.default_rng(seed + 100)
    at = np.sort(rng.choice(np.arange(300, loss.size - 5), count, replace=False))
    loss = loss.copy()
    loss[at] *= np.exp(rng.uniform(np.log(lo), np.log(hi), count))
    return loss


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_jump_to_0_25_among_dozens_alike_at_a_floor_of_0_0007_is_noise(tmp_path, seed):
    loss = _with_jumps(_floor(seed, 0.0007), seed, 30, 20, 400)
    loss[1500] = 0.25
    found = _spikes(tmp_path, loss)
    assert found and all(f.severity == "info" for f in found)
    assert any(f.evidence.get("note_because") == "floor_noise" for f in found)


def test_a_jump_that_stands_alone_at_the_floor_is_a_bad_batch(tmp_path):
    loss = _with_jumps(_floor(3, 1.4e-4, sigma=0.15), 3, 8, 2, 4)
    loss[1503] = 0.05  # (over 2% of where the loss started: not negligible in absolute terms)
    loud = [f for f in _spikes(tmp_path, loss) if f.severity != "info"]
    assert any(1503 in (f.evidence.get("steps") or [f.peak_step]) for f in loud)


@pytest.mark.parametrize("seed", [0, 1])
def test_many_jumps_of_a_loss_far_from_its_floor_stay_bad_batches(tmp_path, seed):
    """A smooth loss at 1.2 (from 2.0) whose bad batches jump 9-45x: listed as bad batches, an alarm."""
    loss = _with_jumps(_floor(seed, 1.2, sigma=0.02), seed, 12, 9, 45)
    loud = [f for f in _spikes(tmp_path, loss) if f.severity != "info"]
    assert any(f.evidence.get("bad_batch") and len(f.evidence["steps"]) >= 5 for f in loud)
