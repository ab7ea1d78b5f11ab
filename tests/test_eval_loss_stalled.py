"""An eval loss that stopped improving while the training loss kept falling (#25): the model kept
fitting its training set and none of it reached the held-out set, a note on the plateau detector;
and a held-out accuracy that broke out of chance late and then stalled says both. Files are written
as the trainers write them: Keras `CSVLogger` and the HF `TrainerState` JSON."""
from __future__ import annotations

import sys

import numpy as np

import spikelens

from conftest import FIXTURES
from conftest import keras_csv as _keras

sys.path.insert(0, str(FIXTURES))
from writers import hf  # noqa: E402

EPOCHS = 30


def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _plateaus(run, metric):
    return [f for f in run.findings if f.kind == "plateau" and f.metric == metric]


def _noise(seed, n, sd=0.005):
    return np.exp(sd * np.random.default_rng(seed).standard_normal(n))


def _still_falling(n=EPOCHS):
    return 2.0 * np.exp(-np.arange(n) / 10.0) * _noise(1, n)  # 2.0 -> 0.1: still falling at the end


def _val_held_from(epoch, n=EPOCHS):
    e = np.arange(n)
    return (0.8 + 1.0 * np.exp(-np.minimum(e, epoch) / 2.5) * (e < epoch)) * _noise(2, n)


def test_keras_val_loss_flat_while_the_loss_falls_is_a_stall_note(tmp_path):
    path = _keras(tmp_path / "stall" / "training.log", {"loss": _still_falling(), "val_loss": _val_held_from(8)})
    (p,) = _plateaus(_run(path), "val_loss")
    assert p.severity == "info" and p.evidence["reading"] == "stalled" and p.evidence["direction"] == "lower"
    assert 5 <= p.start_step <= 10 and p.end_step == EPOCHS - 1
    assert "while loss still fell" in p.message and abs(p.evidence["level"] - 0.8) < 0.02


def test_hf_eval_loss_flat_while_the_train_loss_falls_is_a_stall_note(tmp_path):
    history = []
    for s in range(10, 3001, 10):
        history.append({"epoch": s / 300, "learning_rate": 2e-5, "loss": round(1.5 * np.exp(-s / 1200.0), 5), "step": s})
        if s % 150 == 0:
            ev = 0.9 + 0.6 * np.exp(-s / 150.0) if s < 1200 else 0.9 * (1 + 0.002 * np.sin(s))
            history.append({"epoch": s / 300, "eval_loss": round(float(ev), 5), "step": s})
    path = tmp_path / "ft" / "trainer_state.json"
    path.parent.mkdir()
    hf.save_to_json(path, hf.state(history, 3000, max_steps=3000))
    (p,) = _plateaus(_run(path), "eval_loss")
    assert p.severity == "info" and p.evidence["reading"] == "stalled" and 300 <= p.start_step <= 1200


def test_converged_early_and_held_is_no_stall(tmp_path):
    e = np.arange(EPOCHS)
    loss = (0.3 + 1.7 * np.exp(-e / 2.0)) * _noise(3, EPOCHS)  # both curves at their floor from epoch 8
    path = _keras(tmp_path / "done" / "training.log", {"loss": loss, "val_loss": _val_held_from(8)})
    run = _run(path)
    assert not _plateaus(run, "val_loss") and not [f for f in run.findings if f.severity in ("warning", "error")]


def test_val_loss_falling_with_the_loss_is_no_stall(tmp_path):
    val = 1.2 * np.exp(-np.arange(EPOCHS) / 12.0) * _noise(4, EPOCHS)
    path = _keras(tmp_path / "ok" / "training.log", {"loss": _still_falling(), "val_loss": val})
    assert not _plateaus(_run(path), "val_loss")


def test_val_loss_that_turned_up_is_overfitting_not_a_stall(tmp_path):
    e = np.arange(EPOCHS)
    val = np.where(e < 8, 0.8 + np.exp(-e / 2.5), 0.8 * (1 + 0.03 * (e - 8))) * _noise(5, EPOCHS)
    run = _run(_keras(tmp_path / "over" / "training.log", {"loss": _still_falling(), "val_loss": val}))
    assert not _plateaus(run, "val_loss")
    assert [f for f in run.findings if f.kind == "overfitting" and f.metric == "val_loss"]


def test_accuracy_out_of_chance_late_then_stalled_says_both(tmp_path):
    n = 40
    e = np.arange(n)
    acc = np.where(e < 6, 0.1, 0.1 + 0.5 * (1 - np.exp(-(e - 5) / 1.5))) * _noise(6, n, 0.004)
    path = _keras(tmp_path / "late" / "training.log", {"loss": _still_falling(n), "val_accuracy": acc})
    found = sorted(_plateaus(_run(path), "val_accuracy"), key=lambda f: f.start_step)
    assert [f.evidence["reading"] for f in found] == ["chance", "stalled"]
    assert all(f.severity == "info" for f in found) and 8 <= found[1].start_step <= 16


def test_a_val_loss_still_falling_late_by_its_own_share_is_no_stall(tmp_path):
    # 2.1 -> 0.27 by epoch 60, then on to 0.19: a twentieth of its gain on its own scale, 30% of its level
    e = np.arange(135)
    val = (0.18 + 1.92 * np.exp(-e / 14.0)) * _noise(7, 135, 0.002)
    loss = (0.11 + 1.96 * np.exp(-e / 16.0)) * _noise(8, 135, 0.002)
    assert not _plateaus(_run(_keras(tmp_path / "slow" / "training.log", {"loss": loss, "val_loss": val})), "val_loss")
