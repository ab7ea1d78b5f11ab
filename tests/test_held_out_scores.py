"""Scores with a direction (#25): held-out accuracies, dice and WER, and a reinforcement
learner's reward, judged by the curve detectors the way a loss is, turned the right way up;
and a noisy per-step loss that creeps up after a floor is a divergence from the floor's end.
Files are written as the trainers write them: Keras `CSVLogger`, the HF `TrainerState` JSON
(`fixtures/writers/hf.py`), an SB3-style `progress.csv`."""
from __future__ import annotations

import sys

import numpy as np

import spikelens

from conftest import FIXTURES
from conftest import keras_csv as _keras
from sb3_progress import write_progress

sys.path.insert(0, str(FIXTURES))
from writers import hf  # noqa: E402

EPOCHS = 30




def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _of(run, kind, metric=None):
    return [f for f in run.findings if f.kind == kind and (metric is None or f.metric == metric)]


def _falling_loss(seed=0, n=EPOCHS):
    rng = np.random.default_rng(seed)
    return (0.3 + 2.0 * np.exp(-np.arange(n) / 5.0)) * np.exp(0.01 * rng.standard_normal(n))


def test_a_dice_that_never_rose_above_zero_never_learned_while_the_loss_fell(tmp_path):
    rng = np.random.default_rng(1)
    _keras(tmp_path / "zero" / "training.log", {"loss": _falling_loss(), "val_dice": np.abs(rng.normal(0, 0.001, EPOCHS))})
    run = _run(tmp_path / "zero" / "training.log")
    (p,) = _of(run, "plateau")
    assert p.metric == "val_dice" and p.severity == "warning" and p.evidence["reading"] == "never"
    assert "never rose above zero" in p.message and p.start_step == 0 and p.end_step == EPOCHS - 1


def test_a_dice_that_rises_is_no_plateau(tmp_path):
    dice = 0.8 - 0.7 * np.exp(-np.arange(EPOCHS) / 5.0)  # converging with the loss, as a healthy run does
    _keras(tmp_path / "ok" / "training.log", {"loss": _falling_loss(), "val_dice": dice})
    assert not _of(_run(tmp_path / "ok" / "training.log"), "plateau")


def test_an_accuracy_at_chance_for_its_first_evaluations_learned_late(tmp_path):
    e = np.arange(EPOCHS)
    rng = np.random.default_rng(2)
    acc = np.where(e < 10, 0.1 + rng.normal(0, 0.002, EPOCHS), 0.1 + 0.6 * (1 - np.exp(-(e - 9) / 4.0)))
    _keras(tmp_path / "late" / "training.log", {"loss": _falling_loss(), "val_accuracy": acc})
    (p,) = _of(_run(tmp_path / "late" / "training.log"), "plateau")
    assert p.metric == "val_accuracy" and p.evidence["reading"] == "chance" and p.evidence["chance_classes"] == 10
    assert p.severity == "info" and p.start_step == 0 and 8 <= p.end_step <= 11 and "learned only after" in p.message


def test_an_eval_wer_that_stopped_improving_while_the_train_loss_fell_is_a_note(tmp_path):
    history = []
    for s in range(25, 5001, 25):
        history.append({"epoch": s / 130, "learning_rate": 1e-5, "loss": round(0.3 * np.exp(-s / 700.0) + 2e-4, 5), "step": s})
        if s % 1000 == 0:
            wer = {1000: 0.789, 2000: 0.748, 3000: 0.743, 4000: 0.744, 5000: 0.745}[s]
            history.append({"epoch": s / 130, "eval_loss": 0.32, "eval_wer": wer, "step": s})
    path = tmp_path / "whisper" / "trainer_state.json"
    path.parent.mkdir()
    hf.save_to_json(path, hf.state(history, 5000, max_steps=5000))
    (p,) = _of(_run(path), "plateau", "eval_wer")
    assert p.severity == "info" and p.evidence["reading"] == "stalled" and p.evidence["direction"] == "lower"
    assert p.start_step == 2000 and "stopped improving at step 2000" in p.message


def test_an_eval_accuracy_that_fell_from_its_best_while_the_loss_fell_is_overfitting(tmp_path):
    e = np.arange(60)
    acc = np.where(e < 20, 0.5 + 0.3 * e / 20, 0.8 - 0.2 * (e - 20) / 40)
    acc = acc + np.random.default_rng(3).normal(0, 0.003, e.size)
    _keras(tmp_path / "over" / "training.log", {"loss": _falling_loss(n=60), "val_accuracy": acc})
    run = _run(tmp_path / "over" / "training.log")
    (o,) = _of(run, "overfitting")
    assert o.metric == "val_accuracy" and o.severity == "warning" and abs(o.start_step - 20) <= 3
    assert "peaked at" in o.message and "best checkpoint is near step" in o.message
    assert not _of(run, "plateau")  # one event: the fall is the overfitting, not a stall as well


def test_a_reward_that_collapsed_and_stayed_down_is_a_divergence(tmp_path):
    i = np.arange(300)
    rng = np.random.default_rng(4)
    reward = np.where(i < 120, 200 * (1 - np.exp(-i / 30)), np.where(i < 140, 200 - 8 * (i - 120), 40)) + rng.normal(0, 5, i.size)
    write_progress(tmp_path / "agent" / "progress.csv", reward)
    (d,) = _of(_run(tmp_path / "agent"), "divergence")
    assert d.metric == "rollout/ep_rew_mean" and d.severity == "warning" and d.evidence["higher_is_better"]
    assert 95 * 2048 <= d.start_step <= 135 * 2048 and "collapsed" in d.message


