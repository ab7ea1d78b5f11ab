"""Writers of session 17's fresh harvest (#24): pandas frames saved with positional column names
(`,0,1`), long tables whose value column is Comet's `metricValue` or R keras' `as.data.frame(history)`
(`epoch, value, metric, data`), a step-named column that holds one value (mbrl's `train_iteration`),
JSON lines of a history with no step key (`to_json(orient='records', lines=True)`), a `total` beside
its loss terms, DVCLive 0.x's flat folder of `<metric>.tsv`, and the roles that tell a reinforcement
learner (an exploration schedule, an episode's length, `pi-loss`) and Ultralytics' validation scores.
Each file is written by the writer that writes it (pandas, csv, json) and read for values, steps and
roles, beside a neighbour that must stay as it was or be refused with its reason."""
from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

from spikelens import api
from spikelens.errors import SpikelensError
from spikelens.frame import infer_role, infer_roles, is_eval, is_reinforcement, roles_of

from test_structured_shapes import _curve, _losses, _read  # noqa: E402  (the structured-shape tests' helpers)

N = 40


def _dir(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    return d


def _main(path) -> str | None:
    (run,) = api.analyze(path, jobs=1).runs
    return run.stats.get("main_metric")


# ------------------------------------------------------------ pandas' positional column names

def test_pandas_pairs_saved_with_positional_names_are_the_losses_their_file_names(tmp_path):
    d = _dir(tmp_path, "run")
    train, val = _losses(N), _losses(N, 3.0)
    pd.DataFrame(list(zip(train, val))).to_csv(d / "epoch_losses.csv")  # header `,0,1`, the index first
    frame = _read(d)
    steps, values = _curve(frame, "epoch_losses/0")
    assert steps == list(range(N)) and values == pytest.approx(train)
    assert _curve(frame, "epoch_losses/1")[1] == pytest.approx(val)
    assert roles_of(frame)["epoch_losses/0"] == "loss"
    # `index=False`: the header `0,1` is pandas' count of the columns, not a first row of values
    f = _dir(tmp_path, "noindex")
    pd.DataFrame(list(zip(train, val))).to_csv(f / "epoch_losses.csv", index=False)
    steps, values = _curve(_read(f), "epoch_losses/0")
    assert steps == list(range(N)) and values == pytest.approx(train)
    # but whole numbers under it count on from it: a headerless table's first row (epoch 0, loss 1)
    g = _dir(tmp_path, "counted")
    (g / "losses.csv").write_text("0,1\n" + "".join(f"{i},{v}\n" for i, v in enumerate(train[1:], 1)))
    frame = _read(g)
    assert [len(_curve(frame, m)[0]) for m in roles_of(frame)] == [N]
    # the same columns in a file whose name says nothing: refused, with the reason
    e = _dir(tmp_path, "unnamed")
    pd.DataFrame(list(zip(train, val))).to_csv(e / "table.csv")
    with pytest.raises(SpikelensError, match="no CSV reader takes"):
        api.load_runs(e)


# ------------------------------------------------------------ long tables

def test_comet_metric_rows_are_one_curve_a_metric_named_by_metric_name(tmp_path):
    d = _dir(tmp_path, "comet")
    rows = [{"metricName": m, "metricValue": v, "timestamp": 1700000000000 + 1000 * i, "step": i + 1,
             "epoch": i // 10, "runContext": "", "offset": 2 * i + k}
            for i in range(N) for k, (m, v) in enumerate((("loss", _losses(N)[i]), ("acc", 0.5 + i / 100)))]
    with (d / "lc.csv").open("w", newline="") as fh:  # `DictWriter(f, data[0].keys())` of `get_metrics()`
        w = csv.DictWriter(fh, rows[0].keys())
        w.writeheader()
        w.writerows(rows)
    frame = _read(d)
    assert set(roles_of(frame)) == {"loss", "acc"}  # epoch, offset, timestamp: bookkeeping, not metrics
    steps, values = _curve(frame, "loss")
    assert steps == list(range(1, N + 1)) and values == pytest.approx(_losses(N))


def test_r_keras_history_rows_keep_training_and_validation_apart(tmp_path):
    d = _dir(tmp_path, "r")
    train, val = _losses(N), _losses(N, 3.0)
    with (d / "history.csv").open("w", newline="") as fh:  # write.csv(as.data.frame(history)): row names first
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(["", "epoch", "value", "metric", "data"])
        k = 0
        for data, curve in (("training", train), ("validation", val)):
            for e, v in enumerate(curve, 1):
                k += 1
                w.writerow([str(k), e, v, "loss", data])
    frame = _read(d)
    steps, values = _curve(frame, "loss")
    assert steps == list(range(1, N + 1)) and values == pytest.approx(train)
    assert _curve(frame, "validation/loss")[1] == pytest.approx(val)
    assert roles_of(frame)["validation/loss"] == "eval_loss"
    # a long table with no split column stays one curve a metric, as before
    e = _dir(tmp_path, "plain")
    pd.DataFrame({"step": range(N), "metric": "loss", "value": train}).to_csv(e / "long.csv", index=False)
    assert _curve(_read(e), "loss")[1] == pytest.approx(train)


# ------------------------------------------------------------ the step column

def test_a_step_named_column_holding_one_value_gives_way_to_the_epoch(tmp_path):
    d = _dir(tmp_path, "mbrl")
    loss = _losses(N)
    pd.DataFrame({"train_iteration": 0, "epoch": range(N), "train_dataset_size": 8000, "model_loss": loss}).to_csv(
        d / "model_train.csv", index=False)
    steps, values = _curve(_read(d), "model_loss")
    assert steps == list(range(N)) and values == pytest.approx(loss)
    # a step-named column that counts stays the step
    e = _dir(tmp_path, "counts")
    pd.DataFrame({"train_iteration": range(0, 10 * N, 10), "epoch": [i // 10 for i in range(N)], "model_loss": loss}).to_csv(
        e / "model_train.csv", index=False)
    assert _curve(_read(e), "model_loss")[0] == list(range(0, 10 * N, 10))


def test_an_epoch_shared_by_many_rows_gives_way_to_the_count_of_every_row(tmp_path):
    d = _dir(tmp_path, "rows")
    loss, rows = _losses(N), []
    for i, v in enumerate(loss):  # LossHistory.save: [len(data), epoch, samples, train|nan, val|nan]
        rows.append([len(rows), i // 10, 64 * (i % 10), v, np.nan])
        if i % 5 == 4:
            rows.append([len(rows), i // 10, 64 * (i % 10), np.nan, v * 1.1])
    df = pd.DataFrame(rows, columns=["index", "epoch", "sample_count", "train_loss", "val_loss"])
    df.to_csv(d / "loss_history.csv", index=False)  # NaN written as empty cells
    steps, values = _curve(_read(d), "train_loss")
    assert steps == df["index"][df["train_loss"].notna()].tolist() and values == pytest.approx(loss)
    # an epoch first, repeated by rows of items, keeps the epoch: no column counts the rows
    e = _dir(tmp_path, "items")
    pd.DataFrame({"epoch": [i // 4 for i in range(N)], "loss": loss}).to_csv(e / "history.csv", index=False)
    assert _curve(_read(e), "loss")[0] == [i // 4 for i in range(N)]


# ------------------------------------------------------------ JSON lines without a step key

def test_json_lines_of_a_history_with_no_step_are_stepped_by_their_line(tmp_path):
    d = _dir(tmp_path, "hist")
    loss = _losses(N)
    pd.DataFrame({"loss": loss, "accuracy": np.linspace(0.3, 0.9, N), "val_loss": _losses(N, 3.0)}).to_json(
        d / "history.jsonl", orient="records", lines=True)
    frame = _read(d)
    steps, values = _curve(frame, "loss")
    assert steps == list(range(N)) and values == pytest.approx(loss)
    assert roles_of(frame) == {"loss": "loss", "accuracy": "accuracy", "val_loss": "eval_loss"}
    # a dataset's rows (text, a label, a score) name no loss: no training log
    e = _dir(tmp_path, "data")
    pd.DataFrame({"text": [f"sample {i}" for i in range(N)], "label": [i % 2 for i in range(N)],
                  "score": np.linspace(0, 1, N)}).to_json(e / "train.jsonl", orient="records", lines=True)
    with pytest.raises(SpikelensError, match="no training logs found"):
        api.load_runs(e)


# ------------------------------------------------------------ roles

def test_a_total_beside_its_loss_terms_is_the_loss():
    assert infer_roles(["epoch", "l1", "ssim_loss", "total"])["total"] == "loss"
    assert infer_roles(["epoch", "val_l1_loss", "val_ssim_loss", "val_total"])["val_total"] == "eval_loss"
    # beside a single loss, `total` may count anything (samples, tokens): it stays other
    assert infer_roles(["epoch", "loss", "total"])["total"] == "other"


def test_an_exploration_schedule_or_an_episode_length_marks_a_reinforcement_learner(tmp_path):
    dqn = ["rollout/ep_rew_mean", "rollout/ep_len_mean", "rollout/exploration_rate", "time/fps", "train/loss",
           "train/n_updates", "time/total_timesteps"]
    assert is_reinforcement(infer_roles(dqn))
    assert is_reinforcement(infer_roles(["eprew", "eplen", "nsn_loss"]))  # large-scale-curiosity's progress.csv
    assert is_reinforcement(infer_roles(["average-episode-return", "pi-loss", "q-loss"]))  # hyphenated Spinning Up
    assert infer_role("ep_r") == "reward"
    # a supervised run's `epsilon` (a DP-SGD privacy budget) beside a loss, no return: no learner of returns
    assert not is_reinforcement(infer_roles(["loss", "epsilon", "accuracy"]))
    assert not is_reinforcement(infer_roles(["loss", "eps", "accuracy"]))
    assert is_reinforcement(infer_roles(["episode", "steps", "ep_return", "loss", "eps", "beta"]))  # a DQN trader's rows
    # an SB3 DQN run (no policy term) is judged by its TD loss, as every labelled DQN log with a loss is
    # (session 24, `frame.is_value_learner`); it is still a reinforcement learner
    d = _dir(tmp_path, "dqn")
    with (d / "progress.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["rollout/ep_len_mean", "rollout/ep_rew_mean", "rollout/exploration_rate", "time/episodes",
                    "time/total_timesteps", "train/learning_rate", "train/loss", "train/n_updates"])
        for i in range(N):
            w.writerow([200 + i, f"{10 + i:.2f}", f"{max(0.05, 1 - i / 20):.3f}", 4 * (i + 1), 1000 * (i + 1),
                        "0.0001", f"{0.5 + 0.1 * np.sin(i):.4f}", 250 * i])
    assert _main(d) == "train/loss"
    # the same table without the marks (a loss and a reward only) keeps its loss
    e = _dir(tmp_path, "plain")
    with (e / "progress.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step", "reward", "loss"])
        for i in range(N):
            w.writerow([i, f"{10 + i:.2f}", f"{_losses(N)[i]:.4f}"])
    assert _main(e) == "loss"


def test_ultralytics_task_scores_are_measured_on_the_validation_set():
    assert is_eval("metrics/mAP50-95(B)") and is_eval("metrics/precision(M)")
    assert not is_eval("metrics/accuracy") and not is_eval("train/box_loss")
    assert infer_role("avg_prec") == "accuracy" and infer_role("preconditioner") == "other"


# ------------------------------------------------------------ DVCLive 0.x

def _tsv(path, name, values):
    path.write_text(f"timestamp\tstep\t{name}\n" + "".join(f"{1700000000000 + i}\t{i}\t{float(v)!r}\n" for i, v in enumerate(values)))


def test_dvclive_flat_folder_is_one_run(tmp_path):
    d = _dir(tmp_path, "dvclive_logs")  # dvclive.init(path); dvclive.log(metric, value); dvclive.next_step()
    loss = _losses(N)
    _tsv(d / "loss.tsv", "loss", loss)
    _tsv(d / "accuracy.tsv", "accuracy", list(np.linspace(0.3, 0.9, N)))
    frame = _read(tmp_path)
    steps, values = _curve(frame, "loss")
    assert steps == list(range(N)) and values == pytest.approx(loss)
    assert roles_of(frame) == {"accuracy": "accuracy", "loss": "loss"}
    # TSV tables that are not DVCLive's (their value column is not named for their file) stay a run each
    e = tmp_path / "other" / "tables"
    e.mkdir(parents=True)
    for name in ("a", "b"):
        (e / f"{name}.tsv").write_text("epoch\tloss\n" + "".join(f"{i}\t{v}\n" for i, v in enumerate(loss)))
    assert len([r for r in api.load_runs(e) if r.frame.height]) == 2


def test_a_dvclive_metrics_folder_passed_itself_is_one_run(tmp_path):
    metrics = tmp_path / "dvclive" / "plots" / "metrics"  # Live(): log_metric("train/loss"), ("eval/loss"), ...
    for split in ("train", "eval"):
        (metrics / split).mkdir(parents=True)
        _tsv(metrics / split / "loss.tsv", "loss", _losses(N, 3.0 if split == "eval" else 2.5))
    _tsv(metrics / "eval" / "f1_global.tsv", "f1_global", list(np.linspace(0.3, 0.9, N)))
    runs = [r for r in api.load_runs(metrics) if r.frame.height]
    assert len(runs) == 1 and runs[0].name == "dvclive"
    roles = roles_of(runs[0].frame)
    assert roles == {"eval/f1_global": "accuracy", "eval/loss": "eval_loss", "train/loss": "loss"}
    assert _curve(runs[0].frame, "train/loss") == (list(range(N)), pytest.approx(_losses(N)))
