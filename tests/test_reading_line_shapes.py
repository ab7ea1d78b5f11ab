"""Line shapes the general reader learned in session 11, each a principle rather than a pattern,
each written here in the layout of the code that prints it (never copied from a real log):
numbers printed in their array type's repr, a number glued to the next key, ranks after `@` in a
name, a key that counts the records whatever its name, and an evaluation announced by a line of
its own whose lines print the training keys under a counter of another total."""
from __future__ import annotations

import pytest

from spikelens.frame import infer_roles
from spikelens.importers.linetokens import tokenise
from spikelens.stitching import main_metric

from conftest import curve, read_text_log as read  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_user_patterns")


@pytest.mark.parametrize("line, values", [
    # print(f"epoch {e} loss {loss} acc {acc}") with loss a CUDA tensor
    ("epoch 3 loss tensor(0.5012, device='cuda:0', grad_fn=<AddBackward0>) acc 0.91", {"loss": "0.5012", "acc": "0.91"}),
    ("Epoch: 3 Loss: tensor([0.5012], device='cuda:0')", {"Loss": "0.5012"}),
    # NumPy 2 prints a scalar as its type: print(f"loss: {np.float64(x)!r}")
    ("step 5 loss: np.float64(0.25) acc: np.float32(0.5)", {"loss": "0.25", "acc": "0.5"}),
    ("step 5 loss tf.Tensor(0.69, shape=(), dtype=float32)", {"loss": "0.69"}),
    # print("idx: " + str(i) + "loss: " + str(loss)): no space between a value and the next key
    ("idx: 12loss: tensor(-0.0138, grad_fn=<NegBackward>)", {"idx": "12", "loss": "-0.0138"}),
    # a rank or threshold after `@` is part of the name (DeiT's `* Acc@1 80.1 Acc@5 95.0`, COCO's mAP@0.5:0.95)
    ("* Acc@1 0.740 Acc@5 2.540 loss 7.148", {"Acc@1": "0.740", "Acc@5": "2.540", "loss": "7.148"}),
    ("mAP@0.5: 0.31 mAP@0.5:0.95: 0.2 loss 1.2", {"mAP@0.5": "0.31", "mAP@0.5:0.95": "0.2", "loss": "1.2"}),
    # a digit glued to a word that is not a linked key stays unread (`ground/3D: 0.5` is one key)
    ("box_IoU_ground/3D: 0.5 loss 3", {"box_IoU_ground/3D": "0.5", "loss": "3"}),
])
def test_wrapped_numbers_glued_keys_and_ranks_in_names(line, values):
    t = tokenise(line)
    assert {n: line[s: s + k] for n, s, k in t.values} == values


def test_a_key_that_rises_on_every_record_counts_them_whatever_its_name(tmp_path):
    # print(f"after cycle={c} avg(utility)={u} avg(num_wins)={w}"): no step word, the key counts
    out = [f"after cycle={c} avg(utility)={250 + (c * 37) % 90 + 0.5} avg(num_wins)={0.3 + (c % 5) / 20}"
           for c in range(0, 40)]
    frame, meta = read(tmp_path, "training.log", out)
    assert meta["step.from"] == "counter key after_cycle"
    assert "after_cycle" not in frame.get_column("metric").unique().to_list()
    got = curve(frame, "avg_utility")
    assert [s for s, _ in got] == list(range(40)) and got[3][1] == pytest.approx(250 + 111 % 90 + 0.5)
    # a model printout's widths rise on lines of their own keys but by no one stride: they count nothing
    model = [f"InstanceNorm2D(num_features={w}, momentum=0.9, epsilon={1e-5 * (i + 1):.6f})"
             for i, w in enumerate([16, 32, 64, 128, 256, 512])]
    frame, meta = read(tmp_path, "nohup.out", model + [f"PSNR: {20 + i / 10:.2f} SSIM: {0.5 + i / 100:.3f}"
                                                         for i in range(12)])
    got = [s for s, _ in curve(frame, "PSNR")]
    assert meta["step.from"] == "order" and got == list(range(got[0], got[0] + 12))
    # a value that rises but is no counter (a float, or printed on lines of its own) stays a metric
    out = [f"loss {1 / (i + 1):.4f} tokens_seen {i * 512 + 0.5}" for i in range(20)]
    frame, meta = read(tmp_path, "other.log", out)
    assert meta["step.from"] == "order" and "tokens_seen" in frame.get_column("metric").unique().to_list()


