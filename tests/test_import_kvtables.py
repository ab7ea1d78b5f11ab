"""Console logs printed as `| key | value |` tables, one table a record: Stable-Baselines3's
own logger writes them (`configure(folder, ["log"])` is the console format into log.txt)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import spikelens
from spikelens.importers.kvtables import KeyValueTableImporter

ITERATIONS = 40
STEPS_PER_ROLLOUT = 2048


def _sb3_console_log(folder: Path, *, crash: bool = False, seed: int = 0) -> Path:
    """A PPO-shaped run written by SB3's HumanOutputFormat itself: rollout and time sections
    every iteration, train from the second on (as PPO dumps them)."""
    from stable_baselines3.common.logger import configure

    rng = np.random.default_rng(seed)
    logger = configure(str(folder), ["log"])
    for it in range(1, ITERATIONS + 1):
        logger.record("rollout/ep_len_mean", 200 - it)
        logger.record("rollout/ep_rew_mean", -1000 + 20 * it + float(rng.normal(0, 5)))
        logger.record("time/fps", 1200 + it)
        logger.record("time/iterations", it)
        logger.record("time/total_timesteps", STEPS_PER_ROLLOUT * it)
        if it > 1:
            logger.record("train/loss", 5 / it + float(rng.uniform(0, 0.05)))
            logger.record("train/approx_kl", 0.01 + float(rng.uniform(0, 0.001)))
            logger.record("train/entropy_loss", -1.4 + 0.01 * it)
        logger.dump(step=STEPS_PER_ROLLOUT * it)
    logger.close()
    path = folder / "log.txt"
    if crash:
        with open(path, "a") as fh:
            fh.write("Traceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n"
                     "    model.learn(total_timesteps=1_000_000)\n"
                     "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    return path


def _frame(path: Path) -> pl.DataFrame:
    return spikelens.load(path)


def test_an_sb3_console_log_is_read_with_timesteps_as_step_and_sections_in_names(tmp_path):
    path = _sb3_console_log(tmp_path)
    assert "|    ep_rew_mean" in path.read_text()  # the real writer's table shape
    assert KeyValueTableImporter().claims(path, path.read_bytes()[:4096])
    frame = _frame(path)
    metrics = set(frame.get_column("metric").unique().to_list())
    assert {"rollout/ep_rew_mean", "rollout/ep_len_mean", "train/loss", "train/approx_kl", "time/fps"} <= metrics
    assert "time/total_timesteps" not in metrics  # it is the step
    reward = frame.filter(pl.col("metric") == "rollout/ep_rew_mean").sort("step")
    assert reward.get_column("step").to_list() == [STEPS_PER_ROLLOUT * i for i in range(1, ITERATIONS + 1)]
    loss = frame.filter(pl.col("metric") == "train/loss").sort("step")
    assert loss.height == ITERATIONS - 1 and loss.get_column("step")[0] == 2 * STEPS_PER_ROLLOUT
    assert loss.get_column("value")[0] == pytest.approx(2.5, abs=0.05)  # printed with 3 significant digits


def test_the_tables_roles_match_the_progress_csv_of_the_same_run(tmp_path):
    path = _sb3_console_log(tmp_path)
    roles = spikelens.api.roles_of(_frame(path))
    assert roles["rollout/ep_rew_mean"] == "reward"
    assert roles["train/loss"] == "loss"


def test_a_crash_after_the_last_table_is_the_runs_end(tmp_path):
    path = _sb3_console_log(tmp_path, crash=True)
    (run,) = spikelens.analyze(path).runs
    (ended,) = [f for f in run.findings if f.kind == "ended_early"]
    assert "illegal memory access" in ended.message


def test_tables_without_sections_or_rules_split_where_a_key_comes_again(tmp_path):
    """Spinning Up's EpochLogger: right-aligned keys, no sections; and one file that prints
    its tables with no rule between them."""
    lines = []
    for epoch in range(30):
        lines += ["-" * 40, f"|{'Epoch':>18} | {epoch:>17} |", f"|{'AverageEpRet':>18} | {-200 + 5 * epoch:>17.4g} |",
                  f"|{'LossPi':>18} | {0.5 / (epoch + 1):>17.4g} |", f"|{'TotalEnvInteracts':>18} | {4000 * (epoch + 1):>17} |"]
    lines.append("-" * 40)
    path = tmp_path / "progress_console.txt"
    path.write_text("\n".join(lines) + "\n")
    frame = _frame(path)
    ret = frame.filter(pl.col("metric") == "AverageEpRet").sort("step")
    assert ret.height == 30 and ret.get_column("step").to_list() == list(range(30))  # Epoch is the step
    bare = tmp_path / "no_rules.log"
    bare.write_text("starting\n" + "-" * 30 + "\n" + "\n".join(
        f"| loss | {1 / (i + 1):.4f} |\n| epoch | {i} |" for i in range(12)) + "\n")
    frame = _frame(bare)
    assert frame.filter(pl.col("metric") == "loss").get_column("step").to_list() == list(range(12))


def test_a_two_column_table_with_numbers_in_its_first_column_is_not_claimed(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("-" * 20 + "\n| step | loss |\n" + "\n".join(f"| {i} | {1 / (i + 1):.3f} |" for i in range(20)) + "\n")
    assert not KeyValueTableImporter().claims(path, path.read_bytes()[:4096])


def test_a_settings_table_printed_once_above_the_step_lines_is_not_a_record(tmp_path):
    """llm.c prints its parameters as a | key | value | table once, then `step N/M | loss` lines."""
    from fixtures.writers.textlogs import llmc_step_line

    table = ["+" + "-" * 23 + "+" + "-" * 20 + "+", "| Parameter             | Value              |",
             "+" + "-" * 23 + "+" + "-" * 20 + "+"]
    table += [f"| {k:<21} | {v:<18} |" for k, v in [("max_sequence_length T", 1024), ("batch_size B", 4),
                                                      ("max_steps", 60), ("channels C", 768), ("gelu_fusion", 0),
                                                      ("num_parameters", 124475904), ("val_loss_every", 20)]]
    table.append("+" + "-" * 23 + "+" + "-" * 20 + "+")
    steps = [llmc_step_line(s, 60, 6.0 - s * 0.05, 0.5, 3e-4, 4200.0) for s in range(1, 61)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(table) + "\n" + "".join(steps))
    assert not KeyValueTableImporter().claims(path, path.read_bytes()[:4096])
    loss = _frame(path).filter(pl.col("metric") == "train_loss").sort("step")  # the llm.c reader's name
    assert loss.height == 60 and loss.get_column("step").to_list() == list(range(1, 61))


def test_a_settings_table_every_relaunch_prints_again_is_no_record(tmp_path):
    """YOLOX prints its `exp value:` table (box-drawn) at every launch; the same values each time are settings:
    the file is left to the console reader, which reads the step lines below them."""
    table = "\n".join(["╒════════════════╤══════════╕", "│ keys           │ values   │", "╞════════════════╪══════════╡"]
                      + [f"│ {k:<14} │ {v:<8} │\n├────────────────┼──────────┤" for k, v in
                         (("print_interval", 10), ("max_epoch", 300), ("warmup_epochs", 5), ("num_classes", 80))]
                      + ["╘════════════════╧══════════╛"])
    steps = "\n".join(f"2023-11-27 14:41:11.553 | INFO     | yolox.core.trainer:after_iter:256 - epoch: 1/300, "
                      f"iter: {10 * i}/1849, iter_time: 0.619s, total_loss: {17.7 - 0.1 * i:.1f}, iou_loss: 4.6, lr: 1.0e-05"
                      for i in range(1, 16))
    (tmp_path / "train_log.txt").write_text("\n".join([table, steps, table, steps, table, steps]) + "\n")
    from spikelens import api

    run = api.load_runs(tmp_path)[0]
    assert "total_loss" in set(run.frame["metric"].cast(str)) and "kv_tables" not in run.formats
