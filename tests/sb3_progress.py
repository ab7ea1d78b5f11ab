"""An SB3 `progress.csv` as its CSV logger writes it: timesteps, the episode return and a value
loss that keeps moving (so a flat return is the agent's, not a dead logger's)."""
from __future__ import annotations

import csv

import numpy as np


def write_progress(path, reward) -> None:
    path.parent.mkdir(parents=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["time/total_timesteps", "rollout/ep_rew_mean", "train/value_loss"])
        for i, r in enumerate(reward):
            w.writerow([(i + 1) * 2048, f"{r:.3f}", f"{1.0 + 0.1 * np.sin(i):.4f}"])