def test_a_tensor_loss_glued_to_its_index_is_read_by_the_index(tmp_path):
    out = [f"idx: {i}loss: tensor({-0.01 * (i % 7):.4f}, grad_fn=<NegBackward>)" for i in range(30)]
    frame, meta = read(tmp_path, "loss.txt", out)
    assert meta["step.from"] == "counter key idx"
    got = curve(frame, "loss")
    assert [s for s, _ in got] == list(range(30)) and got[6][1] == pytest.approx(-0.06)
    assert infer_roles(frame.get_column("metric").unique().to_list()) == {"loss": "loss"}


def test_an_announced_evaluation_with_its_own_counter_total_is_an_evaluation(tmp_path):
    # paddle.Model.fit's console (hapi ProgBarLogger): `Epoch e/E`, `step i/614 - loss: x - ...`
    # then `Eval begin...` and the same keys under the evaluation's own total `step i/88`
    out = ["The loss value printed in the log is the current step, and the metric is the average value."]
    for e in range(1, 4):
        out.append(f"Epoch {e}/10")
        out += [f"step {i:3d}/614 - loss: {1 / (e * 10 + i / 100):.4f} - auc: {0.5 + e / 20:.4f} - 3s/step"
                for i in range(10, 615, 100)]
        out.append(f"save checkpoint at /home/user/save/{e - 1}")
        out.append("Eval begin...")
        out += [f"step {i:2d}/88 - loss: {0.9 - e / 10 + i / 1000:.4f} - auc: {0.6 + e / 20:.4f} - 3s/step" for i in range(20, 89, 20)]
        out.append("Eval samples: 11219")
    frame, meta = read(tmp_path, "train.log", out)
    assert meta["step.from"] == "epoch and counter" and meta["plan.steps"] == 6140
    train = curve(frame, "loss")
    assert [s for s, _ in train] == [(e - 1) * 614 + i for e in range(1, 4) for i in range(10, 615, 100)]
    val = curve(frame, "val_loss")
    assert [s for s, _ in val] == [(e - 1) * 614 + 610 for e in range(1, 4) for _ in range(20, 89, 20)]
    assert val[0][1] == pytest.approx(0.82)
    roles = infer_roles(frame.get_column("metric").unique().to_list())
    assert roles["val_loss"] == "eval_loss" and roles["val_auc"] == "accuracy"
    assert main_metric(frame, roles) == "loss"


def test_an_announcement_followed_by_training_lines_marks_nothing(tmp_path):
    # `Validating...` printed, then the training loop goes on with the same counter: no evaluation block
    out = []
    for s in range(1, 30):
        out.append(f"step {s}/100 loss {1 / s:.4f}")
        if s % 10 == 0:
            out.append("Validating...")
    frame, meta = read(tmp_path, "train.log", out)
    assert [s for s, _ in curve(frame, "loss")] == list(range(1, 30))
    assert not [m for m in frame.get_column("metric").unique().to_list() if m.startswith("val")]


def _grouped_table(banner: bool, starts: int = 1) -> list[str]:
    """A training script's table whose column groups are set apart by `|`, its cells centred
    (`print('%-8s %-8s %-8s| %-6s %-7s %-15s| %-6s ...' % ...)`): a banner naming the groups, the
    names, a rule, a row per epoch; `starts` launches appended."""
    out = []
    for _ in range(starts):
        out += ["-" * 40 + " [START 2021-10-14 15:29:13] " + "-" * 40, "", "** start training here! **"]
        if banner:
            out.append(" " * 27 + "|------------ VALID -------------|----------- TRAIN -------------|"
                                  "------Accuracy------|------------|")
        out.append("lr       iter     epoch    | loss   top-1  top-2            | loss   top-1  top-2           "
                   "|    Current Best    | time       |")
        out.append("-" * 127)
        for e in range(12):
            out.append(f"{0.0001:<8} {e:<6.1f} {e:<10.1f}| {0.5 - e / 100:<6.3f} {80 + e / 10:<7.3f} {96:<15.3f}| "
                       f"{0.65 - e / 50:<6.3f} {66 + e:<7.3f} {95.4:<14.3f}|{80 + e / 10:^26.6f}|  0 hr {e:02d} min")
    return out


