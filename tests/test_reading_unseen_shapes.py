"""Shapes of training logs from tools nobody here had met (session 10's reading pool: a hundred
logs outside the corpus), each written here in the layout of the code that prints it, never
copied: pairs glued by commas, a logger's path before a key, a table under a logger's prefix
that goes on after an evaluation table, a bare `total` and a name its loss terms extend, runs
that name no loss, and numbers every record would share (a setting, a finished bar) that count
nothing."""
from __future__ import annotations


import polars as pl
import pytest

from spikelens import diagnostics
from spikelens.frame import infer_roles
from spikelens.importers.linetokens import tokenise
from spikelens.importers.textlogs import TextLogImporter
from spikelens.stitching import main_metric

from conftest import curve, read_text_log as read  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_user_patterns")


@pytest.mark.parametrize("line, values", [
    # print(f"kl:{kl:.5f},lr_multiplier:{m:.3f},loss:{loss},entropy:{ent}"): no space after the commas
    ("kl:0.01113,lr_multiplier:1.000,loss:5.315903186798096,entropy:4.372379302978516",
     {"kl": "0.01113", "lr_multiplier": "1.000", "loss": "5.315903186798096", "entropy": "4.372379302978516"}),
    ("Iteration: 0007338, Generator Learning Rate: 0.0001516,Generator Loss : 0.290, Discriminator Loss : 1.851",
     {"Generator_Learning_Rate": "0.0001516", "Generator_Loss": "0.290", "Discriminator_Loss": "1.851"}),
    # TF1's estimator through absl logging: `LEVEL:logger:message`
    ("INFO:tensorflow:loss = 0.08956495, step = 2600 (144.216 sec)", {"loss": "0.08956495", "step_s": "144.216"}),
    ("INFO:tensorflow:  eval_loss = 0.7216634", {"eval_loss": "0.7216634"}),
    ("losses: 1,100 tokens, lr: 0.1", {"losses": "1,100", "lr": "0.1"}),  # a thousands separator stays one
])
def test_glued_pairs_and_a_loggers_path_before_the_key(line, values):
    t = tokenise(line)
    assert {n: line[s: s + k] for n, s, k in t.values} == values


def test_a_table_under_a_loggers_prefix_goes_on_after_an_evaluation_table(tmp_path):
    # logger.info(('%8s%12s' + '%10s' * 6) % ('Epoch', 'Batch', 'box', 'conf', 'id', 'total', 'nTargets', 'time'))
    # once, then a row per 40 batches, and an evaluation table with its own header after each epoch
    head = "2021-01-25 05:58:00 [INFO]: " + ("%8s%12s" + "%10s" * 6) % (
        "Epoch", "Batch", "box", "conf", "id", "total", "nTargets", "time")
    out = [head, "dataset summary", "=" * 40]
    total = 100.0
    for e in range(3):
        for b in range(0, 165, 40):
            total *= 0.97
            out.append("2021-01-25 05:58:59 [INFO]: " + ("%8s%12s" + "%10.3g" * 4 + "%10d%10.3g") % (
                f"{e}/29", f"{b}/165", total / 500, total / 50, total / 5, total, 83, 59.6))
        out += ["%11s%11s%11s%11s%11s" % ("Image", "Total", "P", "R", "mAP"),
                "%11d%11d%11.3g%11.3g%11.3g%11s" % (32, 30353, 0.01 * e, 0.02 * e, 0.01 * e, "2.14s")]
    frame, meta = read(tmp_path, "log_train.txt", out)
    got = curve(frame, "total")
    assert meta["step.from"] == "epoch and counter"
    assert [s for s, _ in got] == [e * 165 + b for e in range(3) for b in range(0, 165, 40)]
    assert got[0][1] == pytest.approx(97.0) and got[-1][1] == pytest.approx(100 * 0.97 ** 15, rel=1e-2)
    roles = infer_roles(frame.get_column("metric").unique().to_list())
    assert roles["total"] == "loss" and roles["mAP"] == "accuracy"
    assert main_metric(frame, roles) == "total"


def test_a_bare_total_and_the_name_its_loss_terms_extend():
    yolo = infer_roles(["gpu_mem_G", "box", "obj", "cls", "total", "labels"])  # YOLOv5/v7's console table
    assert yolo["total"] == "loss" and yolo["box"] == "other"
    crf = infer_roles(["L", "L_crf", "L_selection", "it/s"])  # tqdm: `L: 10.76, L_crf: 9.11, L_selection: 1.65`
    assert crf["L"] == "loss" and crf["L_crf"] == "loss"
    assert infer_roles(["train", "train_loss"])["train"] == "other"  # one loss term extends it: no total
    assert infer_roles(["total", "loss"])["total"] == "other"  # a run that names its loss: total is a count
    assert infer_role_of("Train-SmoothL1") == "loss"  # MXNet's detection metric


def infer_role_of(name: str) -> str:
    return infer_roles([name, "Train-Acc"])[name]


