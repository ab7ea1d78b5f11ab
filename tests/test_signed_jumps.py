"""One-step jumps of a loss that crosses zero, measured against its own spread (#25): a policy-gradient
loss wandering over -900..600 that logs 96,264 at one epoch of a ten-epoch run, a loss printed as a -1
sentinel before its first real values that jumps 1,566 -> 218,118 -> 1,595. A curve that sits at 0 with
its own small excursions (a GRPO loss), a jump of a few spreads, or a rise at the last point (no step
back) is no such spike. Written as the console lines such scripts print."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api, diagnostics


def _findings(tmp_path, losses, rewards=None, *, every: int = 10, name: str = "train_log.txt") -> list:
    n = len(losses)
    rewards = rewards if rewards is not None else [0.0] * n
    lines = [f"Epoch {every * (i + 1)}/{every * n}: reward={r:.4f}, baseline={0.9 * r:.4f}, loss={v:.4f}"
             for i, (v, r) in enumerate(zip(losses, rewards))]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.metric == "loss"]


def _wander(seed: int, n: int = 10) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-900, 600, n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_zero_crossing_loss_that_jumped_two_orders_for_one_epoch_is_a_spike(tmp_path, seed):
    loss = _wander(seed)
    loss[4] = 96264.26
    (spike,) = [f for f in _findings(tmp_path, loss) if f.kind == "spike"]
    assert spike.peak_step == 50 and spike.evidence["signed"] and spike.evidence["steps"] == [50]


def test_a_sentinel_then_a_one_epoch_blow_up_is_a_spike(tmp_path):
    lines = [f"[2025-05-02 18:{19 + i:02d}:28] Epoch {i + 1} - avg_loss: {v:.6f}"
             for i, v in enumerate([-1.0] * 7 + [1566.42, 218118.04, 1595.43, 1601.2])]
    path = tmp_path / "train_log.txt"
    path.write_text("\n".join(lines) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path)
    spikes = [f for r in report.runs for f in r.findings if f.kind == "spike"]
    assert spikes and spikes[0].peak_step == 9 and spikes[0].severity == "warning"


@pytest.mark.parametrize("seed", [0, 1])
def test_a_loss_at_zero_with_its_own_small_excursions_has_no_such_spike(tmp_path, seed):
    rng = np.random.default_rng(seed)
    loss = np.where(rng.random(60) < 0.15, rng.uniform(0.01, 0.04, 60), 0.0)
    loss[0] = -0.001
    assert not [f for f in _findings(tmp_path, loss) if f.evidence.get("signed")]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_jump_of_a_few_spreads_is_no_such_spike(tmp_path, seed):
    loss = _wander(seed)
    loss[4] = 3000.0  # 2x the spread, 3x the largest other value
    assert not [f for f in _findings(tmp_path, loss) if f.evidence.get("signed")]


def test_a_rise_at_the_last_epoch_is_no_one_step_jump(tmp_path):
    loss = _wander(3)
    loss[-1] = 96264.26
    assert not [f for f in _findings(tmp_path, loss) if f.evidence.get("signed")]
