"""A run judged by its objective when that is a score or a reward, and the side quantities of a
reinforcement learner that run away (#25): each mechanism on files written here as their writers
write them (a CSVLogger-style table, TensorBoard's event-file writer, SB3's progress.csv, RLlib-style
rows), once where it must fire and once where it must stay silent."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api, diagnostics

LOUD = ("warning", "error")


def _findings(path, code: str) -> list:
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.code == code]


def _csv(path, header: list[str], rows) -> None:
    lines = [",".join(header)] + [",".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")


def _dice(n: int = 120, falls: dict[int, float] | None = None, collapse: tuple[int, int] | None = None,
          seed: int = 0) -> np.ndarray:
    """A Dice logged once an epoch: rising 0.60 -> 0.74 with small noise, with one-epoch falls
    (epoch -> value) and a collapse (start, evaluations) that climbs back over a few epochs."""
    rng = np.random.default_rng(seed)
    e = np.arange(1, n + 1)
    d = 0.74 - 0.14 * np.exp(-e / 25) + 0.003 * rng.standard_normal(n)
    for at, v in (falls or {}).items():
        d[at - 1] = v
    if collapse is not None:
        a, k = collapse
        d[a - 1:a - 1 + k] = np.linspace(0.02, 0.3, k)
    return d


# ------------------------------------------------------------------ a score-only run's falls


def test_a_score_only_runs_falls_are_its_spikes_and_collapses(tmp_path, no_workers):
    path = tmp_path / "dice.csv"
    d = _dice(falls={40: 0.19, 70: 0.11}, collapse=(95, 6))
    _csv(path, ["epoch", "Dice"], zip(range(1, d.size + 1), d))
    found = _findings(path, "SL208")
    spikes = [f for f in found if f.kind == "spike"]
    collapses = [f for f in found if f.kind == "divergence"]
    assert len(spikes) == 1 and spikes[0].evidence["steps"] == [40, 70] and spikes[0].severity == "warning"
    assert "0.19" in spikes[0].message and "0.11" in spikes[0].message
    assert len(collapses) == 1 and collapses[0].start_step == 95
    assert collapses[0].evidence["evaluations_below_half"] >= 3 and "collapsed at step 95" in collapses[0].message


def test_a_score_only_run_that_rises_with_noise_has_no_falls(tmp_path, no_workers):
    path = tmp_path / "dice.csv"
    rng = np.random.default_rng(3)
    d = _dice() + 0.02 * rng.standard_normal(120)  # a noisier validation set: swings, no falls
    _csv(path, ["epoch", "Dice"], zip(range(1, d.size + 1), d))
    assert not _findings(path, "SL208")


def test_a_score_beside_a_loss_is_not_judged_as_the_objective(tmp_path, no_workers):
    """With a loss logged, the loss is the objective: a validation score's one bad epoch is not
    this detector's (the loss detectors and the held-out readings judge that run)."""
    path = tmp_path / "history.csv"
    d = _dice(falls={40: 0.19})
    loss = 1.5 * np.exp(-np.arange(d.size) / 30) + 0.2
    _csv(path, ["epoch", "loss", "val_dice"], zip(range(1, d.size + 1), loss, d))
    assert not [f for f in _findings(path, "SL208") if f.kind in ("spike", "divergence")]


# ------------------------------------------------------------------ a frozen accuracy


def _keras(path, acc, loss) -> None:
    _csv(path, ["epoch", "accuracy", "loss"], zip(range(len(acc)), acc, loss))


def test_an_accuracy_frozen_at_one_value_while_the_loss_falls_never_learned(tmp_path, no_workers):
    path = tmp_path / "training_metrics.csv"
    acc = [0.81676] + [0.81854] * 24  # the majority class's share, every epoch after the first
    loss = list(1.1 * 0.85 ** np.arange(25) + 0.04)
    _keras(path, acc, loss)
    found = _findings(path, "SL208")
    assert len(found) == 1 and found[0].kind == "plateau" and found[0].severity == "warning"
    assert found[0].evidence["never_learned"] and found[0].evidence["level"] == pytest.approx(0.81854)
    assert "exactly 0.81854" in found[0].message and "loss" in found[0].message


@pytest.mark.parametrize("acc", [[0.5, 0.8, 0.9] + [1.0] * 22,  # solved: a perfect score held
                                 list(np.round(0.95 - 0.5 * 0.8 ** np.arange(25), 4))])  # learning
