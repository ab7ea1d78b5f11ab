"""Spikes judged by their size on the curve's own scale (#25): a PPO KL two orders of magnitude
above its own median at a few updates, however noisy it is between; an eval loss that doubled
for several evaluations in a row and came back. And their look-alikes that stay quiet: a KL whose
largest update is ten times its median, a KL that grows over training, an eval loss that rises
and stays (overfitting), a small validation set swinging 2x every epoch, one noisy evaluation.
KL runs are written by TensorBoard's own `SummaryWriter` with SB3's tags; eval curves as Keras'
`CSVLogger` writes them."""
from __future__ import annotations


import numpy as np
import pytest

import spikelens

from conftest import loud
from conftest import keras_csv as _keras

SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter

UPDATES = 300
STRIDE = 2048  # SB3's n_steps: one logged point per rollout
KL_JUMPS = (10, 120, 121, 250)


def _run(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _spikes(run, metric):
    return [f for f in run.findings if f.kind == "spike" and f.metric == metric]


def _ppo(folder, kl: np.ndarray, seed: int = 0):
    """An SB3 PPO run's TensorBoard scalars: approx_kl, the losses and a reward that rises."""
    rng = np.random.default_rng(seed)
    with SummaryWriter(str(folder)) as w:
        for i, k in enumerate(kl):
            step = (i + 1) * STRIDE
            w.add_scalar("train/approx_kl", float(k), step)
            w.add_scalar("train/loss", float(2.0 * np.exp(-i / 150) * np.exp(0.2 * rng.standard_normal())), step)
            w.add_scalar("train/entropy_loss", float(-1.3 + 0.001 * i + 0.01 * rng.standard_normal()), step)
            w.add_scalar("rollout/ep_rew_mean", float(10 + 40 * (1 - np.exp(-i / 80)) + rng.normal(0, 1)), step)
    return folder


def _noisy_kl(seed: int, spread: float = 0.5) -> np.ndarray:
    """Healthy PPO: approx_kl around 0.01 with a heavy spread (its largest update ~10x the median)."""
    rng = np.random.default_rng(seed)
    return 0.01 * np.exp(spread * rng.standard_normal(UPDATES))


def test_kl_updates_two_orders_of_magnitude_above_its_median_are_one_spike_listing_them(tmp_path):
    kl = _noisy_kl(1)
    for i, v in zip(KL_JUMPS, (4.0, 2.5, 1.8, 6.0)):
        kl[i] = v
    run = _run(_ppo(tmp_path / "ppo", kl))
    (spike,) = _spikes(run, "train/approx_kl")
    assert spike.severity == "warning" and spike.evidence["kl_jump"]
    assert spike.evidence["steps"] == [(i + 1) * STRIDE for i in KL_JUMPS]
    assert spike.peak_step == (250 + 1) * STRIDE and spike.magnitude > 300
    assert "policy updates" in spike.message


def test_a_noisy_kl_whose_largest_update_is_ten_times_its_median_has_no_spike(tmp_path):
    kl = _noisy_kl(2, spread=0.8)
    assert 5 < kl.max() / np.median(kl) < 30
    run = _run(_ppo(tmp_path / "ppo", kl))
    assert _spikes(run, "train/approx_kl") == []


def test_a_kl_that_grows_over_training_to_a_thousand_times_its_start_has_no_spike(tmp_path):
    rng = np.random.default_rng(3)
    kl = 1e-5 * np.exp(np.linspace(0, np.log(1000), UPDATES)) * np.exp(0.2 * rng.standard_normal(UPDATES))
    run = _run(_ppo(tmp_path / "grpo", kl))
    assert _spikes(run, "train/approx_kl") == []


EPOCHS = 60




def _curves(seed: int, noise: float = 0.04) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    e = np.arange(EPOCHS)
    loss = (0.2 + 1.5 * np.exp(-e / 8)) * np.exp(0.01 * rng.standard_normal(EPOCHS))
    val = (0.3 + 1.4 * np.exp(-e / 8)) * np.exp(noise * rng.standard_normal(EPOCHS))
    return loss, val


def test_an_eval_loss_that_doubled_for_several_epochs_and_came_back_is_a_spike(tmp_path):
    loss, val = _curves(4)
    val[30:35] *= (1.9, 2.4, 2.0, 1.8, 1.6)
    run = _run(_keras(tmp_path / "burst" / "training.log", {"loss": loss, "val_loss": val}))
    (spike,) = _spikes(run, "val_loss")
    assert spike.severity == "warning" and spike.start_step == 30 and spike.peak_step == 31
    assert 35 <= spike.end_step <= 37 and spike.evidence["evaluations"] >= 5
    assert 2.0 < spike.magnitude < 2.8


def test_an_eval_loss_that_jumps_up_and_stays_up_is_no_spike(tmp_path):
    loss, val = _curves(5)
    val[30:45] *= 2.4
    val[45:] *= 1.7  # it settles above its old level and never comes back: overfitting or a new level
    run = _run(_keras(tmp_path / "overfit" / "training.log", {"loss": loss, "val_loss": val}))
    assert _spikes(run, "val_loss") == []


def test_a_small_validation_set_swinging_2x_every_epoch_has_no_spike(tmp_path):
    loss, val = _curves(6, noise=0.45)
    run = _run(_keras(tmp_path / "swing" / "training.log", {"loss": loss, "val_loss": val}))
    assert [f for f in _spikes(run, "val_loss") if f.severity != "info"] == []


def test_one_noisy_evaluation_at_1_4x_is_no_spike(tmp_path):
    loss, val = _curves(7)
    val[20] *= 1.4
    run = _run(_keras(tmp_path / "blip" / "training.log", {"loss": loss, "val_loss": val}))
    assert _spikes(run, "val_loss") == [] and not loud(run)


def test_one_epoch_blips_in_a_short_run_whose_epochs_jump_as_far_several_times_are_summarised(tmp_path):
    rng = np.random.default_rng(8)
    e = np.arange(60)
    loss = 0.8 * np.exp(-e / 100) * np.exp(0.02 * rng.standard_normal(60))
    for at, r in ((20, 1.5), (33, 1.7), (47, 1.6)):  # the run's own habit, not one event
        loss[at] *= r
    run = _run(_keras(tmp_path / "habit" / "training.log", {"loss": loss}))
    assert _spikes(run, "loss") == [] and not loud(run)
    (note,) = [f for f in run.findings if f.kind == "outliers"]
    assert sorted(note.evidence["steps"]) == [20, 33, 47]


def test_a_kl_numerically_zero_with_updates_of_1e_5_nats_has_no_spike(tmp_path):
    # TRPO: a KL of 1e-10 on most updates and 1e-5 on some is thousands of times its median, and tiny
    rng = np.random.default_rng(9)
    kl = 1e-10 * np.exp(rng.standard_normal(UPDATES))
    kl[rng.choice(UPDATES, 40, replace=False)] = 1e-5 * np.exp(rng.standard_normal(40))
    run = _run(_ppo(tmp_path / "trpo", kl))
    assert _spikes(run, "train/approx_kl") == []


def test_an_eval_loss_near_zero_that_doubles_for_a_few_epochs_gave_back_nothing_material(tmp_path):
    # it fell from 0.08 to 0.0006 (4 decimals, as a script prints it); 0.0021 for three epochs is 2% of that
    e = np.arange(EPOCHS)
    val = np.round(0.0006 + 0.08 * np.exp(-e / 6), 4)
    val[40:43] = (0.0018, 0.0021, 0.0017)
    loss = 0.001 + 0.07 * np.exp(-e / 6)
    run = _run(_keras(tmp_path / "tiny" / "training.log", {"loss": loss, "val_loss": val}))
    assert _spikes(run, "val_loss") == []


def test_one_kl_update_a_dozen_times_its_neighbours_but_under_the_kl_size_test_is_a_note_not_an_alarm(tmp_path):
    # a calm KL (spread 0.2) with one update 12x its neighbours: listed (a person may look at it), but a
    # healthy PPO run's largest updates reach about ten times its median, so it is no alarm
    kl = _noisy_kl(3, spread=0.2)
    kl[150] = 12 * np.median(kl[140:160])
    run = _run(_ppo(tmp_path / "ppo", kl))
    (spike,) = _spikes(run, "train/approx_kl")
    assert spike.evidence["bad_batch"] and spike.evidence["steps"] == [151 * STRIDE]
    assert spike.severity == "info" and spike not in loud(run)
