"""A ROC AUC at 1/2 is a model ranking at random, whatever the number of classes (#25): a held-out
AUC that sat at 0.5 from its first evaluation while the training loss fell never learned anything
that ranks. A PR AUC's chance level is the positives' share, not 1/2, and a rising AUC is learning.
Files are written as Keras' `CSVLogger` writes them (`tf.keras.metrics.AUC` logs `auc`/`val_auc`)."""
from __future__ import annotations

import numpy as np


from conftest import keras_csv as _keras, only_run, plateaus_read

EPOCHS = 15




def _loss():
    return 0.69 * np.exp(-np.arange(EPOCHS) / 6.0)  # the training set is being fitted


def _at_half(seed):
    return 0.5 + 0.004 * np.random.default_rng(seed).standard_normal(EPOCHS)


def test_keras_val_auc_at_a_half_while_the_loss_fell_is_chance(tmp_path):
    run = only_run(_keras(tmp_path / "auc" / "training.log", {"loss": _loss(), "val_auc": _at_half(1)}))
    (f,) = plateaus_read(run, "val_auc", "chance")
    assert f.evidence["chance_classes"] == 2 and f.severity == "warning"


def test_a_rising_val_auc_is_silent(tmp_path):
    auc = 0.5 + 0.4 * (1 - np.exp(-np.arange(EPOCHS) / 3.0))
    run = only_run(_keras(tmp_path / "up" / "training.log", {"loss": _loss(), "val_auc": auc}))
    assert not plateaus_read(run, "val_auc", "chance")


def test_a_pr_auc_at_a_half_is_not_read_against_a_random_ranking(tmp_path):
    run = only_run(_keras(tmp_path / "pr" / "training.log", {"loss": _loss(), "val_pr_auc": _at_half(2)}))
    assert not plateaus_read(run, "val_pr_auc", "chance")