def test_a_reward_that_rose_and_holds_is_no_divergence(tmp_path):
    i = np.arange(300)
    reward = 200 * (1 - np.exp(-i / 30)) + np.random.default_rng(5).normal(0, 8, i.size)
    write_progress(tmp_path / "agent" / "progress.csv", reward)
    run = _run(tmp_path / "agent")
    assert not _of(run, "divergence") and not [f for f in run.findings if f.severity != "info"]


def test_a_noisy_loss_that_climbs_after_a_floor_diverged_from_the_floors_end(tmp_path):
    """1500 single-batch losses (sd 8%) flat near 2.9 for 300 steps, then climbing to 4.4: the
    point-to-point swings are no 'abrupt jump', and the rise starts near the end of the floor
    (where the smoothed loss last sat within a tenth of the rise above its minimum)."""
    rng = np.random.default_rng(6)
    s = np.arange(1500)
    loss = 2.9 * np.exp(np.where(s > 300, 0.42 * (s - 300) / 1200, 0.0) + 0.08 * rng.standard_normal(s.size))
    path = tmp_path / "lm" / "metrics.csv"
    path.parent.mkdir()
    path.write_text("step,loss\n" + "".join(f"{a},{b:.4f}\n" for a, b in zip(s, loss)))
    (d,) = _of(_run(path), "divergence")
    assert d.severity == "error" and 250 <= d.start_step <= 450 and d.evidence["lowest_step"] <= d.start_step


def test_a_loss_that_never_went_below_its_first_value_never_learned(tmp_path):
    """A probe's single-batch loss: 2.35 at its first log, then about 3.0 (noise 8%) for 27
    logs; the same noise around a first value puts about half the points below it: silent."""
    rng = np.random.default_rng(7)
    noise = np.exp(0.08 * rng.standard_normal(27))
    for name, first, rest in (("worse", 2.35, 3.0 * noise), ("flat", 1.9, 1.9 * noise)):  # (1.9: no chance level)
        path = tmp_path / name / "metrics.csv"
        path.parent.mkdir()
        rows = [(49, first)] + [(49 + 50 * (i + 1), v) for i, v in enumerate(rest)]
        path.write_text("step,train_loss\n" + "".join(f"{a},{b:.4f}\n" for a, b in rows))
    (p,) = _of(_run(tmp_path / "worse" / "metrics.csv"), "plateau")
    assert p.severity == "info" and p.start_step == 49 and "never went below its first logged value" in p.message
    assert not _of(_run(tmp_path / "flat" / "metrics.csv"), "plateau")


def test_a_loss_printed_identical_to_the_end_is_frozen(tmp_path):
    """'Epoch [e/300], Train Loss: 0.0138' for the last 200 epochs: nothing is updated. The same
    tail printed as 0.25 (two decimals, 4% steps) or moving in its last digit stays silent."""
    e = np.arange(1, 301)
    fall = 0.0138 + 0.15 * np.exp(-e / 20.0)
    cases = {"frozen": np.where(e > 100, 0.0138, fall), "coarse": np.where(e > 100, 0.25, 0.25 + fall),
             "moving": fall + 0.0002 * np.sin(e)}
    for name, loss in cases.items():
        path = tmp_path / name / "train.log"
        path.parent.mkdir()
        fmt = "{:.2f}" if name == "coarse" else "{:.4f}"
        path.write_text("".join(f"Epoch [{i}/300], Train Loss: {fmt.format(v)}\n" for i, v in zip(e, loss)))
    (p,) = _of(_run(tmp_path / "frozen" / "train.log"), "plateau")
    assert p.evidence["reading"] == "frozen" and p.severity == "warning" and p.start_step in (100, 101)
    assert "exactly 0.0138" in p.message
    for name in ("coarse", "moving"):
        assert not [f for f in _of(_run(tmp_path / name / "train.log"), "plateau")
                    if f.evidence.get("reading") == "frozen"], name


def test_a_loss_that_climbs_from_its_first_points_diverged_from_there(tmp_path):
    """A distillation run's task loss rising from its first logged iteration to the end: the
    warm-up points the detector skips hold the turn, not the first point after them."""
    rng = np.random.default_rng(8)
    s = np.arange(10, 20001, 10)
    loss = 3.3 * np.exp(0.8 * np.sqrt((s - 10) / 20000) + 0.05 * rng.standard_normal(s.size))
    path = tmp_path / "kd" / "metrics.csv"
    path.parent.mkdir()
    path.write_text("step,task_loss\n" + "".join(f"{a},{b:.4f}\n" for a, b in zip(s, loss)))
    (d,) = _of(_run(path), "divergence")
    assert d.start_step <= 200 and d.severity == "error"


def test_an_accuracy_that_fell_after_the_loss_went_nan_is_not_overfitting(tmp_path):
    e = np.arange(EPOCHS)
    loss = np.where(e < 20, _falling_loss(), np.nan)
    acc = np.where(e < 20, 0.8 - 0.7 * np.exp(-e / 5.0), 0.1)
    _keras(tmp_path / "nan" / "training.log", {"loss": loss, "val_accuracy": acc})
    run = _run(tmp_path / "nan" / "training.log")
    assert _of(run, "nan") and not _of(run, "overfitting")
