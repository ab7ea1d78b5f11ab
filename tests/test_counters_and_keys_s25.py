"""Counters, units and keys a person reads at a glance that the line reader missed (#24, session 25), written as
the trainers print them:
- a count named by a counted thing and a word for its number (`evaluate_num:3`, `step_idx`), and the environment
  timesteps an RL loop counts by (SB3's `Eval num_timesteps=5000, ...`), are the step; a line that only ever comes
  right after an evaluation's line (`Episode length: 12.20 +/- 8.08`) is the rest of that evaluation;
- two counters in brackets parted by a colon (a progressive GAN's `[scale : iter]`) are the stage and the count
  within it, and stages of their own lengths add up to the global iteration;
- any count per second is a unit (Marian's `words/s`, Sockeye's `updates/sec`), and the key after it is read;
  a counter's name written short with a dot (`Up. 500`) is the counter; `[config] key: value` lines are settings;
- a variable set with `=` (`eval_loss=0.58`) is read at the end of a sentence, the split the sentence names
  (`of valid-set`) names its curve, `epoch-1` is the epoch, and a logger's `file.py : func [line]` is no count;
- a split's word alone linked to a number (`val = 0.48`) is that split's value; RL's `T = 25000 / 1000000` counts;
- a key/value settings table that every relaunch prints again, one setting changed, is no table of records.
"""
from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from spikelens.api import load_runs
from spikelens.importers import registry
from spikelens.importers.base import read_head
from spikelens.importers.textlogs import TextLogImporter


def _loss(i: int) -> float:
    return round(4 * math.exp(-i / 25) + 0.7, 4)


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _raw(path: Path) -> pl.DataFrame:
    """The text reader's values in read order (steps as the file counts them, before any stitching)."""
    (table,) = TextLogImporter().read(path)
    return table.frame


def _curve(frame: pl.DataFrame, metric: str) -> tuple[list[int], list[float]]:
    s = frame.filter(pl.col("metric").cast(pl.String) == metric)
    return s.get_column("step").to_list(), s.get_column("value").to_list()


def _names(frame: pl.DataFrame) -> set[str]:
    return set(frame.get_column("metric").cast(pl.String).unique())


def test_sb3_eval_callback_lines_count_by_their_timesteps(tmp_path):
    lines = []
    for session in range(2):
        lines += ["", "=== Starting New Training Session ===", "", "Loading pretrained model..."]
        for k in range(1, 13):
            lines += [f"Eval num_timesteps={k * 5000}, episode_reward={10 * k + session:.2f} +/- {40 + k:.2f}",
                      f"Episode length: {12 + k:.2f} +/- {8 + k / 10:.2f}"]
            if k % 4 == 1:
                lines.append("New best mean reward!")
    frame = _raw(_write(tmp_path, "train_log.txt", lines))
    steps, values = _curve(frame, "val_episode_reward")
    assert steps == [k * 5000 for k in range(1, 13)] * 2
    assert values[:3] == [10.0, 20.0, 30.0]
    lengths, _ = _curve(frame, "val_Episode_length")  # the evaluation's second line, at its step
    assert lengths == steps
    assert "val_num_timesteps" not in _names(frame)


def test_a_count_named_with_num_is_the_step(tmp_path):
    # a PPO script's evaluation log, three launches appended: `evaluate_num` starts at 1 in each
    lines = []
    for launch, n in enumerate((2, 3, 4)):
        for k in range(1, n + 1):
            lines += [f"2024-10-19 1{launch}:{k:02d}:31", f" evaluate_num:{k} \t average_reward:{100.0 * k + launch} \t",
                      f" best_score:{180.0 + k} \t"]
    frame = _raw(_write(tmp_path, "log.txt", lines))
    steps, values = _curve(frame, "average_reward")
    assert steps == [1, 2, 1, 2, 3, 1, 2, 3, 4]
    assert values[:3] == [100.0, 200.0, 101.0]
    assert "evaluate_num" not in _names(frame)


