"""Plateau (SL205), overfitting (SL206) and short-run divergence (SL202) on the shapes real
logs have: a 30-epoch Keras run at ln 10, a short run that stalls at chance after its
early fall, a stuck stretch with a late breakthrough, a fine-tune whose eval loss turns
up after one evaluation, a warm-up that blows the loss up, the HF Trainer's NaN hidden
as 0.0; and the flat-looking runs that must stay quiet (a slow tail, a continuation, the
level after an unrecovered spike, a short clean run, a converged fine-tune).
Fixtures: `fixtures/writers/learning.py`."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import spikelens
from spikelens.detect.plateaus import chance_classes

from conftest import FIXTURES, loud as _loud

sys.path.insert(0, str(FIXTURES))
from writers import learning as lw  # noqa: E402

ROOT = FIXTURES / "learning"


def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _kind(run, kind):
    return [f for f in run.findings if f.kind == kind]


def test_SL205_keras_run_stuck_at_ln10_is_a_plateau_at_chance():
    run = _run(ROOT / "keras_chance" / "training.log")
    (plateau,) = _kind(run, "plateau")
    assert plateau.metric == "loss" and plateau.severity == "warning"
    assert plateau.start_step <= 2 and plateau.end_step == lw.KERAS_EPOCHS - 1
    assert plateau.evidence["chance_classes"] == 10 and "ln(10)" in plateau.message
    assert [f.kind for f in _loud(run)] == ["plateau"]  # val_loss at chance too: one finding


def test_SL205_short_run_that_stalls_after_its_early_fall_is_a_plateau_from_the_stall():
    run = _run(ROOT / "lightning_stall")
    (plateau,) = _kind(run, "plateau")
    stall_step = (lw.STALL_EPOCH + 1) * lw.STEPS_PER_EPOCH - 1
    assert plateau.metric == "train_loss"
    assert abs(plateau.start_step - stall_step) <= 2 * lw.STEPS_PER_EPOCH
    assert plateau.evidence["chance_classes"] == 10


def test_SL205_stuck_stretch_with_a_late_breakthrough_is_a_plateau_over_that_stretch():
    run = _run(ROOT / "breakthrough.csv")
    (plateau,) = _kind(run, "plateau")
    assert plateau.evidence["reading"] == "breakthrough"
    assert abs(plateau.start_step - lw.STUCK_FROM) <= 60 and abs(plateau.end_step - lw.BREAK_AT) <= 60
    assert "broke out" in plateau.message


@pytest.mark.parametrize("path", ["slow_tail", "continuation.csv", "unrecovered", "keras_clean/training.log",
                                  "hf_converged/trainer_state.json", "hf_overfit/trainer_state.json"])
def test_SL205_flat_looking_healthy_runs_are_not_plateaus(path):
    run = _run(ROOT / path)
    assert not _kind(run, "plateau"), [f.message for f in _kind(run, "plateau")]


@pytest.mark.parametrize("path", ["slow_tail", "continuation.csv", "keras_clean/training.log",
                                  "hf_converged/trainer_state.json"])
def test_healthy_runs_stay_quiet(path):
    run = _run(ROOT / path)
    assert not _loud(run), [f.message for f in _loud(run)]


def test_SL205_unrecovered_spike_is_the_spike_not_a_plateau_or_divergence():
    run = _run(ROOT / "unrecovered")
    assert {f.kind for f in _loud(run)} == {"spike"}


def test_SL206_short_fine_tune_whose_eval_loss_turns_up_is_overfitting():
    run = _run(ROOT / "hf_overfit" / "trainer_state.json")
    (over,) = _kind(run, "overfitting")
    assert over.metric == "eval_loss" and over.start_step == lw.OVERFIT_MIN
    assert over.evidence["rise_percent"] > 30 and "best checkpoint is near step 1000" in over.message
    assert not _kind(run, "divergence")


def test_SL206_several_eval_sets_that_turn_up_are_one_finding():
    run = _run(ROOT / "hf_overfit_sets" / "trainer_state.json")
    (over,) = [f for f in _loud(run)]
    assert over.kind == "overfitting" and over.metric == "eval_g0_loss" and over.start_step == 400
    assert sorted(a["metric"] for a in over.evidence["also_on"]) == ["eval_g1_loss", "eval_g2_loss"]


def test_SL206_eval_loss_that_keeps_falling_is_not_overfitting():
    for path in ("keras_clean/training.log", "lightning_stall", "hf_hidden_nan/trainer_state.json"):
        assert not _kind(_run(ROOT / path), "overfitting"), path


def test_SL202_short_run_whose_loss_rises_with_the_warmup_diverged_once():
    run = _run(ROOT / "hf_warmup_blowup" / "trainer_state.json")
    (div,) = _kind(run, "divergence")
    assert div.metric == "loss" and div.severity == "error"
    assert div.start_step == 132 and div.end_step >= 1500  # the eval loss turned first
    assert [a["metric"] for a in div.evidence["also_on"]] == ["eval_loss"] and "learning_rate rose" in div.message
    assert not _kind(run, "overfitting")  # the training loss rose too


def test_SL202_a_rise_that_only_an_lr_cut_ended_is_a_divergence_up_to_the_cut():
    run = _run(ROOT / "lr_cut_rise.csv")
    (div,) = _kind(run, "divergence")
    steps = lw.lr_cut_rise_series()["step"]
    assert steps[lw.CUTS[0]] <= div.start_step <= steps[lw.RISE_FROM + 3]  # flat from the cut, rising from RISE_FROM
    assert div.end_step < steps[lw.CUTS[1]] <= div.evidence["lr_cut_step"] + 1104
    assert "until the learning rate was cut" in div.message


def test_SL202_short_clean_and_converged_runs_do_not_diverge():
    for path in ("keras_clean/training.log", "hf_converged/trainer_state.json", "keras_chance/training.log"):
        assert not _kind(_run(ROOT / path), "divergence"), path


def test_hf_nan_hidden_as_zero_loss_is_one_nan_and_no_plateau():
    run = _run(ROOT / "hf_hidden_nan" / "trainer_state.json")
    (nan,) = _kind(run, "nan")
    assert nan.start_step == lw.HIDDEN_NAN_STEP and nan.severity == "error"
    assert nan.evidence["loss_reads_zero_from"] == lw.HIDDEN_NAN_STEP and "logging_nan_inf_filter" in nan.message
    assert [f.kind for f in _loud(run)] == ["nan"]  # the 0.0 losses are not a plateau or a drop


@pytest.mark.parametrize("level,k", [(np.log(2), 2), (0.7002, 2), (np.log(10), 10), (np.log(1000) * 1.005, 1000),
                                     (np.log(32000), 32000), (np.log(50257), 50257)])
def test_chance_levels_match_plausible_class_counts_and_vocabularies(level, k):
    assert chance_classes(float(level), 0.02) == k


@pytest.mark.parametrize("level", [2.6, 3.0, 1.5, 0.4, np.log(8), 1.25])
def test_levels_between_plausible_chance_levels_match_none(level):
    assert chance_classes(float(level), 0.02) is None


def test_fixtures_are_what_the_writer_writes(tmp_path):
    lw.make(tmp_path)
    for f in (tmp_path / "learning").rglob("*"):
        if f.is_file():
            assert f.read_bytes() == (ROOT / f.relative_to(tmp_path / "learning")).read_bytes(), f
