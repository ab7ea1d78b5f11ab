"""A main eval loss that never got better than its first evaluations while the training loss fell
(#25): nothing the steps taught reached the held-out set. With a small training fall it is a plateau
note (the run learned little, none of it general); with a large one it is an overfitting note (the
model fitted its training set from the start; the best checkpoint is the first). Files are written as
Keras' `CSVLogger` writes them."""
from __future__ import annotations

import numpy as np

import spikelens

from conftest import keras_csv as _keras

EPOCHS = 12


def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _kind(run, kind, metric="val_loss"):
    return [f for f in run.findings if f.kind == kind and f.metric == metric]


def _noise(seed, n=EPOCHS, sd=0.004):
    return np.exp(sd * np.random.default_rng(seed).standard_normal(n))


def _val_flat(seed=1, level=7.97):
    return level * _noise(seed)


def test_val_loss_flat_while_the_loss_eased_is_a_plateau_note(tmp_path):
    # an LSTM summariser: the loss eases 8.9 -> 7.8 in its first epochs, the val loss never moves from 7.97
    loss = (7.75 + 1.1 * np.exp(-np.arange(EPOCHS) / 0.7)) * _noise(2)
    run = _run(_keras(tmp_path / "lstm" / "training.log", {"loss": loss, "val_loss": _val_flat()}))
    (p,) = _kind(run, "plateau")
    assert p.severity == "info" and p.evidence["reading"] == "never" and p.evidence["held_out"]
    assert p.start_step == 0 and p.end_step == EPOCHS - 1 and "never improved" in p.message
    assert not _kind(run, "overfitting")


def test_val_loss_flat_while_the_loss_fell_far_is_an_overfitting_note(tmp_path):
    # a fine-tune whose training loss halves while its validation loss stays where it began
    loss = 1.9 * np.exp(-np.arange(EPOCHS) / 8.0) * _noise(3)
    val = 1.85 * _noise(4, sd=0.02)
    run = _run(_keras(tmp_path / "ft" / "training.log", {"loss": loss, "val_loss": val}))
    (o,) = _kind(run, "overfitting")
    assert o.severity == "info" and o.evidence["reading"] == "never_improved" and o.start_step == 0
    assert "best checkpoint is the first" in o.message
    assert not [f for f in _kind(run, "plateau") if f.evidence.get("reading") == "never"]


def test_converged_early_and_held_is_silent(tmp_path):
    # both curves at their floor from the first evaluation on: a finished run, nothing to say
    run = _run(_keras(tmp_path / "done" / "training.log", {"loss": 0.31 * _noise(5), "val_loss": _val_flat(6, 0.35)}))
    assert not _kind(run, "plateau") and not _kind(run, "overfitting")


def test_val_loss_falling_with_the_loss_is_silent(tmp_path):
    e = np.arange(EPOCHS)
    loss, val = 2.0 * np.exp(-e / 6.0) * _noise(7), 2.1 * np.exp(-e / 9.0) * _noise(8)
    run = _run(_keras(tmp_path / "ok" / "training.log", {"loss": loss, "val_loss": val}))
    assert not _kind(run, "plateau") and not _kind(run, "overfitting")


def test_val_loss_that_improved_then_held_is_no_never_improved(tmp_path):
    # it fell from 2.0 to 0.8 in four epochs, then held while the loss kept falling: a stall, not this
    e = np.arange(EPOCHS)
    val = (0.8 + 1.2 * np.exp(-e / 1.2)) * _noise(9)
    loss = 2.0 * np.exp(-e / 5.0) * _noise(10)
    run = _run(_keras(tmp_path / "held" / "training.log", {"loss": loss, "val_loss": val}))
    assert not [f for f in run.findings if f.evidence.get("reading") in ("never", "never_improved")]
