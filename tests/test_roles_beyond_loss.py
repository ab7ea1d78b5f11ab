"""Roles beyond the loss: rewards and accuracy-like scores (higher is better), KL, entropy,
perplexity, throughput, step time, memory, each inferred from the names trainers log, and
none of them judged as a loss (a rising accuracy or reward is no spike)."""
from __future__ import annotations

import numpy as np
import pytest

from spikelens import api
from spikelens.frame import HIGHER_IS_BETTER, ROLES, SIDE_ROLES, infer_role, infer_roles


@pytest.mark.parametrize("name,role", [
    # rewards (RL: SB3, TRL, DeepSpeed-Chat)
    ("rollout/ep_rew_mean", "reward"), ("eval/mean_reward", "reward"), ("objective/rlhf_reward", "reward"),
    ("rewards/chosen", "reward"), ("episode_return", "reward"), ("reward_loss", "loss"),
    ("reward_std", "other"), ("frac_reward_zero_std", "other"), ("rewards/accuracy_reward/std", "other"),
    ("rewards/accuracy_reward/mean", "reward"),
    # accuracy-like scores
    ("metrics/mAP50-95(B)", "accuracy"), ("metrics/precision(B)", "accuracy"), ("metrics/recall(B)", "accuracy"),
    ("eval_top1", "accuracy"), ("top5_acc", "accuracy"), ("val_accuracy", "accuracy"), ("acc@1", "accuracy"),
    ("bbox/AP50", "accuracy"), ("eval_rougeL", "accuracy"), ("bleu", "accuracy"), ("f1", "accuracy"),
    ("train/explained_variance", "accuracy"), ("grad_accum_steps", "other"),
    ("top1_err", "other"), ("val/top1_error", "other"),  # an error rate: lower is better
    # KL and entropy (a cross-entropy stays a loss)
    ("train/approx_kl", "kl"), ("objective/kl", "kl"), ("kl_loss", "kl"),
    ("train/entropy_loss", "entropy"), ("objective/entropy", "entropy"), ("train/cross_entropy", "loss"),
    ("categorical_crossentropy", "loss"),
    # perplexity, throughput, step time, memory
    ("ppl", "perplexity"), ("eval/perplexity", "perplexity"), ("tps", "throughput"), ("tok/s", "throughput"),
    ("tok/sec", "throughput"), ("mfu", "throughput"), ("train_samples_per_second", "throughput"),
    ("time/fps", "throughput"), ("num_tokens", "other"), ("tokens", "other"), ("train/tokens_seen", "other"),
    ("tokens_s", "throughput"), ("dt", "step_time"), ("elapsed_time_per_iteration", "step_time"),
    ("data_time", "step_time"), ("memory", "memory"), ("max_memory_allocated", "memory"), ("mem(GB)", "memory"),
    # learning rates and their multipliers; what stays other
    ("lr/pg0", "lr"), ("x/lr2", "lr"), ("lrm", "lr"), ("epoch", "other"), ("time", "other"),
    ("time/total_timesteps", "other"), ("train/box_loss", "loss"), ("val/dfl_loss", "eval_loss"),
])
def test_roles_beyond_the_loss_from_the_names_trainers_log(name, role):
    assert infer_role(name) == role


def test_role_tables_agree():
    assert set(SIDE_ROLES) <= set(ROLES) and HIGHER_IS_BETTER <= set(SIDE_ROLES)
    assert not {"loss", "eval_loss", "grad_norm"} & set(SIDE_ROLES)


def test_perplexity_still_stands_for_a_missing_loss():
    assert infer_roles(["eval/ppl", "eval/acc"]) == {"eval/ppl": "eval_loss", "eval/acc": "accuracy"}


def test_a_rising_accuracy_and_reward_are_no_findings(tmp_path):
    """A score that jumps up (a reward that takes off, an accuracy that rises in a step) is
    the run going well: no spike, divergence or level shift is reported on it."""
    n = 300
    x = np.arange(n)
    rng = np.random.default_rng(3)
    loss = 3.0 * np.exp(-x / 80) + 0.5 + 0.01 * rng.standard_normal(n)
    acc = np.where(x < 150, 0.1, 0.9) + 0.005 * rng.standard_normal(n)
    reward = np.where(x < 100, -200.0, 250.0) + rng.standard_normal(n)
    f = tmp_path / "metrics.csv"
    f.write_text("step,train/loss,val/accuracy,rollout/ep_rew_mean\n"
                 + "".join(f"{i},{a:.6f},{b:.6f},{c:.6f}\n" for i, a, b, c in zip(x, loss, acc, reward)))
    report = api.analyze(f, jobs=1)
    run = report.runs[0]
    assert run.metrics["val/accuracy"] == "accuracy" and run.metrics["rollout/ep_rew_mean"] == "reward"
    on_scores = [x for x in run.findings if x.metric in ("val/accuracy", "rollout/ep_rew_mean")]
    # an accuracy at 1/10 for half the run, a reward flat for its last two thirds: at most notes
    assert all(x.kind == "plateau" and x.severity == "info" for x in on_scores), [x.message for x in on_scores]


def test_a_run_that_logs_only_rewards_is_judged_by_its_reward(tmp_path):
    """An SB3-style episode log (reward and length only) is read and judged: a reward flat from the
    first episode to the last is its plateau, and the run is not 'not checked (no loss)'."""
    import csv
    import json as _json

    from conftest import run_cli

    import numpy as np

    rng = np.random.default_rng(3)
    path = tmp_path / "agent" / "progress.csv"
    path.parent.mkdir()
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["time/total_timesteps", "rollout/ep_rew_mean", "rollout/ep_len_mean"])
        for i in range(1, 301):
            w.writerow([i * 2048, f"{-200 + rng.normal(0, 3):.3f}", 200])
    res = run_cli("analyze", path.parent, "--format", "json")
    assert res.returncode == 0, res.stderr
    report = _json.loads(res.stdout)
    (run,) = report["runs"]
    assert run["stats"]["main_metric"] == "rollout/ep_rew_mean"
    assert not any("no loss-like metric" in w for w in report["warnings"])
    assert [f["kind"] for f in run["findings"] if f["severity"] in ("warning", "error")] == ["plateau"]
