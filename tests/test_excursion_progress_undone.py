"""A slow excursion is an alarm by what it undid of the training, not by its ratio (#25): a loss near
its floor that climbs 9x (0.002 to 0.018 after falling from 0.46) gave back a few percent of its fall
and is a note; one that climbs back most of the way to where the run began is a warning. In a
reinforcement learner's run a value loss's climbs are notes (it fits targets that move with the
returns). Written as Lightning's CSVLogger writes metrics.csv and as SB3 writes progress.csv."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics

N = 600


def _excursions(path) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind == "excursion"]


def _loss(start: float, floor: float, bump: float, seed: int) -> np.ndarray:
    """A fall from `start` to `floor` over the first 60 steps, then noise around the floor with a
    gradual climb to `bump` x the floor over steps 320-380 and back by 420."""
    i = np.arange(N)
    level = floor + (start - floor) * np.exp(-i / 15)
    shape = np.interp(i, [0, 320, 380, 420, N], [0, 0, 1, 0, 0])
    curve = level * np.exp(np.log(bump) * shape)
    return curve * np.exp(0.15 * np.random.default_rng(seed).standard_normal(N))


def _metrics_csv(tmp_path, name: str, loss: np.ndarray):
    path = tmp_path / name / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    rows = ["epoch,step,train_loss"] + [f"{i // 100},{i},{v:.6g}" for i, v in enumerate(loss)]
    path.write_text("\n".join(rows) + "\n")
    return path.parent


def test_an_excursion_that_climbed_back_most_of_the_way_to_the_start_is_a_warning(tmp_path, no_workers):
    """8.3 falling to 3, then a climb to 2.5x (7.5): over half of the fall given back."""
    (f,) = _excursions(_metrics_csv(tmp_path, "undone", _loss(8.3, 3.0, 2.5, 1)))
    assert f.severity == "warning" and f.evidence["progress_undone"] >= 0.25
    assert 300 <= f.start_step <= 365 and "note" not in f.message


def test_an_excursion_near_the_floor_that_undid_little_of_the_fall_is_a_note(tmp_path, no_workers):
    """0.46 falling to 0.002, then a climb to 9x (0.018): under 5% of the fall."""
    (f,) = _excursions(_metrics_csv(tmp_path, "floor", _loss(0.46, 0.002, 9.0, 2)))
    assert f.severity == "info" and f.evidence["note_because"] == "little_progress_undone"
    assert f.evidence["progress_undone"] < 0.1 and "gave back" in f.message


def test_a_value_loss_excursion_in_a_reinforcement_learners_run_is_a_note(tmp_path, no_workers):
    """SB3's progress.csv: a value loss that climbs 5x for a stretch while the return grows."""
    value = _loss(50.0, 0.5, 5.0, 3)
    ret = np.linspace(-20, 150, N) + np.random.default_rng(4).normal(0, 3, N)
    path = tmp_path / "sb3" / "progress.csv"
    path.parent.mkdir()
    rows = ["rollout/ep_rew_mean,time/total_timesteps,train/value_loss,train/policy_gradient_loss"] + [
        f"{ret[i]:.4f},{2048 * (i + 1)},{value[i]:.6g},{-0.01:.4f}" for i in range(N)]
    path.write_text("\n".join(rows) + "\n")
    found = _excursions(path)
    assert found and all(f.severity == "info" and f.evidence["note_because"] == "reinforcement_surrogate"
                          for f in found)
