"""The curve a run is judged by, as the labellers of real runs chose it (session 24): a value-based
learner (DQN) by its TD loss, not its return; a Wasserstein critic's estimate over its generator's
loss; a running mean below the batch loss it smooths; a running best never the curve; an anomaly
score no reward. Each rule beside a look-alike where the choice must not move. Files written by the
writers themselves (SB3's logger, Python's csv and logging, json)."""
from __future__ import annotations

import csv
import json
import logging

import numpy as np
import pytest

from spikelens import api
from spikelens.frame import infer_role

N = 60
X = np.linspace(0.0, 1.0, N)
RNG = np.random.default_rng(24)


def _main(path) -> str | None:
    (run,) = api.analyze(path, jobs=1).runs
    return run.stats.get("main_metric")


def _csv(path, columns: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(columns))
        w.writerows(zip(*(np.round(v, 5) for v in columns.values())))


def _sb3(folder, policy: bool) -> None:
    """What DQN.learn (or, with `policy`, PPO.learn) dumps through SB3's logger: the rollout's return,
    the train/* values, DQN's exploration rate or PPO's policy terms."""
    from stable_baselines3.common.logger import configure

    logger = configure(str(folder), ["csv", "tensorboard"])
    for i in range(N):
        t = (i + 1) * 1000
        logger.record("rollout/ep_rew_mean", float(5 + 40 * X[i] + RNG.standard_normal()))
        logger.record("rollout/ep_len_mean", float(100 + 50 * X[i]))
        logger.record("time/total_timesteps", t, exclude="tensorboard")
        logger.record("train/learning_rate", 1e-4)
        logger.record("train/loss", float(0.5 + 0.3 * X[i] + 0.05 * RNG.standard_normal()))
        if policy:
            logger.record("train/policy_gradient_loss", float(-0.01 + 0.002 * RNG.standard_normal()))
            logger.record("train/value_loss", float(2.0 - X[i]))
            logger.record("train/approx_kl", 0.01)
            logger.record("train/clip_fraction", 0.1)
        else:
            logger.record("rollout/exploration_rate", float(max(0.05, 1.0 - 2 * X[i])))
        logger.dump(step=t)
    logger.close()


@pytest.mark.parametrize("table", ["progress.csv", None])
def test_a_dqn_is_judged_by_its_loss_a_ppo_by_its_return(tmp_path, table):
    pytest.importorskip("stable_baselines3.common.logger")
    _sb3(tmp_path / "DQN_1", policy=False)
    _sb3(tmp_path / "PPO_1", policy=True)
    pick = (lambda d: d / table) if table else (lambda d: next(d.glob("events.out.tfevents.*")))
    assert _main(pick(tmp_path / "DQN_1")) == "train/loss"
    assert _main(pick(tmp_path / "PPO_1")) == "rollout/ep_rew_mean"


def test_a_dqn_table_with_epsilon_is_judged_by_its_loss_unless_it_logs_none(tmp_path):
    eps = np.maximum(0.1, 1 - 2 * X)
    reward = 1 + 20 * X + RNG.standard_normal(N)
    _csv(tmp_path / "dqn" / "train.csv", {"episode": np.arange(N) * 100, "epsilon": eps, "reward": reward,
                                         "loss": 0.02 + 0.01 * X + 0.002 * RNG.random(N)})
    _csv(tmp_path / "noloss" / "train.csv", {"episode": np.arange(N) * 100, "epsilon": eps, "reward": reward})
    _csv(tmp_path / "ddpg" / "progress.csv", {"Epoch": np.arange(N), "AverageEpRet": reward, "AverageQVals": 10 * X,
                                              "LossPi": -10 * X, "LossQ": 1 + X})
    assert _main(tmp_path / "dqn" / "train.csv") == "loss"
    assert _main(tmp_path / "noloss" / "train.csv") == "reward"
    assert _main(tmp_path / "ddpg" / "progress.csv") == "AverageEpRet"  # it trains a policy: its return