def test_a_solved_or_learning_accuracy_is_not_frozen(tmp_path, no_workers, acc):
    path = tmp_path / "training_metrics.csv"
    _keras(path, acc, list(1.1 * 0.85 ** np.arange(25) + 0.04))
    assert not _findings(path, "SL208")


def test_a_frozen_score_beside_a_score_that_moved_is_a_note(tmp_path, no_workers):
    """One class's F1 at zero while the overall F1 rises: one part never right, not the model."""
    path = tmp_path / "eval.csv"
    f1 = np.round(0.2 + 0.6 * (1 - 0.8 ** np.arange(12)), 4)
    _csv(path, ["step", "loss", "eval_f1", "eval_T007_f1"],
         [(100 * (i + 1), 2.0 * 0.8 ** i, f1[i], 0.0) for i in range(12)])
    found = _findings(path, "SL208")
    assert len(found) == 1 and found[0].severity == "info" and found[0].evidence["other_score_moved"] == "eval_f1"


def test_a_log_whose_every_value_repeats_is_not_a_frozen_model(tmp_path, no_workers):
    """Nothing else moved either: the log repeats one evaluation, which says nothing of the model."""
    path = tmp_path / "training_metrics.csv"
    _keras(path, [0.81854] * 25, [0.4] * 25)
    assert not [f for f in _findings(path, "SL208") if f.evidence.get("reading") == "frozen"]


def test_an_exact_match_at_zero_or_a_score_first_evaluated_late_is_not_frozen(tmp_path, no_workers):
    """A sequence accuracy of 0 is where a fine-tune of long outputs starts (and may stay); a score
    evaluated only from late in the run that holds one value settled there."""
    loss = 1.9 * 0.97 ** np.arange(60) + 1.0
    seq = tmp_path / "seq.csv"
    _csv(seq, ["step", "training_loss", "training_sequence_accuracy"], [(i + 1, loss[i], 0.0) for i in range(60)])
    late = tmp_path / "late.csv"
    _csv(late, ["step", "loss", "val_accuracy"],
         [(i + 1, loss[i], 99.27 if i >= 40 else "") for i in range(60)])
    assert not [f for p in (seq, late) for f in _findings(p, "SL208") if f.evidence.get("reading") == "frozen"]


# ------------------------------------------------------------------ a reward that never rose


def _tb_rewards(folder, rewards) -> None:
    """`add_scalar("Reward/train", r, episode)` through TensorBoard's own EventFileWriter."""
    from fixtures.writers.tensorboard import name, scalar_event, write_events

    write_events(folder / name(1748297675, 17679, 0),
                 [scalar_event(i, 1748297675.0 + i, "Reward/train", float(r)) for i, r in enumerate(rewards)])


def test_a_reward_that_moved_a_fraction_of_its_size_never_rose(tmp_path, no_workers):
    rng = np.random.default_rng(1)
    r = -7990 + 40 * np.linspace(0, 1, 500) ** 2 + 16 * rng.standard_normal(500)  # +40 on -8000
    _tb_rewards(tmp_path / "runs", r)
    found = _findings(tmp_path / "runs", "SL208")
    assert len(found) == 1 and found[0].kind == "plateau" and found[0].severity == "warning"
    assert found[0].evidence["gain_share"] < 0.05 and "never rose" in found[0].message


@pytest.mark.parametrize("shape", ["learns", "success_rate"])
def test_a_reward_that_learned_or_a_bounded_rate_is_not_never_rose(tmp_path, no_workers, shape):
    rng = np.random.default_rng(2)
    x = np.linspace(0, 1, 500)
    r = (-8000 + 2000 * x + 50 * rng.standard_normal(500) if shape == "learns"
         else np.clip(0.84 + 0.03 * x + 0.02 * rng.standard_normal(500), 0, 1))
    _tb_rewards(tmp_path / "runs", r)
    assert not _findings(tmp_path / "runs", "SL208")


