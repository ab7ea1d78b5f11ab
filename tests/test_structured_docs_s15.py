"""Metric documents as session 15's harvest of public writers saves them (#24): numbers written as
strings, x/y curve dumps (visdom, plotly, TensorBoard's downloads), pandas `to_json` tables, records
keyed by epoch inside each split, a loss list beside its `_ts` steps, YAML and TOML histories, and
CSV step columns named oddly. Each test writes the file as its writer does (pandas, PyYAML and
NumPy where the writer is one of them) and checks the values, steps and roles read, with a
neighbour that must stay as it was (refused with its reason, or read as before)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from spikelens import api
from spikelens.errors import SpikelensError
from spikelens.frame import roles_of


from test_structured_shapes import _curve, _losses, _read  # noqa: E402  (the structured-shape tests' helpers)


def _dir(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    return d


def test_numbers_written_as_strings_are_read_as_the_numbers_they_spell(tmp_path):
    loss = _losses(30)
    hist = {"loss": [np.float32(v) for v in loss], "val_loss": [np.float32(v * 1.1) for v in loss]}
    a = _dir(tmp_path, "a")  # json.dump(history.history, f, default=str): NumPy floats become strings
    (a / "history.json").write_text(json.dumps(hist, default=str))
    steps, values = _curve(_read(a), "loss")
    assert steps == list(range(30)) and values == pytest.approx(loss, rel=1e-6)
    b = _dir(tmp_path, "b")  # an exported log_history whose every value is a string
    (b / "model_train.json").write_text(json.dumps(
        [{"loss": f"{v:.4f}", "learning_rate": "3.62E-06", "epoch": f"{i / 50:.2f}"} for i, v in enumerate(loss)], indent=4))
    frame = _read(b)
    assert _curve(frame, "loss")[1] == pytest.approx([round(v, 4) for v in loss])
    assert roles_of(frame)["loss"] == "loss"
    c = _dir(tmp_path, "c")  # strings that spell no number (a record of settings): no curve, and the reason
    (c / "run.json").write_text(json.dumps({"run_id": "rp_0042", "version": "1.4.0", "dataset": "mnist"}))
    with pytest.raises(SpikelensError, match="no training logs found"):
        api.load_runs(c)


def test_xy_curves_of_visdom_and_plotly_dumps_are_read_at_their_x(tmp_path):
    loss = _losses(25)
    a = _dir(tmp_path, "a")  # visdom's line data: X, Y rows (a value a legend entry), legend
    (a / "losses.json").write_text(json.dumps({"X": list(range(1, 26)), "Y": [[v, v / 2] for v in loss],
                                               "legend": ["G_GAN", "D_real"]}))
    frame = _read(a)
    assert _curve(frame, "G_GAN") == (list(range(1, 26)), pytest.approx(loss))
    assert _curve(frame, "D_real")[1] == pytest.approx([v / 2 for v in loss])
    b = _dir(tmp_path, "b")  # a visdom window (plotly traces): content.data[i] = {x, y, name}
    (b / "det_loss.json").write_text(json.dumps({"id": "win", "type": "plot", "content": {
        "data": [{"x": [10 * (i + 1) for i in range(25)], "y": loss, "name": "loss_cls", "mode": "lines"}],
        "layout": {"title": "loss"}}}))
    frame = _read(b)
    assert _curve(frame, "loss_cls") == ([10 * (i + 1) for i in range(25)], pytest.approx(loss))
    assert roles_of(frame)["loss_cls"] == "loss"
    c = _dir(tmp_path, "c")  # coordinates of a shape: x goes back and forth, no axis; read as before (lists)
    (c / "polygon_loss.json").write_text(json.dumps({"x": [3.0, 1.0, 2.0, 5.0], "y": [1.0, 2.0, 0.5, 4.0]}))
    assert _curve(_read(c), "polygon_loss/y") == ([0, 1, 2, 3], [1.0, 2.0, 0.5, 4.0])


def test_tensorboard_downloads_are_named_by_their_tag(tmp_path):
    loss = _losses(20)
    a = _dir(tmp_path, "a")  # the UI's JSON download: [[wall_time, step, value], ...]
    (a / "run-train-tag-epoch_loss.json").write_text(json.dumps([[1.7e9 + i, 5 * i, v] for i, v in enumerate(loss)]))
    frame = _read(a)
    assert _curve(frame, "epoch_loss") == ([5 * i for i in range(20)], pytest.approx(loss))
    assert roles_of(frame)["epoch_loss"] == "loss"
    b = _dir(tmp_path, "b")  # the UI's CSV download: Wall time,Step,Value
    (b / "run-version_0-tag-train_loss.csv").write_text(
        "Wall time,Step,Value\n" + "".join(f"{1.7e9 + i},{5 * i},{v}\n" for i, v in enumerate(loss)))
    frame = _read(b)
    assert _curve(frame, "train_loss") == ([5 * i for i in range(20)], pytest.approx(loss))
    assert "Wall time" not in frame["metric"].cast(str).unique().to_list()
    c = _dir(tmp_path, "c")  # the same columns in a file not named by TensorBoard: `Value` stays
    (c / "values.csv").write_text("Step,Value,loss\n" + "".join(f"{5 * i},{v},{v}\n" for i, v in enumerate(loss)))
    assert "Value" in _read(c)["metric"].cast(str).unique().to_list()


def test_pandas_split_and_table_json_are_read_as_their_rows(tmp_path):
    pd = pytest.importorskip("pandas")
    loss = _losses(30)
    df = pd.DataFrame({"loss": loss, "val_loss": [v * 1.1 for v in loss]})
    for orient in ("split", "table"):
        d = _dir(tmp_path, orient)
        df.to_json(d / "history.json", orient=orient)
        steps, values = _curve(_read(d), "loss")
        assert steps == list(range(30)) and values == pytest.approx(loss), orient


def test_records_keyed_by_epoch_in_each_split_are_one_record_an_epoch(tmp_path):
    loss = _losses(20)
    metrics = {"train": {str(e): {"loss": v, "acc": 0.5} for e, v in enumerate(loss)},
               "val": {str(e): {"loss": v * 1.2, "acc": 0.4} for e, v in enumerate(loss)}}
    a = _dir(tmp_path, "a")  # self.metrics[dataset_type][epoch] = eval_dict
    (a / "run_metrics.json").write_text(json.dumps(metrics))
    frame = _read(a)
    assert _curve(frame, "train/loss") == (list(range(20)), pytest.approx(loss))
    assert _curve(frame, "val/loss")[1] == pytest.approx([v * 1.2 for v in loss])
    assert roles_of(frame)["val/loss"] == "eval_loss"
    b = _dir(tmp_path, "b")  # records nested by split inside each epoch's record
    (b / "log.json").write_text(json.dumps({"epochs": [{"epoch": e + 1, "train": {"loss": v}, "val": {"loss": v * 1.2}}
                                                      for e, v in enumerate(loss)]}, indent=2))
    steps, values = _curve(_read(b), "epochs/train/loss")
    assert steps == list(range(1, 21)) and values == pytest.approx(loss)


def test_a_loss_list_beside_its_ts_list_is_read_at_those_steps(tmp_path):
    loss = _losses(40)
    (tmp_path / "losses.json").write_text(json.dumps({
        "train_losses": loss, "train_losses_ts": [100 * (i + 1) for i in range(40)],
        "val_losses": loss[9::10], "val_losses_ts": [100 * (i + 1) for i in range(9, 40, 10)]}))
    frame = _read(tmp_path)
    assert _curve(frame, "train_losses")[0] == [100 * (i + 1) for i in range(40)]
    assert _curve(frame, "val_losses")[0] == [1000, 2000, 3000, 4000]


def test_yaml_and_toml_histories_are_read_and_settings_files_are_not(tmp_path):
    yaml = pytest.importorskip("yaml")
    loss = _losses(30)
    a = _dir(tmp_path, "a")  # yaml.safe_dump of a dict of lists
    (a / "history.yaml").write_text(yaml.safe_dump({"loss": loss, "val_loss": [v * 1.1 for v in loss]}))
    assert _curve(_read(a), "loss") == (list(range(30)), pytest.approx(loss))
    b = _dir(tmp_path, "b")  # TOML: an array of tables, a table an epoch
    (b / "log.toml").write_text("".join(f"[[epoch]]\nepoch = {e + 1}\ntrain_loss = {v!r}\n\n" for e, v in enumerate(loss)))
    steps, values = _curve(_read(b), "epoch/train_loss")
    assert steps == list(range(1, 31)) and values == pytest.approx(loss)
    c = _dir(tmp_path, "c")  # a TOML snapshot a logged step, numbered in its name
    for i, v in enumerate(loss[:10]):
        (c / f"step_{100 * (i + 1):08d}.toml").write_text(f"step = {100 * (i + 1)}\nloss_total = {v!r}\nentropy_mean = 1.2\n")
    assert _curve(_read(c), "loss_total") == ([100 * (i + 1) for i in range(10)], pytest.approx(loss[:10]))
    d = _dir(tmp_path, "d")  # settings: no measure over a list of numbers, no history claimed
    (d / "config.yaml").write_text(yaml.safe_dump({"lr": 0.1, "milestones": [30, 60, 90], "epochs": 100}))
    (d / "train.toml").write_text("lr = 0.1\nmilestones = [30, 60, 90]\nepochs = 100\n")
    with pytest.raises(SpikelensError):
        api.load_runs(d)


def test_csv_steps_named_oddly_and_a_step_column_that_goes_back_each_row(tmp_path):
    loss = _losses(40)
    a = _dir(tmp_path, "a")  # `epochs` (plural) beside a split column, long rows
    (a / "model_loss.csv").write_text("epochs\tloss\ttype\n" + "".join(
        f"{e + 1}\t{v}\t{t}\n" for t in ("train", "test") for e, v in enumerate(loss)))
    frame = _read(a)
    assert sorted(set(frame["step"].to_list())) == list(range(1, 41))
    b = _dir(tmp_path, "b")  # OpenAI Baselines' progress.csv: the timesteps under `misc/`
    (b / "progress.csv").write_text("eprewmean,loss/value_loss,misc/nupdates,misc/total_timesteps\n" + "".join(
        f"{1 - v / 3},{v},{i + 1},{2048 * (i + 1)}\n" for i, v in enumerate(loss)))
    steps, _ = _curve(_read(b), "eprewmean")
    assert steps == [2048 * (i + 1) for i in range(40)]
    c = _dir(tmp_path, "c")  # `steps` is each episode's length (back and forth); `episode` counts the rows
    lengths = [int(x) for x in np.random.default_rng(0).integers(20, 500, 40)]
    (c / "dqn_agent.csv").write_text("episode,total_reward,steps,exit_reason\n" + "".join(
        f"{i + 1},{10 - v},{n},collision\n" for i, (v, n) in enumerate(zip(loss, lengths))))
    assert _curve(_read(c), "total_reward")[0] == list(range(1, 41))
    e = _dir(tmp_path, "e")  # a within-epoch `step` beside an `epoch` that repeats: the step column stays
    (e / "log.csv").write_text("epoch,step,train_loss\n" + "".join(
        f"{i // 2 + 1},{299 if i % 2 == 0 else 599},{v}\n" for i, v in enumerate(loss)))
    assert set(_curve(_read(e), "train_loss")[0]) <= {299, 599}
    d = _dir(tmp_path, "d")  # a step column relaunched once stays the step (two segments)
    (d / "log.csv").write_text("step,loss\n" + "".join(f"{10 * (i % 25 + 1)},{v}\n" for i, v in enumerate(loss)))
    got = _curve(_read(d), "loss")[0]
    assert got[:25] == [10 * (i + 1) for i in range(25)] and got[25:] == [10 * (i + 1) for i in range(15)]


def test_a_fitness_table_with_the_pandas_index_is_read_by_its_generation(tmp_path):
    fit = [0.4 + 0.5 * (1 - np.exp(-i / 10)) for i in range(30)]
    (tmp_path / "evolution.csv").write_text(",Gen,best_fitness,mean_fitness\n" + "".join(
        f"{i},{i + 1},{f},{f - 0.1}\n" for i, f in enumerate(fit)))
    frame = _read(tmp_path)
    assert _curve(frame, "best_fitness") == (list(range(1, 31)), pytest.approx(fit))
    assert roles_of(frame)["best_fitness"] == "reward"


def test_monitor_episodes_without_the_comment_line_and_a_search_table_refused(tmp_path):
    rewards = [10 + 5 * i for i in range(30)]
    a = _dir(tmp_path, "a")  # csv.DictWriter(fieldnames=["r", "l", "t"]): a Monitor's rows, no `#{...}` line
    (a / "episode_seed0.csv").write_text("r,l,t\n" + "".join(f"{r},{100 + i},{1.5 * i}\n" for i, r in enumerate(rewards)))
    frame = _read(a)
    steps, values = _curve(frame, "episode/reward")
    assert values == pytest.approx(rewards) and steps == list(np.cumsum([100 + i for i in range(30)]))
    assert roles_of(frame)["episode/reward"] == "reward"
    b = _dir(tmp_path, "b")  # pd.DataFrame(grid.cv_results_).to_csv(): a row a candidate, no curve
    (b / "cv_results.csv").write_text(",mean_fit_time,param_C,mean_test_score,std_test_score,rank_test_score\n" + "".join(
        f"{i},0.{i + 1},{10 ** (i - 3)},{0.8 + i / 100},0.01,{6 - i}\n" for i in range(6)))
    with pytest.raises(SpikelensError, match="no training logs found"):
        api.load_runs(b)
    c = _dir(tmp_path, "c")  # a log whose columns hold a test score by epoch stays a curve
    (c / "log.csv").write_text("epoch,loss,mean_test_score\n" + "".join(f"{i + 1},{1 / (i + 1)},{0.5 + i / 100}\n" for i in range(20)))
    assert _curve(_read(c), "loss")[0] == list(range(1, 21))


def test_a_long_table_of_items_is_one_curve_an_item(tmp_path):
    loss = _losses(30)
    a = _dir(tmp_path, "a")  # validation written in long form: `epoch,data,loss,metric1`, a row an image
    (a / "val_log.csv").write_text("epoch,data,loss,metric1\n" + "".join(
        f"{e + 1},image-00{k},{v * (1 + k / 10)},0.5\n" for e, v in enumerate(loss) for k in (1, 2, 3)))
    frame = _read(a)
    assert _curve(frame, "image-002/loss") == (list(range(1, 31)), pytest.approx([v * 1.2 for v in loss]))
    assert roles_of(frame)["image-002/loss"] == "loss"
    b = _dir(tmp_path, "b")  # a note that changes at each row of a table of one row a step: a note, no item
    (b / "log.csv").write_text("epoch,loss,note\n" + "".join(f"{e + 1},{v},{'ok' if e % 2 else 'slow'}\n" for e, v in enumerate(loss)))
    assert _curve(_read(b), "loss") == (list(range(1, 31)), pytest.approx(loss))