def test_a_run_that_names_no_loss_is_judged_by_its_objective():
    def frame(points: dict[str, int]) -> pl.DataFrame:
        return pl.DataFrame({"metric": [m for m, n in points.items() for _ in range(n)],
                             "value": [1.0 for n in points.values() for _ in range(n)]})

    # MXNet's Speedometer: `Epoch[0] Batch [20]  Speed: 51.2 samples/sec  Train-accuracy=0.52`
    mx = frame({"Speed_samples/sec": 40, "Train-accuracy": 38})
    assert main_metric(mx, infer_roles(mx.get_column("metric").unique().to_list())) == "Train-accuracy"
    rl = frame({"Episode": 60, "Avg_Final_Score_100": 60, "Avg_Reward_100": 60, "Total_Timesteps": 60})
    assert main_metric(rl, infer_roles(rl.get_column("metric").unique().to_list())) == "Avg_Reward_100"
    ev = frame({"lr": 90, "val_loss": 10, "val_acc": 10})  # only the evaluation loss: it, not the LR
    assert main_metric(ev, infer_roles(ev.get_column("metric").unique().to_list())) == "val_loss"
    tot = frame({"Loc_Loss": 50, "Cls_Loss": 50, "Tot_Loss": 50})  # `Loc Loss: 0.29,Cls Loss: 0.54,Tot Loss: 0.42`
    assert main_metric(tot, infer_roles(tot.get_column("metric").unique().to_list())) == "Tot_Loss"


def test_a_setting_every_record_would_share_is_no_step(tmp_path):
    # print(f'batch = {len(loader)}') once, then per epoch a banner and the epoch's means
    out = ["Start training...", "batch = 405"]
    for e in range(8):
        out += [f"Epoch {e}/69", "-" * 10, f"train Loss: {1.0 - e * 0.05:.4f} Reg: 0.0000 Acc: {0.1 * e:.4f}", ""]
    frame, meta = read(tmp_path, "train.log", out)
    assert meta["step.from"] == "epoch"
    assert curve(frame, "train_Loss") == [(e, pytest.approx(1.0 - e * 0.05)) for e in range(8)]


def test_a_finished_bar_before_each_epochs_summary_is_no_step(tmp_path):
    # tqdm's bar to stderr (\r between updates) and the summary printed right after its last update
    out = []
    for e in range(6):
        bar = "\r".join(f"{100 * i // 50:3d}%|#####| {i}/50 [00:01<00:00, 40.00it/s]" for i in range(0, 51, 10))
        out.append(f"{bar}epoch {e:3d} | train_loss: {2.0 - 0.1 * e:.5f} | acc_day: {0.5 + 0.05 * e:.5f}")
    frame, meta = read(tmp_path, "train.log", out)
    assert meta["step.from"] == "epoch"
    assert curve(frame, "train_loss") == [(e, pytest.approx(2.0 - 0.1 * e)) for e in range(6)]


def test_a_file_of_bare_numbers_is_named_by_its_file(tmp_path):
    from spikelens.importers.barenumbers import BareNumbersImporter
    from spikelens.importers.base import read_head
    from spikelens.importers.registry import IMPORTERS

    losses = [21.28 * 0.9 ** i for i in range(30)] + [float("nan")]
    path = tmp_path / "loss.txt"
    path.write_text("\n".join(str(v) for v in losses) + "\n\n", encoding="utf-8")  # f.write(f'{loss}\n')
    first = next(imp for imp in IMPORTERS if imp.claims(path, read_head(path)))
    assert isinstance(first, BareNumbersImporter)
    (table,) = first.read(path)
    got = table.frame.select("step", "metric", "value").rows()
    assert [s for s, _, _ in got] == list(range(31)) and {m for _, m, _ in got} == {"loss"}
    assert got[1][2] == pytest.approx(21.28 * 0.9) and got[-1][2] != got[-1][2]  # NaN kept
    assert infer_roles(["loss"])["loss"] == "loss"
    data = tmp_path / "data.txt"  # a file whose name says nothing: its numbers may be anything
    data.write_text("\n".join(str(v) for v in losses) + "\n", encoding="utf-8")
    assert not BareNumbersImporter().claims(data, read_head(data))
    mixed = tmp_path / "rewards.txt"  # not one number a line: left to the text reader
    mixed.write_text("\n".join(["1.0"] * 12 + ["episode 12 reward 3.0"]) + "\n", encoding="utf-8")
    assert not BareNumbersImporter().claims(mixed, read_head(mixed))


@pytest.mark.parametrize("line", [
    "Namespace(batch_size=4, data_path='../data/STS-B/', device='cpu', dropout=0.15, lr=3e-05)",  # print(args)
    "hyperparameters: lr0=0.01, lrf=0.1, momentum=0.937, weight_decay=0.0005",  # YOLOv5/v7's colorstr line
    "config: {'lr': 0.1, 'epochs': 10, 'batch_size': 32}",
])
def test_a_runs_settings_printed_whole_are_no_record(line):
    t = tokenise(line)
    assert t.setting and t.values == []


