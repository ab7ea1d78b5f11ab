"""Structures a person reads in a log that no `key: value` pair spells out (issue #24): a
table's header row naming the numbers of the rows under it (YOLO's console, any aligned or
tab-separated table), a number inside a key (`last 100 episodes:`), a metric named before
the step it was taken at (`Total reward in global step 33: 1.37`), counters printed with
thousands separators, `nan.0`, a count behind a share (`94.9% (56/59)`) that is no step;
a JSON history of lists; a log pasted into a `.md` file named on the command line; a named
pattern that finds no loss giving way to the line structure; roles that stand for a loss
or a reward. Every fixture is written here, in the layout of the print statements."""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from spikelens import diagnostics
from spikelens.discover import find_sources, iter_runs
from spikelens.frame import infer_role, infer_roles
from spikelens.importers.jsonhistory import JsonHistoryImporter
from spikelens.importers.linetokens import header_cells, table_row, tokenise
from spikelens.importers.textlogs import TextLogImporter

E = "\x1b"


pytestmark = pytest.mark.usefixtures("no_user_patterns")


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read(path: Path):
    imp = TextLogImporter()
    assert imp.claims(path, path.read_bytes()[:4096]) or imp.claims_named(path, path.read_bytes()[:4096])
    with diagnostics.collecting():
        tables = imp.read(path)
    (table,) = tables
    return table.frame, table.meta


def curve(frame: pl.DataFrame, metric: str) -> dict[int, float]:
    return dict(frame.filter(pl.col("metric") == metric).select("step", "value").iter_rows())


def yolo_console(epochs: int, batches: int, bars: bool) -> list[str]:
    """An Ultralytics-style console: `%11s` header rows, right-aligned value rows with a bar
    after them (redrawn with `\\r` and an ANSI erase when `bars`), a validation table."""
    names = ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances", "Size")
    lines = ["Starting training for 100 epochs...", ""]
    for e in range(1, epochs + 1):
        lines.append(("%11s" * 7) % names)
        row = ""
        for i in range(1 if bars else batches, batches + 1):
            cells = ("%11s" * 2 + "%11.4g" * 5) % (f"{e}/{epochs}", f"{2 + e / 100:.3g}G", 2 - e / 10 - i / 1000,
                                                   1.5, 1.2, 7, 640)
            row += ("\r" + E + "[K" if bars else "") + f"{cells}: {100 * i // batches}% ━━━━ {i}/{batches} 1.5it/s 4:25"
        lines.append(row)
        lines.append(("%22s" + "%11s" * 6) % ("Class", "Images", "Instances", "Box(P", "R", "mAP50", "mAP50-95)")
                     + f": 100% ━━━━ 4/4 1.5it/s 3.0s")
        lines.append(("%22s" + "%11i" * 2 + "%11.3g" * 4) % ("all", 240, 218, 0.5, 0.4, 0.3 + e / 100, 0.2))
        lines.append("")
    return lines


@pytest.mark.parametrize("bars", [False, True])
def test_a_table_header_row_names_the_numbers_under_it(tmp_path, bars):
    frame, meta = read(write(tmp_path, "train.log", yolo_console(epochs=5, batches=3, bars=bars)))
    box = curve(frame, "box_loss")
    # the step: the epoch composed with the bar's counter after the row (3 batches an epoch); a row the
    # bar redrew with `\r` is its last redraw, as a terminal shows it (`redraws`), at the bar's total: the epoch
    want = {(e if bars else (e - 1) * 3 + 3): 2 - e / 10 - 3 / 1000 for e in range(1, 6)}
    assert box == pytest.approx(want)
    assert curve(frame, "GPU_mem_G")[1 if bars else 3] == pytest.approx(2.01)
    assert curve(frame, "mAP50")[5 if bars else 15] == pytest.approx(0.35)  # the validation row, under its own header
    assert {"Images", "Box_P", "R", "mAP50-95", "cls_loss", "dfl_loss"} <= set(frame.get_column("metric").unique())
    assert infer_role("box_loss") == "loss" and infer_role("mAP50") == "accuracy"
    assert meta["step.from"] == ("epoch" if bars else "epoch and counter")


def test_a_tab_separated_table_under_one_header_row(tmp_path):
    lines = ["training a model", "epoch\ttrain_loss\tval_loss\taccuracy"]
    lines += [f"{e}\t{3 - e / 10:.4f}\t{3.1 - e / 20:.4f}\t{e / 30:.3f}" for e in range(1, 21)]
    frame, meta = read(write(tmp_path, "history.txt", lines))
    assert curve(frame, "train_loss") == pytest.approx({e: 3 - e / 10 for e in range(1, 21)})
    assert curve(frame, "val_loss")[20] == pytest.approx(2.1) and meta["step.from"] == "epoch"


