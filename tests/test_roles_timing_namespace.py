"""A namespace of durations names the phase that was timed, not a curve of that role (#25): verl's
`timing_s/reward` is the seconds spent scoring answers, not the reward; judged as the reward it made a
healthy GRPO run "not learning" (flat at 1e-4 s). Its throughput, step time and memory keep their roles
(`time/fps`, `timing_per_token_ms/gen`); a reward or loss outside such a namespace is unchanged."""
from __future__ import annotations

import json
import subprocess
import sys

from spikelens.frame import infer_role


def test_timed_phases_are_no_objective():
    for name in ("timing_s/reward", "timing_s/update_actor", "timing/loss", "time/loss", "timers.reward"):
        assert infer_role(name) == "other", name
    assert infer_role("time/fps") == "throughput"
    assert infer_role("timing_per_token_ms/gen") == "step_time"
    assert infer_role("critic/rewards/mean") == "reward"
    assert infer_role("train_time/loss") == "loss"  # a word that merely holds `time`
    assert infer_role("TimeStep/reward") == "reward"


def _verl_line(step: int) -> str:
    fields = {"actor/entropy": 0.18 - 0.0004 * step, "actor/pg_loss": 0.01 * ((step * 7) % 5 - 2),
              "actor/kl_loss": 0.001 * step, "actor/grad_norm": 0.3, "actor/lr": 1e-6,
              "training/global_step": step, "critic/score/mean": 0.5 + 0.002 * step,
              "critic/rewards/mean": 0.5 + 0.002 * step, "response_length/mean": 190.0,
              "timing_s/gen": 20.0 + (step % 3), "timing_s/reward": 0.0001094 + 1e-7 * (step % 2),
              "timing_s/update_actor": 30.0, "perf/throughput": 900.0 + (step % 4)}
    body = " - ".join(f"{k}:{v}" for k, v in fields.items())
    return f"\x1b[36m(TaskRunner pid=138690)\x1b[0m step:{step} - {body}\n"


def test_a_grpo_console_log_is_judged_by_its_reward_not_its_reward_timing(tmp_path):
    log = tmp_path / "train_output.log"
    log.write_text("".join(_verl_line(s) for s in range(1, 241)))
    out = subprocess.run([sys.executable, "-m", "spikelens", "analyze", str(log), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    run = json.loads(out)["runs"][0]
    assert run["metrics"]["timing_s/reward"] == "other"
    assert run["stats"]["main_metric"] in ("critic/rewards/mean", "critic/score/mean")
    assert not [f for f in run["findings"] if f["metric"] == "timing_s/reward"]
