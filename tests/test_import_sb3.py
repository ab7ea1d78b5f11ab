"""Stable-Baselines3 `progress.csv` / `progress.json`, written by SB3's own logger
(`stable_baselines3.common.logger.configure(folder, ["csv", "json"])`) with the keys and
the dump pattern PPO and `EvalCallback` use: timesteps are the step, the empty cells of
other dumps are not logged, and the RL roles are named."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from conftest import FIXTURES
from spikelens import api
from spikelens.frame import HIGHER_IS_BETTER, infer_roles
from spikelens.importers.registry import IMPORTERS
from spikelens.importers.sb3 import RlProgressImporter

pytest.importorskip("stable_baselines3.common.logger", reason="stable-baselines3 (test extra) not installed")
sys.path.insert(0, str(FIXTURES))
from writers.trainers import SB3_N_STEPS, ppo_values, write_sb3, write_sb3_monitor  # noqa: E402

N_STEPS = SB3_N_STEPS
ITERS = 24


@pytest.fixture(scope="module")
def progress(tmp_path_factory):
    return write_sb3(tmp_path_factory.mktemp("sb3") / "PPO_1", ITERS)


def frame_of(path):
    (run,) = api.load_runs(path)
    return run


@pytest.mark.parametrize("name", ["progress.csv", "progress.json"])
def test_timesteps_are_the_step_and_values_as_logged(progress, name):
    path = progress / name
    first = next(imp for imp in IMPORTERS if imp.claims(path, path.read_bytes()[:4096]))
    assert isinstance(first, RlProgressImporter)
    run = frame_of(path)
    fr = run.frame
    assert run.formats == ["sb3_csv" if name.endswith("csv") else "sb3_json"]
    rew = fr.filter(fr["metric"] == "rollout/ep_rew_mean").sort("step")
    assert rew["step"].to_list() == [it * N_STEPS for it in range(1, ITERS + 1)]
    assert rew["value"].to_list() == pytest.approx([10.0 + 2 * it for it in range(1, ITERS + 1)])
    kl = fr.filter(fr["metric"] == "train/approx_kl").sort("step")
    assert kl["step"].to_list() == [it * N_STEPS for it in range(2, ITERS + 1)]  # train/* from the second dump
    assert kl["value"].to_list() == pytest.approx([ppo_values(it)["train/approx_kl"] for it in range(1, ITERS)])
    ev = fr.filter(fr["metric"] == "eval/mean_reward")
    assert ev["step"].to_list() == [it * N_STEPS for it in range(4, ITERS + 1, 4)]
    metrics = set(fr["metric"].cast(str))
    assert "time/total_timesteps" not in metrics and {"time/iterations", "train/n_updates"} <= metrics
    assert run.segments and len(run.segments) == 1


def test_empty_cells_of_other_dumps_are_not_logged(progress):
    text = (progress / "progress.csv").read_text().splitlines()
    assert any(",," in ln for ln in text[1:])  # SB3 writes empty cells for keys of other dumps
    fr = frame_of(progress / "progress.csv").frame
    assert fr["value"].null_count() == 0
    assert fr.filter(fr["metric"] == "eval/mean_reward").height == ITERS // 4


def test_rl_roles():
    roles = infer_roles(["rollout/ep_rew_mean", "rollout/ep_len_mean", "eval/mean_reward", *ppo_values(1),
                         "time/fps", "time/iterations", "train/n_updates"])
    assert roles["rollout/ep_rew_mean"] == roles["eval/mean_reward"] == "reward"
    assert roles["train/approx_kl"] == "kl" and roles["train/entropy_loss"] == "entropy"
    assert {roles[k] for k in ("train/loss", "train/value_loss", "train/policy_gradient_loss")} == {"loss"}
    assert roles["train/learning_rate"] == "lr" and roles["time/fps"] == "throughput"
    assert roles["train/explained_variance"] in HIGHER_IS_BETTER and "reward" in HIGHER_IS_BETTER
    assert infer_roles(["value_loss", "val_loss"]) == {"value_loss": "loss", "val_loss": "eval_loss"}  # a critic's loss


def test_analyzed_with_the_episode_return_as_the_main_metric_and_no_alarm_on_a_rising_reward(progress):
    run = api.analyze(progress / "progress.csv", jobs=1).runs[0]
    assert run.stats["main_metric"] == "rollout/ep_rew_mean"  # an RL run is judged by its return (test_main_metric)
    assert not [f for f in run.findings if f.metric in ("rollout/ep_rew_mean", "eval/mean_reward")]


def test_relaunch_into_the_same_file_is_a_second_launch(tmp_path):
    """A home-grown RL log whose timesteps go back (the script started again, appending)."""
    rows = ["num_episodes,value_loss,ep_rew_mean,total_loss,total timesteps"]
    rows += [f"{10 * i},{1 / i:.4f},{-500 + i:.1f},{2 / i:.4f},{512 * i}" for i in range(1, 11)]
    rows += [f"{10 * i},{1 / i:.4f},{-500 + i:.1f},{2 / i:.4f},{512 * i}" for i in range(1, 6)]
    (tmp_path / "progress.csv").write_text("\n".join(rows) + "\n")
    run = frame_of(tmp_path / "progress.csv")
    assert run.formats == ["sb3_csv"]
    assert sorted(run.frame["segment"].unique().to_list()) == [0, 1]
    assert run.frame.filter(run.frame["metric"] == "value_loss")["step"].to_list()[:3] == [512, 1024, 1536]


def test_monitor_episodes_at_their_timesteps(tmp_path):
    path = write_sb3_monitor(tmp_path / "logs", episodes=40, t_start=1_708_431_886.2)
    assert path.read_text().startswith('#{"t_start": 1708431886.2')
    run = frame_of(path)
    assert run.formats == ["sb3_monitor"]
    fr = run.frame.filter(run.frame["metric"] == "episode/reward").sort("step")
    lengths = [10 + 5 * k for k in range(40)]
    assert fr["step"].to_list() == list(np.cumsum(lengths))
    assert fr["value"].to_list() == [float(n) for n in lengths]
    assert fr["wall_time"].to_list() == pytest.approx([1_708_431_886.2 + 0.5 * (k + 1) for k in range(40)])
    assert set(run.frame["metric"].cast(str)) == {"episode/reward", "episode/length"}
    assert infer_roles(["episode/reward", "episode/length"]) == {"episode/reward": "reward", "episode/length": "other"}


def test_monitor_header_only_is_read_as_nothing_with_a_warning(tmp_path):
    path = write_sb3_monitor(tmp_path / "empty", episodes=0)
    with pytest.warns(Warning, match="no numeric values found"):
        (run,) = api.load_runs(path)
    assert run.frame.height == 0


def test_an_empty_timesteps_column_is_not_the_step(tmp_path):
    """Ray Tune's progress.csv of a non-RL trainable: `timesteps_total` empty, the step is
    `training_iteration` (the generic CSV reader's)."""
    f = tmp_path / "progress.csv"
    f.write_text("loss,timesteps_total,training_iteration,time_this_iter_s\n"
                 + "".join(f"{1 / i:.4f},,{i},0.5\n" for i in range(1, 11)))
    assert not RlProgressImporter().claims(f, f.read_bytes())
    run = frame_of(f)
    assert run.frame.filter(run.frame["metric"] == "loss")["step"].to_list() == list(range(1, 11))


def test_a_null_timesteps_key_is_not_the_step(tmp_path):
    f = tmp_path / "result.json"
    f.write_text("".join(json.dumps({"loss": 1 / i, "timesteps_total": None, "training_iteration": i}) + "\n"
                         for i in range(1, 6)))
    assert not RlProgressImporter().claims(f, f.read_bytes())
