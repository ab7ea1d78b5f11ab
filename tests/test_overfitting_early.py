"""Overfitting is loud only when it is a trend of a model still fitting its training set (#25):
a rise on the last two evaluations after the best is a step, not a trend, and a held-out loss
drifting up while the training loss stood still is no memorisation; both are notes that name
the best checkpoint. Written as Keras' CSVLogger writes its file (`epoch,loss,val_loss` rows
through the csv module)."""
from __future__ import annotations

import csv

import numpy as np

import spikelens

LOUD = ("warning", "error")


def _csvlogger(path, loss, val_loss):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["epoch", "loss", "val_loss"])
        w.writeheader()
        for e, (a, b) in enumerate(zip(loss, val_loss)):
            w.writerow({"epoch": e, "loss": f"{a:.6f}", "val_loss": f"{b:.6f}"})
    return path


def _overfitting(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return [f for f in run.findings if f.kind == "overfitting"]


# a 15-epoch fine-tune: the eval loss falls to its best at epoch 12 (a lucky evaluation) and
# rises on the last two; with six more evaluations it keeps rising
TRAIN = list(np.geomspace(2.0, 0.022, 21))
VAL = [0.776, 0.327, 0.220, 0.212, 0.190, 0.173, 0.167, 0.160, 0.139, 0.130, 0.127, 0.119, 0.0895, 0.096,
       0.117, 0.121, 0.128, 0.133, 0.131, 0.139, 0.142]


def test_a_rise_on_the_two_evaluations_after_the_best_is_a_note(tmp_path):
    (over,) = _overfitting(_csvlogger(tmp_path / "short" / "training.log", TRAIN[:15], VAL[:15]))
    assert over.severity == "info" and over.evidence["note_because"] == "few_evaluations"
    assert over.start_step == 12 and "best checkpoint is near step 12" in over.message


def test_the_same_rise_held_over_more_evaluations_is_a_warning(tmp_path):
    (over,) = _overfitting(_csvlogger(tmp_path / "long" / "training.log", TRAIN, VAL))
    assert over.severity in LOUD and "note_because" not in over.evidence


def _drift(train_fall: float):
    """100 epochs: the eval loss sits at 0.0199 to epoch 60 and drifts to 0.022 by epoch 100; the
    training loss falls early, then falls `train_fall` (a share) over epochs 60-100."""
    rng = np.random.default_rng(5)
    e = np.arange(100)
    val = np.where(e < 60, 0.0199, 0.0199 + 0.0021 * (e - 60) / 39) + rng.normal(0, 0.0002, 100)
    val[:8] = np.geomspace(0.19, 0.021, 8)
    late = np.clip((e - 60) / 39, 0, 1)
    train = 0.035 * (1 - train_fall * late) + 0.5 * np.exp(-e / 4) + rng.normal(0, 0.0003, 100)
    return train, val


def test_an_eval_drift_while_the_training_loss_stood_still_is_a_note(tmp_path):
    train, val = _drift(0.0)
    (over,) = _overfitting(_csvlogger(tmp_path / "flat" / "training.log", train, val))
    assert over.severity == "info" and over.evidence["note_because"] == "training_flat"


def test_the_same_drift_while_the_training_loss_still_fell_is_a_warning(tmp_path):
    train, val = _drift(0.3)
    (over,) = _overfitting(_csvlogger(tmp_path / "fit" / "training.log", train, val))
    assert over.severity in LOUD and "note_because" not in over.evidence
