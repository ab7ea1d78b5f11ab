"""What a curve is decides whether its event is an alarm (`detect/significance.py`, issue 25):
each kind of curve that moves by design gets a note, and its look-alike still fires.
Fixtures: `fixtures/writers/curve_kinds.py`, written into the test's own folder."""
from __future__ import annotations

import pytest

import sys

from conftest import FIXTURES, only_run as _run

sys.path.insert(0, str(FIXTURES))
from writers import curve_kinds as ck  # noqa: E402

CURVE = ("spike", "oscillation", "excursion", "divergence", "plateau", "level_shift")


def _loud(run, metric=None):
    return [f for f in run.findings if f.severity != "info" and f.kind in CURVE
            and (metric is None or f.metric == metric)]


def _noted(run, because):
    return [f for f in run.findings if f.evidence.get("note_because") == because]


def test_a_discriminator_loss_jumping_hundreds_of_times_over_1e4_is_a_note(tmp_path):
    run = _run(ck.gan(tmp_path))
    assert _loud(run) == []
    (note, *_) = _noted(run, "adversarial")
    assert note.metric == "D_loss" and "adversarial term" in note.message


@pytest.mark.parametrize("name", ["loss_dis", "loss_D", "disc_loss", "loss/disc", "loss_gen"])
def test_a_discriminator_loss_named_either_way_round_is_an_adversarial_term(tmp_path, name):
    run = _run(ck.gan(tmp_path, d_name=name))
    assert _loud(run) == []
    assert [f for f in _noted(run, "adversarial") if f.metric == name]


@pytest.mark.parametrize("name", ["loss_general", "loss_dist", "train/loss", "val_loss", "loss_disk"])
def test_names_that_only_start_like_a_gan_term_are_not_adversarial(name):
    from spikelens.detect.significance import is_adversarial

    assert not is_adversarial(name)


def test_the_same_jumps_on_the_task_loss_are_spikes(tmp_path):
    run = _run(ck.gan(tmp_path, adversarial=False))
    loud = _loud(run, "loss")
    assert loud and {f.kind for f in loud} == {"spike"}


def test_a_dqn_loss_climbing_20x_while_the_reward_rises_is_a_note(tmp_path):
    run = _run(ck.dqn(tmp_path))
    assert _loud(run) == []
    (note,) = _noted(run, "reinforcement")
    assert note.metric == "train/loss" and "rollout/ep_rew_mean did not fall" in note.message


def test_the_same_climb_while_the_reward_collapses_stays_loud(tmp_path):
    run = _run(ck.dqn(tmp_path, reward_falls=True))
    assert [f for f in _loud(run, "train/loss") if 85_000 <= f.start_step <= 96_000]


def test_a_running_average_restarting_each_epoch_is_judged_by_its_per_batch_series(tmp_path):
    run = _run(ck.meter_log(tmp_path))
    assert "Loss_avg" in run.metrics and "Loss" in run.metrics
    assert _loud(run) == []


def test_a_term_at_0_2_percent_of_a_flat_total_climbing_5x_is_a_note_and_at_40_percent_is_loud(tmp_path):
    run = _run(ck.minor_term(tmp_path / "minor"))
    assert _loud(run) == []
    assert [f for f in _noted(run, "minor_term") if f.metric == "loss_ce_8"]
    big = _run(ck.minor_term(tmp_path / "big", share=0.4))
    assert _loud(big), big.findings


def test_a_40x_jump_of_a_loss_memorised_down_to_1e4_is_negligible(tmp_path):
    run = _run(ck.near_zero(tmp_path))
    assert _loud(run) == []
    (note,) = _noted(run, "negligible")
    assert note.kind == "spike" and note.peak_step == 700


def test_a_jump_to_half_the_starting_level_is_a_spike(tmp_path):
    run = _run(ck.near_zero(tmp_path, peak=1.0))
    (spike,) = _loud(run)
    assert spike.kind == "spike" and spike.peak_step == 700


def test_a_loss_running_away_below_zero_is_one_divergence_and_one_that_settles_is_none(tmp_path):
    run = _run(ck.runaway(tmp_path / "away"))
    (div,) = [f for f in run.findings if f.kind == "divergence"]
    assert div.severity == "error" and div.evidence["unbounded_below"] and "ran away below zero" in div.message
    assert div.start_step < 150
    assert [f for f in _loud(run) if f is not div] == []  # its later swings are the runaway's
    settled = _run(ck.runaway(tmp_path / "nll", settles=True))
    assert not [f for f in settled.findings if f.kind == "divergence"]