def test_a_range_of_batches_counts_up_to_its_end(tmp_path):
    # MXNet's Speedometer: `Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec\t%s=%f`, its window reset each epoch
    out = []
    for e in range(3):
        for b in range(20, 101, 20):
            out.append(f"INFO - Epoch[{e}] Batch [{b - 20}-{b}]\tSpeed: 25.7{b % 7} samples/sec\t"
                       f"RPNL1Loss={0.5 - 0.01 * (e * 5 + b // 20):.6f}\tRPNAcc={0.9 + 0.001 * b:.6f}")
    frame, meta = read(tmp_path, "train.log", out)
    steps = [s for s, _ in curve(frame, "RPNL1Loss")]
    assert steps == sorted(steps) and len(set(steps)) == 15  # the window's end, per epoch on one axis
    assert steps[:5] == [20, 40, 60, 80, 100]


def test_a_count_that_starts_again_each_epoch_beside_relaunches(tmp_path):
    # print(f'epoch {e}, iter {i}, avg. loss {l:.2f}, ...'): the iteration count starts again each epoch;
    # the first launch died in epoch 0 at iter 3000 and the second one started over
    out = [f"epoch 0, iter {i}, avg. loss {234.9 - i / 1e4:.2f}, avg. ppl 2374642.56" for i in (1000, 2000, 3000)]
    for e in range(3):
        out += [f"epoch {e}, iter {i}, avg. loss {230 - e - i / 1e4:.2f}, avg. ppl 2374642.56"
                for i in range(1000, 4001, 1000)]
    frame, meta = read(tmp_path, "log.txt", out)
    steps = [s for s, _ in curve(frame, "loss")]
    assert meta["step.from"] == "step"
    assert steps == [1000, 2000, 3000] + [e * 4000 + i for e in range(3) for i in range(1000, 4001, 1000)]


def test_a_csv_of_epoch_and_batch_counts_each_epochs_batches(tmp_path):
    from spikelens.importers.csvlogs import CsvImporter

    # writer.writerow([epoch, i, g_loss, d_loss]) per batch: `Epoch,Batch,Gen Loss,Disc Loss`
    rows = ["Epoch,Batch,Gen Loss,Disc Loss"] + [f"{e},{b},{0.7 + 0.01 * b},{1.3 - 0.01 * e}"
                                                for e in range(4) for b in range(21)]
    path = tmp_path / "training_log.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with diagnostics.collecting():
        (table,) = CsvImporter().read(path)
    gen = curve(table.frame, "Gen Loss")
    assert [s for s, _ in gen] == list(range(84)) and gen[22] == (22, pytest.approx(0.71))
    assert "Batch" not in table.frame.get_column("metric").unique().to_list()  # a counter, no metric
    # a batch count that goes on across epochs counts every row: it is the step (one point a batch), not
    # the epoch most rows share (csvlogs.forward_step)
    glob = tmp_path / "global.csv"
    glob.write_text("epoch,batch,loss\n" + "".join(f"{b // 5},{b},{1 / (b + 1)}\n" for b in range(20)), encoding="utf-8")
    with diagnostics.collecting():
        (table,) = CsvImporter().read(glob)
    assert [s for s, _ in curve(table.frame, "loss")] == list(range(20))


def test_a_named_file_whose_banners_outnumber_its_numbers_says_why_it_is_not_read(tmp_path):
    from spikelens.errors import FormatError

    # a launch banner and rules around every row of a table the reader cannot line up
    out = []
    for e in range(12):
        out += ["-" * 60, f"[START 2021-10-14 15:{e:02d}:13]", "** start training here! **", "-" * 60,
                f"0.0001   {e}.0    {e}.0        | 0.{500 - e}  80.{e}  96.3          |   0 hr {e:02d} min"]
    path = tmp_path / "log_train.txt"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    imp = TextLogImporter()
    assert imp.claims_named(path, path.read_bytes()[:4096])
    with pytest.raises(FormatError, match=r"lines hold numbers but .*e\.g\. line \d+") as err:
        imp.read(path)
    assert "\n" not in str(err.value)


def test_a_header_line_with_a_counter_and_an_epoch_every_record_shares(tmp_path):
    # OLMo's console: a header line per step, then one `key=value` line per metric
    out = []
    for step in range(1, 9):
        out += [f"2025-12-12 21:37:{step:02d}.963\tround-name-opens-fin-03:0\tolmo.train:979\tINFO\t"
                f"[step={step}/10000,epoch=0]",
                f"    optim/total_grad_norm={4.2 - 0.1 * step:.3f}", f"    train/CrossEntropyLoss={11.3 - 0.2 * step:.2f}"]
    frame, meta = read(tmp_path, "train.log", out)
    assert [s for s, _ in curve(frame, "train/CrossEntropyLoss")] == list(range(1, 9))
    assert meta["plan.steps"] == 10000
