"""What fresh real logs showed (session 24, R6), each as the fixture its kind of script writes:
- a console log that prints its epoch as an unnamed counter and the batch under a step's name
  (`[3/30] iter: 100/278. lr:0.000030 . Loss: 0.012, Acc:0.996`, with a sentence's full stop after
  the count) is stepped by the global iteration, (epoch - 1) * 278 + iter, as its reader counts;
- launches appended to one log that print different batches an epoch (`Epoch 6 [50/223]`, then
  a later set-up's `[.../445]`) are each composed with their own total;
- a training loss printed as 0.000 beside a training accuracy of 1.000 is a model that fits its
  training set (a note), not a loss without signal (a warning), while a loss 0 from the first step
  with nothing at its ceiling stays loud;
- a held-out score that came back to its first evaluation's level while the training loss stood
  still (at chance after an untrained first epoch) is no overfitting alarm; the same score falling
  while the training loss keeps falling is."""
from __future__ import annotations

import csv
import math

import polars as pl

import spikelens
from spikelens.importers.linetokens import tokenise

LOUD = ("warning", "error")


def _console(path, losses, accs, val_losses, iters=278, every=100, epochs=None):
    """A plain print() fine-tune log: a banner per epoch, two train lines, a val line."""
    epochs = epochs or len(val_losses)
    out = ["model load", "----------"]
    k = 0
    for e in range(1, epochs + 1):
        out += [f"epoch {e}"]
        for it in range(every, iters, every):
            out.append(f"[{e}/{epochs}] iter: {it}/{iters}. lr:0.000030 . Loss: {losses[k]:.3f}, Acc:{accs[k]:.3f}")
            k += 1
        out += ["start test on val set",
                f"Val loss: {val_losses[e - 1]:.3f}, Acc: {(0.922, 0.938, 0.906)[e % 3]:.3f}",
                f"Finish {e} epoch", "----------"]
    path.write_text("\n".join(out) + "\n")
    return path


def test_an_unnamed_epoch_counter_then_a_named_batch_counter_read_coarse_to_fine():
    t = tokenise("[3/30] iter: 100/278. lr:0.000030 . Loss: 0.012, Acc:0.996")
    line = "[3/30] iter: 100/278. lr:0.000030 . Loss: 0.012, Acc:0.996"
    assert line[t.epoch[0]:sum(t.epoch)] == "3" and line[t.epoch_total[0]:sum(t.epoch_total)] == "30"
    assert line[t.inner[0]:sum(t.inner)] == "100" and line[t.inner_total[0]:sum(t.inner_total)] == "278"
    assert "iter" not in [v[0] for v in t.values]  # the count's total is no value of an `iter` metric
    # a ratio with a decimal stays no counter
    assert tokenise("ratio 1/2.5 loss 0.3").inner is None


def test_the_console_log_is_stepped_by_the_global_iteration(tmp_path):
    losses = [0.4, 0.2] + [0.05] * 18
    path = _console(tmp_path / "log_train.txt", losses, [0.9] * 20, [0.3 - 0.01 * e for e in range(10)])
    frame = spikelens.load(path)
    loss = frame.filter(pl.col("metric") == "Loss").sort("step")
    assert loss.get_column("step").to_list()[:4] == [100, 200, 378, 478]
    assert loss.get_column("step").to_list()[-1] == 9 * 278 + 200
    assert loss.get_column("value").to_list()[:2] == [0.4, 0.2]


