"""Loud false alarms from populations (#25, precision): a noisy series' many excursions of one
size are its noise, at most one note, while a real isolated spike beside them still fires.

- a dense, heavy-tailed eval loss (logged on every step) rises 3-7x over its running level again and
  again: those rises are the evaluation's noise, one note, never a warning per rise; a held-out loss
  that jumps 40-80x for two epochs in an otherwise calm per-epoch curve is still a spike;
- after a jump the curve never came back from, the new level's own wander is the yardstick: a run
  whose per-epoch loss (printed on every step of its epoch) stepped up 10x and then swings 2-4x from
  epoch to epoch has one alarm, the step up; a 20x step far above that wander is still a spike.
Logs are plain text as a training script prints them, written by the test."""
from __future__ import annotations

import numpy as np

import spikelens


def _run(path, lines):
    path.write_text("".join(lines))
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def _loud(run, metric=None):
    return [f for f in run.findings if f.severity in ("warning", "error") and metric in (None, f.metric)]


def _dense_eval(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n = 1200
    train = 2.0 * np.exp(-np.arange(n) / 400) + 0.8
    evals = train * 1.1 * np.exp(0.3 * rng.standard_t(3, n))
    return _run(tmp_path / "train.log", [f"step {s} | loss {train[s] * np.exp(0.05 * rng.standard_normal()):.4f} | "
                                         f"eval_loss {evals[s]:.4f}\n" for s in range(n)])


def test_a_dense_heavy_tailed_eval_loss_has_no_rise_warnings_only_one_note_naming_their_count(tmp_path):
    run = _dense_eval(tmp_path, 0)
    bursts = [f for f in run.findings if f.metric == "eval_loss" and f.kind == "spike" and "evaluations" in f.evidence]
    assert not bursts
    (note,) = [f for f in run.findings if f.metric == "eval_loss" and f.evidence.get("eval_noise")]
    assert note.severity == "info" and note.evidence["count"] >= 3
    assert note.evidence["half_size_rises"] > 2 * note.evidence["count"]
    assert len(_loud(run, "eval_loss")) <= 1  # at most the one finding that lists the one-evaluation jumps


def test_a_held_out_loss_that_jumps_for_two_epochs_in_a_calm_curve_is_still_a_spike(tmp_path):
    rng = np.random.default_rng(3)
    m = 40
    train = 0.4 * np.exp(-np.arange(m) / 8) + 0.01
    val = (0.45 * np.exp(-np.arange(m) / 8) + 0.05) * np.exp(0.1 * rng.standard_normal(m))
    val[20], val[21] = 4.0, 6.0
    run = _run(tmp_path / "train.log", [f"epoch {e + 1} | loss {train[e]:.4f} | val_loss {val[e]:.4f}\n"
                                        for e in range(m)])
    (spike,) = _loud(run, "val_loss")
    assert spike.kind == "spike" and spike.peak_step == 22 and spike.magnitude > 20
    assert not [f for f in run.findings if f.evidence.get("eval_noise")]


def _stairs(tmp_path, epochs, per_epoch=28):
    """A progress bar's postfix: each epoch's loss printed on every step of that epoch."""
    values = np.repeat(epochs, per_epoch)
    return _run(tmp_path / "train.log", [f"step {s + 1} | loss {v:.6f} | lr 0.0003\n" for s, v in enumerate(values)])


def _stepped_up(seed):
    rng = np.random.default_rng(seed)
    return np.concatenate([0.01 * np.exp(0.02 * rng.standard_normal(10)), 0.1 * np.exp(0.5 * rng.standard_normal(30))])


def test_after_a_step_up_the_new_levels_own_wander_is_not_more_spikes(tmp_path):
    # (before the new level was its own yardstick, this run had three more spike warnings after the step)
    (loud,) = _loud(_stairs(tmp_path, _stepped_up(1)))
    assert loud.kind == "spike" and loud.recovery == "none"
    assert 9 * 28 <= loud.start_step <= 12 * 28  # the step up, at epoch 11


def test_a_jump_far_above_the_new_levels_wander_is_still_a_spike(tmp_path):
    epochs = _stepped_up(1)
    epochs[30] = 20 * np.median(epochs[10:])
    run = _stairs(tmp_path, epochs)
    spikes = sorted((f for f in run.findings if f.kind == "spike"), key=lambda f: f.peak_step)
    assert len(spikes) >= 2 and 30 * 28 <= spikes[-1].peak_step <= 31 * 28
    assert spikes[0].severity == "error" and spikes[0].recovery == "none"


def _bumps(tmp_path, k, n=1500, seed=0):
    """A calm per-step loss with `k` six-step bumps of 2.2-2.6x at irregular steps."""
    rng = np.random.default_rng(seed)
    loss = (2.0 * np.exp(-np.arange(n) / 400) + 0.5) * np.exp(0.01 * rng.standard_normal(n))
    for j, a in enumerate(np.sort(rng.choice(np.arange(100, n - 100, 45), k, replace=False))):
        loss[a:a + 6] *= 2.2 + 0.1 * (j % 5)
    return _run(tmp_path / "train.log", [f"step {s + 1} | loss {v:.5f}\n" for s, v in enumerate(loss)])


def test_a_curve_that_spikes_again_and_again_has_one_alarm_naming_the_count(tmp_path):
    spikes = [f for f in _bumps(tmp_path, 10).findings if f.kind == "spike"]
    assert len(spikes) == 10
    (loud,) = [f for f in spikes if f.severity != "info"]
    assert loud.evidence["spikes_on_curve"] == 10 and loud.magnitude == max(f.magnitude for f in spikes)
    assert {f.evidence.get("note_because") for f in spikes if f is not loud} == {"one_of_many"}


def test_two_spikes_of_a_calm_curve_are_each_an_alarm(tmp_path):
    spikes = [f for f in _bumps(tmp_path, 2).findings if f.kind == "spike"]
    assert len(spikes) == 2 and all(f.severity == "warning" for f in spikes)
    assert not any("spikes_on_curve" in f.evidence for f in spikes)