def test_a_table_of_pipe_grouped_columns_names_cells_by_group_and_order(tmp_path):
    frame, meta = read(tmp_path, "log_train.txt", _grouped_table(banner=True))
    names = set(frame.get_column("metric").unique().to_list())
    assert {"VALID_loss", "VALID_top-1", "TRAIN_loss", "TRAIN_top-1", "Accuracy_Current_Best"} <= names
    assert not {"time", "loss", "iter"} & names  # `0 hr 06 min` does not line up; iter counts the rows
    assert meta["step.from"] == "counter key iter"
    got = curve(frame, "TRAIN_loss")
    assert [s for s, _ in got] == list(range(12)) and got[5][1] == pytest.approx(0.55)
    assert curve(frame, "VALID_loss")[5][1] == pytest.approx(0.45)
    roles = infer_roles(sorted(names))
    assert roles["TRAIN_loss"] == "loss" and roles["VALID_loss"] == "eval_loss"
    assert main_metric(frame, roles) == "TRAIN_loss"


def test_pipe_grouped_columns_without_a_banner_tell_a_repeated_name_by_its_group(tmp_path):
    frame, _ = read(tmp_path, "log_train.txt", _grouped_table(banner=False, starts=2))
    got = curve(frame, "loss")
    assert len(got) == 24 and got[1][1] == pytest.approx(0.49)
    assert curve(frame, "loss_2")[1][1] == pytest.approx(0.63)


@pytest.mark.parametrize("line", [
    "| epoch 001 | loss 9.1 | ppl 540 |",  # fairseq: numbers in the groups
    "| key | value |",  # a markdown table of keys and values (`kvtables`)
])
def test_lines_with_pipes_that_are_no_grouped_header(line):
    from spikelens.importers.linetokens import pipe_header

    assert pipe_header(line) is None


def test_rows_of_labels_under_pipes_are_no_records():
    from spikelens.importers.linetokens import header_cells, table_row

    head = header_cells("  | Name  | Type | Params | Mode")  # Lightning's model summary
    assert head is not None and table_row("0 | model | GPT2 | 124 M  | train", head) is None
    assert table_row("1 | head  | Linear | 1.2 K | train", head) is None


@pytest.mark.parametrize("total, first, stated, plan", [
    (149, 0, None, 150),  # `EPOCH 000 / 149`: the last index of 150
    (99, 0, None, 100),  # YOLOv5's `0/99`
    (100, 0, None, 100),  # DINO's `Epoch: [0/100]`: the count
    (10, 1, None, 10),  # Keras' `Epoch 1/10`
    (9, 1, None, 9),  # a counter from 1 always prints the count
    (149, 0, 150, 150), (149, 0, 149, 149),  # the run's settings decide
])
def test_an_epoch_counter_from_zero_may_print_its_last_index(total, first, stated, plan):
    from spikelens.importers.linerecords import epoch_count

    assert epoch_count(total, first, stated) == plan


def test_a_zero_based_epoch_banner_and_its_stated_plan(tmp_path):
    # RandLA-Net's trainer: settings, `**** EPOCH %03d / %03d ****` % (epoch, max_epoch - 1), and each
    # record over three lines: the batch counter, then `mean acc`, then `mean loss`
    out = ["Train batches: 100", "Batch size: 2", "start_epoch: 0", "max_epoch: 150", "=" * 36]
    for e in range(2):
        out += [f"**** EPOCH {e:03d} / 149 ****", "2026-03-11 17:43:36.884895", f"[TRAIN] Epoch {e:03d} started"]
        for b in range(10, 101, 10):
            out += [f"[TRAIN] Epoch {e:03d} | batch {b:04d}/0100 ({b / 100:6.1%}) | 0.195s/batch",
                    f"[TRAIN] mean acc: {0.5 + b / 1000:.4f}", f"[TRAIN] mean loss: {3 - e - b / 100:.4f}"]
    frame, meta = read(tmp_path, "log_train.txt", out)
    assert meta["step.from"] == "epoch and counter" and meta["plan.steps"] == 150 * 100
    got = curve(frame, "mean_loss")
    assert [s for s, _ in got] == [e * 100 + b for e in range(2) for b in range(10, 101, 10)]
    assert got[-1][1] == pytest.approx(1.0)