def _gan_log(path, d_loss: np.ndarray, g_loss: np.ndarray) -> None:
    """`Epoch e/N | D_loss=x | G_loss=y` lines through Python's logging, as a hand-written GAN loop prints them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    log = logging.getLogger(f"gan.{path.parent.name}")
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        for e in range(N):
            log.info("Epoch %d/%d | D_loss=%.4f | G_loss=%.4f", e + 1, N, d_loss[e], g_loss[e])
    finally:
        handler.close()
        log.removeHandler(handler)


def test_a_wasserstein_critic_is_the_curve_a_classifier_discriminator_is_not(tmp_path):
    noise = 0.05 * RNG.standard_normal(N)
    _gan_log(tmp_path / "wgan" / "train_log.txt", -4.0 + 3.0 * X + noise, 5.0 - 2 * X + noise)  # critic below zero
    _gan_log(tmp_path / "dcgan" / "train_log.txt", 0.7 + 0.1 * X + noise, 2.0 - 0.5 * X + noise)
    assert _main(tmp_path / "wgan" / "train_log.txt") == "D_loss"
    assert _main(tmp_path / "dcgan" / "train_log.txt") == "G_loss"


def test_a_running_mean_ranks_below_the_batch_loss_it_smooths(tmp_path):
    batch = 3.0 - X + 0.2 * RNG.standard_normal(N)
    avg = np.cumsum(batch) / np.arange(1, N + 1)
    path = tmp_path / "workerlog.0"
    with path.open("w") as fh:
        for i in range(N):
            fh.write(f"05/01/2024 12:00:{i % 60:02d} - INFO - Epoch: [0], step: [{(i + 1) * 100}], lr: 0.000100, "
                     f"batch_loss: {batch[i]:.4f}, avg_loss: {avg[i]:.4f}\n")
    assert _main(path) == "batch_loss"
    alone = tmp_path / "alone" / "train.csv"
    _csv(alone, {"step": np.arange(N), "avg_loss": avg, "cls_loss": 0.3 * avg, "box_loss": 0.6 * avg})
    assert _main(alone) == "avg_loss"  # a mean named so beside the terms it sums, no batch value of it


def test_a_running_best_is_never_the_curve(tmp_path):
    val = 1.5 - 0.5 * X + 0.05 * RNG.standard_normal(N)
    _csv(tmp_path / "evalonly" / "log.csv", {"epoch": np.arange(N), "min_loss": np.minimum.accumulate(val),
                                             "val_loss": val, "val_f1": 0.5 + 0.3 * X})
    train = 2.0 - X + 0.05 * RNG.standard_normal(N)
    _csv(tmp_path / "both" / "log.csv", {"epoch": np.arange(N), "best_loss": np.minimum.accumulate(train),
                                         "train_loss": train, "val_loss": val})
    assert _main(tmp_path / "evalonly" / "log.csv") == "val_loss"
    assert _main(tmp_path / "both" / "log.csv") == "train_loss"


def test_an_anomaly_score_is_no_reward(tmp_path):
    rounds = [{"round": r, "test_acc": float(0.5 + 0.4 * X[r]), "test_loss": float(1.5 - X[r]),
               "anomaly_score": float(0.1 * RNG.random()), "round_time": 3.0} for r in range(N)]
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"rounds": rounds, "final_test_accuracy": 0.9}, indent=2))
    assert infer_role("rounds/anomaly_score") == "other" and infer_role("best_score") == "reward"
    assert _main(path) == "rounds/test_loss"


def test_a_run_judged_by_a_score_is_judged_by_its_held_out_score(tmp_path):
    # LightGBM's log_evaluation lines: `[100]\ttrain's auc: 0.78\tvalid's auc: 0.77`, early stopping on `valid`
    path = tmp_path / "lgbm.log"
    with path.open("w") as fh:
        fh.write("Training until validation scores don't improve for 50 rounds\n")
        for i in range(N):
            fh.write(f"[{(i + 1) * 100}]\ttrain's auc: {0.7 + 0.2 * X[i]:.6f}\tvalid's auc: {0.69 + 0.1 * X[i]:.6f}\n")
        fh.write(f"Did not meet early stopping. Best iteration is:\n[{N * 100}]\ttrain's auc: 0.9\tvalid's auc: 0.79\n")
    main = _main(path)
    assert main is not None and main.startswith("val")
