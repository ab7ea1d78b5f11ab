"""What restarting breaks, as engineers label it (issue 25): a run appended to its log that
replays an earlier run value for value, every step written twice by two writers, runs
appended from different first steps. Each on a log written here that must fire, and on its
look-alike that must stay quiet. Fixtures: `fixtures/writers/judged.py` and JSON lines
written by the test."""
from __future__ import annotations

import json
import shutil
import sys

import numpy as np

from conftest import FIXTURES, only_run as _run

sys.path.insert(0, str(FIXTURES))
from writers import judged as j  # noqa: E402


def _kind(run, kind):
    return [f for f in run.findings if f.kind == kind]


def _appended(root, seeds, steps=120):
    """Megatron stdout of one launch per seed appended to one train.log, each from iteration 1."""
    parts = []
    for k, seed in enumerate(seeds):
        j.megatron_text(root / f".p{k}", {}, (), steps=steps, seed=seed)
        parts.append((root / f".p{k}" / "train.log").read_text())
        shutil.rmtree(root / f".p{k}")
    (root / "train.log").write_text("".join(parts))
    return root


def test_a_seeded_run_appended_twice_is_a_replay(tmp_path):
    run = _run(_appended(tmp_path, (10, 11, 11)))
    (rep,) = _kind(run, "repeated_data")
    assert rep.severity == "info" and rep.evidence["replayed_launches"] == [3] and rep.start_step == 1
    assert rep.evidence["identical_steps"] == 120 and "launch 3 is a replay" in rep.message
    (reset,) = _kind(run, "step_reset")
    assert reset.evidence["appended_runs"] == 3


def test_runs_of_other_seeds_appended_are_no_replay(tmp_path):
    run = _run(_appended(tmp_path, (10, 11, 12)))
    assert _kind(run, "repeated_data") == [] and len(_kind(run, "step_reset")) == 1


def _jsonl(root, copies):
    """A trainer's JSON lines, {"global_step": s, "loss": v}, each step's record appended by
    every writer in `copies` (a function of the step's loss and a generator)."""
    rng = np.random.default_rng(5)
    lines = []
    for s in range(1, 301):
        loss = 2.0 * np.exp(-s / 120) + 0.4 + 0.02 * rng.standard_normal()
        lines += [json.dumps({"global_step": s, "loss": round(float(c(loss, rng)), 6)}) for c in copies]
    root.mkdir(parents=True, exist_ok=True)
    (root / "logging.jsonl").write_text("\n".join(lines) + "\n")
    return root


def test_every_step_written_twice_with_the_same_value_is_repeated_data(tmp_path):
    run = _run(_jsonl(tmp_path, (lambda v, r: v, lambda v, r: v)))
    (rep,) = _kind(run, "repeated_data")
    assert rep.severity == "info" and rep.evidence["steps_written_twice"] == 300 and rep.evidence["copy_spread"] == 0
    assert "two writers" in rep.message and (rep.start_step, rep.end_step) == (1, 300)


def test_two_nodes_writing_each_step_with_slightly_different_losses_is_repeated_data(tmp_path):
    run = _run(_jsonl(tmp_path, (lambda v, r: v, lambda v, r: v + 1e-4 * r.standard_normal())))
    (rep,) = _kind(run, "repeated_data")
    assert rep.evidence["copy_spread"] < 0.1 * rep.evidence["step_noise"]


def test_two_micro_batches_logged_under_one_step_are_not_repeated_data(tmp_path):
    """Copies as far apart as neighbouring steps are two batches' losses, not one record twice."""
    run = _run(_jsonl(tmp_path, (lambda v, r: v, lambda v, r: v + 0.03 * r.standard_normal())))
    assert _kind(run, "repeated_data") == []


def test_a_first_attempt_killed_after_one_step_is_a_step_reset(tmp_path):
    run = _run(j.appended_runs(tmp_path, 1, killed_first=True))
    (reset,) = _kind(run, "step_reset")
    assert reset.start_step == 1 and reset.severity == "info" and "went back to step 1 once" in reset.message


def test_runs_appended_from_different_first_steps_are_anchored_at_the_lowest(tmp_path):
    """A sweep of model configs, some trained 6 epochs logged every epoch, some 30 logged
    every 5th (`Epoch [5/30]`), appended one after another: the counter went back to
    epoch 1, which is where the finding stands, not at the first rerun's epoch 5."""
    rng = np.random.default_rng(3)
    text = []
    for k, (first, last, every) in enumerate(((1, 6, 1), (5, 30, 5), (5, 30, 5), (1, 6, 1), (5, 30, 5))):
        text.append(f"model: config {k}")
        for i, s in enumerate(range(first, last + 1, every)):
            text.append(f"Epoch [{s}/{last}] Training loss: {18 * np.exp(-i / 1.5) + 3 + 0.1 * rng.standard_normal():.4f}")
    (tmp_path / "train_log.txt").write_text("\n".join(text) + "\n")
    run = _run(tmp_path)
    (reset,) = [f for f in _kind(run, "step_reset") if f.evidence.get("appended_runs")]
    assert reset.start_step == 1 and reset.extra["logged_first_step"] == 1 and "(1–5)" in reset.message


def test_a_counter_whose_plan_grew_then_restarted_keeps_the_episode_as_step(tmp_path):
    """A DQN script prints `Episode i/N`: 1000 episodes, then trained on to 1500 of 2000 (a
    new total, the count going on), then a new model from `Episode 0001/1000`. The episode is
    the step throughout, so the restart is seen where it happened, not lost in line order."""
    rng = np.random.default_rng(8)
    lines = []
    for lo, hi, total, width in ((1, 1000, 1000, 3), (1001, 1500, 2000, 4), (1, 300, 1000, 4)):
        for e in range(lo, hi + 1):
            reward = -25 + 90 * (1 - np.exp(-e / 400)) + 8 * rng.standard_normal()
            lines.append(f"Episode {e:0{width}d}/{total} | Score: {max(int(reward // 8), 0):3d} | Reward: "
                         f"{reward:.1f} | Epsilon: {0.995 ** e:.8f} | Steps: {int(100 + rng.integers(0, 200)):3d}")
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n")
    run = _run(tmp_path)
    assert [(s["first_step"], s["last_step"]) for s in run.segments] == [(1, 1500), (1, 300)]
    (reset,) = _kind(run, "step_reset")
    assert reset.start_step == 1 and reset.evidence["appended_runs"] == 2


def _epoch_lines(tmp_path, values):
    (tmp_path / "log_train.txt").write_text("".join(f"epoch={e}, loss={v}\n" for e, v in enumerate(values)))
    return tmp_path


def test_a_loss_printed_twice_per_value_is_a_stale_value(tmp_path):
    """Each value at epochs 2k and 2k+1: the loss is recomputed every second epoch only."""
    rng = np.random.default_rng(4)
    fresh = [f"{0.01 + 0.004 * rng.standard_normal():.4f}" for _ in range(15)]
    run = _run(_epoch_lines(tmp_path, [v for v in fresh for _ in range(2)]))
    (rep,) = _kind(run, "repeated_data")
    assert rep.evidence["printed_twice"] and rep.evidence["copied_points"] == 15 and rep.severity == "info"


def test_a_flat_loss_printed_with_few_digits_is_no_stale_value(tmp_path):
    """A loss at chance printed with two digits repeats in runs of every length, not in pairs."""
    rng = np.random.default_rng(4)
    run = _run(_epoch_lines(tmp_path, [f"{0.69 + 0.006 * rng.standard_normal():.2f}" for _ in range(40)]))
    assert _kind(run, "repeated_data") == []
