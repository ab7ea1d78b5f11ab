"""A held-out accuracy at chance while another held-out score of the run rose is that score's story
(or an adversary the model was meant to fool, as a steganography GAN's steganalysis accuracy at 0.5),
not a model that never learned (#25): a note. Alone, it still is the run's alarm. Keras `CSVLogger`."""
from __future__ import annotations

import numpy as np

import spikelens

from conftest import keras_csv

EPOCHS = 20


def _plateaus(tmp_path, with_psnr: bool):
    rng = np.random.default_rng(2)
    e = np.arange(EPOCHS)
    rows = {"loss": 11.0 * np.exp(-e / 4) + 2.2, "val_accuracy": 0.5 + 0.0005 * rng.standard_normal(EPOCHS)}
    if with_psnr:
        rows["val_psnr"] = 32.0 + 22.0 * (1 - np.exp(-e / 6))
    (run,) = spikelens.analyze(keras_csv(tmp_path / "gan" / "log.csv", rows), jobs=1).runs
    return [f for f in run.findings if f.kind == "plateau" and f.metric == "val_accuracy"]


def test_an_accuracy_at_chance_beside_a_rising_psnr_is_a_note(tmp_path):
    (f,) = _plateaus(tmp_path, with_psnr=True)
    assert f.severity == "info" and f.evidence["note_because"] == "other_score_rose"
    assert "val_psnr rose" in f.message and "never learned" not in f.message


def test_an_accuracy_at_chance_alone_is_still_never_learned(tmp_path):
    (f,) = _plateaus(tmp_path, with_psnr=False)
    assert f.severity == "warning" and f.evidence.get("never_learned")