def test_table_rows_and_headers_that_do_not_line_up_are_not_joined():
    head = header_cells(("%11s" * 4) % ("Epoch", "loss", "acc", "lr"))
    assert [n for n, _, _ in head] == ["Epoch", "loss", "acc", "lr"]
    assert table_row(("%11s" * 4) % ("3/10", "0.5", "0.9", "0.01"), head).values[0][0] == "loss"
    assert table_row(("%9s" * 4) % ("3/10", "0.5", "0.9", "0.01"), head) is None  # other columns
    assert header_cells("Starting training for 100 epochs...") is None  # a sentence
    assert header_cells("Model has 124 M parameters") is None


def test_a_number_inside_a_key_and_a_metric_named_before_its_step(tmp_path):
    lines = ["Built and compiled the network!"]
    for k in range(1, 31):
        lines.append(f"Avg learning reward last 100 episodes: {k / 10:.4f}")
        if k % 5 == 0:
            lines += [f"Step {k * 10000}", f"Avg Q value: {k / 100:.4f} Avg testing reward: {k / 20:.4f}"]
    frame, _ = read(write(tmp_path, "dqn.txt", lines))
    rewards = frame.filter(pl.col("metric") == "reward_last_100_episodes").get_column("value").to_list()
    assert rewards == pytest.approx([k / 10 for k in range(1, 31)])
    assert infer_role("reward_last_100_episodes") == "reward"
    t = tokenise("Total reward in global step 33: 1.3682")
    assert [n for n, _, _ in t.values] == ["Total_reward"] and t.step[0] == "step"
    lines = [f"Global-step {s} --Accept update with alpha=1.0, kl={s / 1e9:.3e}, old=0.5, new=0.4" for s in range(40)]
    lines += [f"Total reward in global step {s}: {s / 10:.3f}" for s in (9, 19, 29, 39)]
    frame, _ = read(write(tmp_path, "trpo.log", lines))
    assert curve(frame, "Total_reward") == pytest.approx({9: 0.9, 19: 1.9, 29: 2.9, 39: 3.9})
    assert infer_role("Total_reward") == "reward" and curve(frame, "kl")[10] == pytest.approx(1e-8)


def test_separated_counters_nan_spellings_and_a_count_behind_a_share(tmp_path):
    lines = [f"2026-03-03 10:37:48,868 INFO: [Model..][epoch:{s // 500:3d}, iter:{s:>9,}, lr:(5.000e-04,)] "
             f"[eta: 2 days, 17:41:47, time (data): 0.612 (0.023)] l_pix: {1 / s:.4e} l_freq: 2.1e-01"
             for s in range(100, 3001, 100)]
    frame, _ = read(write(tmp_path, "train_sr.log", lines))
    assert sorted(curve(frame, "l_pix")) == list(range(100, 3001, 100))  # 1,000 is step 1000, not 1
    assert infer_roles(["l_pix", "l_freq", "lr"]) == {"l_pix": "loss", "l_freq": "loss", "lr": "lr"}
    t = tokenise("Epoch 0:   1%|  | 1/100 [00:49<1:22:02,  0.02it/s, v_num=45, train_loss_step=nan.0]")
    assert [n for n, _, _ in t.values if n == "train_loss_step"] == ["train_loss_step"]
    lines = [f"  Epoch {e}/3 | Step {s}/1000 | Loss: {2 - e / 10 - s / 10000:.4f} | Accuracy: {50 + e:.1f}%"
             for e in (1, 2, 3) for s in range(100, 1001, 100)]
    lines += ["  Overall Accuracy: 77.20% (386/500)", "    Trouser        :  98.0% (48/49)"]
    frame, meta = read(write(tmp_path, "cnn.txt", lines))
    assert len(curve(frame, "Loss")) == 30 and max(curve(frame, "Loss")) == 3000  # the loop's counter, not 48/49
    assert meta["step.from"] == "epoch and counter"


def test_a_json_history_of_lists(tmp_path):
    keras = tmp_path / "history.json"
    keras.write_text(json.dumps({"loss": [2.0, 1.5, float("nan"), 1.0], "val_loss": [2.1, 1.7, 1.4, None]}))
    imp = JsonHistoryImporter()
    assert imp.claims(keras, keras.read_bytes()[:4096])
    (t,) = imp.read(keras)
    loss = curve(t.frame, "loss")
    assert list(loss) == [0, 1, 2, 3] and loss[3] == 1.0 and loss[2] != loss[2]  # NaN kept
    assert curve(t.frame, "val_loss") == {0: 2.1, 1: 1.7, 2: 1.4}  # null: not logged
    hand = tmp_path / "metrics.json"
    hand.write_text(json.dumps({"step_losses": [float(10 - i / 10) for i in range(60)],
                                "epoch_losses": [9.0, 7.0, 5.0], "steps": list(range(100, 160)),
                                "epochs": [1, 2, 3]}, indent=2))
    (t,) = imp.read(hand)
    assert curve(t.frame, "epoch_losses") == {119: 9.0, 139: 7.0, 159: 5.0}  # the end of each epoch's share
    assert min(curve(t.frame, "step_losses")) == 100 and set(t.frame.get_column("metric").unique()) == {
        "step_losses", "epoch_losses"}  # the counters are no metrics
    (run,) = iter_runs([str(hand)])
    assert infer_roles(run.frame.get_column("metric").unique().to_list())["step_losses"] == "loss"
    assert not imp.claims(tmp_path / "cfg.json", b'{"lr": 0.1, "layers": [1, 2]}')


