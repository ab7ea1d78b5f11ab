"""A curve whose first point is one logging interval in started with the run (#25): an episode's
return is logged when the episode ends (a Pong agent's first at frame 968 of 14,008), a loss logged
every 1,000 steps first at step 1,000. Such a curve is judged for 'never learned' as one logged from
step 0; one that starts many intervals in is a continuation picked up late and stays unjudged.
Episode logs are written by SB3's own `Monitor` writer, SB3's `progress.csv` as its CSV logger
writes it, step tables as a generic CSV."""
from __future__ import annotations

import numpy as np


from conftest import only_run, plateaus_read, write_csv
from sb3_progress import write_progress




def _monitor(folder, rewards, lengths):
    from stable_baselines3.common.monitor import ResultsWriter

    writer = ResultsWriter(str(folder / "monitor.csv"), header={"t_start": 1_708_431_886.2, "env_id": "PongNoFrameskip-v4"})
    for k, (r, n) in enumerate(zip(rewards, lengths)):
        writer.write_row({"r": float(r), "l": int(n), "t": round(60.0 * (k + 1), 6)})
    writer.close()
    return folder / "monitor.csv"


PONG = [-21, -20, -20, -18, -20, -21, -20, -20, -21, -21, -20, -21, -21, -18]


def test_pong_returns_at_the_floor_from_the_first_episode_never_rose(tmp_path):
    lengths = 968 + (np.arange(len(PONG)) * 7) % 90
    (f,) = plateaus_read(only_run(_monitor(tmp_path, PONG, lengths)), "episode/reward", "never")
    assert f.evidence.get("reward_flat") and f.start_step == 968 and f.severity == "info"


def test_pong_returns_that_rose_are_silent(tmp_path):
    rising = np.linspace(-21, 5, len(PONG)).round()
    assert not plateaus_read(only_run(_monitor(tmp_path, rising, [1000] * len(PONG))), "episode/reward", "never")


def test_an_sb3_return_logged_after_each_rollout_from_the_first_never_rose(tmp_path):
    # PPO's progress.csv: the first row closes the first rollout (2,048 timesteps of 36,864)
    rng = np.random.default_rng(0)
    path = tmp_path / "PPO_1" / "progress.csv"
    write_progress(path, -200.0 + 3.0 * rng.standard_normal(18))
    f = plateaus_read(only_run(path), "rollout/ep_rew_mean", "never")
    assert f and f[0].start_step == 2048


def test_a_flat_loss_picked_up_late_is_a_continuation_and_silent(tmp_path):
    rng = np.random.default_rng(1)
    steps = np.arange(20000, 40001, 500)  # resumed at step 20,000: flat may be converged
    loss = 0.9 * np.exp(0.004 * rng.standard_normal(steps.size))
    assert not plateaus_read(only_run(write_csv(tmp_path / "metrics.csv", ["step", "loss"], zip(steps, loss))), "loss", "never")
