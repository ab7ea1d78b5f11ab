"""An accuracy logged with exactly the same value at every evaluation, at a chance level 1/k, is a
model that gives one answer whatever the input (#25): weights gone NaN predict one class, a head that
outputs a constant. Three evaluations say it (the exact repeat is the evidence); a note beside a NaN
loss (the NaN is the event), a warning from five while the loss fell, nothing beside a loss that
stood still (its own plateau names the accuracy). Files are written as Lightning's
and Keras' `CSVLogger` write them."""
from __future__ import annotations

import numpy as np

import spikelens

from conftest import keras_csv as _keras
from conftest import write_csv


def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _frozen(run):
    return [f for f in run.findings if f.kind == "plateau" and f.evidence.get("frozen") is True]


def _lightning(path, rows):
    """`version_0/metrics.csv`: the sorted header, one row a `log_metrics` call, NaN as `nan`."""
    keys = sorted({k for r in rows for k in r})
    return write_csv(path, keys, ([r.get(k, "") for k in keys] for r in rows))


def test_lightning_nan_loss_with_top1_frozen_at_a_tenth_is_a_note(tmp_path):
    rows = []
    for epoch, step in enumerate((351, 703, 1055)):
        rows.append({"epoch": str(epoch), "step": str(step), "train_loss": "nan", "top1_acc": "0.0898",
                     "top5_acc": "0.514"})
    run = _run(_lightning(tmp_path / "wrn" / "version_0" / "metrics.csv", rows))
    (f,) = _frozen(run)
    assert f.metric == "top1_acc" and f.severity == "info" and f.evidence["chance_classes"] == 10
    assert "not finite" in f.message and f.start_step <= 351 and f.end_step == 1055


def test_keras_val_accuracy_frozen_at_a_half_while_the_loss_fell_is_a_warning(tmp_path):
    n = 8
    loss = 0.69 * np.exp(-np.arange(n) / 4.0)  # the training set is being fitted; the evaluation says one class
    run = _run(_keras(tmp_path / "bin" / "training.log", {"loss": loss, "val_accuracy": np.full(n, 0.5)}))
    (f,) = _frozen(run)
    assert f.metric == "val_accuracy" and f.severity == "warning" and f.evidence["chance_classes"] == 2


def test_frozen_accuracy_beside_a_loss_stuck_at_chance_is_left_to_the_loss_plateau(tmp_path):
    n = 8
    loss = 0.69 + 0.001 * np.random.default_rng(1).standard_normal(n)
    run = _run(_keras(tmp_path / "stuck" / "training.log", {"loss": loss, "val_accuracy": np.full(n, 0.5)}))
    assert not _frozen(run)
    assert [p for p in run.findings if p.metric == "loss" and p.kind == "plateau" and p.severity == "warning"]


def test_accuracy_saturated_at_its_best_is_silent(tmp_path):
    n = 8
    loss = 0.5 * np.exp(-np.arange(n) / 3.0)
    run = _run(_keras(tmp_path / "easy" / "training.log", {"loss": loss, "val_accuracy": np.full(n, 1.0)}))
    assert not _frozen(run)


def test_accuracy_that_moves_is_no_frozen_reading(tmp_path):
    n = 8
    acc = 0.1 + 0.1 * np.arange(n) / n
    run = _run(_keras(tmp_path / "moves" / "training.log", {"loss": 2.3 * np.exp(-np.arange(n) / 6), "val_accuracy": acc}))
    assert not _frozen(run)


def test_top5_frozen_is_not_read_against_one_in_k(tmp_path):
    n = 6
    run = _run(_keras(tmp_path / "top5" / "training.log", {"loss": np.linspace(2.3, 1.0, n),
                                                           "val_top5_accuracy": np.full(n, 0.5)}))
    assert not _frozen(run)
