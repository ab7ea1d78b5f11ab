"""Plateaus, never learned and overfitting on fresh logs (#25, session 25, J9).

- A language model's loss that stayed at the uniform level of its vocabulary: an HF Trainer fine-tune at
  13-14 for 400 steps (above ln 256000 = 12.45, worse than uniform), a diffusion LM from 11.5 to 10.6 over
  800 steps; token frequencies alone take a language model far below ln V within its first hundred steps
  (`tokenchance`). Quiet: a pretraining run that falls from 10.8 to 6, the first 24 steps of a run
  (11.5 -> 10.0), a summed SFT loss of 20-40, a regression loss that fell from 12 to 2.
- A classification term at ln 2 for the whole run while the total fell with the localisation term: the
  head never learned, and the total hides it, so the term's finding is the run's (`termchance`). Quiet: a
  classification term that learned down from ln 2.
- A flat reward printed to four decimals (0.0971-0.0975 over 600 tables): block medians two printed steps
  apart are one level.
- A second loss printed after each epoch's validation under a bare name (`MSE_loss = v`) that bottomed and
  rose while the training loss kept falling, ending above it: overfitting as a note that says why the
  reading is uncertain. Quiet: a term of the objective that rises under its total (a KL).
- A validation log's only loss (`acc,epoch,loss`) that rose 5x from its minimum while its accuracy held at
  92%: more confident when wrong, the held-out signature of overfitting, a note. Quiet: the same loss beside
  an accuracy that fell with it (a divergence's).
- A supervised run's held-out score named like a game's (`val/symmetry_scores` at 1.0) is no return that
  never rose.
Written as the scripts print them: HF Trainer dict lines, a python-logging trainer, an SB3 `progress.csv`, a
`nohup.out`, a DARTS `train_log.csv`.
"""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api, diagnostics


def _findings(path, kind: str = "plateau", loud_only: bool = True) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind == kind and (f.severity != "info" or not loud_only)]


