"""Slow turns read as an engineer reads them (#25, session 24):

- an eval loss that went flat while the training loss kept falling and then rose a little says
  where it stopped improving (a GPT-2 on a 5k-token text: 6.26, 6.24, 6.23, 6.21, 6.20, then up to
  6.33) beside its best checkpoint; a clean V has no such stretch;
- a full-batch loss that bottomed and then rose 3% with every epoch for the rest of the run crept
  up: a divergence note; the same small rise with per-batch noise over it is no finding;
- a return counted up from zero that dipped from its best by a tenth of its level did not collapse.

Written as HF's `TrainerState.save_to_json`, a `step,loss` CSV and SB3's `progress.csv` write them."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import spikelens
from conftest import FIXTURES
from loss_findings import findings_of
from sb3_progress import write_progress

sys.path.insert(0, str(FIXTURES))
from writers import hf  # noqa: E402

EVAL_EVERY = 5


def _trainer_state(path, train: np.ndarray, evals: np.ndarray):
    """A train loss and an eval loss every EVAL_EVERY steps, from step 5 (HF's `log_history`)."""
    hist = []
    for k, (t, e) in enumerate(zip(train, evals), start=1):
        s = k * EVAL_EVERY
        hist.append({"epoch": round(s / 10, 4), "learning_rate": 4e-4, "loss": float(round(t, 4)), "step": s})
        hist.append({"epoch": round(s / 10, 4), "eval_loss": float(e), "eval_runtime": 0.4, "step": s})
    last = len(train) * EVAL_EVERY
    hf.save_to_json(path / "trainer_state.json", hf.state(hist, last, max_steps=last))
    return path / "trainer_state.json"


def _overfitting(tmp_path, train, evals):
    (run,) = spikelens.analyze(_trainer_state(tmp_path, train, evals), jobs=1).runs
    return [f for f in run.findings if f.kind == "overfitting"]


TRAIN = np.geomspace(9.7, 0.99, 20)
# falls to 6.26 by the 9th evaluation, flat to the 14th, then up 2% to the end
FLAT_THEN_UP = np.array([9.98, 8.21, 7.10, 6.68, 6.57, 6.57, 6.63, 6.43, 6.36, 6.258, 6.241, 6.229, 6.211,
                         6.229, 6.204, 6.212, 6.221, 6.264, 6.291, 6.334])
# the same fall straight into its best at the 10th evaluation, then up
V = np.concatenate([np.geomspace(9.98, 6.0, 10), np.geomspace(6.0, 7.2, 11)[1:]])


@pytest.mark.parametrize("shift", [0.0, 0.003, -0.002])
def test_an_eval_loss_that_went_flat_then_rose_says_where_it_went_flat(tmp_path, shift):
    (f,) = _overfitting(tmp_path, TRAIN, FLAT_THEN_UP + shift)
    assert f.evidence["min_step"] >= 13 * EVAL_EVERY
    # the best checkpoint stays the finding's start; where it went flat is told and kept beside it
    assert f.start_step == f.evidence["min_step"]
    assert 9 * EVAL_EVERY <= f.evidence["stalled_step"] <= 12 * EVAL_EVERY
    assert f"stopped improving from step {f.evidence['stalled_step']}" in f.message


def test_a_clean_v_turns_at_its_bottom(tmp_path):
    (f,) = _overfitting(tmp_path, TRAIN, V)
    assert f.start_step == f.evidence["min_step"] and abs(f.start_step - 10 * EVAL_EVERY) <= EVAL_EVERY
    assert "stopped improving" not in f.message


def _full_batch(n: int = 1000, creep: float = 0.03, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """A summed cross-entropy under full-batch descent: 124 down to 5.75 by 40% of the run, then
    `creep` up by the end, every epoch a little higher."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    turn = int(0.4 * n)
    fall = 5.75 + 118.9 * np.exp(-i / 40)
    rise = creep * 5.75 * (np.clip(i - turn, 0, None) / (n - turn)) ** 1.3
    return (fall + rise) * np.exp(noise * rng.standard_normal(n))


def test_a_loss_that_crept_up_every_epoch_after_its_turn_is_a_divergence_note(tmp_path):
    (f,) = findings_of(tmp_path, _full_batch(), kind="divergence", digits=8)
    assert f.severity == "info" and "slow creep" in f.message
    assert 350 <= f.start_step <= 420 and f.end_step == 999


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_same_small_rise_under_batch_noise_is_no_divergence(tmp_path, seed):
    assert not findings_of(tmp_path, _full_batch(noise=0.03, seed=seed), kind="divergence", digits=8)


def test_a_loss_that_holds_its_floor_has_no_creep(tmp_path):
    assert not findings_of(tmp_path, _full_batch(creep=0.0), kind="divergence", digits=8)


def _returns(seed: int, best: float, end: float, n: int = 960) -> np.ndarray:
    """A DQN's 100-episode mean return: ~38 from its first episodes, wandering up to `best` in the
    middle and ending at `end`, with a little noise."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    hump = np.exp(-((i - 0.6 * n) / (0.12 * n)) ** 2)
    tail = np.clip((i - 0.6 * n) / (0.1 * n), 0, 1)
    return 38 + (best - 38) * hump + (end - 38) * tail * (1 - hump) + rng.normal(0, 0.3, n)


def _divergences(tmp_path, reward):
    write_progress(tmp_path / "agent" / "progress.csv", reward)
    (run,) = spikelens.analyze(tmp_path / "agent", jobs=1).runs
    return [f for f in run.findings if f.kind == "divergence"]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_return_that_dipped_a_tenth_below_its_best_did_not_collapse(tmp_path, seed):
    assert not _divergences(tmp_path, _returns(seed, 45.0, 39.5))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_return_that_lost_most_of_its_level_collapsed(tmp_path, seed):
    (f,) = _divergences(tmp_path, _returns(seed, 45.0, 8.0))
    assert "collapsed" in f.message