def test_a_record_over_several_lines_is_of_the_phase_of_its_first_line(tmp_path):
    # WS-DAN's trainer: `Epoch: [e][i/N]\tTime ..\tLoss x (avg)` then its values a line each; the same
    # lines follow `Test: [i/M]\tTime ..\tLoss x (avg)` during the evaluation
    out = []
    for e in range(2):
        for i in range(0, 50, 10):
            loss = 13 - e - i / 100
            out += [f"Epoch: [{e}][{i}/50]\tTime 1.154 (1.408)\tLoss {loss:.4f} ({loss + 0.1:.4f})",
                    f"Prec@1     {e + i / 10:.3f} ({e:.3f})\tPrec@5     {e + i / 5:.3f} ({e:.3f})",
                    f"cos_sim_loss  {0.3 - i / 1000:.3f} ({0.3:.3f})"]
        for i in range(0, 40, 10):
            out += [f"Test: [{i}/40]\tTime 0.604 (0.604)\tLoss {5 - e + i / 100:.4f} ({5 - e:.4f})",
                    f"Prec@1     {50 + i:.3f} ({50:.3f})\tPrec@5     {60 + i:.3f} ({60:.3f})",
                    f"cos_sim_loss  {0.5 + i / 1000:.3f} ({0.5:.3f})"]
    frame, meta = read(tmp_path, "train.log", out)
    train = curve(frame, "cos_sim_loss")
    assert [s for s, _ in train] == [e * 50 + i for e in range(2) for i in range(0, 50, 10)]
    assert max(v for _, v in train) == pytest.approx(0.3)
    test = curve(frame, "val_cos_sim_loss")
    assert len(test) == 8 and min(v for _, v in test) == pytest.approx(0.5)
    roles = infer_roles(frame.get_column("metric").unique().to_list())
    assert main_metric(frame, roles) == "Loss" and roles["test_Loss"] == "eval_loss"


def test_a_file_of_evaluation_lines_only_is_read_by_them(tmp_path):
    # print(f"Epoch {epoch}: Val MAE = {mae}"): the script logs nothing else
    out = [f"Epoch {e}: Val MAE = {0.02 + (e % 4) / 1000}" for e in range(20)]
    frame, meta = read(tmp_path, "log.txt", out)
    assert meta["step.from"] == "epoch"
    got = curve(frame, "val_MAE")
    assert [s for s, _ in got] == list(range(20)) and got[5][1] == pytest.approx(0.021)


@pytest.mark.parametrize("line, values", [
    # print(f"训练次数：{n}Loss:{loss}"): a full-width colon, a key in Chinese, the value glued to the next key
    ("训练次数：12Loss:0.9131239652633667", {"训练次数": "12", "Loss": "0.9131239652633667"}),
    ("epoch：3，损失：0.52，准确率：0.91", {"损失": "0.52", "准确率": "0.91"}),
])
def test_keys_in_any_script_and_full_width_punctuation(line, values):
    t = tokenise(line)
    assert {n: line[s: s + k] for n, s, k in t.values} == values


def test_a_chinese_print_with_its_counter_glued_to_the_loss_key(tmp_path):
    out = ["nohup: ignoring input", "Load data..."]
    for e in range(1, 11):
        out += [f"-----第 {e} 轮训练开始-----", f"训练次数：{e}Loss:{1 - e / 50}"]
    frame, meta = read(tmp_path, "train.out", out)
    assert meta["step.from"] == "counter key 训练次数"
    assert curve(frame, "Loss") == [(e, pytest.approx(1 - e / 50)) for e in range(1, 11)]


