"""Layouts of console logs and trainer files that a person reads at a glance and the general
reader once missed, each written here in the layout of the code that prints it (never copied
from a real log): a record printed over several lines, relaunches whose batch count changed,
a step key printed on one engine line, a script's own counter beside an engine's steps,
argument dumps behind dotted leaders, and a results.txt fork with an extra loss column."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from spikelens import diagnostics
from spikelens.frame import infer_roles
from spikelens.importers.textlogs import TextLogImporter
from spikelens.importers.ultralytics import UltralyticsResultsTxtImporter

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read(path: Path) -> tuple[pl.DataFrame, dict]:
    imp = TextLogImporter()
    assert imp.claims_named(path, path.read_bytes()[:4096])  # as a file named on its own (`workerlog.0`)
    with diagnostics.collecting():
        (table,) = imp.read(path)
    assert table.meta["pattern"] == "console log"
    return table.frame, table.meta


def curve(frame: pl.DataFrame, metric: str) -> list[tuple[int, float]]:
    return frame.filter(pl.col("metric") == metric).select("step", "value").rows()


def launch_banner() -> list[str]:
    return ["Train samples: 19130", "Batch size: 2", "=" * 36, "START TRAINING", "start_epoch: 0", "max_epoch: 150",
            "=" * 36, "**** EPOCH 000 / 149 ****", "2026-03-11 17:43:36.884895",
            "[TRAIN] Epoch 000 started | lr=0.00950000"]


def test_a_record_over_several_lines_takes_the_counter_of_its_first_line(tmp_path):
    # print(f'[TRAIN] Epoch {e:03d} | batch {i:04d}/{n} ({p:5.1f}%) | {t:.3f}s/batch'), then one
    # print per running mean; a second launch is appended and starts again from batch 10
    out = []
    for launch, last in ((1, 60), (2, 40)):
        out += launch_banner()
        for i in range(10, last + 1, 10):
            out += [f"[TRAIN] Epoch 000 | batch {i:04d}/9565 ({100 * i / 9565:5.1f}%) | 0.195s/batch",
                    f"[TRAIN] mean acc: {0.1 + i / 1000:.6f}", f"[TRAIN] mean loss: {launch * 10 + 25 - i / 10:.6f}"]
    frame, meta = read(write(tmp_path, "log_train.txt", out))
    loss = curve(frame, "mean_loss")
    assert [s for s, _ in loss] == [10, 20, 30, 40, 50, 60, 10, 20, 30, 40]  # each record at its batch
    assert loss[0] == (10, pytest.approx(34.0)) and loss[6] == (10, pytest.approx(44.0))
    assert [s for s, _ in curve(frame, "mean_acc")] == [s for s, _ in loss]
    assert meta["plan.steps"] >= 149 * 9565  # the epochs times the batches: killed early in epoch 0
    roles = infer_roles(frame.get_column("metric").unique().to_list())
    assert roles["mean_loss"] == "loss" and roles["mean_acc"] == "accuracy"


def test_relaunches_that_count_other_batches_a_pass_are_all_read(tmp_path):
    # PaddleGAN's trainer line; the data set changed between launches (989 then 991 batches a
    # pass); a test run between launches prints its own counter and a loss line per sample
    def line(e: int, i: int, total: int, perceptual: float) -> str:
        return (f"[05/20 04:54:43] ppgan.engine.trainer INFO: Epoch: {e}/100, iter: {i}/{total} lr: 2.000e-04 "
                f"perceptual: {perceptual:.3f} equivariance_value: 0.136 batch_cost: 1.94709 sec "
                f"reader_cost: 0.52055 sec ips: 0.51359 images/s eta: 2 days, 5:29:07")
    out = ["[05/20 03:05:52] ppgan.engine.trainer INFO: Test iter: [0/512]", "Reconstruction loss: 0.3282874",
           "Reconstruction loss: 0.36119246"]
    out += [line(e, i, 989, 100 + e + i / 100) for e in (1, 2) for i in range(10, 50, 10)]
    out += ["[05/22 13:52:28] ppgan INFO: Configs: {'epochs': 100}"]
    out += [line(e, i, 991, 90 + e + i / 100) for e in (1, 2, 3) for i in range(10, 50, 10)]
    frame, meta = read(write(tmp_path, "workerlog.0", out))
    steps = [s for s, _ in curve(frame, "perceptual")]
    assert steps == [10, 20, 30, 40, 999, 1009, 1019, 1029] + [10, 20, 30, 40, 1001, 1011, 1021, 1031,
                                                                1992, 2002, 2012, 2022]
    assert meta["step.from"] == "epoch and counter"


def test_a_step_key_on_one_engine_line_does_not_give_every_record_its_step(tmp_path):
    # DeepSpeed logs `step=0, skipped=0, lr=[0.0]` once at start; HF's Trainer then prints a dict
    # per logging step with no step in it: the records count in their own order
    out = ["[2025-02-16 00:29:01,869] [INFO] [logging.py:96:log_dist] [Rank 0] step=0, skipped=0, lr=[0.0], "
           "mom=[(0.9, 0.999)]",
           "Linear(in_features=768, out_features=768, bias=False)", "Linear(in_features=768, out_features=768, bias=False)"]
    out += [f"{{'loss': {5 - k * 0.1:.4f}, 'grad_norm': 1.19, 'learning_rate': 3.9e-07, 'epoch': {k / 100:.2f}}}"
            for k in range(12)]
    out += ["{'train_runtime': 14003.7762, 'train_samples_per_second': 270.328, 'train_loss': 4.5, 'epoch': 0.12}"]
    frame, meta = read(write(tmp_path, "ds_pretrain.log", out))
    loss = curve(frame, "loss")
    assert [s for s, _ in loss] == list(range(12)) and loss[3][1] == pytest.approx(4.7)
    assert curve(frame, "train_loss") == [(11, 4.5)]  # the summary after the last record
    assert "out_features" not in frame.get_column("metric").to_list()  # the model's printout before training


def test_a_scripts_own_counter_beside_the_engines_steps(tmp_path):
    # the engine prints every second optimizer step (steps_per_print=2), the script every step
    out = []
    for s in range(1, 9):
        if s % 2 == 0:
            out.append(f"[2025-08-25 08:08:50,369] [INFO] [logging.py:107:log_dist] [Rank 0] step={s // 2}, "
                       f"skipped=0, lr=[1e-05], mom=[[0.8, 0.999]]")
        out.append(f"[Step {s}/100] Loss: {5.2 - s * 0.05:.4f} | Global Tokens/s: 347.48 | GPU Mem (GB): 25.21 "
                   f"| Peak Mem: 40.08")
    frame, meta = read(write(tmp_path, "zero_3.log", out))
    loss = curve(frame, "Loss")
    assert [s for s, _ in loss] == list(range(1, 9)) and loss[-1][1] == pytest.approx(4.8)
    assert meta["plan.steps"] == 100


def test_settings_behind_dotted_leaders_are_not_records(tmp_path):
    # DeepSpeed's `DeepSpeedConfig.print` and Megatron's argument dump, then the training lines
    out = ["[2025-02-16 16:20:08,702] [INFO] [config.py:1000:print]   aio_config ................... "
           "{'block_size': 1048576, 'queue_depth': 8, 'thread_count': 1, 'single_submit': False}",
           "[2025-02-16 16:20:08,702] [INFO] [config.py:1000:print]   zero_optimization_stage ...... 2",
           "  adam_beta1 ...................................... 0.9"]
    out += [f"step {s} | loss {3 - s * 0.1:.3f} | lr 1e-4" for s in range(1, 6)]
    frame, _ = read(write(tmp_path, "train.log", out))
    assert set(frame.get_column("metric").unique().to_list()) == {"loss", "lr"}
    assert [s for s, _ in curve(frame, "loss")] == [1, 2, 3, 4, 5]


def test_a_results_txt_fork_with_an_extra_loss_column(tmp_path):
    # yolov5-face's train.py: ('%10s' * 2 + '%10.4g' * 7) % (epoch/last, mem, box, obj, cls,
    # landmark, total, targets, img_size), then '%10.4g' * 7 % (P, R, mAP@.5, mAP@.5:.95, val box,
    # val obj, val cls): one column more than YOLOv5's, so every column after `cls` moves
    folder = tmp_path / "exp"
    folder.mkdir()
    rows = []
    for e in range(6):
        box, obj, cls, landmark = 0.11 - e * 0.01, 0.07 - e * 0.005, 0.0, 0.32 - e * 0.04
        s = ("%10s" * 2 + "%10.4g" * 7) % (f"{e}/29", "1.55G", box, obj, cls, landmark,
                                           box + obj + cls + landmark, 50 + e, 640)
        rows.append(s + "%10.4g" * 7 % (0.1 * e, 0.2 * e, 0.05 * e, 0.01 * e, 0.1, 0.09, 0.0))
    path = folder / "results.txt"
    path.write_text("\n".join(rows) + "\n")
    imp = UltralyticsResultsTxtImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    (table,) = imp.read(path)
    fr = table.frame
    total = curve(fr, "train/loss")
    assert [s for s, _ in total] == list(range(6)) and total[2][1] == pytest.approx(0.09 + 0.06 + 0.24, abs=1e-3)
    assert curve(fr, "train/col6_loss")[1][1] == pytest.approx(0.28)  # the landmark term, unnamed in the file
    assert curve(fr, "labels")[3][1] == 53 and curve(fr, "img_size")[0][1] == 640
    assert curve(fr, "metrics/mAP_0.5")[2][1] == pytest.approx(0.1)
    assert curve(fr, "val/obj_loss")[0][1] == pytest.approx(0.09)
    assert table.meta["plan.epochs"] == 30
    roles = infer_roles(fr.get_column("metric").unique().to_list())
    assert roles["train/loss"] == "loss" and roles["train/col6_loss"] == "loss" and roles["val/box_loss"] == "eval_loss"


def test_a_results_txt_whose_columns_add_up_to_no_total_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "results.txt"
    path.write_text("\n".join(("%10s" * 2 + "%10.4g" * 14) % (f"{e}/9", "1G", *[0.5 + e + k for k in range(14)])
                              for e in range(3)) + "\n")
    from spikelens.errors import FormatError
    with pytest.raises(FormatError, match="add up to no total column"):
        UltralyticsResultsTxtImporter().read(path)


@pytest.mark.parametrize("line, values, line_phase", [
    ("2023-05-15 22:50:17,398 INFO:Epoch 1: Train Loss=0.0717, Val Loss=0.0766",
     {"Train_Loss": "0.0717", "val_Loss": "0.0766"}, None),
    ("Val Loss=0.0766, Train Loss=0.0717, acc 0.5", {"val_Loss": "0.0766", "Train_Loss": "0.0717", "val_acc": "0.5"},
     "val"),
    ("2025-06-21 08:37:43,296 - INFO - Episode 0, Reward: 1.0, Loss: 0.2683, Avg Reward (100): 0.67",
     {"Reward": "1.0", "Loss": "0.2683", "Avg_Reward_100": "0.67"}, None),  # the episode counts the steps
    ("2026-06-26 08:05:34 | INFO    | Baseline | Episode   2000 | Avg reward (last 1000): +2.30 | Steps: 16",
     {"Avg_reward_last_1000": "+2.30", "Steps": "16"}, None),  # loguru's columns; the window said in words
    ("Epoch 0, Step 25, total used time 7.1781 (s), avg loss so far is 0.1097", {"avg_loss_so_far": "0.1097"}, None),
    ("2023-10-02 23:08:57,029 seg INFO: Iters: 10/20000 || Lr: 0.019992 || Task Loss: 3.2864 || KD Loss: 1.6073|| "
     "Cost Time: 0:00:20 || Estimated Time: 11:13:35", {"Lr": "0.019992", "Task_Loss": "3.2864", "KD_Loss": "1.6073"},
     None),
    ("2023-10-02 23:19:51,490 semantic_segmentation INFO: Sample: 1, Validation pixAcc: 0.009",
     {"Sample": "1", "val_pixAcc": "0.009"}, None),
])
def test_keys_a_person_reads(line, values, line_phase):
    from spikelens.importers.linetokens import tokenise

    t = tokenise(line)
    assert {n: line[s: s + k] for n, s, k in t.values} == values
    assert t.evaluation == line_phase


def test_train_and_validation_losses_on_one_line_per_epoch(tmp_path):
    out = [f"2023-05-15 22:50:{e:02d},398 INFO:Epoch {e}: Train Loss={0.07 - e * 0.001:.4f}, "
           f"Val Loss={0.08 - e * 0.001:.4f}" for e in range(1, 21)]
    frame, meta = read(write(tmp_path, "training.log", out))
    assert [s for s, _ in curve(frame, "Train_Loss")] == list(range(1, 21))
    assert curve(frame, "val_Loss")[4] == (5, pytest.approx(0.075))
    roles = infer_roles(frame.get_column("metric").unique().to_list())
    assert roles["Train_Loss"] == "loss" and roles["val_Loss"] == "eval_loss"


def test_what_was_not_read_is_said_by_the_shape_of_its_lines(tmp_path):
    from spikelens.errors import FormatError

    out = []
    for i in range(30):
        out.append(f"Epoch {i} finished after {i * 3} seconds with a mean of {i * 0.2:.2f} on the set")
        out.append(f"{i} {i * 0.5:.2f} {3 - i * 0.01:.3f}")
        if i % 3 == 0:
            out.append(f"  lr ............ {i}")
    path = write(tmp_path, "train.log", out)
    imp = TextLogImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    with pytest.raises(FormatError) as err:
        imp.read(path)
    msg = str(err.value)
    assert "\n" not in msg and "70 lines hold numbers but none is read" in msg
    assert "30 lines of prose (e.g. line 1 'Epoch 0 finished" in msg
    assert "30 lines whose numbers no key names (e.g. line 2 '0 0.00 3.000')" in msg
    assert "10 lines of settings behind dotted leaders (e.g. line 3 'lr ............ 0')" in msg


def test_an_ordinal_step_on_its_own_line_then_the_loss(tmp_path):
    # print('current step: %dth step' % step); print('batch loss:%s' % loss), a TF1 script
    out = ["start from 0"]
    for s in range(1, 31):
        out += [f"current step: {s}th step", f"batch loss:{4 - s * 0.01:.7f}"]
        if s % 10 == 0:
            out.append(f"model saved in file: ./ckpt/model.ckpt-{s} / {s} th step")
    frame, _ = read(write(tmp_path, "train.log", out))
    loss = curve(frame, "batch_loss")
    assert [s for s, _ in loss] == list(range(1, 31)) and loss[9][1] == pytest.approx(3.9)


def test_a_phase_word_and_a_loss_after_the_step_key(tmp_path):
    # minGPT's projects: print(f"iter_dt {dt * 1000:.2f}ms; iter {n}: train loss {loss:.5f}")
    out = [f"iter_dt {78.12 + s:.2f}ms; iter {s * 10}: train loss {2.3 - s * 0.01:.5f}" for s in range(20)]
    out.insert(5, "GPT claims that 12 + 34 = 46 but gt is 47")
    frame, _ = read(write(tmp_path, "adder.md", out))
    assert [s for s, _ in curve(frame, "train_loss")] == list(range(0, 200, 10))
    assert set(frame.get_column("metric").unique().to_list()) == {"train_loss", "iter_dt_ms"}


def test_a_tab_separated_table_whose_names_hold_spaces(tmp_path):
    # f.write('total loss\tscore loss\t...\n') once, then one row of numbers a logging interval
    out = ["total loss\tscore loss\tborder loss\tctc loss\t"]
    out += [f"{46 - k * 0.5:.6f}\t{0.25 - k * 0.001:.6f}\t0.176002\t{9.2 - k * 0.1:.6f}\t" for k in range(12)]
    frame, meta = read(write(tmp_path, "train_log.txt", out))
    assert meta["step.from"] == "order"
    total = curve(frame, "total_loss")
    assert [s for s, _ in total] == list(range(12)) and total[2][1] == pytest.approx(45.0)
    assert curve(frame, "ctc_loss")[1][1] == pytest.approx(9.1)


def _json_read(path: Path) -> pl.DataFrame:
    from spikelens.importers.jsonhistory import JsonHistoryImporter

    imp = JsonHistoryImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    (table,) = imp.read(path)
    return table.frame


def test_a_json_list_of_records_with_a_step_key(tmp_path):
    import json

    path = tmp_path / "training_log.json"
    path.write_text(json.dumps([{"step": s * 100, "train_loss": 4.75 - s * 0.1, "val_acc": s / 10, "epoch": s}
                                for s in range(5)]))
    frame = _json_read(path)
    assert curve(frame, "train_loss")[2] == (200, pytest.approx(4.55))
    assert [s for s, _ in curve(frame, "val_acc")] == [0, 100, 200, 300, 400]
    assert "epoch" not in frame.get_column("metric").to_list()  # a counter, no metric
    dets = tmp_path / "detections.json"  # a list of records with no step nor loss: not a history
    dets.write_text(json.dumps([{"image_id": 1, "category_id": 3, "bbox": [1, 2, 3, 4], "score": 0.9}]))
    from spikelens.importers.jsonhistory import JsonHistoryImporter
    assert not JsonHistoryImporter().claims(dets, dets.read_bytes())


def test_json_points_and_sacred_columns_a_metric(tmp_path):
    import json

    pairs = tmp_path / "scalars.json"  # {tag: [[step, value], ...]}, an eval tag every 20 updates
    pairs.write_text(json.dumps({"train/ep_return": [[u, 0.5 + u / 100] for u in range(1, 41)],
                                 "eval/success": [[u, 0.25] for u in range(20, 41, 20)]}))
    frame = _json_read(pairs)
    assert curve(frame, "train/ep_return")[9] == (10, pytest.approx(0.6))
    assert curve(frame, "eval/success") == [(20, 0.25), (40, 0.25)]
    sacred = tmp_path / "metrics.json"  # Sacred's FileStorageObserver: trainLoss twice an epoch
    sacred.write_text(json.dumps({
        "trainLoss": {"steps": list(range(6)), "values": [9.0, 8.0, 7.5, 7.0, float("nan"), 6.0],
                      "timestamps": [f"2020-07-10T23:08:3{k}.000000" for k in range(6)]},
        "validLoss": {"steps": [0, 1, 2], "values": [8.5, 7.8, 7.2], "timestamps": []}}))
    frame = _json_read(sacred)
    loss = frame.filter(pl.col("metric") == "trainLoss")
    assert loss.get_column("step").to_list() == list(range(6)) and loss.get_column("value").is_nan().sum() == 1
    assert loss.get_column("wall_time")[1] - loss.get_column("wall_time")[0] == pytest.approx(1.0)
    assert curve(frame, "validLoss")[2] == (2, pytest.approx(7.2))


def test_a_monitor_csv_whose_header_comment_has_a_space(tmp_path):
    # pytorch-a2c-ppo-acktr's bench.Monitor: '# {"t_start": ..., "env_id": ...} ' then r,l,t
    from spikelens.importers.sb3 import RlProgressImporter

    path = tmp_path / "0.monitor.csv"
    path.write_text('# {"t_start": 1551811846.0171442, "env_id": "HalfCheetah-v2"} \nr,l,t\n'
                    + "".join(f"{-700 + 50 * k:.6f},1000,{1.19 + k * 1.26:.6f}\n" for k in range(6)))
    imp = RlProgressImporter()
    assert imp.claims(path, path.read_bytes())
    (table,) = imp.read(path)
    reward = curve(table.frame, "episode/reward")
    assert [s for s, _ in reward] == [1000, 2000, 3000, 4000, 5000, 6000] and reward[2][1] == pytest.approx(-600)


def test_a_log_overwritten_in_place_starts_with_zeros(tmp_path):
    # Windows keeps the old length of a file rewritten in place as NUL bytes before the new text
    path = tmp_path / "training.log"
    text = "".join(f"step {s:5d} | loss {4.5 - s / 1000:.4f} | lr 2.99e-04 | 427 tok/s\r\n" for s in range(700, 900, 10))
    path.write_bytes(b"\x00" * 11000 + b" " * 300 + text.encode())
    frame, _ = read(path)
    loss = curve(frame, "loss")
    assert [s for s, _ in loss] == list(range(700, 900, 10)) and loss[0][1] == pytest.approx(3.8)


def test_a_run_killed_after_its_first_record(tmp_path):
    # nanoGPT's eval print (a fork logging bits per character), then the traceback that ended it
    out = ["Compiling the model...", "step 0: train loss 12.6510 BPC, val loss 12.6486 BPC",
           "Traceback (most recent call last):", '  File "train.py", line 300, in <module>',
           "    logits, loss = model(X, Y)", "torch.OutOfMemoryError: CUDA out of memory."]
    frame, meta = read(write(tmp_path, "output.log", out))
    assert curve(frame, "train_loss") == [(0, pytest.approx(12.651))]
    assert curve(frame, "val_loss") == [(0, pytest.approx(12.6486))]
    assert "OutOfMemoryError" in meta.get("plan.error", "")
