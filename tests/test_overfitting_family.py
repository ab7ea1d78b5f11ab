"""One class's held-out score turning while the same score of most other classes held is that
class, not the model overfitting (#25): a note, not a warning. The run's own family of curves
(`val_<class>_precision`, one per class) is the yardstick. Written as Keras `CSVLogger` writes."""
from __future__ import annotations

import numpy as np

import spikelens

from conftest import keras_csv

CLASSES = ("DIS", "DRU", "ORG", "REG", "SGN", "SYM", "TES")
EPOCHS = 30


def _rows(falling: tuple[str, ...], seed: int) -> dict:
    rng = np.random.default_rng(seed)
    e = np.arange(EPOCHS)
    rows = {"loss": 2.0 * np.exp(-e / 8) + 0.1, "val_loss": 2.1 * np.exp(-e / 8) + 0.15 + 0.005 * rng.random(EPOCHS)}
    for c in CLASSES:
        rise = 0.9 * (1 - np.exp(-e / 4))
        fall = np.where(e > 18, 0.06 * (e - 18), 0.0) if c in falling else 0.0
        rows[f"val_{c}_precision"] = np.clip(rise - fall + 0.003 * rng.standard_normal(EPOCHS), 0.01, 1)
    return rows


def _overfitting(tmp_path, falling, seed=0):
    path = keras_csv(tmp_path / "ner" / "log.csv", _rows(falling, seed))
    (run,) = spikelens.analyze(path, jobs=1).runs
    return [f for f in run.findings if f.kind == "overfitting"]


def test_one_class_whose_precision_fell_is_a_note_naming_the_class(tmp_path):
    (f,) = _overfitting(tmp_path, ("SYM",))
    assert f.metric == "val_SYM_precision" and f.severity == "info"
    assert "only 1 of the run's 7 curves named like it" in f.message


def test_most_classes_falling_together_stay_a_warning(tmp_path):
    found = _overfitting(tmp_path, CLASSES[:5], seed=1)
    assert found and found[0].severity == "warning" and "named like it" not in found[0].message
