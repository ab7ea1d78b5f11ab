"""Session 18's judging of restarts and runs that did not learn (#25), each mechanism with a run that
must fire and one that must stay quiet, in the formats trainers write:

- an epoch's summary line that re-prints the epoch's last batch (Keras 3) is no relaunch: a running
  average that starts again at the next epoch is no repeated data after it;
- a loss that converged near ln(k) while the run's accuracy rose well above 1/k is not at chance.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

import detector_cases as cases
from conftest import loud, only_run, plateaus_read, write_csv
from spikelens.detect.base import RunContext
from spikelens.detect.resume import RepeatedDataDetector, relaunch_starts


# ------------------------------------------------------------------ an epoch's summary re-prints its last step


def _keras3_console(path: Path, steps: int = 200, partial: int = 80, seed: int = 0) -> Path:
    """Keras 3 `model.fit(verbose=1)` captured to a file: a progress line per refresh with the epoch's
    running averages, then the epoch's summary re-printing its last batch with the val metrics (its
    loss the epoch's mean, not the last running average printed), the next epoch cut short."""
    rng = np.random.default_rng(seed)
    bar = "\u2501" * 20
    lines, level = [], 2.3
    for e in range(2):
        lines.append(f"Epoch {e + 1}/40")
        total = 0.0
        for i in range(1, (steps if e == 0 else partial) + 1):
            level *= 0.997
            total += level * np.exp(0.05 * rng.standard_normal())
            acc = 0.1 + 0.5 * (1 - level / 2.3)
            lines.append(f"{i:>3}/{steps} {bar} {(steps - i) * 0.14:.0f}s 140ms/step - accuracy: {acc:.4f} - "
                         f"loss: {total / i:.4f}")
        if e == 0:
            lines.append(f"{steps}/{steps} {bar} 29s 145ms/step - accuracy: {acc + 0.03:.4f} - loss: "
                         f"{0.87 * total / steps:.4f} - val_accuracy: {acc + 0.02:.4f} - val_loss: {0.95 * level:.4f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_epoch_summary_re_printing_its_last_step_is_no_resume_for_repeated_data(tmp_path):
    run = only_run(_keras3_console(tmp_path / "keras" / "train_log.txt").parent)
    # the reader splits the file where step 200 comes twice; the running average then starts again
    assert len(run.segments) == 2 and run.segments[1]["first_step"] == run.segments[0]["last_step"] == 200
    assert [f for f in run.findings if f.kind == "repeated_data"] == []
    assert loud(run) == []


def _two_launches(pause_s: float, n: int = 480, resume_at: int = 400) -> tuple[RunContext, np.ndarray, np.ndarray]:
    """A loss that falls 15% where a second launch began at the first one's last step and stays low
    to the end of the log: the frame says whether the two launches had a pause between them."""
    step = np.arange(n)
    rng = np.random.default_rng(50)
    value = (2.0 + 3.0 * np.exp(-step / 300)) * np.exp(0.01 * rng.standard_normal(n))
    value[resume_at:] *= 0.85
    seg = (step >= resume_at).astype(np.uint32)
    # the second launch logs the first one's last step again, then goes on
    steps = np.r_[step[:resume_at], resume_at - 1, step[resume_at:]]
    segs = np.r_[seg[:resume_at], 1, seg[resume_at:]]
    wall = steps.astype(float) + np.where(segs == 1, pause_s, 0.0)
    vals = np.r_[value[:resume_at], value[resume_at], value[resume_at:]]
    frame = pl.DataFrame({"run": "r", "segment": segs, "step": steps, "wall_time": wall, "metric": "train/loss",
                          "value": vals})
    ctx = cases.context({"train/loss": (step, value)}, segment_starts=[resume_at - 1])
    ctx.frame = frame
    return ctx, step, value


def test_a_launch_that_paused_before_logging_its_checkpoint_step_again_is_a_relaunch():
    ctx, _, _ = _two_launches(pause_s=900.0)
    assert relaunch_starts(ctx) == [399]
    (f,) = RepeatedDataDetector().detect(ctx.series["train/loss"], ctx)
    assert f.severity == "warning" and f.evidence["resume_boundary"]


def test_a_step_written_twice_with_no_pause_is_no_relaunch():
    ctx, _, _ = _two_launches(pause_s=0.0)
    assert relaunch_starts(ctx) == []
    assert RepeatedDataDetector().detect(ctx.series["train/loss"], ctx) == []


# ------------------------------------------------------------------ ln(k) with an accuracy far above 1/k


def _csvlogger(root: Path, acc) -> Path:
    """Keras `CSVLogger`: a 100-epoch MLP whose loss falls from 1.97 and holds near 1.41 (ln 4)."""
    rng = np.random.default_rng(3)
    e = np.arange(100)
    loss = 1.405 + 0.56 * np.exp(-e / 8) + 0.002 * rng.standard_normal(100)
    rows = [[int(i), f"{a:.4f}", f"{x:.4f}"] for i, a, x in zip(e, acc, loss)]
    return write_csv(root / "training.log", ["epoch", "accuracy", "loss"], rows).parent


def test_a_loss_near_ln_k_beside_an_accuracy_far_above_1_over_k_is_not_at_chance(tmp_path):
    e = np.arange(100)
    run = only_run(_csvlogger(tmp_path / "learned", 0.29 + 0.21 * (1 - np.exp(-e / 10))))
    assert plateaus_read(run, "loss", "chance") == [] and loud(run) == []


def test_a_loss_at_ln_k_beside_an_accuracy_at_1_over_k_is_at_chance(tmp_path):
    rng = np.random.default_rng(4)
    run = only_run(_csvlogger(tmp_path / "chance", 0.25 + 0.01 * rng.standard_normal(100)))
    (f,) = plateaus_read(run, "loss", "chance")
    assert f.evidence["chance_classes"] == 4 and f.severity == "warning"


# ------------------------------------------------------------------ 1/k when the training loss counts more classes


def _train_test_log(path: Path, first_loss: float, test_acc) -> Path:
    """A script's console: a training loss every 50 steps and, each epoch (750 steps), the test set's
    loss and accuracy in percent."""
    rng = np.random.default_rng(7)
    lines = []
    for step in range(0, 750 * len(test_acc)):
        if step % 50 == 0:
            loss = first_loss * (0.25 + 0.75 * np.exp(-step / 1500)) * np.exp(0.05 * rng.standard_normal())
            lines.append(f"step {step} loss {loss:.4f}")
        if step % 750 == 749:
            e = step // 750
            lines.append(f"step {step + 1} test_loss {2.0 + 0.03 * e:.4f} test_acc_pct {test_acc[e]:.3f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path.parent


def _near_half(n: int = 25, seed: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 48.8 + 0.8 * rng.standard_normal(n)


def test_an_accuracy_near_half_is_not_chance_when_the_loss_started_at_ln_61(tmp_path):
    run = only_run(_train_test_log(tmp_path / "many" / "train.out", np.log(61), _near_half()))
    assert [f for f in plateaus_read(run, "test_acc_pct", "chance") if f.severity != "info"] == []


def test_an_accuracy_near_half_is_chance_when_the_loss_started_at_ln_2(tmp_path):
    run = only_run(_train_test_log(tmp_path / "binary" / "train.out", np.log(2), _near_half()))
    (f,) = plateaus_read(run, "test_acc_pct", "chance")
    assert f.severity == "warning" and f.evidence["chance_classes"] == 2


# ------------------------------------------------------------------ one evaluation frozen: one alarm


def _frozen_eval_log(root: Path, acc: float) -> Path:
    """Keras `CSVLogger` of a segmentation run whose evaluation gives one answer for every input: the
    validation accuracy and mIoU repeat one exact value each epoch while the training loss falls."""
    e = np.arange(12)
    loss = 0.9 * np.exp(-e / 6) + 0.1
    rows = [[int(i), f"{x:.4f}", f"{acc:.4f}", "0.4375"] for i, x in zip(e, loss)]
    return write_csv(root / "training.log", ["epoch", "loss", "val_accuracy", "val_miou"], rows).parent


def test_scores_frozen_beside_an_accuracy_frozen_at_chance_are_one_alarm(tmp_path):
    run = only_run(_frozen_eval_log(tmp_path / "chance", 0.5))
    plateaus = [f for f in run.findings if f.kind == "plateau"]
    assert [f.evidence.get("reading") for f in plateaus if f.severity == "warning"] == ["chance"]
    (frozen,) = [f for f in plateaus if f.evidence.get("reading") == "frozen"]
    assert frozen.severity == "info" and frozen.evidence["note_because"] == "told_as_chance"


def test_scores_frozen_off_chance_stay_the_alarm(tmp_path):
    run = only_run(_frozen_eval_log(tmp_path / "majority", 0.875))
    (frozen,) = [f for f in run.findings if f.kind == "plateau" and f.severity == "warning"]
    assert frozen.evidence.get("reading") == "frozen"



# ------------------------------------------------------------------ a flat loss beside an accuracy that rose


def _flat_loss_log(root: Path, acc) -> Path:
    """Keras `CSVLogger`: a loss flat at 0.0086 within its noise for 40 epochs (a TD or self-play target
    that moves with the policy) beside the run's accuracy."""
    rng = np.random.default_rng(9)
    loss = 0.0086 * np.exp(0.1 * rng.standard_normal(40))
    rows = [[int(i), f"{x:.5f}", f"{a:.4f}"] for i, (x, a) in enumerate(zip(loss, acc))]
    return write_csv(root / "training.log", ["epoch", "loss", "accuracy"], rows).parent


def test_a_flat_loss_beside_an_accuracy_that_rose_is_a_note(tmp_path):
    e = np.arange(40)
    (f,) = plateaus_read(only_run(_flat_loss_log(tmp_path / "rose", 0.12 + 0.4 * (1 - np.exp(-e / 10)))), "loss",
                         "never")
    assert f.severity == "info" and f.evidence["note_because"] == "accuracy_rose"


def test_a_flat_loss_beside_a_flat_accuracy_never_learned(tmp_path):
    rng = np.random.default_rng(10)
    (f,) = plateaus_read(only_run(_flat_loss_log(tmp_path / "flat", 0.3 + 0.01 * rng.standard_normal(40))), "loss",
                         "never")
    assert f.severity == "warning"


def _unclocked(with_val: bool) -> RunContext:
    """Two segments and no clock: the second starts by logging the first one's last step again,
    either with the same key (a relaunch re-logging its checkpoint step, nanoGPT's `iter 400`) or
    adding a `val_loss` the steps before it never carried (an epoch's summary line)."""
    ctx, _, _ = _two_launches(pause_s=0.0)
    f = ctx.frame.drop("wall_time")
    if with_val:
        f = pl.concat([f, pl.DataFrame({"run": "r", "segment": np.uint32(1), "step": 399, "metric": "val_loss",
                                        "value": 2.0}).select(f.columns).cast(f.schema)])
    ctx.frame = f
    return ctx


def test_without_a_clock_the_same_keys_again_are_a_relaunch_and_added_summary_keys_are_not():
    assert relaunch_starts(_unclocked(with_val=False)) == [399]
    assert relaunch_starts(_unclocked(with_val=True)) == []