def _hf_console(path, loss: np.ndarray, seed: int = 0):
    """HF Trainer's console: a banner, then one dict line per logging step."""
    rng = np.random.default_rng(seed)
    lines = ["***** Running training *****", "  Num examples = 20000", "  Total optimization steps = 1200"]
    for i, v in enumerate(loss):
        lines.append(str({"loss": round(float(v), 4), "grad_norm": round(float(3 + rng.random()), 4),
                          "learning_rate": 0.0002, "epoch": round((i + 1) / 1200, 4)}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_lm_loss_above_every_vocabularys_uniform_level_never_learned(tmp_path):
    rng = np.random.default_rng(0)
    loss = 13.0 * np.exp(0.15 * rng.standard_normal(400)) + np.linspace(1.4, 0.0, 400)
    (f,) = _findings(_hf_console(tmp_path / "finetuning.log", loss))
    assert f.evidence["reading"] == "vocab_chance" and f.evidence["above_chance"] and f.severity == "warning"
    assert f.start_step == 0 and "worse than guessing every token uniformly" in f.message


def test_a_diffusion_lm_still_near_ln_vocab_after_800_steps_never_learned(tmp_path):
    rng = np.random.default_rng(1)
    loss = np.linspace(11.5, 10.6, 800) * np.exp(0.02 * rng.standard_normal(800))
    (f,) = _findings(_hf_console(tmp_path / "training.log", loss))
    assert f.evidence["reading"] == "vocab_chance" and not f.evidence["above_chance"]


@pytest.mark.parametrize("loss", [
    10.8 * np.exp(-np.linspace(0, 0.6, 300)),  # a pretraining run learning: 10.8 -> 5.9
    np.linspace(11.5, 10.0, 24),  # the first 24 steps of a run: an ordinary start
    np.linspace(24.0, 14.0, 200) + 3 * np.sin(np.arange(200)),  # a summed SFT loss, no per-token mean
    2 + 10 * np.exp(-np.arange(300) / 30),  # a regression loss that fell from 12 to 2
])
def test_a_loss_that_left_the_vocabularys_level_or_never_was_an_lm_stays_quiet(tmp_path, loss):
    assert [f for f in _findings(_hf_console(tmp_path / "train.log", loss))
            if f.evidence.get("reading") == "vocab_chance"] == []


def _detector_log(path, cls: np.ndarray, loc: np.ndarray):
    """A video action detector's `train.log` (python logging): one line every 100 steps, the total the
    mean of its two terms."""
    lines = []
    for i, (c, l) in enumerate(zip(cls, loc)):
        s = 100 * (i + 1)
        lines.append(f"2024-03-01 10:{(i // 60) % 60:02d}:{i % 60:02d},000 INFO     Train step:{s}/{100 * cls.size},"
                     f"Loc Loss: {l:.4f},Cls Loss: {c:.4f},Tot Loss: {(c + l) / 2:.4f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_classification_term_at_ln_2_inside_a_falling_total_never_learned(tmp_path):
    rng = np.random.default_rng(2)
    n = 600
    cls = np.log(2) * np.linspace(0.96, 0.995, n) * np.exp(0.06 * rng.standard_normal(n))
    loc = np.linspace(0.41, 0.26, n) * np.exp(0.05 * rng.standard_normal(n))
    (f,) = _findings(_detector_log(tmp_path / "train.log", cls, loc))
    assert f.metric == "Cls_Loss" and f.evidence["chance_classes"] == 2 and f.evidence["term_of"] == "Tot_Loss"
    assert f.severity == "warning" and "the rest of the model learned and this head did not" in f.message


def test_a_classification_term_that_learned_down_from_ln_2_stays_quiet(tmp_path):
    rng = np.random.default_rng(3)
    n = 600
    cls = np.log(2) * np.exp(-np.linspace(0, 0.5, n) + 0.07 * rng.standard_normal(n))
    loc = np.linspace(0.41, 0.26, n) * np.exp(0.05 * rng.standard_normal(n))
    assert _findings(_detector_log(tmp_path / "train.log", cls, loc), loud_only=False) == []


def _sb3_progress(path, rewards: np.ndarray):
    """SB3's `progress.csv` of a SAC run (its logger's columns, alphabetical)."""
    rng = np.random.default_rng(4)
    head = ("rollout/ep_len_mean,rollout/ep_rew_mean,time/episodes,time/fps,time/time_elapsed,time/total_timesteps,"
            "train/actor_loss,train/critic_loss,train/ent_coef,train/learning_rate,train/n_updates")
    rows = [f"1.0,{r:.4f},{4 * (i + 1)},{90 + i % 7},{i + 1},{4 * (i + 1)},{-5.4 + 2.6 * i / rewards.size:.4f},"
            f"{abs(1e-4 * rng.standard_normal()):.6f},{0.97 - 0.48 * i / rewards.size:.4f},0.0003,{4 * i}"
            for i, r in enumerate(rewards)]
    path.write_text(head + "\n" + "\n".join(rows) + "\n")
    return path


def test_a_reward_flat_within_its_printed_steps_never_rose(tmp_path):
    """A rolling mean over 100 one-step episodes: it repeats its value most tables and wanders a printed step
    at a time between 0.0972 and 0.0974, so its point-to-point noise is nil."""
    rng = np.random.default_rng(5)
    level, rewards = 3, []
    for _ in range(600):
        level = int(np.clip(level + rng.choice([-1, 0, 1], p=[0.08, 0.84, 0.08]), 2, 4))
        rewards.append(0.0970 + 0.0001 * level)
    rewards = np.round(np.array(rewards), 4)
    (f,) = _findings(_sb3_progress(tmp_path / "progress.csv", rewards))
    assert f.metric == "rollout/ep_rew_mean" and f.evidence.get("reward_flat") and f.severity == "warning"


def test_a_reward_that_rose_many_printed_steps_stays_quiet(tmp_path):
    rng = np.random.default_rng(6)
    rewards = np.round(np.linspace(0.0970, 0.1300, 600) + 0.0001 * rng.standard_normal(600), 4)
    assert [f for f in _findings(_sb3_progress(tmp_path / "progress.csv", rewards), loud_only=False)
            if f.evidence.get("reward_flat")] == []


def _nohup(path, train: np.ndarray, second: np.ndarray, name: str = "MSE_loss"):
    """A regressor's `nohup.out`: three batch-loss lines an epoch, then its validation's `MSE_loss = v`."""
    lines = []
    for e, (t, v) in enumerate(zip(train, second)):
        lines += [f" Epoch:{e},Loss:{t * f:.6f}" for f in (1.05, 1.0, 0.95)]
        lines += ["work", f"{name} = {v:.6f}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_bare_named_second_loss_that_turned_up_above_the_training_loss_is_an_overfitting_note(tmp_path):
    rng = np.random.default_rng(7)
    e = np.arange(200)
    train = 0.3 * np.exp(-e / 50) + 0.01
    val = (0.62 + 1.3 * np.exp(-e / 6) + 0.0007 * np.maximum(e - 30, 0)) * np.exp(0.01 * rng.standard_normal(200))
    (f,) = _findings(_nohup(tmp_path / "nohup.out", train, val), kind="overfitting", loud_only=False)
    assert f.metric == "MSE_loss" and f.severity == "info" and f.evidence["reading"] == "beside_training_loss"
    assert 20 <= f.start_step <= 45 and "no held-out loss by name" in f.message


def test_a_term_that_rises_under_its_total_is_no_overfitting(tmp_path):
    """A VAE's KL term rises while the reconstruction, and the total, fall: it sits under the total."""
    e = np.arange(200)
    total = 2.0 * np.exp(-e / 50) + 0.5
    kl = 0.02 + 0.2 * (1 - np.exp(-np.maximum(e - 30, 0) / 40)) + 0.05 * np.exp(-e / 5)
    assert _findings(_nohup(tmp_path / "nohup.out", total, kl, name="KL_loss"), kind="overfitting",
                     loud_only=False) == []


@pytest.mark.parametrize("second", [
    0.5 + 0.004 * np.arange(200),  # rose from its first point: a term whose weight warms up, no held-out turn
    0.47 + 0.47 * np.exp(-np.arange(200) / 8) + 0.5 * np.maximum(np.arange(200) - 26, 0) ** 2,  # blew up
])
def test_a_second_loss_that_never_improved_first_or_blew_up_is_no_overfitting(tmp_path, second):
    e = np.arange(200)
    assert _findings(_nohup(tmp_path / "nohup.out", 0.3 * np.exp(-e / 50) + 0.01, second), kind="overfitting",
                     loud_only=False) == []


def _acc_epoch_loss(path, acc: np.ndarray, loss: np.ndarray):
    """A DARTS-style `train_log.csv` of the validation pass: `acc,epoch,loss`, accuracy in percent."""
    path.write_text("acc,epoch,loss\n" + "\n".join(f"{a:.2f},{e:.1f},{v:.5f}" for e, (a, v) in
                                                   enumerate(zip(acc, loss))) + "\n")
    return path


def _rising_loss(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = np.arange(600)
    return (0.15 + 1.8 * np.exp(-e / 12) + 0.0014 * np.maximum(e - 115, 0)) * np.exp(0.03 * rng.standard_normal(600))


def test_a_lone_loss_that_rose_while_its_accuracy_held_is_an_overfitting_note(tmp_path):
    rng = np.random.default_rng(10)
    acc = 92.0 - 25 * np.exp(-np.arange(600) / 10) + 0.3 * rng.standard_normal(600)
    (f,) = _findings(_acc_epoch_loss(tmp_path / "train_log.csv", acc, _rising_loss(11)), kind="overfitting",
                     loud_only=False)
    assert f.metric == "loss" and f.evidence["reading"] == "confident" and f.severity == "info"
    assert 80 <= f.start_step <= 160 and "held its level" in f.message


def test_a_lone_loss_that_rose_while_its_accuracy_fell_is_no_overfitting(tmp_path):
    rng = np.random.default_rng(12)
    e = np.arange(600)
    acc = 92.0 - 25 * np.exp(-e / 10) - 0.06 * np.maximum(e - 115, 0) + 0.3 * rng.standard_normal(600)
    assert _findings(_acc_epoch_loss(tmp_path / "train_log.csv", acc, _rising_loss(13)), kind="overfitting",
                     loud_only=False) == []


def test_a_supervised_runs_held_out_score_is_no_return_that_never_rose(tmp_path):
    """A segmentation run's history (`train/loss`, `val/dice`, `val/symmetry_scores` at 1.0 throughout): a
    held-out score named like a game's score is no policy's return; 'the policy is not learning' is wrong."""
    e = np.arange(200)
    rows = [f"{i},{1.14 + 0.6 * np.exp(-i / 20):.4f},{0.75 - 0.7 * np.exp(-i / 15):.4f},1.0" for i in e]
    path = tmp_path / "history.csv"
    path.write_text("epoch,train/loss,val/dice,val/symmetry_scores\n" + "\n".join(rows) + "\n")
    assert _findings(path) == []