def _judged(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def test_a_loss_printed_zero_beside_a_perfect_accuracy_is_memorised_not_silent(tmp_path):
    # BrainFormer-like: the loss falls to 0.000 (three decimals) in epoch 2 with Acc 1.000 from there;
    # the val loss bottoms at epoch 2 and climbs to about twice that by the end
    n = 30
    losses = [0.095, 0.052] + [0.0] * (2 * n - 2)
    losses[48:50] = [0.004, 0.003]  # epoch 25: two batches print above zero
    accs = [0.961, 0.979] + [1.0] * (2 * n - 2)
    val = [0.231, 0.141] + [0.141 + 0.006 * e for e in range(1, n - 1)]
    run = _judged(_console(tmp_path / "log_train.txt", losses, accs, val))
    zero = [f for f in run.findings if f.kind == "plateau" and f.metric == "Loss"]
    assert zero and all(f.severity == "info" for f in zero)
    assert zero[0].evidence["reading"] == "memorised" and zero[0].evidence["accuracy"] == "Acc"
    over = [f for f in run.findings if f.kind == "overfitting"]
    assert over and over[0].severity in LOUD
    assert 278 <= over[0].evidence["min_step"] <= 2 * 278  # the val minimum at the end of epoch 2, in iterations


def test_a_loss_zero_from_the_first_step_with_no_accuracy_at_its_ceiling_stays_loud(tmp_path):
    n = 30
    run = _judged(_console(tmp_path / "log_train.txt", [0.0] * (2 * n), [0.31] * (2 * n),
                           [0.69 + 0.001 * (e % 3) for e in range(n)]))
    zero = [f for f in run.findings if f.kind == "plateau" and f.metric == "Loss"
            and f.evidence.get("reading") == "zero"]
    assert zero and zero[0].severity == "warning"


def test_appended_launches_are_composed_each_with_its_own_batches_per_epoch(tmp_path):
    stamp = "2026-01-14 23:00:05,550 - Fusion - INFO - "
    lines = []
    for e in range(0, 8):  # launch 1: 223 batches an epoch, a NaN at epoch 6 batch 50
        for b in range(0, 223, 10):
            v = "nan" if (e, b) == (6, 50) else f"{2.0 / (1 + e) + 0.001 * b:.4f}"
            lines.append(f"{stamp}Epoch {e} [{b}/223] Loss: {v} (Cls: 0.5000, Off: 0.1000)")
    for e in range(0, 3):  # launch 2, another set-up: 445 batches an epoch
        for b in range(0, 445, 10):
            lines.append(f"{stamp}Epoch {e} [{b}/445] Loss: {1.5 / (1 + e) + 0.001 * b:.4f} (Cls: 0.5000, Off: 0.1000)")
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    frame = spikelens.load(path).filter(pl.col("metric") == "Loss")
    bad = frame.filter(pl.col("value").is_nan())
    assert bad.get_column("step").to_list() == [6 * 223 + 50]
    assert frame.get_column("step").max() == 7 * 223 + 220  # launch 1's last batch
    assert frame.sort("seq").get_column("step")[-1] == 2 * 445 + 440  # launch 2's, by its own 445


def _models_csv(path, models):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Model", "Epoch", "Total Epochs", "Train Loss", "Train Acc", "Val Loss", "Val Acc", "Time (s)"])
        for name, rows in models:
            for e, (tl, ta, vl, va) in enumerate(rows, 1):
                w.writerow([name, e, len(rows), f"{tl:.4f}", f"{ta:.2f}", f"{vl:.4f}", f"{va:.2f}", "15.62"])
    return path


CHANCE = math.log(4)
STUCK = [(35.63, 24.1, 1.378, 28.57), (1.372, 35.1, 1.377, 35.71)] + [
    (CHANCE + d, 30.0, 1.379, 28.57) for d in (-0.005, 0.008, -0.035, -0.058, -0.05, -0.026, 0.061, -0.038)]
LEARNS = [(1.36 - 0.09 * e, 36 + 5 * e, 1.35 - 0.07 * e, 34 + 5 * e) for e in range(10)]


def test_a_score_back_at_its_first_level_while_the_loss_sat_at_chance_is_no_overfitting_alarm(tmp_path):
    path = _models_csv(tmp_path / "training_metrics.csv", [("MLC-19k", LEARNS), ("VGG16", STUCK)])
    runs = spikelens.analyze(path, jobs=1).runs
    vgg = next(r for r in runs if "VGG16" in r.run)
    assert not [f for f in vgg.findings if f.kind == "overfitting" and f.severity in LOUD]


def test_a_score_that_fell_while_the_training_loss_kept_falling_stays_loud(tmp_path):
    over = [(1.3 * 0.8 ** e, 40 + 5 * e, 1.0, v) for e, v in
            enumerate([40, 55, 70, 82, 80, 76, 71, 66, 61, 56, 52, 48])]
    path = _models_csv(tmp_path / "training_metrics.csv", [("MLC-19k", LEARNS), ("ResNet", over)])
    runs = spikelens.analyze(path, jobs=1).runs
    res = next(r for r in runs if "ResNet" in r.run)
    assert [f for f in res.findings if f.kind == "overfitting" and f.severity in LOUD]


def _edt_output(folder, last_update, finished=False):
    """A Decision-Transformer trainer's stdout as W&B captures it (`files/output.log`) and the run's
    `config.yaml` as W&B writes it (`key:` / `desc: null` / `value: v`)."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = ["wandb_version: 1", ""]
    for key, value in (("batch_size", 256), ("max_train_iters", 500), ("num_updates_per_iter", 100), ("lr", 0.0001)):
        cfg += [f"{key}:", "  desc: null", f"  value: {value}"]
    (folder / "config.yaml").write_text("\n".join(cfg) + "\n")
    out = ["=" * 60, "start time: 24-04-25-05-40-44", "=" * 60, "device set to: cuda"]
    for k, u in enumerate(range(1000, last_update + 1, 1000)):
        out += ["=" * 60, f"time elapsed: 0:{k + 1:02d}:20", f"num of updates: {u}",
                f"ret loss: {3.3 / (1 + 0.05 * k):.5f}", f"action loss: {0.26 / (1 + 0.2 * k):.5f}",
                f"state loss: {0.14 / (1 + 0.3 * k):.5f}"]
    if finished:
        out += ["=" * 60, "finished training!"]
    (folder / "output.log").write_text("\n".join(out) + "\n")
    return folder


def test_a_run_stopped_short_of_its_iterations_times_updates_per_iteration_is_told(tmp_path):
    (run,) = spikelens.analyze(_edt_output(tmp_path / "edt", 34000), jobs=1).runs
    ended = [f for f in run.findings if f.kind == "ended_early"]
    assert ended and "50,000 planned" in ended[0].message and ended[0].start_step == 34000


def test_the_same_run_finished_at_its_plan_is_not_told_short(tmp_path):
    (run,) = spikelens.analyze(_edt_output(tmp_path / "edt", 50000, finished=True), jobs=1).runs
    assert not [f for f in run.findings if f.kind == "ended_early"]


def _tfflat(path, fatal):
    lines = [f"\x1b[92m08-19 02:03:{i % 60:02d}\x1b[0m Epoch 0 itr {i}/9364: lr: 5e-05 speed: 0.12(0.08s r0.04)s/itr "
             f"0.32h/epoch loss_h: {5.7 / (1 + 0.001 * i):.4f} loss_c: {7.9 / (1 + 0.002 * i):.4f}" for i in range(1, 400)]
    lines.append("2021-08-19 02:10:45.726729: W tensorflow/core/framework/op_kernel.cc:1639] Unavailable: Internal errors")
    if fatal:
        lines += ["2021-08-19 02:10:50.224348: F tf_adapter/kernels/geop_npu.cc:766] GeOp3_0GEOP::::DoRunAsync Failed",
                  "Error Message is : ", "E19999: Inner Error!", "        Unknown error occurred. Please check the log."]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_glog_fatal_line_after_the_last_step_is_a_crash(tmp_path):
    (run,) = spikelens.analyze(_tfflat(tmp_path / "train_0.log", fatal=True), jobs=1).runs
    crash = [f for f in run.findings if f.kind == "ended_early" and f.severity in LOUD]
    assert crash and "geop_npu.cc:766" in crash[0].message


def test_a_glog_warning_after_the_last_step_is_no_crash(tmp_path):
    (run,) = spikelens.analyze(_tfflat(tmp_path / "train_0.log", fatal=False), jobs=1).runs
    assert not [f for f in run.findings if f.kind == "ended_early" and f.severity in LOUD]


def _keras_history(path, loss, val_loss):
    """Keras' History dumped by pandas (`to_csv(index=False)`): no epoch column, one row an epoch."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["accuracy", "loss", "val_accuracy", "val_loss", "learning_rate"])
        for a, b in zip(loss, val_loss):
            w.writerow([f"{1 - a / 3:.6f}", f"{a:.6f}", f"{1 - b / 3:.6f}", f"{b:.6f}", "0.0005"])
    return path


TRAIN_FALLS = [2.9 * 0.95 ** e for e in range(100)]


def test_a_val_loss_that_jumped_once_on_a_smooth_curve_is_a_loud_spike(tmp_path):
    base = [1.5 * 0.972 ** e for e in range(100)]
    val = [b * (5.0 if e == 74 else 1.0) for e, b in enumerate(base)]
    (run,) = spikelens.analyze(_keras_history(tmp_path / "training_history.csv", TRAIN_FALLS, val), jobs=1).runs
    spikes = [f for f in run.findings if f.metric == "val_loss" and f.kind == "spike" and f.severity in LOUD]
    assert spikes and spikes[0].peak_step == 74


def _airl_log(path, returns):
    """gail-airl-ppo's trainer log: its settings, then one line an evaluation."""
    lines = ["Num steps: 10000000, Eval interval: 100000", "lr_actor: 0.0003, lr_critic: 0.0003, lr_disc: 0.0001"]
    for k, r in enumerate(returns, 1):
        lines.append(f"Num steps: {k * 100000}   Return: {r:.1f}   Time: {k // 20}:{(k * 3) % 60:02d}:39")
    lines.append("Models saved to logs/Ant-v4/airl/seed0/model")
    path.write_text("\n".join(lines) + "\n")
    return path


WANDER = [185.6, 477.5, 161.7, 58.1, 120.4, 35.2, 180.8, -1.8, 60.3, -90.3, 126.1, 40.2, -130.6]


def test_a_return_that_sank_far_below_anything_it_showed_and_stayed_is_a_collapse(tmp_path):
    rets = WANDER + [-2701.5] + [-2738.0 + (k % 5) - 2 for k in range(86)]
    (run,) = spikelens.analyze(_airl_log(tmp_path / "training_process.log", rets), jobs=1).runs
    sank = [f for f in run.findings if f.kind == "divergence" and f.evidence.get("sank")]
    assert sank and sank[0].severity in LOUD and 1300000 <= sank[0].start_step <= 1400000


def test_a_return_that_dipped_once_and_came_back_is_no_collapse(tmp_path):
    rets = WANDER + [-2701.5] + [WANDER[k % len(WANDER)] for k in range(86)]
    (run,) = spikelens.analyze(_airl_log(tmp_path / "training_process.log", rets), jobs=1).runs
    assert not [f for f in run.findings if f.kind == "divergence" and f.severity in LOUD]


def test_a_return_that_wanders_lower_within_its_spread_is_no_collapse(tmp_path):
    rets = WANDER + [w - 150.0 for k in range(87) for w in [WANDER[k % len(WANDER)]]]
    (run,) = spikelens.analyze(_airl_log(tmp_path / "training_process.log", rets), jobs=1).runs
    assert not [f for f in run.findings if f.kind == "divergence" and f.evidence.get("sank")]
