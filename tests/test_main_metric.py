"""The run's main metric, chosen as its engineer would (`RunContext.judged`, `main_name_score`):
a reinforcement learner is judged by its episode return, a total beside its terms by the total,
a GAN by its generator, a run with no training loss by its held-out loss. Each rule has runs in
real formats where it must pick, and look-alikes where the loss must stay the main metric."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from sb3_progress import write_progress
from spikelens import api
from spikelens.frame import infer_roles, is_reinforcement


def _main(path) -> str | None:
    (run,) = api.analyze(path, jobs=1).runs
    return run.stats.get("main_metric")


def _csv(path, header, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _tb(folder, series: dict[str, np.ndarray]) -> None:
    """`add_scalar(tag, value, step)` for each tag per update, through TensorBoard's EventFileWriter."""
    from fixtures.writers.tensorboard import name, scalar_event, write_events

    events = [scalar_event(10 * (i + 1), 1780000000.0 + i, tag, float(v[i]))
              for i in range(len(next(iter(series.values())))) for tag, v in series.items()]
    write_events(folder / name(1780000000, 4242, 0), events)


def _trainer_state(path, history: list[dict]) -> None:
    """A `trainer_state.json` as `TrainerState.save_to_json` writes it (sorted keys, indent 2)."""
    from fixtures.writers.hf import state

    path.parent.mkdir(parents=True, exist_ok=True)
    step = history[-1]["step"]
    path.write_text(json.dumps(state(history, step, step), indent=2, sort_keys=True) + "\n")


N = 60
X = np.linspace(0, 1, N)
RNG = np.random.default_rng(3)


# ------------------------------------------------------------------ a reinforcement learner


def test_sb3_progress_csv_is_judged_by_its_episode_return(tmp_path):
    path = tmp_path / "PPO_1" / "progress.csv"
    write_progress(path, 10 + 80 * X)
    assert _main(path) == "rollout/ep_rew_mean"


@pytest.mark.parametrize("prefix, ret, variant", [
    ("Evaluation/", "AverageReturn", "AverageDiscountedReturn"),   # garage / rllab progress.csv
    ("", "AverageEpRet", "AverageDiscountedEpRet"),                  # Spinning Up progress.txt names, glued
])
def test_glued_average_return_is_judged_over_its_discounted_variant(tmp_path, prefix, ret, variant):
    # the discounted return comes first in the file (garage sorts its columns): the name must decide
    rows = [[(-500 + 5 * i) * 0.3, -500 + 5 * i + 10 * RNG.standard_normal(), i, 1.0 - 0.005 * i,
             0.01 + 0.001 * RNG.standard_normal()] for i in range(100)]
    _csv(tmp_path / "run" / "progress.csv",
         [prefix + variant, prefix + ret, prefix + "Iteration", "policy/Entropy", "policy/KL"], rows)
    assert _main(tmp_path / "run") == prefix + ret


def test_sb3_logger_ppo_run_is_judged_by_its_rollout_return_not_its_eval(tmp_path):
    pytest.importorskip("stable_baselines3.common.logger")
    from fixtures.writers.trainers import write_sb3

    folder = write_sb3(tmp_path / "PPO_1", 24)
    (run,) = api.analyze(folder / "progress.csv", jobs=1).runs
    assert run.stats["main_metric"] == "rollout/ep_rew_mean"
    assert run.stats["last_value"] > run.stats["first_value"]  # the return as logged, rising
    assert not [f for f in run.findings if f.metric in ("rollout/ep_rew_mean", "eval/mean_reward")]


