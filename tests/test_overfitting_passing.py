"""A held-out loss that rose far above its early best while the training loss fell, stayed up, and
came back below that best later (#25): the model memorised its training set first and generalised
later (grokking on modular arithmetic, double descent). An overfitting note on the stretch it was up;
the late best stays the run's own turn. Files are written as Keras' `CSVLogger` writes them."""
from __future__ import annotations

import numpy as np

import spikelens

from conftest import keras_csv as _keras

EPOCHS = 120


def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _passing(run):
    return [f for f in run.findings if f.kind == "overfitting" and f.evidence.get("reading") == "passing"]


def _noise(seed, sd=0.03):
    return np.exp(sd * np.random.default_rng(seed).standard_normal(EPOCHS))


def _train():
    return 4.7 * np.exp(-np.arange(EPOCHS) / 3.0) + 1e-4  # memorised within a few epochs


def test_val_loss_that_rose_fourfold_and_came_back_is_a_passing_turn(tmp_path):
    e = np.arange(EPOCHS)
    # 4.7 (untrained) -> up to ~19 by epoch 12 -> back down past 4.7 from epoch ~40 -> 0.002
    val = np.where(e < 12, 4.7 + 1.2 * e, np.maximum(19.0 * np.exp(-(e - 12) / 10.0), 0.002)) * _noise(1)
    run = _run(_keras(tmp_path / "grok" / "training.log", {"loss": _train(), "val_loss": val}))
    (f,) = _passing(run)
    assert f.severity == "info" and f.start_step == 0 and 20 <= f.evidence["back_step"] <= 40
    assert "generalised later" in f.message


def test_val_loss_that_rose_and_stayed_up_is_no_passing_turn(tmp_path):
    e = np.arange(EPOCHS)
    val = np.minimum(4.7 + 1.2 * e, 19.0) * _noise(2)  # it never came back: a turn from its best
    run = _run(_keras(tmp_path / "up" / "training.log", {"loss": _train(), "val_loss": val}))
    assert not _passing(run)
    assert [f for f in run.findings if f.kind == "overfitting"]


def test_val_loss_falling_with_the_loss_is_silent(tmp_path):
    val = (0.2 + 4.5 * np.exp(-np.arange(EPOCHS) / 8.0)) * _noise(3)
    run = _run(_keras(tmp_path / "ok" / "training.log", {"loss": _train(), "val_loss": val}))
    assert not _passing(run)


def test_a_small_wobble_up_and_back_is_silent(tmp_path):
    e = np.arange(EPOCHS)
    val = (1.0 + 0.3 * np.exp(-((e - 30) / 8.0) ** 2)) * np.exp(-e / 400.0) * _noise(4, 0.01)  # +30%, back
    run = _run(_keras(tmp_path / "wobble" / "training.log", {"loss": _train(), "val_loss": val}))
    assert not _passing(run)