def test_stages_of_their_own_lengths_add_up_to_the_global_iteration(tmp_path):
    # a progressive GAN: 4,800 iterations at the first scale, 9,600 at each scale after it
    lines = ["Running PGAN", "size (4, 4)", "Changing alpha to 0.000"]
    for scale, last in ((0, 4800), (1, 9600), (2, 9600), (3, 3000)):
        if scale:
            lines += [f"size ({4 * 2 ** scale}, {4 * 2 ** scale})", "Changing alpha to 1.000"]
        for it in range(100, last + 1, 100):
            lines.append(f"[{scale} : {it:6d}] loss G : {1.5 + it / 1e5:.3f} loss D : {_loss(it // 100):.3f}")
    frame = _raw(_write(tmp_path, "train_log.txt", lines))
    steps, _ = _curve(frame, "loss_D")
    starts = {0: 0, 1: 4800, 2: 4800 + 9600, 3: 4800 + 2 * 9600}
    assert steps == [starts[s] + it for s, last in ((0, 4800), (1, 9600), (2, 9600), (3, 3000))
                     for it in range(100, last + 1, 100)]
    assert steps[-1] == 4800 + 2 * 9600 + 3000


def test_marian_logs_read_the_updates_the_rate_and_the_keys_after_it(tmp_path):
    train = ["[2022-12-02 09:46:22] [marian] Marian v1.11.0 f00d0621 2022-02-08 08:39:24 -0800",
             "[2022-12-02 09:46:22] [config] after: 0e", "[2022-12-02 09:46:22] [config] after-batches: 0",
             "[2022-12-02 09:46:22] [config] beam-size: 12", "[2022-12-02 09:46:22] [config] disp-freq: 100"]
    for i in range(1, 41):
        train.append(f"[2022-12-02 09:{10 + i // 4:02d}:{i % 60:02d}] Ep. {1 + i // 20} : Up. {i * 100} : "
                     f"Sen. {i * 4096:,} : Cost {_loss(i):.8f} : Time {40 + i % 7:.2f}s : "
                     f"{10000 + 13 * i:.2f} words/s : gNorm {1.2 + i / 100:.4f}")
        if i == 20:  # a relaunch prints its settings again
            train += ["[2022-12-02 10:01:00] [config] after-batches: 0", "[2022-12-02 10:01:00] [config] beam-size: 6"]
    frame = _raw(_write(tmp_path, "train.log", train))
    steps, costs = _curve(frame, "Cost")
    assert steps == [i * 100 for i in range(1, 41)] and costs[0] == _loss(1)
    assert _curve(frame, "words/s")[1][:2] == [10013.0, 10026.0]
    assert _curve(frame, "gNorm")[1][:2] == [1.21, 1.22]
    assert not {"beam-size", "after-batches", "Up", "update"} & _names(frame)

    valid = []
    for k in range(1, 9):
        for name, value in (("ce-mean-words", 2 - k / 20), ("bleu", 20 + k), ("perplexity", 7 - k / 4)):
            valid.append(f"[2022-12-02 10:{k:02d}:48] [valid] Ep. {k} : Up. {k * 2000} : {name} : {value:.5f} : "
                         f"{'new best' if k < 6 else f'stalled {k - 5} times (last best: 1.72)'}")
    frame = _raw(_write(tmp_path, "valid.log", valid))
    steps, values = _curve(frame, "val_ce-mean-words")
    assert steps == [k * 2000 for k in range(1, 9)] and values[0] == 1.95
    assert _curve(frame, "val_perplexity")[0] == steps


def test_sockeye_rates_parted_by_tabs_are_read(tmp_path):
    lines = [f"[2019-03-01 12:00:{i % 60:02d}:INFO:sockeye.training:__call__] Epoch[0] Batch [{i * 50}]\t"
             f"Speed: {410 + i:.2f} samples/sec {12600 + i:.2f} tokens/sec {2.0 + i / 100:.2f} updates/sec\t"
             f"perplexity={1000 / i:.6f}" for i in range(1, 31)]
    frame = _raw(_write(tmp_path, "log", lines))
    steps, values = _curve(frame, "perplexity")
    assert steps == [i * 50 for i in range(1, 31)] and values[0] == 1000.0
    assert _curve(frame, "updates/sec")[1][:2] == [2.01, 2.02]
    assert _curve(frame, "tokens/sec")[1][0] == 12601.0