def test_cleanrl_run_is_judged_by_its_episodic_return(tmp_path):
    # CleanRL's add_scalar tags: the return is `charts/episodic_return`, logged beside its evaluation's
    # and several other rewards' worth of names; an episodic length is no return
    _tb(tmp_path / "runs", {"losses/value_loss": 1 + X ** 2, "losses/policy_loss": 0.1 * RNG.standard_normal(N),
                            "losses/entropy": 1.3 - 0.5 * X, "charts/episodic_length": 200 - 100 * X,
                            "charts/reward_scale": 0.5 + 0.0 * X,
                            "charts/episodic_return": 5 + 40 * X + RNG.standard_normal(N)})
    assert _main(tmp_path / "runs") == "charts/episodic_return"
    # an evaluation's return logged as often is not the training curve the run is judged by
    _tb(tmp_path / "both", {"eval/episodic_return": 4 + 30 * X, "charts/episodic_return": 5 + 40 * X,
                            "losses/value_loss": 1 + X ** 2})
    assert _main(tmp_path / "both") == "charts/episodic_return"


@pytest.mark.parametrize("name", ["eval/episodic_return", "test_return", "eval_reward", "episodic_return"])
def test_an_evaluation_or_episodic_return_is_named_a_return(name):
    from spikelens.detect.base import main_name_score

    assert main_name_score(name, "reward") == 1
    assert main_name_score(name.replace("return", "length").replace("reward", "length"), "reward") == 0


def test_tensorboard_a2c_run_is_judged_by_its_episode_reward(tmp_path):
    _tb(tmp_path / "runs", {"policy_loss": 0.1 * RNG.standard_normal(N), "value_loss": 1 + X ** 2,
                            "entropy": 1.3 - 0.5 * X, "episode_reward": 5 + 40 * X + RNG.standard_normal(N)})
    assert _main(tmp_path / "runs") == "episode_reward"


def test_trl_grpo_trainer_state_is_judged_by_its_reward_not_a_reward_term(tmp_path):
    hist = [{"step": 10 * (i + 1), "epoch": i / N, "loss": float(1e-3 * RNG.standard_normal()), "kl": 0.01 * i,
             "reward": 0.2 + 0.6 * X[i], "reward_std": 0.3, "rewards/format_fn/mean": 0.5 + 0.4 * X[i],
             "grad_norm": 0.5, "learning_rate": 1e-6} for i in range(N)]
    _trainer_state(tmp_path / "grpo" / "trainer_state.json", hist)
    assert _main(tmp_path / "grpo" / "trainer_state.json") == "reward"


def test_dpo_trainer_state_keeps_its_loss_beside_its_implicit_rewards(tmp_path):
    """DPO's `rewards/chosen` and `rewards/margins` are statistics of its loss, not returns."""
    hist = [{"step": 10 * (i + 1), "epoch": i / N, "loss": 0.69 - 0.4 * X[i], "rewards/chosen": 0.5 * X[i],
             "rewards/rejected": -0.5 * X[i], "rewards/margins": X[i], "rewards/accuracies": 0.5 + 0.4 * X[i],
             "logps/chosen": -80.0, "grad_norm": 1.0, "learning_rate": 5e-7} for i in range(N)]
    _trainer_state(tmp_path / "dpo" / "trainer_state.json", hist)
    assert _main(tmp_path / "dpo" / "trainer_state.json") == "loss"


def test_supervised_run_with_accuracy_and_a_reward_named_auxiliary_keeps_its_loss(tmp_path):
    rows = [(i + 1, f"{2.3 * np.exp(-3 * X[i]):.4f}", f"{0.3 + 0.6 * X[i]:.4f}", f"{0.1 * X[i]:.4f}") for i in range(N)]
    _csv(tmp_path / "metrics.csv", ["step", "train_loss", "accuracy", "aux_reward"], rows)
    assert _main(tmp_path / "metrics.csv") == "train_loss"


@pytest.mark.parametrize(("names", "rl"), [
    (["loss", "reward", "kl"], True), (["EpRew", "PiLoss", "Vr"], True), (["Reward", "Avg_Q", "Loss"], True),
    (["Train_Return", "Critic_Loss", "Actor_Loss"], True), (["loss", "accuracy", "aux_reward"], False),
    (["loss", "rewards/chosen", "rewards/margins"], False), (["loss_kl", "loss_recon", "loss"], False),
    (["loss", "reward", "entropy", "clip_ratio/region_mean"], True),  # GRPO with no KL term (beta 0)
    (["loss", "token_entropy", "format_reward", "reward"], False)])  # SFT scored by a reward function