def test_a_table_of_one_name_a_column_set_apart_by_pipes(tmp_path):
    # print(f"{'Epoch':>6} | {'TrainLoss':>9} | ... | {'Time':>6}") then a row per epoch, a note after the last cell
    out = ["Starting training — 50 epochs, batch=256", "",
           " Epoch | TrainLoss | TrainAcc |  ValLoss |  ValAcc |       LR |   Time", "-" * 70]
    for e in range(1, 13):
        note = "  ← best" if e % 3 == 0 else ""
        out.append(f"{e:>6} | {1 / e:>9.4f} | {50 + e:>7.2f}% | {0.9 - e / 100:>8.4f} | {60 + e:>6.2f}% | "
                   f"{0.001:>8.6f} | {19.6:>5.1f}s{note}")
    out += ["| class | gts | dets | recall | ap |", "| car | 100 | 200 | 0.500 | 0.400 |",
            "| bus | 10 | 20 | 0.100 | 0.200 |"]  # a table of labels and values: no records
    frame, meta = read(tmp_path, "train.log", out)
    assert meta["step.from"] == "epoch"
    assert [s for s, _ in curve(frame, "TrainLoss")] == list(range(1, 13))
    assert curve(frame, "ValLoss")[1][1] == pytest.approx(0.88) and curve(frame, "Time_s")[2][1] == pytest.approx(19.6)
    assert not {"recall", "ap", "gts"} & set(frame.get_column("metric").unique().to_list())
    roles = infer_roles(frame.get_column("metric").unique().to_list())
    assert roles["TrainLoss"] == "loss" and roles["ValLoss"] == "eval_loss"
    assert main_metric(frame, roles) == "TrainLoss"


def test_rows_of_bare_numbers_named_by_the_file_and_their_place(tmp_path):
    from spikelens.importers.barenumbers import BareNumbersImporter

    # writer.writerow([i, r1, r2]) for each episode, two launches appended: no header
    rows = [f"{i},{-50.5 - i},{-10.25 + i}" for i in range(30)] + [f"{i},{-40.5 - i},{-9.25 + i}" for i in range(10)]
    path = tmp_path / "rewards.csv"
    path.write_text("\n".join(rows) + "\n")
    imp = BareNumbersImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    (table,) = imp.read(path)
    assert table.meta["step.from"] == "the first column (it counts the rows)"
    got = curve(table.frame, "rewards_column2")
    assert [s for s, _ in got] == list(range(30)) + list(range(10)) and got[31][1] == pytest.approx(-41.5)
    assert infer_roles(["rewards_column2", "rewards_column3"]) == {"rewards_column2": "reward",
                                                                  "rewards_column3": "reward"}
    # columns whose first is no counter are all values; a row of another width is not this format
    path.write_text("\n".join(f"{0.5 + i / 10},{1.5 - i / 10}" for i in range(12)) + "\n")
    (table,) = imp.read(path)
    assert table.meta["step.from"] == "order" and set(table.frame.get_column("metric").unique().to_list()) == {
        "rewards_column1", "rewards_column2"}
    path.write_text("\n".join(["1,2,3"] * 11 + ["1,2"]) + "\n")
    assert not imp.claims(path, path.read_bytes()[:4096])


@pytest.mark.parametrize("xs", [[1000 * (i + 1) for i in range(12)],  # a loss saved every 1,000 steps
                                [1028, 1788, 2822, 3500, 4102, 5230, 6007, 6890, 7400, 8321, 9050, 9999]])  # frames
def test_a_first_column_of_whole_numbers_that_only_rise_is_the_step(tmp_path, xs):
    from spikelens.importers.barenumbers import BareNumbersImporter

    path = tmp_path / "losses.txt"  # np.savetxt(..., np.c_[steps, losses], delimiter=',')
    path.write_text("".join(f"{x:.18e},{5.0 - i / 10:.18e}\n" for i, x in enumerate(xs)))
    (table,) = BareNumbersImporter().read(path)
    assert curve(table.frame, "losses_column2") == [(x, pytest.approx(5.0 - i / 10)) for i, x in enumerate(xs)]
    assert "losses_column1" not in table.frame.get_column("metric").unique().to_list()
    # as found: no CSV reader takes its first row of numbers for a header
    from spikelens import api

    assert api.analyze(path, jobs=1).runs[0].metrics == {"losses_column2": "loss"}
    # whole numbers that fall as often as they rise are values (a count per episode), not the step
    path.write_text("".join(f"{x},{i}\n" for i, x in enumerate([3, 9, 2, 8, 1, 7, 4, 6, 5, 10, 2, 11])))
    (table,) = BareNumbersImporter().read(path)
    assert table.meta["step.from"] == "order" and "losses_column1" in table.frame.get_column("metric").to_list()