def test_a_split_named_in_prose_names_its_curve(tmp_path):
    # Python logging as `%(asctime)s - %(levelname)s - %(name)s - %(pathname)s : %(funcName)s [%(lineno)d] - %(message)s`
    where = "/home/u/git/proj/trainer/trainer.py"
    lines = ["2021-05-09 23:40:09 - INFO - train - train.py : <module> [252] - ### starting train-procedure ###"]
    for e in range(1, 13):
        lines.append(f"2021-05-09 23:{e:02d}:35 - INFO - train - {where} : train_step [27] - Training train set - epoch {e}")
        for k, split in enumerate(("train", "valid", "test", "future")):
            lines.append(f"2021-05-09 23:{e:02d}:4{k} - INFO - train - {where} : train [228] - finished eval of "
                         f"epoch-{e} of {split}-set \t eval_loss={0.6 - e / 50 + k / 10:.2f}")
    frame = _raw(_write(tmp_path, "log_train.txt", lines))
    steps, values = _curve(frame, "val_eval_loss")
    assert steps == list(range(1, 13)) and values[0] == 0.68
    assert _curve(frame, "train_eval_loss")[1][0] == 0.58
    assert _curve(frame, "future_eval_loss")[0] == steps
    assert not {"train", "module", "train_step"} & _names(frame)


def test_a_split_word_alone_and_a_one_letter_timestep(tmp_path):
    lines = [f"[{{3667621017.py:45}} INFO - Epoch {e:4d}, trlast = {_loss(e):.4f}, val = {_loss(e) + 0.1:.4f}"
             for e in range(1, 31)]
    frame = _raw(_write(tmp_path, "log.txt", lines))
    assert _curve(frame, "val") == (list(range(1, 31)), [round(_loss(e) + 0.1, 4) for e in range(1, 31)])

    lines = []
    for stage, total in ((1, 250000), (2, 500000)):
        for t in range(25000, total + 1, 25000):
            lines.append(f"[2023-05-27T23:46:{t // 25000:02d}] T = {t} / {total} | env: env{stage}_Size5 | "
                         f"Avg. reward: {-200 + t / 5000:.1f} | Avg. Q: {-100 + t / 9000:.4f} | Avg. Overlap: 0.5")
    frame = _raw(_write(tmp_path, "results_log.txt", lines))
    steps, _ = _curve(frame, "reward")
    assert steps == list(range(25000, 250001, 25000)) + list(range(25000, 500001, 25000))


def test_a_settings_table_printed_again_with_one_change_is_no_record_table(tmp_path):
    # YOLOX prints its exp as a | keys | values | table at every launch; one launch changed print_interval
    settings = {"seed": "None", "print_interval": "10", "eval_interval": "10", "num_classes": "1", "depth": "0.33",
                "width": "0.5", "mosaic_prob": "1.0", "max_epoch": "300", "momentum": "0.9", "nmsthre": "0.65"}
    lines = []
    for launch in range(4):
        lines.append("2021-09-03 19:05:28.333 | INFO     | yolox.core.trainer:before_train:127 - exp value:")
        lines.append("-" * 40)
        lines.append("| keys             | values                     |")
        lines.append("-" * 40)
        for k, v in settings.items():
            v = "1" if (k == "print_interval" and launch == 3) else v
            lines.append(f"| {k:<16} | {v:<26} |")
        lines.append("-" * 40)
        for it in range(10, 48, 10):
            lines.append(f"2021-09-03 20:17:{it:02d}.976 | INFO     | yolox.core.trainer:after_iter:246 - epoch: "
                         f"{launch + 1}/300, iter: {it}/47, mem: 1491Mb, iter_time: 0.487s, total_loss: "
                         f"{_loss(launch * 4 + it // 10):.1f}, iou_loss: 1.9, lr: 7.073e-06, size: 640, ETA: 1:54:27")
    path = _write(tmp_path, "train_log.txt", lines)
    head = read_head(path, 4096)
    claimed = next(type(imp).__name__ for imp in registry.IMPORTERS if imp.claims(path, head))
    assert claimed == "TextLogImporter"
    (run,) = load_runs(path)
    names = set(run.frame.get_column("metric").cast(pl.String).unique())
    assert "total_loss" in names and "print_interval" not in names