def test_what_marks_a_reinforcement_learner(names, rl):
    assert is_reinforcement(infer_roles(names)) is rl


# ------------------------------------------------------------------ a total, a generator, a held-out loss


def test_lightning_csv_mean_of_its_terms_is_the_main_loss(tmp_path):
    rows = [(0, i, f"{1 + np.exp(-3 * X[i]):.4f}", f"{0.5 + 2 * np.exp(-3 * X[i]):.4f}",
             f"{0.75 + 1.5 * np.exp(-3 * X[i]):.4f}") for i in range(N)]
    _csv(tmp_path / "lightning_logs" / "version_0" / "metrics.csv",
         ["epoch", "step", "boundary_loss", "interior_loss", "mean_loss"], rows)
    assert _main(tmp_path / "lightning_logs" / "version_0" / "metrics.csv") == "mean_loss"


def test_running_mean_of_a_loss_beside_it_is_not_a_total(tmp_path):
    """`loss_mean` beside `loss`: the same loss smoothed, not the mean of terms; the plain name stays."""
    rows = [(i + 1, f"{2 * np.exp(-3 * X[i]) + 0.2 * RNG.random():.4f}", f"{2 * np.exp(-3 * X[i]) + 0.1:.4f}")
            for i in range(N)]
    _csv(tmp_path / "log.csv", ["step", "loss", "loss_mean"], rows)
    assert _main(tmp_path / "log.csv") == "loss"


def test_lightning_csv_gan_is_judged_by_its_generator(tmp_path):
    """The discriminator's loss is the larger: the largest of tied terms would be the adversary's."""
    rows = [(0, i, f"{1.4 + 0.05 * RNG.standard_normal():.4f}", f"{0.6 + 0.5 * X[i]:.4f}") for i in range(N)]
    _csv(tmp_path / "lightning_logs" / "version_0" / "metrics.csv",
         ["epoch", "step", "train_disc_loss", "train_gen_loss"], rows)
    assert _main(tmp_path / "lightning_logs" / "version_0" / "metrics.csv") == "train_gen_loss"


def test_gan_with_a_total_keeps_the_total(tmp_path):
    _tb(tmp_path / "runs", {"loss_D": 0.7 + 0.05 * RNG.standard_normal(N), "loss_G": 1.2 + X,
                            "total_loss": 1.9 + X})
    assert _main(tmp_path / "runs") == "total_loss"


def test_run_with_only_a_validation_loss_is_judged_by_it(tmp_path):
    _csv(tmp_path / "log.csv", ["step", "val_loss"], [(125 * (i + 1), f"{3.3 - X[i]:.4f}") for i in range(N)])
    assert _main(tmp_path / "log.csv") == "val_loss"


def test_run_with_a_training_loss_keeps_it_beside_its_validation_loss(tmp_path):
    _csv(tmp_path / "log.csv", ["step", "train_loss", "val_loss", "val_acc"],
         [(i + 1, f"{3.0 - X[i]:.4f}", f"{3.3 - X[i]:.4f}", f"{0.5 + 0.3 * X[i]:.4f}") for i in range(N)])
    assert _main(tmp_path / "log.csv") == "train_loss"


def test_tables_say_a_final_return_is_a_reward_and_keep_a_final_loss_bare(tmp_path, capsys):
    # the summary's "final loss" column names the role where the main metric is no loss
    from conftest import main_in_process

    write_progress(tmp_path / "rl" / "PPO_1" / "progress.csv", 10 + 80 * X)
    _csv(tmp_path / "sl" / "metrics.csv", ["step", "train_loss"],
         [[i, round(2.5 * float(np.exp(-i / 20)) + 0.3, 4)] for i in range(N)])
    for fmt in ("markdown", "rich"):
        for folder, want, unwanted in (("rl", "90 reward", None), ("sl", "0.4308", "reward")):
            code, out, err = main_in_process(capsys, "analyze", tmp_path / folder, "--format", fmt)
            assert want in out, (fmt, folder, out, err)
            assert unwanted is None or unwanted not in out.split("findings")[0], (fmt, folder, out)
