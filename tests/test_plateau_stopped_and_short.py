"""Plateaus a senior engineer sees that the readings of session 23 missed (#25, session 24).

- A loss that fell early and then made no progress for most of the run: a Keras run whose LR schedule
  decayed to its floor by epoch 20 and whose loss sat at 0.0232 for the 60 epochs after
  (`progress.stopped_from`): a note that names the step it stopped at and the LR floor. A healthy slow
  tail (a loss still falling a material share of what it learned, epoch after epoch, to the end) is no
  plateau, and neither is a loss that fell early and then climbed (a divergence's story).
- A short run that never left its first level: 16 epochs of an AlphaZero policy loss at 2.25 within 1%
  (12 points say it; 20 were needed), a linear probe's epoch loss from 1.052 to 1.031 over 30 epochs
  (1.3% from its first third to its last: immaterial however precise; 1% was the limit). A short run that fell 15% in order stays quiet.
- A full-batch loss whose usual swing is exactly zero (a toy regression: one smooth line) oscillates where
  it jumps 14 -> 50 -> 19 -> 34 mid-fall; the smooth curve alone, or one printed so coarsely that its
  values repeat, does not.
Written as the files those scripts write: a Keras CSVLogger `training.log`, an epoch printout, a
headerless one-number-per-line loss file.
"""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api, diagnostics


def _findings(path, kind: str) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind == kind]


def _csvlogger(tmp_path, loss, lr, name: str = "training.log"):
    path = tmp_path / name
    rows = ["epoch,loss,lr"] + [f"{i},{v:.6f},{r:.6g}" for i, (v, r) in enumerate(zip(loss, lr))]
    path.write_text("\n".join(rows) + "\n")
    return path


