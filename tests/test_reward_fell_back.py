"""A reward that rose and fell back to where it began never kept a gain (a plateau of a run that
never learned, #25): engineers call that "never learned", not a collapse; a reward that fell far
below its start got worse than untrained (a collapse). Written as SB3 writes `progress.csv`."""
from __future__ import annotations

import numpy as np

import spikelens
from sb3_progress import write_progress


def _loud(tmp_path, reward):
    write_progress(tmp_path / "agent" / "progress.csv", reward)
    (run,) = spikelens.analyze(tmp_path / "agent", jobs=1).runs
    return [f for f in run.findings if f.severity != "info"]


def _episodes(n, seed, burst=slice(0, 0), burst_mean=40.0):
    """Episode returns as a failing DQN on CartPole logs them: mostly 9-12 (the pole falls at once),
    one lucky episode in twenty at 30-70, and a short burst of better play."""
    rng = np.random.default_rng(seed)
    r = rng.integers(9, 13, n).astype(float)
    lucky = rng.random(n) < 0.05
    r[lucky] = rng.uniform(30, 70, lucky.sum())
    r[burst] = rng.normal(burst_mean, 10, r[burst].size).clip(9)
    return r


def test_a_reward_that_burst_and_fell_back_to_its_start_never_kept_a_gain(tmp_path):
    """Returns that sat 2 higher for a while early on (exploration), burst to 40 for 90 episodes and fell back to 10."""
    reward = _episodes(3000, 7, slice(1300, 1390))
    reward[300:1000] += 2
    (f,) = _loud(tmp_path, reward)
    assert f.kind == "plateau" and f.evidence["never_learned"] and f.evidence["fell_back"]
    assert f.start_step == 2048 and f.end_step == 3000 * 2048 and "never kept a gain" in f.message


def test_a_reward_that_learned_held_and_fell_back_collapsed(tmp_path):
    """Up from ~10 to 60 for a quarter of the run, back to 10: that gain was learned, and lost."""
    reward = _episodes(3000, 9)
    reward[600:1400] += 50
    (f,) = _loud(tmp_path, reward)
    assert f.kind == "divergence" and "collapsed" in f.message and f.end_step == 3000 * 2048


def test_a_reward_that_fell_far_below_its_start_collapsed(tmp_path):
    i = np.arange(300)
    rng = np.random.default_rng(8)
    reward = np.where(i < 150, -100.0 + 0.2 * i, -1000.0) + rng.normal(0, 5, i.size)
    (f,) = _loud(tmp_path, reward)
    assert f.kind == "divergence" and f.end_step == 300 * 2048 and 140 * 2048 <= f.start_step <= 152 * 2048
    assert "below where its log began" in f.message and "%" not in f.message


def test_a_collapse_that_kept_part_of_its_gain_is_still_a_collapse(tmp_path):
    """From ~0 to 200 and down to 40: it lost 80% of its gain but ended above its start."""
    i = np.arange(300)
    reward = np.where(i < 120, 200 * (1 - np.exp(-i / 30)), np.where(i < 140, 200 - 8 * (i - 120), 40))
    (f,) = _loud(tmp_path, reward + np.random.default_rng(4).normal(0, 5, i.size))
    assert f.kind == "divergence" and "of what the run had gained" in f.message
