"""A ranking score (recall@10, MRR) a little above zero is answers found on a large candidate set,
not a model that never got one right (#25); a dice at zero still is. Keras `CSVLogger` files."""
from __future__ import annotations

import numpy as np

import spikelens

from conftest import keras_csv


def _loud(tmp_path, name, values):
    e = np.arange(values.size)
    path = keras_csv(tmp_path / "run" / "log.csv", {"loss": 0.12 * np.exp(-e / 4) + 0.045, name: values})
    (run,) = spikelens.analyze(path, jobs=1).runs
    return [f for f in run.findings if f.severity != "info"]


def test_a_recall_at_10_of_half_a_percent_is_no_alarm(tmp_path):
    rng = np.random.default_rng(3)
    values = rng.choice([0.0, 0.00209, 0.00626, 0.00731], 16)
    assert not _loud(tmp_path, "val_edge_recall_at_10", values)


def test_a_dice_that_never_rose_above_zero_still_fires(tmp_path):
    rng = np.random.default_rng(3)
    (f,) = _loud(tmp_path, "val_dice", rng.choice([0.0, 0.001, 0.003], 16))
    assert f.kind == "plateau" and "never rose above zero" in f.message


def test_a_recall_at_10_of_exact_zeros_still_fires(tmp_path):
    (f,) = _loud(tmp_path, "val_recall_at_10", np.zeros(16))
    assert f.kind == "plateau" and "never rose above zero" in f.message