def test_never_learned_needs_a_test_that_could_have_seen_learning(tmp_path):
    noisy = _run(ck.noisy_flat(tmp_path / "noisy"))
    assert not [f for f in noisy.findings if f.kind == "plateau"]
    held = _run(ck.noisy_flat(tmp_path / "held", noise=0.01))
    (flat,) = [f for f in held.findings if f.kind == "plateau"]
    assert flat.severity == "warning" and flat.evidence["reading"] == "never"


def test_a_loss_zero_or_denormal_on_most_steps_from_the_first_never_learned(tmp_path):
    run = _run(ck.zero_loss(tmp_path / "zero"))
    (flat,) = [f for f in run.findings if f.kind == "plateau"]
    assert flat.severity == "warning" and flat.evidence["reading"] == "zero" and flat.evidence["never_learned"]
    assert "numerically zero" in flat.message and flat.start_step == 1
    real = _run(ck.zero_loss(tmp_path / "real", zeros=False))
    # a real loss is neither zero nor never learned (its flat tail after the early fall may be told as a
    # 'stopped improving' note, never louder)
    assert not [f for f in real.findings if f.kind == "plateau"
                and (f.evidence.get("reading") != "stopped" or f.severity != "info")]


def test_17_evaluation_returns_that_never_rise_are_a_never_learned_note(tmp_path):
    run = _run(ck.eval_rewards(tmp_path / "flat"))
    (flat,) = [f for f in run.findings if f.kind == "plateau"]
    assert flat.metric == "eval/return" and flat.severity == "info" and "never rose" in flat.message
    rising = _run(ck.eval_rewards(tmp_path / "rising", learning=True))
    assert not [f for f in rising.findings if f.kind == "plateau"]


def test_a_3_5x_step_is_a_bad_batch_when_the_grad_norm_jumped_with_it_and_noise_when_not(tmp_path):
    run = _run(ck.graded_jump(tmp_path / "grad"))
    (spike,) = [f for f in run.findings if f.kind == "spike" and f.severity != "info"]
    assert spike.peak_step == 682 and spike.evidence["bad_batch"] and 3 < spike.magnitude < 4
    quiet = _run(ck.graded_jump(tmp_path / "quiet", grad_jump=False))
    assert not [f for f in quiet.findings if f.kind == "spike" and f.severity != "info"]


def test_a_loss_climbing_within_every_epoch_is_one_periodic_oscillation(tmp_path):
    run = _run(ck.sawtooth(tmp_path / "saw"))
    assert not [f for f in run.findings if f.kind == "excursion"]
    (osc,) = [f for f in run.findings if f.kind == "oscillation"]
    assert osc.evidence["periodic"] and abs(osc.evidence["period_steps"] - 57) <= 3 and osc.severity == "warning"
    irregular = _run(ck.sawtooth(tmp_path / "three", periodic=False))
    assert not [f for f in irregular.findings if f.evidence.get("periodic")]


def test_a_head_frozen_at_zero_for_9_epochs_that_then_trains_is_no_spike(tmp_path):
    run = _run(ck.frozen_head(tmp_path))
    assert not [f for f in run.findings if f.metric == "train/loss_vel" and f.kind in ("spike", "divergence")]


def test_one_class_eval_loss_turning_up_among_eight_is_a_note_and_the_only_eval_loss_a_warning(tmp_path):
    run = _run(ck.per_class_eval(tmp_path / "eight"))
    (over,) = [f for f in run.findings if f.kind == "overfitting"]
    assert over.metric == "val/class_0/loss" and over.severity == "info" and "one class or head" in over.message
    alone = _run(ck.per_class_eval(tmp_path / "one", classes=1))
    (over,) = [f for f in alone.findings if f.kind == "overfitting"]
    assert over.severity == "warning"


def test_a_1_2x_bump_that_came_back_is_a_note_and_a_2x_bump_a_spike(tmp_path):
    assert _loud(_run(ck.bump(tmp_path / "small"))) == []
    big = _loud(_run(ck.bump(tmp_path / "big", ratio=2.0)))
    assert big and big[0].kind in ("spike", "excursion")


def test_an_eval_loss_6_percent_above_its_minimum_is_a_note_naming_the_best_checkpoint(tmp_path):
    run = _run(ck.per_class_eval(tmp_path, classes=1, rise=0.06))
    (over,) = [f for f in run.findings if f.kind == "overfitting"]
    assert over.severity == "info" and "best checkpoint is near step" in over.message
