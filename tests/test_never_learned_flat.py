"""Never learned, judged on the curve's own resolution (#25): a loss that drifted 0.7% over 20,000
steps is 'significant' to block medians that precise, and still never learned (significant and
immaterial is flat); a reward whose values repeat (0, -0.05, -0.1 on most episodes) moved its
median by half a step between them, which is no move. And their look-alikes that stay quiet: a
loss that fell 3% (slow, but learning), a quantised reward that rose several steps. Files are
CSV as a custom training script writes them (`step,loss`; `frame,episode_reward`)."""
from __future__ import annotations

import numpy as np

from conftest import only_run, plateaus_read, write_csv

N = 20_000




def _loss(drift: float, seed: int) -> np.ndarray:
    """A per-step loss at 1.99 with 5% per-step noise, drifting by `drift` (log) over the run."""
    rng = np.random.default_rng(seed)
    t = np.arange(N) / N
    return 1.99 * np.exp(drift * t + 0.05 * rng.standard_normal(N))


def test_a_loss_that_drifted_under_one_percent_over_20k_steps_never_learned(tmp_path):
    loss = _loss(0.008, 1)  # up 0.8%: beyond the block medians' noise, immaterial
    run = only_run(write_csv(tmp_path / "flat" / "train_log.csv", ["step", "loss"],
                    ((i + 1, f"{v:.5f}") for i, v in enumerate(loss))))
    (p,) = plateaus_read(run, "loss", "never")
    assert p.severity == "warning" and p.evidence.get("never_learned")
    assert p.start_step <= 100 and p.end_step >= N - 100
    assert "immaterial" in p.message or "within its noise" in p.message


def test_a_loss_that_fell_three_percent_is_learning_slowly_not_never_learned(tmp_path):
    loss = _loss(-0.03, 2)
    run = only_run(write_csv(tmp_path / "slow" / "train_log.csv", ["step", "loss"],
                    ((i + 1, f"{v:.5f}") for i, v in enumerate(loss))))
    assert plateaus_read(run, "loss", "never") == []


def _episodes(p_early: list[float], p_late: list[float], values: list[float], n: int = 1000, seed: int = 3):
    """Episode rewards drawn from `values`, their probabilities moving from `p_early` to `p_late`."""
    rng = np.random.default_rng(seed)
    w = np.linspace(0, 1, n)[:, None]
    p = (1 - w) * np.array(p_early) + w * np.array(p_late)
    return np.array([rng.choice(values, p=row / row.sum()) for row in p])


VALUES = [-0.15, -0.1, -0.05, 0.0, 0.05, 0.1, 0.15]


def test_a_quantised_reward_whose_median_moved_half_a_step_never_rose(tmp_path):
    reward = _episodes([0.01, 0.07, 0.4, 0.51, 0.01, 0, 0], [0.01, 0.05, 0.2, 0.72, 0.02, 0, 0], VALUES)
    run = only_run(write_csv(tmp_path / "atari" / "progress.csv", ["frame", "episode_reward"],
                    ((640 * (i + 1), f"{v:.2f}") for i, v in enumerate(reward))))
    (p,) = plateaus_read(run, "episode_reward", "never")
    assert p.severity == "warning" and "never rose" in p.message


def test_a_quantised_reward_that_rose_several_steps_is_learning(tmp_path):
    reward = _episodes([0.01, 0.07, 0.4, 0.51, 0.01, 0, 0], [0, 0, 0.02, 0.1, 0.2, 0.38, 0.3], VALUES)
    run = only_run(write_csv(tmp_path / "learns" / "progress.csv", ["frame", "episode_reward"],
                    ((640 * (i + 1), f"{v:.2f}") for i, v in enumerate(reward))))
    assert plateaus_read(run, "episode_reward", "never") == []


def _frozen_loss(frozen_from: int, n: int = 300, seed: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    loss = 2.3 * np.exp(-np.arange(n) / 80) * np.exp(0.05 * rng.standard_normal(n))
    loss[frozen_from:] = 1.234567
    return loss


def test_a_loss_frozen_at_one_value_from_its_first_step_never_learned_and_leads_the_verdict(tmp_path):
    from spikelens.report.verdict import verdict

    loss = _frozen_loss(0)  # the whole run at one value, as a loss detached from the model logs it
    run = only_run(write_csv(tmp_path / "frozen" / "train_log.csv", ["step", "loss"],
                    ((i, f"{v:.6f}") for i, v in enumerate(loss))))
    (p,) = [f for f in run.findings if f.kind == "plateau"]
    assert p.evidence["reading"] == "frozen" and p.evidence.get("never_learned") and p.severity == "warning"
    assert verdict(run).startswith("never learned")


def test_a_loss_frozen_only_for_its_last_third_is_frozen_but_learned_first(tmp_path):
    run = only_run(write_csv(tmp_path / "late" / "train_log.csv", ["step", "loss"],
                    ((i, f"{v:.6f}") for i, v in enumerate(_frozen_loss(200)))))
    (p,) = [f for f in run.findings if f.kind == "plateau"]
    assert p.evidence["reading"] == "frozen" and p.start_step == 200 and not p.evidence.get("never_learned")