def _tb_a2c(folder, entropy) -> None:
    """An A2C run's `add_scalar` calls (entropy, policy_loss, episode_reward) as float32 events."""
    from fixtures.writers.tensorboard import name, scalar_event, write_events

    rng = np.random.default_rng(6)
    events = []
    for i, h in enumerate(entropy):
        wall, step = 1780000000.0 + i, 80 * (i + 1)
        events += [scalar_event(step, wall, "entropy", float(np.float32(h))),
                   scalar_event(step, wall, "policy_loss", float(1e-3 * rng.standard_normal())),
                   scalar_event(step, wall, "episode_reward", float(0.02 * rng.random()))]
    write_events(folder / name(1780000000, 4242, 0), events)


def test_a_policy_entropy_at_ln_k_all_run_never_left_uniform(tmp_path, no_workers):
    rng = np.random.default_rng(7)
    _tb_a2c(tmp_path / "runs", np.log(7) + 2e-7 * rng.standard_normal(121))  # float32 jitter around ln 7
    found = [f for f in _findings(tmp_path / "runs", "SL208") if f.evidence.get("reading") == "uniform_policy"]
    assert len(found) == 1 and found[0].evidence["actions"] == 7 and found[0].severity == "warning"


def test_a_policy_entropy_that_falls_from_ln_k_is_quiet(tmp_path, no_workers):
    _tb_a2c(tmp_path / "runs", np.log(7) * (1 - 0.3 * np.linspace(0, 1, 121) ** 2))  # it leaves uniform
    assert not [f for f in _findings(tmp_path / "runs", "SL208") if f.evidence.get("reading") == "uniform_policy"]


# ------------------------------------------------------------------ side quantities that run away


def _sb3_progress(path, std, kl) -> None:
    """SB3's progress.csv (CSVOutputFormat): one row per update, keys sorted, SB3's own names."""
    n = len(std)
    rew = -7000 + 500 * np.linspace(0, 1, n)
    _csv(path, ["rollout/ep_rew_mean", "time/total_timesteps", "train/approx_kl", "train/loss", "train/std"],
         [(float(rew[i]), 2048 * (i + 1), float(kl[i]), float(0.5 + 0.1 * np.sin(i)), float(std[i]))
          for i in range(n)])


def test_a_policy_std_that_grew_tenfold_and_an_update_kl_of_nats_ran_away(tmp_path, no_workers):
    n = 200
    rng = np.random.default_rng(4)
    path = tmp_path / "progress.csv"
    _sb3_progress(path, std=np.exp(np.linspace(0, np.log(60), n)) * (1 + 0.01 * rng.standard_normal(n)),
                  kl=np.exp(rng.normal(np.log(30), 1.0, n)))
    found = {f.evidence["runaway"]: f for f in _findings(path, "SL209")}
    assert set(found) == {"policy_std", "update_kl"}
    assert found["policy_std"].evidence["growth"] > 30 and found["policy_std"].kind == "divergence"
    assert found["update_kl"].severity == "error" and found["update_kl"].evidence["median_kl"] > 10


def test_a_shrinking_std_and_a_healthy_kl_are_quiet(tmp_path, no_workers):
    n = 200
    rng = np.random.default_rng(5)
    path = tmp_path / "progress.csv"
    _sb3_progress(path, std=np.linspace(1.0, 0.3, n), kl=np.exp(rng.normal(np.log(0.01), 1.0, n)))
    assert not _findings(path, "SL209")


def _rllib_rows(path, q) -> None:
    """RLlib-style results flattened to one row an iteration (`tune` progress.csv)."""
    _csv(path, ["training_iteration", "episode_reward_mean", "mean_q", "max_q"],
         [(i + 1, 0.0, float(v), float(3 * v)) for i, v in enumerate(q)])


def test_a_q_value_multiplying_to_the_end_ran_away(tmp_path, no_workers):
    path = tmp_path / "progress.csv"
    _rllib_rows(path, 0.5 * 1.3 ** np.arange(80))  # geometric: no fixed point
    found = _findings(path, "SL209")
    assert len(found) == 1 and found[0].evidence["runaway"] == "value_estimate"
    assert found[0].evidence["orders_of_magnitude"] > 3 and found[0].evidence["also_on"] == ["max_q"]


def test_a_q_value_that_rises_to_its_fixed_point_is_quiet(tmp_path, no_workers):
    """A DQN's Q starts near zero and settles near return / (1 - gamma): orders of magnitude up
    from its first values, flat in the second half."""
    path = tmp_path / "progress.csv"
    _rllib_rows(path, 0.01 + 20 * (1 - np.exp(-np.arange(80) / 10)))
    assert not _findings(path, "SL209")
