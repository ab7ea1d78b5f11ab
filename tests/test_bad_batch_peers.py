"""A one-step jump among its peers (#25): a bad batch stands alone, the run's heavy tail does not. A
behaviour-cloning loss on a noisy floor whose hard batches reach 50-150x its level throws a 190x among
dozens of points that rose at least half as far in log and in the loss's own units: the run's noise,
not a bad batch. A smooth run's 150x, and a loss near zero whose floor noise multiplies by 30x at 1e-5
beside one jump to 0.15, have no such peers: bad batches. Also a spike that never came back but peaked
under 1.3x (a detection loss 10.4 -> 12.5 -> 11.9) is a step in its level the size of its wander: a
note. Written as pandas' `to_csv` writes a step/loss table."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _loud_spikes(tmp_path, loss: np.ndarray, name: str = "loss.csv") -> list:
    path = tmp_path / name
    path.write_text("step,loss\n" + "\n".join(f"{i},{v:.8g}" for i, v in enumerate(loss)) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind == "spike" and f.severity != "info"]


def _floor(n: int, level: float, sigma: float, seed: int) -> np.ndarray:
    """A loss that fell from 0.46 to a floor at `level` in its first points, log-normal noise of
    `sigma` around it."""
    rng = np.random.default_rng(seed)
    trend = level + (0.46 - level) * np.exp(-np.arange(n) / 20)
    return trend * np.exp(sigma * rng.standard_normal(n))


def test_a_190x_batch_among_two_dozen_hard_stretches_as_high_is_noise(tmp_path):
    """A floor at 0.002 whose hard stretches of two batches reach 0.12-0.3 two dozen times: a 0.38
    batch is the largest of them, not a bad batch."""
    rng = np.random.default_rng(3)
    loss = _floor(10000, 0.002, 0.3, 3)
    for at in np.sort(rng.choice(np.arange(300, 9900), 24, replace=False)):
        loss[at:at + 2] = rng.uniform(0.12, 0.3, 2)
    loss[1359] = 0.38
    loss[[1358, 1360]] = 0.002
    assert _loud_spikes(tmp_path, loss) == []


def test_a_150x_batch_in_a_smooth_run_is_a_bad_batch(tmp_path):
    loss = _floor(6000, 0.002, 0.1, 5)
    loss[3001] = 150 * 0.002
    (f,) = _loud_spikes(tmp_path, loss)
    assert f.evidence["bad_batch"] and f.evidence["steps"] == [3001]


def test_a_jump_to_a_tenth_of_the_start_over_a_floor_of_multiplying_noise_is_a_bad_batch(tmp_path):
    """The floor's noise multiplies by 30x at 1e-5 (peers in log, none in the loss's units)."""
    rng = np.random.default_rng(6)
    loss = _floor(2000, 1e-5, 0.4, 6)
    floor = rng.choice(np.arange(200, 2000), 40, replace=False)
    loss[floor] *= 30
    loss[1200] = 0.15
    loss[[1199, 1201]] = 1e-5
    found = _loud_spikes(tmp_path, loss)
    assert any(f.evidence.get("bad_batch") and 1200 in f.evidence["steps"] for f in found)


def test_a_rise_under_1_3x_that_stayed_is_a_note(tmp_path):
    rng = np.random.default_rng(7)
    loss = np.r_[10.4 + 0.05 * rng.standard_normal(400), 12.5, 11.9 + 0.05 * rng.standard_normal(200)]
    assert _loud_spikes(tmp_path, loss) == []


def test_a_rise_of_3x_that_stayed_is_an_alarm(tmp_path):
    rng = np.random.default_rng(7)
    loss = np.r_[1.04 + 0.005 * rng.standard_normal(400), 3.1, 3.0 + 0.005 * rng.standard_normal(200)]
    (f,) = _loud_spikes(tmp_path, loss)
    assert f.recovery == "none" and f.severity == "error"