def _decay_to_floor(n: int = 100) -> np.ndarray:
    """ReduceLROnPlateau-style halvings every 2 epochs from 1e-3 down to a floor of 1e-6 (epoch 20)."""
    return np.maximum(1e-3 * 0.5 ** (np.arange(n) // 2), 1e-6)


def test_a_loss_that_stopped_at_the_lr_floor_is_a_plateau_note(tmp_path):
    rng = np.random.default_rng(3)
    n = 100
    level = 0.0232 + 0.0086 * np.exp(-np.arange(n) / 6.0)  # fell early: 0.0318 -> 0.0232
    loss = level * (1 + 0.0005 * rng.standard_normal(n))
    (f,) = _findings(_csvlogger(tmp_path, loss, _decay_to_floor()), "plateau")
    assert f.evidence["reading"] == "stopped" and f.severity == "info"
    assert 10 <= f.start_step <= 50 and f.end_step == n - 1
    assert f.evidence["rest_share"] <= 0.1 and "learning rate had decayed" in f.message


@pytest.mark.parametrize("shape", ["slow_tail", "rose_again"])
def test_a_slow_healthy_tail_or_a_climb_is_no_stopped_plateau(tmp_path, shape):
    rng = np.random.default_rng(4)
    n = 100
    t = np.arange(1, n + 1)
    if shape == "slow_tail":  # a power law: the last half still falls 25% of the whole fall, beyond its noise
        level = 0.5 * t ** -0.35
    else:  # fell early, held, then rose 40% over the last third
        level = 0.2 + 0.3 * np.exp(-t / 6.0) + np.where(t > 66, 0.08 * (t - 66) / 34, 0.0)
    loss = level * (1 + 0.002 * rng.standard_normal(n))
    found = [f for f in _findings(_csvlogger(tmp_path, loss, np.full(n, 1e-3)), "plateau")
             if f.evidence.get("reading") == "stopped"]
    assert found == []


def _epochs(tmp_path, losses, key: str = "policy_loss", name: str = "train_output.txt"):
    path = tmp_path / name
    path.write_text("\n".join(f"Epoch {i + 1}/{len(losses)} - {key}: {v:.4f}"
                              for i, v in enumerate(losses)) + "\n")
    return path


def test_sixteen_epochs_at_one_level_never_learned(tmp_path):
    rng = np.random.default_rng(5)
    losses = 2.25 * (1 + 0.006 * rng.standard_normal(16))
    found = [f for f in _findings(_epochs(tmp_path, losses), "plateau") if f.evidence.get("reading") == "never"]
    assert found and found[0].start_step <= 3


def test_a_probe_that_moved_one_percent_over_thirty_epochs_never_learned(tmp_path):
    rng = np.random.default_rng(6)
    n = 30
    losses = np.linspace(1.052, 1.031, n) * (1 + 0.0008 * rng.standard_normal(n))
    (f,) = [f for f in _findings(_epochs(tmp_path, losses, "loss"), "plateau") if f.evidence.get("reading") == "never"]
    assert f.severity == "warning"


def test_sixteen_epochs_that_fell_fifteen_percent_stay_quiet(tmp_path):
    rng = np.random.default_rng(7)
    losses = np.linspace(2.25, 1.91, 16) * (1 + 0.004 * rng.standard_normal(16))
    assert [f for f in _findings(_epochs(tmp_path, losses), "plateau") if f.evidence.get("reading") == "never"] == []


def _one_column(tmp_path, values, digits: int = 6, name: str = "loss.txt"):
    path = tmp_path / name
    path.write_text("\n".join(f"{v:.{digits}f}" for v in values) + "\n")
    return path


def _full_batch(chaos: bool) -> np.ndarray:
    n = 600
    t = np.arange(n)
    loss = 0.29 + 70.0 * np.exp(-t / 40.0)  # one smooth line: full-batch gradient descent
    if chaos:
        rng = np.random.default_rng(8)
        loss[60:160] *= np.exp(0.6 * rng.standard_normal(100))  # jumps 14 -> 50 -> 19 -> 34 mid-fall
    return loss


def test_a_noiseless_loss_that_jumps_mid_fall_oscillates(tmp_path):
    found = _findings(_one_column(tmp_path, _full_batch(chaos=True)), "oscillation")
    assert found and any(f.start_step <= 80 and f.end_step >= 140 for f in found)
    assert all(f.severity == "info" and f.evidence.get("noiseless") for f in found)


@pytest.mark.parametrize("digits", [6, 2])
def test_a_smooth_or_coarsely_printed_full_batch_loss_does_not_oscillate(tmp_path, digits):
    values = _full_batch(chaos=False)
    if digits == 2:  # printed to 2 decimals: the tail repeats 0.29, 0.30, 0.29 ...
        values = values + 0.004 * np.sin(np.arange(values.size))
    assert _findings(_one_column(tmp_path, values, digits), "oscillation") == []


def _lightning_csv(tmp_path, rows: list[dict], name: str = "metrics.csv"):
    """A Lightning CSVLogger metrics.csv: one row per logged step, empty cells where a key was not logged."""
    keys = ["epoch", "step"] + sorted({k for r in rows for k in r} - {"epoch", "step"})
    lines = [",".join(keys)] + [",".join("" if r.get(k) is None else f"{r[k]}" for k in keys) for r in rows]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _train_and_val(frozen_from: int | None) -> list[dict]:
    rng = np.random.default_rng(9)
    rows = []
    for step in range(0, 6000, 50):
        rows.append({"epoch": step // 600, "step": step,
                     "train_loss": round(float(0.1 + 0.5 * np.exp(-step / 900) * 1.0 + 0.03 * abs(rng.standard_normal())), 5)})
        if step % 100 == 50:
            val = 0.27 + 0.3 * np.exp(-step / 900) + 0.004 * rng.standard_normal()
            if frozen_from is not None and step >= frozen_from:
                val = 0.27578
            rows.append({"epoch": step // 600, "step": step, "val_loss": round(float(val), 5)})
    return rows


def test_an_eval_loss_frozen_while_training_moves_is_a_note(tmp_path):
    found = [f for f in _findings(_lightning_csv(tmp_path, _train_and_val(frozen_from=3000)), "plateau")
             if f.metric == "val_loss"]
    (f,) = found
    assert f.evidence["reading"] == "frozen" and f.evidence.get("held_out") and f.severity == "info"
    assert 3000 <= f.start_step <= 3100 and "no longer changed" in f.message


def test_an_eval_loss_that_keeps_moving_is_not_frozen(tmp_path):
    found = [f for f in _findings(_lightning_csv(tmp_path, _train_and_val(frozen_from=None)), "plateau")
             if f.evidence.get("reading") == "frozen"]
    assert found == []


def _epoch_steps(tmp_path, breaks_at_start: bool):
    """`epoch E step S loss L` lines of a seq2seq script, 40 epochs of 50 steps: a transformer that sat at
    its first level (10.5, a vocabulary's chance) for 10 epochs and fell to 5.4 within one epoch; or a
    fine-tune that learned from its start and stepped down 15% at an epoch boundary (a new pass over a
    small set), which is no breakthrough."""
    rng = np.random.default_rng(10)
    lines = []
    for e in range(40):
        for i in range(50):
            s = e * 50 + i
            if breaks_at_start:
                level = 10.68 - 0.026 * min(e, 10) - 0.002 * i / 50 if e < 10 else 3.5 + 1.9 * np.exp(-(s - 500) / 300)
            else:
                level = 2.0 * np.exp(-s / 600) + 1.0 - (0.15 if e >= 12 else 0.0)
            lines.append(f"epoch {e + 1} step {s} loss {level * (1 + 0.01 * rng.standard_normal()):.4f}")
    path = tmp_path / "train.out"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_loss_that_sat_at_its_first_level_then_fell_abruptly_broke_out(tmp_path):
    found = [f for f in _findings(_epoch_steps(tmp_path, True), "plateau") if f.evidence.get("reading") == "breakthrough"]
    assert found and found[0].start_step <= 100 and found[0].end_step <= 520


def test_a_step_down_at_an_epoch_boundary_after_learning_is_no_breakthrough(tmp_path):
    found = [f for f in _findings(_epoch_steps(tmp_path, False), "plateau") if f.evidence.get("reading") == "breakthrough"]
    assert found == []
