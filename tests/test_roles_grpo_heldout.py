"""Roles a person reads from names (#24/#25): a GRPO run that logs no KL is still a policy trained on
sampled answers (its group size, its completions' length), judged by its reward as `analyze` reports it;
`heldout`/`holdout`/`development` name held-out data as `val`/`dev` do. Lookalikes: a supervised run
beside a reward-like metric stays judged by its loss."""
from __future__ import annotations

import json
import subprocess
import sys

from spikelens.frame import infer_role, infer_roles, is_reinforcement


def test_held_out_names_are_evaluation():
    for name in ("heldout_loss", "holdout_loss", "held-out loss", "development_loss", "dev_loss"):
        assert infer_role(name) == "eval_loss", name
    assert infer_role("holder_loss") == "loss"  # a word that merely starts alike


def test_grpo_marks_make_a_reinforcement_run():
    assert is_reinforcement(infer_roles(["loss", "reward_mean", "reward_std", "num_generations", "learning_rate"]))
    assert is_reinforcement(infer_roles(["loss", "reward", "completion_length"]))
    assert not is_reinforcement(infer_roles(["loss", "reward", "learning_rate", "epoch"]))


def _judged(tmp_path, rows):
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run([sys.executable, "-m", "spikelens", "analyze", str(tmp_path), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["runs"][0]["stats"]["main_metric"]


def test_a_grpo_run_without_kl_is_judged_by_its_reward(tmp_path):
    rows = [{"step": i, "loss": 0.001 * ((i * 7) % 5), "reward_mean": 0.2 + 0.01 * i, "reward_std": 0.3,
             "num_generations": 8, "learning_rate": 1e-6} for i in range(60)]
    assert _judged(tmp_path, rows) == "reward_mean"


def test_a_supervised_run_beside_a_reward_is_judged_by_its_loss(tmp_path):
    rows = [{"step": i, "loss": 2.0 * 0.97 ** i, "reward": 0.2 + 0.01 * i, "learning_rate": 1e-4} for i in range(60)]
    assert _judged(tmp_path, rows) == "loss"
