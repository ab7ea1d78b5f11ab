"""Oscillation (SL203) judged by what it costs (#25): swings are loud only when the trend stalls
under them; a held-out curve of few evaluations that flips up and down at nearly every
evaluation, by half its level or more, is an oscillation of its own (its numbers are noise).

Fixtures are written here: Keras `CSVLogger` files (`epoch` then the sorted keys, `repr`
floats, as `keras.callbacks.CSVLogger` writes them) and a generic CSV of a per-step loss."""
from __future__ import annotations

import csv

import numpy as np

import spikelens

from conftest import loud
from conftest import keras_csv as _keras




def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _osc(run):
    return [f for f in run.findings if f.kind == "oscillation"]


TRAIN = [0.69, 0.61, 0.55, 0.50, 0.46, 0.42, 0.39, 0.36, 0.34]


def test_a_val_loss_that_flips_every_epoch_and_ends_worse_is_a_loud_oscillation(tmp_path):
    path = _keras(tmp_path / "training.log", {
        "loss": TRAIN, "accuracy": [0.55, 0.62, 0.68, 0.72, 0.75, 0.78, 0.80, 0.82, 0.84],
        "val_loss": [0.571, 0.531, 0.542, 0.756, 0.218, 0.445, 1.150, 0.316, 2.032],
        "val_accuracy": [0.81, 0.46, 0.87, 0.27, 0.81, 0.52, 0.19, 0.83, 0.21]})
    run = _run(path)
    (osc,) = _osc(run)  # one finding for the run, on the eval loss, naming the accuracy
    assert osc.metric == "val_loss" and osc in loud(run)
    assert osc.evidence["held_out"] and osc.evidence["stalled"]
    assert [a["metric"] for a in osc.evidence["also_on"]] == ["val_accuracy"]
    assert (osc.start_step, osc.end_step) == (0, 8)


def test_a_noisy_val_loss_whose_trend_still_fell_is_a_note(tmp_path):
    path = _keras(tmp_path / "training.log", {
        "loss": TRAIN + [0.32, 0.30, 0.29, 0.28],
        "val_loss": [2.0, 1.0, 1.8, 0.8, 1.5, 0.6, 1.2, 0.5, 1.0, 0.4, 0.8, 0.35, 0.7]})
    run = _run(path)
    (osc,) = _osc(run)
    assert osc.metric == "val_loss" and osc.severity == "info" and not osc.evidence["stalled"]
    assert "trend still improved" in osc.message


def test_a_val_loss_that_falls_with_ordinary_noise_does_not_oscillate(tmp_path):
    rng = np.random.default_rng(0)
    val = list(np.geomspace(0.8, 0.35, 9) * np.exp(rng.normal(0, 0.04, 9)))
    path = _keras(tmp_path / "training.log", {"loss": TRAIN, "val_loss": val})
    assert not _osc(_run(path))


def _steps_csv(path, loss: np.ndarray):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step", "loss"])
        for i, v in enumerate(loss):
            w.writerow([i, repr(float(v))])
    return path


def _swinging(fall_inside: float) -> np.ndarray:
    """3,000 steps of a loss falling from 3 to 1.2 with 1.5% noise; from step 1,200 to 2,000 it
    swings +-25% and its trend falls by `fall_inside` (on the log) over that stretch."""
    rng = np.random.default_rng(4)
    s = np.arange(3000)
    trend = np.log(3.0) - np.log(3.0 / 1.2) * (1 - np.exp(-s / 400))
    inside = (s >= 1200) & (s <= 2000)
    trend = trend - np.where(inside, fall_inside * (s - 1200) / 800, np.where(s > 2000, fall_inside, 0.0))
    swing = np.where(inside, 0.25 * np.sin(s / 7.0) + 0.1 * rng.standard_normal(s.size), 0.0)
    return np.exp(trend + swing + 0.015 * rng.standard_normal(s.size))


def test_swings_under_which_the_trend_stalled_are_a_warning(tmp_path):
    run = _run(_steps_csv(tmp_path / "loss.csv", _swinging(0.0)))
    (osc,) = _osc(run)
    assert osc.severity == "warning" and osc.evidence["stalled"]
    assert 1150 <= osc.start_step <= 1260 and 1940 <= osc.end_step <= 2050


def test_swings_under_which_the_trend_kept_falling_are_a_note(tmp_path):
    run = _run(_steps_csv(tmp_path / "loss.csv", _swinging(1.5)))
    (osc,) = _osc(run)
    assert osc.severity == "info" and not osc.evidence["stalled"]
    assert "did not cost progress" in osc.message and osc not in loud(run)


def test_a_val_loss_that_moves_by_its_last_printed_digit_does_not_oscillate(tmp_path):
    # 4 decimals at the 1e-4 level: 0.0001 <-> 0.0002 is 2x on the log, and one printed digit
    val = [0.0002, 0.0001, 0.0003, 0.0001, 0.0002, 0.0001, 0.0002, 0.0001, 0.0003]
    path = _keras(tmp_path / "training.log", {"loss": TRAIN, "val_loss": val})
    assert not _osc(_run(path))