def test_espnet_counts_glued_to_their_words_and_phase_tags_inside_a_line(tmp_path):
    # ESPnet2's trainer through logging: `[host] DATE (trainer:453) INFO: 2epoch:train:1-10batch: k=v, ...`
    # and once an epoch `2epoch results: [train] k=v, ..., [valid] k=v, ...`
    out = []
    for e in range(1, 4):
        out.append(f"[host] 2020-04-05 16:34:54,278 (trainer:192) INFO: {e}/40epoch started. Estimated time to "
                   "finish: 7 minutes and 58.63 seconds")
        for b in range(1, 101, 10):
            loss = 60 / (e + b / 100)
            out.append(f"[host] 2020-04-05 16:34:56,315 (trainer:453) INFO: {e}epoch:train:{b}-{b + 9}batch: "
                       f"iter_time=0.006, forward_time=0.076, loss={loss:.3f}, loss_att={loss * 0.7:.3f}, "
                       f"acc={0.4 + e / 10:.3f}, lr_0=1.000e-03, train_time=0.203")
        out.append(f"[host] 2020-04-05 16:35:56,315 (trainer:328) INFO: {e}epoch results: [train] iter_time=0.006, "
                   f"loss={30 / e:.3f}, acc={0.4 + e / 10:.3f}, time=20.5 seconds, total_count=100, "
                   f"[valid] loss={35 / e:.3f}, acc={0.5 + e / 10:.3f}, cer=0.5, total_count=100")
    frame, meta = read(tmp_path, "train.log", out)
    assert meta["step.from"] == "step"
    names = set(frame.get_column("metric").unique().to_list())
    assert "trainer" not in names and {"val_loss", "val_acc", "val_cer", "loss_att"} <= names
    got = [s for s, _ in curve(frame, "loss_att")]
    assert got == [(e - 1) * 100 + b + 9 for e in range(1, 4) for b in range(1, 101, 10)]
    assert curve(frame, "val_loss") == [(100, pytest.approx(35.0)), (200, pytest.approx(17.5)),
                                        (300, pytest.approx(35 / 3, abs=1e-3))]
    roles = infer_roles(sorted(names))
    assert roles["val_loss"] == "eval_loss" and main_metric(frame, roles) == "loss"


@pytest.mark.parametrize("line, values", [
    # loguru's `{name}:{line}` location (YOLOX's trainer) and megabytes spelt `Mb`
    ("2021-08-10 12:34:56 | INFO | yolox.core.trainer:247 - epoch: 1/300, iter: 10/1848, mem: 5386Mb, "
     "total_loss: 15.4, lr: 1.172e-09", {"mem_mb": "5386", "total_loss": "15.4", "lr": "1.172e-09"}),
    # glog/absl's prefix (level, date, time, thread) is no value
    ("I0101 12:00:00.123456 140000 train.py:123] train/loss=2.3, train/lr=0.1", {"train/loss": "2.3", "train/lr": "0.1"}),
])
def test_logger_prefixes_of_more_loggers(line, values):
    t = tokenise(line)
    assert {n: line[s: s + k] for n, s, k in t.values} == values and t.unkeyed == 0


def test_a_step_printed_as_a_float_with_a_zero_fraction_counts(tmp_path):
    # Lightning's bar postfix logs every value as a float: `global_step=999.0`
    out = [f"Epoch {s // 50}: {s % 50 * 2:3d}%|###| {s % 50}/50 [00:10<00:30, 1.67it/s, loss={3 - s / 100:.3f}, v_num=0, "
           f"global_step={s}.0]" for s in range(1, 120)]
    frame, meta = read(tmp_path, "train.log", out)
    assert meta["step.from"] == "step"
    got = curve(frame, "loss")
    assert [s for s, _ in got] == list(range(1, 120)) and got[9][1] == pytest.approx(2.9)
    assert "global_step" not in frame.get_column("metric").unique().to_list()


def test_a_perceptual_term_is_a_loss():
    # PaddleGAN's FOMM: `perceptual: 102.6 equivariance_value: 0.2 ... generator_distill_loss: 0.01`
    roles = infer_roles(["perceptual", "equivariance_value", "generator_distill_loss", "loss_perceptual", "perceptual_weight"])
    assert roles["perceptual"] == "loss" and roles["loss_perceptual"] == "loss" and roles["perceptual_weight"] == "other"


