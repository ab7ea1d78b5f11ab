"""Reruns or deaths in a log several launches appended to (`python train.py >> train.log`)
(`textsignals.Signals.launch_words`, `ended.relaunch_crash_findings`): a launch the log names as
another run of a series (a word with a new number: `Fold 2/5`, `seed=3`, `trial 4`) or one its
early stopping ended is no death, however short; a launch that stopped without a word and was
launched again from the beginning, which then went past where it stopped, died there (SL306,
info), even after it got far. Fixtures: console logs of a training script written here as the
script prints them, launch after launch."""
from __future__ import annotations

import numpy as np

from appended_runs import clean_loss, launches_log as _log, relaunch_deaths as _died


def _losses(k, n=300, seed=0):
    rng = np.random.default_rng(seed)
    return [clean_loss(n, rng) for _ in range(k)]


# ------------------------------------------------------------------ must fire


def test_SL306_a_launch_killed_without_a_word_then_run_again_in_full_died(tmp_path):
    """Killed a third of the way in (no error, nothing said) and launched again with the same
    settings, which went all the way: the first launch died at its last step."""
    a, b = _losses(2)
    config = "Namespace(lr=0.001, batch_size=32, seed=42)\n"  # the same seed: the same run again
    (f,) = _died(_log(tmp_path / "train.log", [(config, a[:100]), (config, b)]))
    assert f.severity == "info" and f.start_step == 100 and "died there" in f.message
    assert f.evidence["died_launches"][0]["from_scratch"]


def test_SL306_a_fold_relaunched_under_the_same_number_died(tmp_path):
    a, b, c = _losses(3, seed=1)
    launches = [("===== Fold 1/3 =====\n", a), ("===== Fold 2/3 =====\n", b[:120]), ("===== Fold 2/3 =====\n", c)]
    (f,) = _died(_log(tmp_path / "train.log", launches))
    assert f.start_step == 120


# ------------------------------------------------------------------ must stay silent


def test_SL306_a_fold_that_early_stopping_ended_is_no_death(tmp_path):
    """Fold 1 stopped by its early stopping a tenth of the way in; fold 2 went all the way."""
    a, b = _losses(2, seed=2)
    launches = [("===== Fold 1/5 =====\n", a[:30]), ("Early stopping at step 30\n===== Fold 2/5 =====\n", b)]
    assert _died(_log(tmp_path / "train.log", launches)) == []


def test_SL306_folds_of_other_lengths_are_no_deaths(tmp_path):
    a, b, c = _losses(3, seed=3)
    launches = [("Fold 1/3\n", a[:30]), ("Fold 2/3\n", b), ("Fold 3/3\n", c[:200])]
    assert _died(_log(tmp_path / "train.log", launches)) == []


def test_SL306_a_seed_sweep_is_no_death(tmp_path):
    a, b, c = _losses(3, seed=4)
    launches = [(f"Namespace(lr=0.001, seed={s})\n", loss) for s, loss in ((1, a[:100]), (2, b), (3, c[:150]))]
    assert _died(_log(tmp_path / "train.log", launches)) == []


def test_SL306_runs_of_one_length_appended_are_no_deaths(tmp_path):
    config = "Namespace(lr=0.001, batch_size=32)\n"
    assert _died(_log(tmp_path / "train.log", [(config, loss) for loss in _losses(4, seed=5)])) == []


def test_SL306_a_longer_run_before_a_shorter_one_is_no_death(tmp_path):
    """The second launch stopped sooner than the first got: no relaunch went past it."""
    a, b, c = _losses(3, seed=6)
    config = "Namespace(lr=0.001)\n"
    assert _died(_log(tmp_path / "train.log", [(config, a), (config, b[:200]), (config, c[:100])])) == []


def test_SL306_a_launch_that_closed_with_its_summary_is_no_death(tmp_path):
    """A graph-classification script run several times with other settings and no word for them:
    each launch ends with its test results, so the short one finished, it did not die."""
    a, b = _losses(2, seed=7)
    lines = [f"Epoch: {i + 1:04d} loss_train: {v:.4f} acc_train: 0.8\n" for i, v in enumerate(a[:60])]
    lines.append("Optimization Finished!\nTest set results: loss= 0.4939 accuracy= 0.8481\n")
    lines += [f"Epoch: {i + 1:04d} loss_train: {v:.4f} acc_train: 0.8\n" for i, v in enumerate(b)]
    path = tmp_path / "train.log"
    path.write_text("".join(lines))
    assert _died(path) == []


def test_SL306_stages_and_headed_sections_are_other_runs(tmp_path):
    a, b, c = _losses(3, seed=8)
    staged = [("Phase 1: warmup with the standard loss\n", a[:40]), ("Phase 2: full training\n", b)]
    assert _died(_log(tmp_path / "staged.log", staged)) == []
    headed = [("#### DQN\n", a[:100]), ("#### PPO\n", b), ("#### DDPG\n", c[:50])]
    assert _died(_log(tmp_path / "pendulum.md", headed)) == []
