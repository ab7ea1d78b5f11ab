"""What a person reads a run by when it logs no loss, and layouts read as their writers mean them
(#24): a run that logs only a score (an accuracy, a Dice) is judged by it and says so; AllenNLP's
`metrics_epoch_N.json` (one flat object a numbered file) is one run, the number its step; a
table whose columns are one setting at several values (`learning_rate_0.1`) holds a sweep's
arms, measured as the file's name says; and the names real logs print get their roles. Fixtures:
files written here as the writers write them (csv rows, `json.dump` of AllenNLP's metrics dict)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import main_in_process
from spikelens import api, diagnostics, passedover
from spikelens.frame import infer_role, infer_roles


# ------------------------------------------------------------------ a run that logs only a score


def _accuracy_csv(path, n: int = 40) -> None:
    """A Keras-CSVLogger-like file with no loss column: accuracy rising with noise."""
    rng = np.random.default_rng(0)
    rows = ["epoch,accuracy,val_accuracy"]
    for e in range(n):
        acc = 0.95 - 0.6 * np.exp(-e / 8) + 0.005 * rng.standard_normal()
        rows.append(f"{e},{acc:.4f},{acc - 0.03 + 0.005 * rng.standard_normal():.4f}")
    path.write_text("\n".join(rows) + "\n")


def test_a_run_that_logs_only_a_score_is_judged_by_it(tmp_path, no_workers):
    path = tmp_path / "history.csv"
    _accuracy_csv(path)
    with diagnostics.collecting():
        report = api.analyze(path)
    run = report.runs[0]
    # train and held-out scores logged as often: the held-out one is judged (R5, session 24: the labellers'
    # choice on score-only runs such as LightGBM's `valid's auc`)
    assert run.stats["main_metric"] == "val_accuracy" and run.stats["last_value"] > 0.9
    assert any("judged by its score 'val_accuracy' (higher is better)" in w for w in report.warnings)
    assert not any("no loss-like metric" in w for w in report.warnings)
    # a rising score is the run going well: nothing loud on it
    assert not [f for f in run.findings if f.severity in ("warning", "error")]


def test_check_passes_a_score_only_run_and_still_refuses_an_lr_only_one(tmp_path, capsys, no_workers):
    _accuracy_csv(tmp_path / "history.csv")
    code, out, err = main_in_process(capsys, "check", tmp_path / "history.csv", "--format", "concise")
    assert code == 0, err
    lr_only = tmp_path / "lr.csv"
    lr_only.write_text("step,lr\n" + "".join(f"{s},{1e-3 * 0.99 ** s:.6g}\n" for s in range(30)))
    code, out, err = main_in_process(capsys, "check", lr_only, "--format", "concise")
    assert code == 2 and "no loss-like metric (lr)" in err


# ------------------------------------------------------------------ one flat object a numbered file


def _allennlp_dir(folder, epochs: int = 8) -> None:
    """What AllenNLP's trainer writes after each epoch: `metrics_epoch_{N}.json`, a flat dict
    (json.dumps(metrics, indent=2)) of training_*, validation_* and best_* values."""
    folder.mkdir()
    best = 9.0
    for e in range(epochs):
        train, val = 0.9 * 0.8 ** e, 0.6 + 0.02 * (e - 2) ** 2
        best = min(best, val)
        metrics = {"best_epoch": 2, "peak_cpu_memory_MB": 1580.6, "training_duration": f"0:0{e}:35.7",
                   "training_start_epoch": 0, "training_epochs": e, "epoch": e, "training_accuracy": 1 - train / 2,
                   "training_loss": train, "validation_fscore": 0.7, "validation_loss": val,
                   "best_validation_loss": best}
        (folder / f"metrics_epoch_{e}.json").write_text(json.dumps(metrics, indent=2))
    (folder / "config.json").write_text(json.dumps({"trainer": {"num_epochs": epochs, "lr": 0.001}}))


def test_numbered_json_files_are_one_run_stepped_by_their_number(tmp_path, no_workers):
    _allennlp_dir(tmp_path / "serialization", epochs=12)  # 10, 11 sort after 1 by name, not by number
    with diagnostics.collecting():
        report = api.analyze(tmp_path / "serialization")
    assert len(report.runs) == 1
    run = report.runs[0]
    frame = run.frame.filter(run.frame["metric"].cast(str) == "training_loss").sort("seq")
    assert frame["step"].to_list() == list(range(12))
    assert np.allclose(frame["value"].to_numpy(), [0.9 * 0.8 ** e for e in range(12)])
    assert run.metrics["training_loss"] == "loss" and run.metrics["validation_loss"] == "eval_loss"
    assert run.metrics["validation_fscore"] == "accuracy" and "epoch" not in run.metrics
    assert "training_duration" not in run.metrics  # text, not a number
    assert any(f.kind == "overfitting" and f.metric == "validation_loss" for f in run.findings)


def test_one_numbered_json_file_alone_is_a_summary_not_a_series(tmp_path, no_workers):
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "metrics_epoch_3.json").write_text(json.dumps({"epoch": 3, "training_loss": 0.4}))
    assert "a config or a summary" in passedover.reason(folder / "metrics_epoch_3.json")
    with pytest.raises(Exception, match="metrics_epoch_3.json"):
        api.analyze(folder)


def test_numbered_configs_that_name_no_metric_are_not_claimed(tmp_path):
    from spikelens.importers.jsonhistory import NumberedJsonImporter

    for i in range(3):
        (tmp_path / f"config_{i}.json").write_text(json.dumps({"hidden": 64 * (i + 1), "layers": 2}))
    path = tmp_path / "config_1.json"
    assert not NumberedJsonImporter().claims(path, path.read_bytes())


# ------------------------------------------------------------------ a sweep's arms side by side


def _sweep_csv(path, settings=("learning_rate_0.005", "learning_rate_0.1")) -> None:
    """`pd.DataFrame({f"learning_rate_{lr}": losses}).to_csv(path, index=False)`: one column an arm."""
    rows = [",".join(settings)]
    for i in range(60):
        rows.append(",".join(f"{4.6 * np.exp(-i / (10 + 20 * k)) + 1.0:.5f}" for k in range(len(settings))))
    path.write_text("\n".join(rows) + "\n")


def test_columns_that_are_a_sweeps_arms_are_measured_as_the_file_names(tmp_path, no_workers):
    path = tmp_path / "learning_rate_error.csv"
    _sweep_csv(path)
    with diagnostics.collecting():
        report = api.analyze(path)
    roles = report.runs[0].metrics
    assert roles == {"error (learning_rate_0.005)": "loss", "error (learning_rate_0.1)": "loss"}
    frame = report.runs[0].frame
    arm = frame.filter(frame["metric"].cast(str) == "error (learning_rate_0.1)")
    assert arm.height == 60 and arm["step"].to_list() == list(range(60))


def test_a_sweep_table_whose_name_says_nothing_more_is_left_as_it_is(tmp_path, no_workers):
    path = tmp_path / "learning_rate.csv"  # the file names only the setting: what was measured is unknown
    _sweep_csv(path)
    with diagnostics.collecting():
        report = api.analyze(path)
    assert set(report.runs[0].metrics) == {"learning_rate_0.005", "learning_rate_0.1"}
    assert any("learning_rate.csv: no loss-like metric" in w for w in report.warnings)
    counts = tmp_path / "acc_by_width.csv"  # `acc_2`, `acc_4`: no setting's value, so no arms
    counts.write_text("step,acc_2,acc_4\n" + "".join(f"{s},{0.1 * s:.2f},{0.2 * s:.2f}\n" for s in range(10)))
    with diagnostics.collecting():
        report = api.analyze(counts)
    assert set(report.runs[0].metrics) == {"acc_2", "acc_4"}


# ------------------------------------------------------------------ names real logs print


@pytest.mark.parametrize("name,role", [
    # a utility, loss and accuracy as Chinese logs print them, top-k beyond 1 and 5
    ("avg(utility)", "reward"), ("损失", "loss"), ("训练损失", "loss"), ("验证损失", "eval_loss"),
    ("准确率", "accuracy"), ("学习率", "lr"), ("top-2", "accuracy"), ("val/top-3", "accuracy"),
    ("損失", "loss"), ("検証損失", "eval_loss"), ("검증 손실", "eval_loss"), ("学習率", "lr"), ("정확도", "accuracy"),
    ("平均回报", "reward"), ("困惑度", "perplexity"),
    # F-scores by other names, camel-cased accuracies, image and ranking scores
    ("training_fscore", "accuracy"), ("validation_s_fmeasure", "accuracy"), ("M0_RPNAcc", "accuracy"),
    ("aAcc", "accuracy"), ("val_pixAcc", "accuracy"), ("mDice_pct", "accuracy"), ("val_PSNR", "accuracy"),
    ("NDCG@10", "accuracy"), ("test_HR@20", "accuracy"), ("mean_io_u_5", "accuracy"),
    ("eval_matthews_correlation", "accuracy"), ("val_chrf", "accuracy"), ("FG-ARI", "accuracy"), ("NMI", "accuracy"),
    ("eprewmean", "reward"),  # OpenAI baselines' progress.csv: the episode reward mean
    ("acc_norm", "accuracy"), ("hellaswag/acc_norm", "accuracy"), ("acc_stderr", "other"),  # lm-eval-harness
    # settings: a term's weight or coefficient, a threshold, a setting with its value
    ("LOSS_WEIGHT", "other"), ("FOCAL_LOSS_GAMMA", "other"), ("kl_coef", "other"), ("train/ent_coef", "other"),
    ("entropy_coeff", "other"), ("BG_IOU_THRESHOLD", "other"), ("DICE_WEIGHT", "other"),
    ("learning_rate_0.1", "other"), ("lr=3e-4", "other"), ("loss (lr=0.001)", "loss"), ("lr_0", "lr"),
    # a count, free memory, an exit code, a loss's normaliser, an augmentation's scale
    ("time/iterations", "other"), ("time/iter", "step_time"), ("gb_free", "other"),
    ("exits_with_return_code", "other"), ("iou_norm", "other"), ("cls_norm", "other"), ("noise_scale", "other"),
    ("MIN_SCALE", "other"), ("scale", "loss_scale"), ("grad/norm_gamma", "grad_norm"),
    # gradient norms still
    ("Gradient_norm_for_model.linear.weight", "grad_norm"), ("grad_provenance/embedding_grad_l2_norm", "grad_norm"),
    ("global_norm", "grad_norm"), ("train/norm", "grad_norm"),
])
def test_roles_of_names_real_logs_print(name, role):
    assert infer_role(name) == role


def test_a_distributed_setting_is_no_distance_standing_for_the_loss():
    assert infer_roles(["dist_world_size", "tok/s"])["dist_world_size"] == "other"
    assert infer_roles(["mean_dist", "tok/s"])["mean_dist"] == "loss"


# ------------------------------------------------------------------ a CSV printed to a log


def test_a_csv_printed_to_a_log_reads_through_its_repeated_headers(tmp_path, no_workers):
    """`print("epoch, loss, ppl, accuracy")` at each launch, appended to one train.log: the header
    repeats before the first row, and again at each relaunch."""
    lines = ["epoch, loss, ppl, accuracy"]
    for launch, start in enumerate((9.1, 7.4)):
        lines.append("epoch, loss, ppl, accuracy")
        lines += [f"{e},  {start - 0.2 * e:.5f},  {np.exp(start - 0.2 * e):.5f}, {2.67 + 3 * e * launch:.3f}"
                  for e in range(12)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    printed = tmp_path / "steps.txt"  # `step,loss,lr` printed by a script: a step counter first
    printed.write_text("step,loss,lr\n" + "".join(f"{s},{3 - 0.01 * s:.4f},0.001\n" for s in range(0, 300, 10)))
    named = tmp_path / "history.txt"  # `loss,acc` then rows of numbers: no counter, the row is the step
    named.write_text("loss,acc\n" + "".join(f"{2 - 0.05 * i:.3f},{0.3 + 0.01 * i:.3f}\n" for i in range(25)))
    with diagnostics.collecting():
        report = api.analyze(tmp_path)
    by_name = {r.run: r for r in report.runs}
    assert by_name["history.txt"].metrics == {"loss": "loss", "acc": "accuracy"}
    assert by_name["history.txt"].points == 50
    log = by_name["train.log"]
    assert log.metrics == {"loss": "loss", "ppl": "perplexity", "accuracy": "accuracy"}
    assert len(log.segments) == 2 and log.points == 2 * 12 * 3
    steps = by_name["steps.txt"].frame.filter(by_name["steps.txt"].frame["metric"].cast(str) == "loss")["step"]
    assert steps.to_list() == list(range(0, 300, 10))


def test_a_log_whose_header_is_followed_by_prose_is_no_csv(tmp_path):
    from spikelens.importers.csvlogs import CsvImporter

    path = tmp_path / "train.log"
    path.write_text("step,loss\nLoading model from disk...\nstep 1 loss 2.3\n")
    assert not CsvImporter().claims(path, path.read_bytes())


def test_numbered_files_are_told_apart_by_the_name_around_their_number(tmp_path, no_workers):
    """`epoch_3_metrics.json` (the number inside the name) and, in the same folder, a second
    series `eval_step_500.json`: two runs, each stepped by its own files' numbers."""
    for e in range(4):
        (tmp_path / f"epoch_{e}_metrics.json").write_text(json.dumps({"epoch": e, "train_loss": 2.0 - 0.3 * e}))
    for s in (500, 1000, 1500):
        (tmp_path / f"eval_step_{s}.json").write_text(json.dumps({"step": s, "eval_loss": 3000 / s}))
    with diagnostics.collecting():
        report = api.analyze(tmp_path)
    steps = {m: r.frame.filter(r.frame["metric"].cast(str) == m)["step"].to_list()
             for r in report.runs for m in r.metrics}
    assert len(report.runs) == 2
    assert steps == {"train_loss": [0, 1, 2, 3], "eval_loss": [500, 1000, 1500]}


def test_records_keyed_by_their_epoch_are_a_history(tmp_path, no_workers):
    """`json.dump({epoch: logs for epoch, logs in ...})`: an object keyed by the epoch ("3" or
    "epoch_3"), each value that epoch's metrics; an object of configs keyed the same way is not."""
    (tmp_path / "by_epoch.json").write_text(json.dumps(
        {f"epoch_{e}": {"epoch": e, "train": {"loss": 2.0 - 0.1 * e}, "val_acc": 0.5 + 0.01 * e} for e in range(1, 11)}))
    (tmp_path / "models.json").write_text(json.dumps({"model_1": {"layers": 2}, "model_2": {"layers": 3}}))
    with diagnostics.collecting():
        report = api.analyze(tmp_path / "by_epoch.json")
    run = report.runs[0]
    assert run.metrics == {"train/loss": "loss", "val_acc": "accuracy"}
    loss = run.frame.filter(run.frame["metric"].cast(str) == "train/loss").sort("step")
    assert loss["step"].to_list() == list(range(1, 11)) and loss["value"][0] == pytest.approx(1.9)
    assert "a config or a summary" in passedover.reason(tmp_path / "models.json")
    with pytest.raises(Exception, match="models.json"):
        api.analyze(tmp_path / "models.json")