def test_a_status_table_of_labelled_rows_is_no_record(tmp_path):
    from spikelens.importers.linetokens import header_cells, table_row

    # Ray Tune's trial table: a trial's name and status under their names; several trials a table
    head = header_cells("| Trial name            | status   | loc               |   iter |   total time (s) |"
                        "   ts |   reward |")
    assert head is not None
    assert table_row("| DQN_shogi_96499_00000 | RUNNING  | 10.0.0.177:612604 |      1 |          2.02404 | 1320 |"
                     "        0 |", head) is None


def test_an_epoch_printed_as_a_float_is_no_counter():
    # HF's console dicts: `'epoch': 1.0` on an evaluation line among training lines' 0.22, 0.43
    t = tokenise("{'eval_loss': 0.0012, 'eval_runtime': 16.8658, 'epoch': 1.0}")
    assert t.epoch is None and t.step is None


def test_rows_of_numbers_apart_by_spaces_or_an_underscore_and_a_word_tagging_the_series(tmp_path):
    from spikelens.importers.barenumbers import BareNumbersImporter

    imp = BareNumbersImporter()
    # f.write(f"{k:3d} {step:8d} {avg_reward:.1f}\n"): an evaluation count and the env step lead the row
    path = tmp_path / "rewards.txt"
    path.write_text("".join(f"{k:3d} {k * 1000:8d} {5 + (k % 7) / 2:.1f}\n" for k in range(40)))
    assert imp.claims(path, path.read_bytes()[:4096])
    (table,) = imp.read(path)
    assert table.meta["step.from"] == "column 2 (it counts the rows)"
    assert curve(table.frame, "rewards_column3")[:3] == [(0, 5.0), (1000, 5.5), (2000, 6.0)]
    assert set(table.frame.get_column("metric").unique().to_list()) == {"rewards_column3"}
    # f.write(f"{epoch}_{loss}\n")
    path = tmp_path / "train_loss.txt"
    path.write_text("".join(f"{e}_{2.0 / e}\n" for e in range(1, 16)))
    assert imp.claims(path, path.read_bytes()[:4096])
    (table,) = imp.read(path)
    assert curve(table.frame, "train_loss_column2")[:2] == [(1, 2.0), (2, 1.0)]
    # writer.writerow([epoch, it, loss, phase]): its iteration count starts again each epoch; two
    # phases share each iteration, one phase only opens each epoch
    rows = []
    for e in range(3):
        for it in range(6):
            if it < 2:
                rows.append(f"{e},{it},{100.0 - e - it}, warmup")
            else:
                rows += [f"{e},{it},{-1.0 - it / 10}, ascent", f"{e},{it},{2.0 + it / 10}, descent"]
    path = tmp_path / "losses.txt"
    path.write_text("\n".join(rows) + "\n")
    assert imp.claims(path, path.read_bytes()[:4096])
    (table,) = imp.read(path)
    assert table.meta["step.from"] == "the counting columns together"
    assert set(table.frame.get_column("metric").unique().to_list()) == {"losses_warmup", "losses_ascent",
                                                                        "losses_descent"}
    assert curve(table.frame, "losses_warmup")[:3] == [(0, 100.0), (1, 99.0), (6, 99.0)]
    assert curve(table.frame, "losses_ascent")[:2] == [(2, pytest.approx(-1.2)), (3, pytest.approx(-1.3))]
    assert infer_roles(["losses_ascent"])["losses_ascent"] == "loss"
    # words between the numbers are a text log's keys, not a tag: left to the text reader
    path.write_text("".join(f"{e} loss {1 / (e + 1)}\n" for e in range(12)))
    assert not imp.claims(path, path.read_bytes()[:4096])


def test_a_row_led_by_its_counters_name_counts_with_its_first_number(tmp_path):
    from spikelens.importers.barenumbers import BareNumbersImporter

    imp = BareNumbersImporter()
    path = tmp_path / "val_loss.txt"  # f.write(f"epoch {epoch}:{val_loss}\n")
    path.write_text("".join(f"epoch {e}:{600 / (e + 1)}\n" for e in range(20)))
    assert imp.claims(path, path.read_bytes()[:4096])
    (table,) = imp.read(path)
    assert curve(table.frame, "val_loss_column2")[:2] == [(0, 600.0), (1, 300.0)]
    # another word than a counter's name before the numbers is a text log's key: not this format
    path.write_text("".join(f"loss {e}:{600 / (e + 1)}\n" for e in range(20)))
    assert not imp.claims(path, path.read_bytes()[:4096])