def test_a_log_pasted_into_a_markdown_file_is_read_when_named(tmp_path):
    lines = ["# logs", "```", "--- resnet18 on CIFAR10 ---"]
    lines += [f"Epoch {e:02d} loss {3 - e / 10:.4f} | train 3.2s" for e in range(1, 21)] + ["```"]
    path = write(tmp_path, "log_cifar10.md", lines)
    (source,) = find_sources([str(path)])
    assert source.importer.name == "text"
    frame, _ = read(path)
    assert curve(frame, "loss") == pytest.approx({e: 3 - e / 10 for e in range(1, 21)})
    assert find_sources([str(tmp_path)]) == []  # a folder's walk takes no .md for a log


def test_a_named_pattern_with_no_loss_gives_way_to_the_line_structure(tmp_path):
    lines = []
    for s in range(1, 4):  # the engine's line, then the script's own, each step
        lines += [f"[2025-08-15 10:57:{s:02d},560] [INFO] [logging.py:107:log_dist] [Rank 0] step={s}, skipped=0, "
                  f"lr=[1e-05], mom=[0.9]",
                  f"[Step {s}/100] Loss: {5.2 - s / 10:.4f} | Global Tokens/s: 154.92 | GPU Mem (GB): 59.55"]
    path = write(tmp_path, "zero_3.log", lines)
    assert TextLogImporter().pattern_for(path) is not None  # DeepSpeed's engine lines match
    frame, _ = read(path)
    assert curve(frame, "Loss") == pytest.approx({1: 5.1, 2: 5.0, 3: 4.9})


def test_objectives_that_are_no_loss_by_name():
    assert infer_role("test/success_rate") == "reward" and infer_role("success") == "reward"
    assert infer_roles(["min_distance"]) == {"min_distance": "loss"}  # the only objective: lower is better
    assert infer_roles(["min_distance", "loss"])["min_distance"] == "other"
    assert infer_roles(["l_pix", "loss"])["l_pix"] == "other"  # only when no loss is named


def test_a_label_names_the_pairs_after_it(tmp_path):
    lines = [f"[Epoch {e}/30, Batch {b}/7329] [Losses: x {0.27 - b / 1000:.6f}, y 0.254906, conf 4.368177, "
             f"total {15 - b / 10:.6f}, recall: {b / 100:.5f}, precision: 0.00012]" for e in (0, 1) for b in range(20)]
    frame, meta = read(write(tmp_path, "log_train.txt", lines))
    assert {"Losses_x", "Losses_y", "Losses_conf", "Losses_total", "recall", "precision", "epoch"} == set(
        frame.get_column("metric").unique())
    assert curve(frame, "Losses_total")[7329 + 5] == pytest.approx(14.5)
    assert infer_role("Losses_total") == "loss" and infer_role("recall") == "accuracy"
    t = tokenise("mode: train, loss 0.3")
    assert [n for n, _, _ in t.values] == ["loss"]  # a word that is no pair's key starts no group
    assert [n for n, _, _ in tokenise("Validation: loss 2.1 acc 0.9").values] == ["val_loss", "val_acc"]


def test_an_error_rate_beside_a_reward_is_no_loss():
    roles = infer_roles(["reward", "judge_err", "valid_action"])
    assert roles["reward"] == "reward" and roles["judge_err"] == "other"


def test_records_before_the_first_epoch_banner_belong_to_the_epoch_before_it(tmp_path):
    lines = []
    for e in range(1, 6):
        if e > 1:  # the capture starts after `Epoch 1/5` was printed
            lines.append(f"Epoch {e}/5")
        lines.append(f"100/100 ━━━━━━━━━━━━━━━━━━━━ 31s 46ms/step - accuracy: 0.{80 + e} - loss: {1 - e / 10:.4f} - "
                     f"val_accuracy: 0.{81 + e} - val_loss: {1.1 - e / 10:.4f}")
    # an evaluation bar, then a summary printed once: it follows that bar, but is no training record
    lines += ["done fitting", "30/30 ━━━━━━━━━━━━━━━━━━━━ 2s 16ms/step", "{'accuracy': 0.88, 'precision': 0.87}"]
    frame, meta = read(write(tmp_path, "fit.txt", lines))
    assert curve(frame, "loss") == pytest.approx({e * 100: 1 - e / 10 for e in range(1, 6)})
    assert meta["step.from"] == "epoch and counter"
