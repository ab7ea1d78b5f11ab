"""A late rise too small for a divergence by its ratio that gave back most of the run's progress (#25, session
25): a self-distillation loss that crept from 5.1 to 4.8 over 80 epochs and climbed back to 5.14 in its last four,
step by step at each epoch's boundary, diverged; a rise that only returns to where the loss stood shortly before
(it was still falling fast), or a hump that came back down, did not. Written as Lightning's CSVLogger writes
metrics.csv."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics

PER_EPOCH = 7


def _findings(tmp_path, loss) -> list:
    path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("epoch,step,train_loss\n" + "".join(f"{i // PER_EPOCH},{500 * (i + 1)},{v:.6f}\n"
                                                        for i, v in enumerate(loss)))
    with diagnostics.collecting():
        return [f for r in api.analyze(path.parent).runs for f in r.findings if f.kind == "divergence"]


def _slow_run(rise_epochs: int, rise: float, hump: bool = False) -> np.ndarray:
    rng = np.random.default_rng(5)
    epochs = 100
    e = np.arange(epochs * PER_EPOCH) / PER_EPOCH
    level = 4.8 + 5.4 * np.exp(-e / 3) + 0.3 * np.exp(-e / 25)  # fast fall, then a slow creep down to 4.8
    turn = (epochs - rise_epochs) * PER_EPOCH
    k = np.arange(level.size - turn)
    # up within each epoch, and a step at each epoch's boundary (the teacher's update)
    up = rise * (0.5 * (np.floor(k / PER_EPOCH) + 1) / rise_epochs + 0.5 * (k + 1) / k.size)
    if hump:
        up = rise * np.sin(np.pi * np.arange(up.size) / up.size)
    level[turn:] *= 1 + up
    return level * (1 + 0.0007 * rng.standard_normal(level.size))


def test_a_late_staircase_back_to_a_level_of_long_ago_diverged(tmp_path):
    found = _findings(tmp_path, _slow_run(4, 0.065))
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].evidence["undone_from_step"] < 0.5 * found[0].start_step
    assert found[0].start_step >= 500 * 94 * PER_EPOCH


def test_a_late_hump_that_came_back_down_did_not_diverge(tmp_path):
    assert _findings(tmp_path, _slow_run(4, 0.065, hump=True)) == []


def test_a_small_rise_of_a_loss_still_falling_fast_undid_little(tmp_path):
    rng = np.random.default_rng(6)
    n = 700
    level = 10 - 5 * np.arange(n) / n  # still falling steeply when it turns
    level[-28:] = level[-29] * (1 + 0.03 * np.arange(1, 29) / 28)
    assert [f for f in _findings(tmp_path, level * (1 + 0.0005 * rng.standard_normal(n)))
            if f.evidence.get("undone_from_step") is not None] == []
