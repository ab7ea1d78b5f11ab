"""Session 18's fresh writer sample (#24): a YAML list of records appended an epoch, and a
long table whose name column is spelled with punctuation (Aim's `metric.name`).

Files are written as the scripts write them: `yaml.safe_dump` of a list of dicts (PyYAML's
block style, `- epoch: 1` then `  loss: ...`), a script's own `'\\n- k: v'` appender, and the
CSV `pandas.concat(run.dataframe() ...).to_csv()` leaves of Aim's `query_metrics` (`csv.writer`
with the same columns: index, run.hash, metric.name, metric.context.subset, step, value, epoch,
time)."""
from __future__ import annotations

import csv
import math

import pytest
import yaml

from spikelens import api
from spikelens.errors import SpikelensError


def one_run(path):
    """The run found in the file's folder, as `spikelens analyze <dir>` finds it (a file of an unknown
    kind is looked at only when a reader claims it)."""
    (run,) = api.load_runs(path.parent)
    return run


def series(run, metric):
    part = run.frame.filter(run.frame["metric"] == metric).sort("step")
    return part["step"].to_list(), part["value"].to_list()


def epochs(n=40):
    return [{"epoch": e + 1, "loss": round(2 * math.exp(-e / 10) + 0.3, 6), "val_loss": round(2.2 * math.exp(-e / 10) + 0.4, 6),
             "val_acc": round(0.9 - 0.5 * math.exp(-e / 10), 6)} for e in range(n)]


def test_yaml_list_of_records_is_read_by_epoch(tmp_path):
    f = tmp_path / "history.yaml"
    recs = epochs()
    f.write_text(yaml.safe_dump(recs, sort_keys=False))
    assert f.read_text().startswith("- epoch: 1\n  loss: ")
    run = one_run(f)
    steps, values = series(run, "loss")
    assert steps == list(range(1, 41)) and values == [r["loss"] for r in recs]
    (rep,) = api.analyze(tmp_path, jobs=1).runs
    assert rep.metrics["loss"] == "loss" and rep.metrics["val_loss"] == "eval_loss" and rep.metrics["val_acc"] == "accuracy"
    assert rep.stats["main_metric"] == "loss"


def test_yaml_records_appended_by_a_script(tmp_path):
    # log_epoch(): lines '  k: v', the first turned into '\n- k: v', appended to the file each epoch
    f = tmp_path / "train_log.yaml"
    with f.open("a") as out:
        for rec in epochs(12):
            lines = [f"  {k}: {v}" for k, v in rec.items()]
            lines[0] = "\n-" + lines[0][1:]
            out.write("\n".join(lines))
    steps, values = series(one_run(f), "val_loss")
    assert steps == list(range(1, 13)) and values[0] == pytest.approx(2.6)


def test_yaml_records_dumped_one_by_one_with_blank_lines_between(tmp_path):
    # `f.write("\n" + yaml.safe_dump([metrics]))` each epoch: a valid YAML list, a blank line between records
    f = tmp_path / "metrics.yml"
    with f.open("a") as out:
        for rec in epochs(30):
            out.write("\n" + yaml.safe_dump([rec], sort_keys=False))
    assert len(yaml.safe_load(f.read_text())) == 30
    steps, values = series(one_run(f), "loss")
    assert steps == list(range(1, 31)) and values[-1] == pytest.approx(epochs(30)[-1]["loss"])


def test_yaml_list_of_settings_is_not_claimed(tmp_path):
    f = tmp_path / "schedule.yaml"
    f.write_text(yaml.safe_dump([{"stage": i, "lr": 0.1 / (i + 1), "milestone": 30 * i} for i in range(5)]))
    with pytest.raises(SpikelensError, match="no training logs found"):
        api.load_runs(tmp_path)


def write_aim_dump(path, *, name_col="metric.name"):
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["", "run.hash", name_col, "metric.context.subset", "step", "value", "epoch", "time"])
        k = 0
        for s in range(120):
            for name, subset, v in (("loss", "train", 2 * math.exp(-s / 40) + 0.3),
                                    ("loss", "val", 2.2 * math.exp(-s / 40) + 0.35),
                                    ("accuracy", "val", 0.9 - 0.5 * math.exp(-s / 40))):
                if subset == "val" and s % 10:
                    continue
                w.writerow([k, "a1b2c3", name, subset, s, v, s // 20, 1.7e9 + s])
                k += 1


@pytest.mark.parametrize("name_col", ["metric.name", "Metric Name"])
def test_long_table_with_a_punctuated_name_column(tmp_path, name_col):
    f = tmp_path / "metrics_dump.csv"
    write_aim_dump(f, name_col=name_col)
    run = one_run(f)
    steps, values = series(run, "loss")
    assert steps == list(range(120)) and values[0] == pytest.approx(2.3)
    names = set(run.frame["metric"].cast(str))
    assert "loss" in names and not any(n.endswith(("/epoch", "/value")) for n in names)  # epoch is a counter, not a metric
    (rep,) = api.analyze(tmp_path, jobs=1).runs
    assert rep.stats["main_metric"] == "loss" and rep.metrics["val/accuracy"] == "accuracy"


def test_wide_table_with_a_name_column_but_no_value_column_stays_wide(tmp_path):
    f = tmp_path / "results.csv"
    with f.open("w", newline="") as out:
        w = csv.writer(out)
        w.writerow(["epoch", "model.name", "train_loss", "val_loss"])
        for e in range(30):
            w.writerow([e, "resnet", 2 * math.exp(-e / 8) + 0.2, 2.1 * math.exp(-e / 8) + 0.3])
    names = set(one_run(f).frame["metric"].cast(str))
    assert {"train_loss", "val_loss"} <= names


def write_results(path, models, *, seed_varies=False, interleaved=False):
    # save_results(): writer.writerow(["Model", "Seed", "Epoch", "Train_Acc", "Test_Acc", "F1", "AUROC"]) and a
    # row per model, seed and epoch (csv.writer)
    rows = []
    for m, model in enumerate(models):
        for e in range(25):
            acc = 0.5 + 0.4 * (1 - math.exp(-e / 6)) - 0.05 * m
            rows.append([model, m if seed_varies else 0, e, acc, acc - 0.03, acc - 0.05, acc + 0.02])
    if interleaved:
        rows.sort(key=lambda r: (r[2], r[0]))
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Model", "Seed", "Epoch", "Train_Acc", "Test_Acc", "F1", "AUROC"])
        w.writerows(rows)


def test_results_table_with_a_block_of_epochs_a_model_is_one_run_a_model(tmp_path):
    f = tmp_path / "results.csv"
    write_results(f, ["cnn", "lstm", "transformer"])  # `Seed` holds one value: the `Model` names the runs
    runs = api.load_runs(tmp_path)
    assert len(runs) == 3
    for run in runs:
        steps, values = series(run, "Train_Acc")
        assert steps == list(range(25)) and values[0] == pytest.approx(0.5 - 0.05 * runs.index(run), abs=1e-9)


def test_models_interleaved_epoch_by_epoch_are_not_split_by_model(tmp_path):
    f = tmp_path / "results.csv"
    write_results(f, ["cnn", "lstm"], interleaved=True)  # no block a model: not one run a model
    assert len(api.load_runs(tmp_path)) == 1
