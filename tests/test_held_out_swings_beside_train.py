"""A validation loss that swings from epoch to epoch (0.71 -> 1.05 -> 0.75) while the training loss
falls smoothly oscillates (#25: short per-epoch runs): a note on the evaluation's noise, under the
1.5x bar for a held-out curve alone, because the training loss moves a third as much or less. A
validation loss that moves with a noisy training loss, or falls smoothly, stays silent; a one-epoch
spike of the swinging loss is still its own finding. Written as Keras's CSVLogger writes training.log."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics

EPOCHS = 22


def _findings(tmp_path, name: str, loss: np.ndarray, val: np.ndarray) -> list:
    path = tmp_path / name / "training.log"
    path.parent.mkdir()
    rows = ["epoch,loss,val_loss"] + [f"{i},{loss[i]:.6f},{val[i]:.6f}" for i in range(EPOCHS)]
    path.write_text("\n".join(rows) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.metric == "val_loss"]


SMOOTH_TRAIN = 1.0 * np.exp(-np.arange(EPOCHS) / 25)
SWINGING_VAL = np.array([0.863, 1.159, 0.706, 0.766, 0.758, 0.714, 0.899, 1.048, 0.748, 0.644, 0.623, 0.684, 0.810,
                         0.799, 0.812, 1.017, 0.584, 0.600, 0.948, 0.70, 0.93, 0.66])


def test_a_validation_loss_that_swings_beside_a_smooth_training_loss_is_an_oscillation_note(tmp_path, no_workers):
    (osc,) = [f for f in _findings(tmp_path, "swing", SMOOTH_TRAIN, SWINGING_VAL) if f.kind == "oscillation"]
    assert osc.severity == "info" and osc.evidence["beside_train"] and "training loss" in osc.message


def test_a_validation_loss_that_swings_with_a_noisy_training_loss_is_silent(tmp_path, no_workers):
    noisy = SMOOTH_TRAIN * np.exp(0.2 * np.random.default_rng(1).standard_normal(EPOCHS))
    assert not [f for f in _findings(tmp_path, "noisy", noisy, SWINGING_VAL) if f.kind == "oscillation"]


def test_a_smooth_validation_loss_is_silent(tmp_path, no_workers):
    val = 1.1 * np.exp(-np.arange(EPOCHS) / 30) * (1 + 0.01 * np.random.default_rng(2).standard_normal(EPOCHS))
    assert not [f for f in _findings(tmp_path, "smooth", SMOOTH_TRAIN, val) if f.kind == "oscillation"]


def test_a_one_epoch_spike_of_a_swinging_validation_loss_stays_its_own_finding(tmp_path, no_workers):
    val = SWINGING_VAL.copy()
    val[12] = 7.4
    found = _findings(tmp_path, "spike", SMOOTH_TRAIN, val)
    assert [f.peak_step for f in found if f.kind == "spike"] == [12]
