"""One root cause, one alarm (issue 25; `detect/reconcile.py`, `detect/grouping.py`,
`detect/significance.py`): a wrong setting and the loss event it drove, a spike and the runaway
it opened, a frozen loss and the reward that never rose because of it are one event each, reported
once with the other in its evidence; a value frozen by design while the reward rose is a note.
Each has a look-alike that must stay loud. Logs are plain text the test writes (the general reader)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import loud, only_run


def _write(root: Path, rows: list[dict[str, float]], start: int = 1) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = [f"step {start + i} | " + " | ".join(f"{k} {v:.6g}" for k, v in row.items()) for i, row in enumerate(rows)]
    (root / "train.log").write_text("\n".join(lines) + "\n")
    return root


def test_an_lr_of_5_with_no_loss_event_stays_an_alarm_of_its_own(tmp_path):
    rng = np.random.default_rng(1)
    loss = 2.0 * np.exp(-np.arange(60) / 40) * (1 + 0.01 * rng.standard_normal(60))
    run = only_run(_write(tmp_path, [{"loss": v, "learning_rate": 5} for v in loss]))
    (lr,) = [f for f in run.findings if f.kind == "settings"]
    assert lr.severity == "warning" and "drove" not in lr.evidence


def _runaway(spike_at: int, n: int = 80) -> list[dict[str, float]]:
    """A loss near 1 that leaps 20x at `spike_at`, comes back at once, then climbs a
    hundredfold from step 45 to the end."""
    rng = np.random.default_rng(2)
    v = np.exp(-np.arange(n) / 200) * (1 + 0.02 * rng.standard_normal(n))
    v[spike_at - 1] = 20.0
    v[44:] = np.geomspace(1.0, 100.0, n - 44)
    return [{"loss": float(x)} for x in v]


def test_a_spike_that_ends_where_the_loss_runs_away_is_the_divergences_first_swing(tmp_path):
    run = only_run(_write(tmp_path, _runaway(40)))
    (div,) = loud(run)
    assert div.kind == "divergence"
    assert any(s.startswith("spike at step 40") for s in div.evidence["folded"]) and "first swing" in div.message
    assert not [f for f in run.findings if f.kind == "spike"]


def test_a_spike_long_before_the_runaway_keeps_its_own_finding(tmp_path):
    run = only_run(_write(tmp_path, _runaway(10)))
    assert sorted(f.kind for f in loud(run)) == ["divergence", "spike"]


def _policy(rows: int, reward, entropy) -> list[dict[str, float]]:
    return [{"episode_reward": float(reward[i]), "entropy_loss": float(entropy[i]),
             "value_loss": float(0.5 + 0.1 * np.sin(i))} for i in range(rows)]


def test_a_frozen_entropy_while_the_reward_rose_is_a_fixed_part_a_note(tmp_path):
    rng = np.random.default_rng(3)
    n = 120
    reward = np.linspace(-150, 80, n) + 10 * rng.standard_normal(n)
    run = only_run(_write(tmp_path, _policy(n, reward, np.full(n, -1.41894))))
    (flat,) = [f for f in run.findings if f.kind == "plateau" and f.metric == "entropy_loss"]
    assert flat.severity == "info" and flat.evidence["note_because"] == "reward_rose" and loud(run) == []


def test_a_frozen_entropy_while_the_reward_stayed_flat_stays_loud_as_the_rewards_cause(tmp_path):
    rng = np.random.default_rng(3)
    n = 120
    reward = 20 + 10 * rng.standard_normal(n)
    run = only_run(_write(tmp_path, _policy(n, reward, np.full(n, -0.349651))))
    (flat,) = loud(run)
    assert flat.metric == "episode_reward" and flat.evidence["frozen"]["metric"] == "entropy_loss"


def test_a_frozen_loss_under_a_reward_that_never_rose_is_one_event_on_the_reward(tmp_path):
    rng = np.random.default_rng(4)
    n = 300
    rows = [{"episode_return": float(0.018 + 0.002 * rng.standard_normal()), "avg_loss": -4.0} for _ in range(n)]
    run = only_run(_write(tmp_path, rows, start=0))
    (flat,) = loud(run)
    assert flat.kind == "plateau" and flat.metric == "episode_return"
    assert flat.evidence["frozen"]["metric"] == "avg_loss" and "nothing was being updated" in flat.message
    assert not [f for f in run.findings if f.kind == "plateau" and f.metric == "avg_loss"]


def _continued(jump: float) -> list[dict[str, float]]:
    """A log that picks a fine-tune up at step 140000: the loss starts at 6, collapses to ~0.001
    within 20 steps, and jumps to `jump` for three points at step 140200."""
    rng = np.random.default_rng(5)
    v = np.concatenate([np.full(20, 6.05), 0.0012 * (1 + 0.05 * rng.standard_normal(380))])
    v[200:203] = jump
    return [{"loss": round(float(x), 4)} for x in v]


def test_a_spike_near_zero_after_a_collapse_is_negligible_in_a_log_that_starts_late(tmp_path):
    run = only_run(_write(tmp_path / "tiny", _continued(0.004), start=140000))
    assert loud(run) == []
    assert any(f.kind == "spike" and f.evidence.get("note_because") in ("negligible", "rounding") for f in run.findings)


def test_a_jump_back_to_the_starting_level_in_that_log_stays_loud(tmp_path):
    run = only_run(_write(tmp_path / "big", _continued(5.0), start=140000))
    assert [f.kind for f in loud(run)] == ["spike"]


def _epochs(root: Path, break_at: int | None, n: int = 300) -> Path:
    """A DeiT-style `log.txt` (one JSON record an epoch): a train loss creeping down with tiny noise
    and a held-out accuracy near 74; `break_at`: the loss jumps 1.18x there and eases back while the
    accuracy falls to 55 at once and climbs back only to 65. None: the accuracy instead slides
    slowly from epoch 150 while the train loss keeps falling (overfitting)."""
    import json

    rng = np.random.default_rng(6)
    e = np.arange(n)
    loss = 4.6 - 0.0008 * e + 0.003 * rng.standard_normal(n)
    acc = 74 + 0.15 * rng.standard_normal(n)
    if break_at is None:
        acc = acc - np.clip(e - 150, 0, None) * 0.06
    else:
        after = e >= break_at
        loss = loss + after * 0.8 * np.exp(-(e - break_at) / 15)
        acc = np.where(after, 55 + 10 * (1 - np.exp(-(e - break_at) / 30)), acc)
    root.mkdir(parents=True, exist_ok=True)
    (root / "log.txt").write_text("".join(json.dumps({"train_loss": float(a), "test_acc1": float(b), "epoch": int(i)})
                                          + "\n" for i, a, b in zip(e, loss, acc)))
    return root


def test_an_accuracy_that_fell_at_once_when_the_loss_jumped_is_the_jumps_cost_not_overfitting(tmp_path):
    run = only_run(_epochs(tmp_path / "break", 201))
    (spike,) = loud(run)
    assert spike.kind == "spike" and spike.evidence["cost"]["metric"] == "test_acc1" and "cost progress" in spike.message
    assert all(f.severity == "info" for f in run.findings if f.kind == "overfitting")


def test_an_accuracy_that_slid_slowly_stays_overfitting(tmp_path):
    run = only_run(_epochs(tmp_path / "slide", None))
    assert [f.kind for f in loud(run)] == ["overfitting"]


def _csv(root: Path, train, val, val_every: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rows = ["step,train_loss,val_loss"] + [f"{i},{t:.5f},{(val[i] if i % val_every == 0 else float('nan')):.5f}"
                                           .replace("nan", "") for i, t in enumerate(train)]
    (root / "metrics.csv").write_text("\n".join(rows) + "\n")
    return root


def _slow_spike(n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    step = np.arange(n)
    train = (3.0 * np.exp(-step / 800) + 2.0) * (1 + 0.01 * rng.standard_normal(n))
    val = train * 1.05
    return step, train, val


def test_an_eval_loss_up_while_the_training_loss_spiked_is_that_spike_seen_at_an_evaluation(tmp_path):
    step, train, val = _slow_spike()
    bump = np.where(step >= 1500, 3.0 * np.exp(-(step - 1500) / 150), 0) * (step >= 1500)
    run = only_run(_csv(tmp_path, train + bump * train, val + bump * val, 50))
    (spike,) = loud(run)
    assert spike.metric == "train_loss" and "val_loss rose with it" in spike.message
    assert any(a["metric"] == "val_loss" for a in spike.evidence["also_on"])


def test_an_eval_loss_that_spiked_while_the_training_loss_was_calm_keeps_its_own_finding(tmp_path):
    step, train, val = _slow_spike()
    val = val.copy()
    val[1500:1700] *= 3.0
    run = only_run(_csv(tmp_path, train, val, 50))
    assert [(f.kind, f.metric) for f in loud(run)] == [("spike", "val_loss")]


def _stuck(root: Path, val_acc) -> Path:
    rng = np.random.default_rng(8)
    n = len(val_acc)
    root.mkdir(parents=True, exist_ok=True)
    rows = ["epoch,train_loss,val_acc"] + [f"{i + 1},{np.log(100) + 0.002 * rng.standard_normal():.5f},{a:.4f}"
                                           for i, a in enumerate(val_acc)]
    (root / "metrics.csv").write_text("\n".join(rows) + "\n")
    return root


def test_a_held_out_accuracy_swinging_in_a_run_that_never_learned_is_folded_into_never_learned(tmp_path):
    rng = np.random.default_rng(9)
    run = only_run(_stuck(tmp_path, np.abs(0.05 * rng.standard_normal(105)) + 0.001))  # alone: a loud swing
    (flat,) = loud(run)
    assert flat.kind == "plateau" and flat.evidence.get("never_learned")
    assert not [f for f in run.findings if f.kind == "oscillation" and f.severity != "info"]
