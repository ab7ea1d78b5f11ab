"""Metric files as public training scripts write them, session 14's harvest (#24): each test writes
a file the way a harvested writer does and checks what `api.load_runs` reads (names, steps, roles),
or the one-line reason a file is refused. One general mechanism a test."""
from __future__ import annotations

import json

import numpy as np
import pytest

from spikelens import api, passedover
from spikelens.errors import SpikelensError

from loaded_runs import curve as _curve, only_frame as _read
from spikelens.frame import infer_roles, roles_of


def _losses(n, start=2.5):
    return [round(start * float(np.exp(-i / 20)) + 0.3, 6) for i in range(n)]


def test_a_json_list_of_numbers_is_the_curve_its_file_names(tmp_path):
    (tmp_path / "losses.json").write_text(json.dumps(_losses(40)))  # json.dump(losses, f)
    frame = _read(tmp_path)
    steps, values = _curve(frame, "losses")
    assert steps == list(range(40)) and values == pytest.approx(_losses(40))
    assert roles_of(frame)["losses"] == "loss"
    # a file whose name says nothing: refused, and the reason says so
    other = tmp_path / "unnamed"
    other.mkdir()
    (other / "data.json").write_text(json.dumps(_losses(40)))
    with pytest.raises(SpikelensError, match="all numbers, that nothing names"):
        api.load_runs(other)
    # a training log's one unnamed series, flat or not, is its loss (`json.dump(loss_history, open('training_log.json'))`)
    logged = tmp_path / "logged"
    logged.mkdir()
    flat = [0.0022 + 0.0003 * ((i * 7) % 5 - 2) for i in range(101)]
    (logged / "training_log.json").write_text(json.dumps(flat))
    frame = _read(logged)
    assert _curve(frame, "loss") == (list(range(101)), pytest.approx(flat)) and roles_of(frame)["loss"] == "loss"


def test_json_records_and_histories_are_stepped_by_their_own_count(tmp_path):
    loss = _losses(30)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "train_log.json").write_text(json.dumps(  # 1-based epochs, no step key
        [{"epoch": e + 1, "train loss": v, "test acc": 0.5} for e, v in enumerate(loss)]))
    assert _curve(_read(tmp_path / "a"), "train loss")[0] == list(range(1, 31))
    (tmp_path / "b").mkdir()
    (tmp_path / "e").mkdir()  # ParlAI's trainstats: train reports counted by `total_train_updates`
    (tmp_path / "e" / "model.trainstats").write_text(json.dumps({"parleys": 10, "train_reports": [
        {"exs": 64, "loss": v, "total_train_updates": 10 * (i + 1)} for i, v in enumerate(loss)]}))
    assert _curve(_read(tmp_path / "e"), "train_reports/loss")[0] == [10 * (i + 1) for i in range(30)]
    (tmp_path / "f").mkdir()  # logger[f'iter: {i}'] = {'loss': ..., 'lr': ...}; json.dump(logger)
    (tmp_path / "f" / "train_log.json").write_text(json.dumps({f"iter: {5 * i}": {"loss": v, "lr": 0.1} for i, v in enumerate(loss)}))
    assert _curve(_read(tmp_path / "f"), "loss")[0] == [5 * i for i in range(30)]
    (tmp_path / "b" / "loss_data.json").write_text(json.dumps(  # a frame counter
        [{"frame_number": 100 * (i + 1), "classification_loss": v} for i, v in enumerate(loss)]))
    assert _curve(_read(tmp_path / "b"), "classification_loss")[0] == [100 * (i + 1) for i in range(30)]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "metrics.json").write_text(json.dumps({"epoch": list(range(1, 31)), "train_loss": loss}))
    assert _curve(_read(tmp_path / "c"), "train_loss")[0] == list(range(1, 31))
    # fractional epochs (HF's 0.01, 0.02, ...) count no point: the list index is the step
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "hist.json").write_text(json.dumps([{"epoch": round(i / 100, 2), "loss": v} for i, v in enumerate(loss)]))
    assert _curve(_read(tmp_path / "d"), "loss")[0] == list(range(30))


def test_the_curves_object_past_a_counter_and_a_list_of_fold_histories(tmp_path):
    loss = _losses(25)
    (tmp_path / "a").mkdir()  # tf.js: JSON.stringify(history): the epochs beside the history object
    (tmp_path / "a" / "history.json").write_text(json.dumps(
        {"validationData": None, "params": {"epochs": 25, "metrics": ["loss", "val_loss"]}, "epoch": list(range(25)),
         "history": {"loss": loss, "val_loss": [v * 1.1 for v in loss]}}))
    frame = _read(tmp_path / "a")
    assert _curve(frame, "history/loss") == (list(range(25)), pytest.approx(loss))
    (tmp_path / "b").mkdir()  # {model: {feature: [a history a fold]}}
    (tmp_path / "b" / "training_history.json").write_text(json.dumps(
        {"CNN": {"mfcc": [{"loss": [v + k for v in loss], "Accuracy": [0.5] * 25} for k in range(3)]}}))
    frame = _read(tmp_path / "b")
    assert {m for m in frame["metric"].cast(str).unique()} >= {"CNN/mfcc/1/loss", "CNN/mfcc/3/loss"}
    assert _curve(frame, "CNN/mfcc/2/loss")[1] == pytest.approx([v + 1 for v in loss])


def test_one_column_tables_named_by_their_header_or_their_file(tmp_path):
    loss = _losses(20)
    (tmp_path / "a").mkdir()  # pd.DataFrame({'train loss': losses}).to_csv(sep='\t', index=False)
    (tmp_path / "a" / "train_loss.tsv").write_text("train loss\n" + "".join(f"{v}\n" for v in loss))
    assert _curve(_read(tmp_path / "a"), "train loss") == (list(range(20)), pytest.approx(loss))
    (tmp_path / "b").mkdir()  # pd.DataFrame(losses).to_csv('train_losses.csv'): its index, then column `0`
    (tmp_path / "b" / "train_losses.csv").write_text(",0\n" + "".join(f"{i},{v}\n" for i, v in enumerate(loss)))
    frame = _read(tmp_path / "b")
    assert _curve(frame, "train_losses/0")[1] == pytest.approx(loss) and roles_of(frame)["train_losses/0"] == "loss"


def test_a_few_long_rows_are_a_series_each(tmp_path):
    loss = _losses(30)
    (tmp_path / "a").mkdir()  # csv.writer(f).writerow(history), in a file with no extension
    (tmp_path / "a" / "loss").write_text(";".join(map(repr, loss)) + "\n")
    assert _curve(_read(tmp_path / "a"), "loss") == (list(range(30)), pytest.approx(loss))
    (tmp_path / "b").mkdir()  # np.savetxt('losses.txt', np.array([train, test]))
    (tmp_path / "b" / "losses.txt").write_text(" ".join(map(repr, loss)) + "\n" + " ".join(repr(v * 1.1) for v in loss) + "\n")
    frame = _read(tmp_path / "b")
    assert _curve(frame, "losses_row2")[1] == pytest.approx([v * 1.1 for v in loss])


def test_a_name_over_its_block_of_numbers(tmp_path):
    loss = _losses(15)
    # for key in history.history: f.write(f"{key}\n"); for v in history.history[key]: f.write(f"{v}\n")
    (tmp_path / "training_history.txt").write_text("loss\n" + "".join(f"{v}\n" for v in loss) +
                                                   "val_loss\n" + "".join(f"{v * 1.2}\n" for v in loss))
    frame = _read(tmp_path)
    assert _curve(frame, "loss") == (list(range(15)), pytest.approx(loss))
    assert roles_of(frame) == {"loss": "loss", "val_loss": "eval_loss"}


def test_a_count_after_the_values_and_a_commented_header_whose_total_is_the_loss(tmp_path):
    loss = _losses(20)
    (tmp_path / "a").mkdir()  # f.write(str(loss) + "," + str(index) + "\n")
    (tmp_path / "a" / "train_losses.txt").write_text("".join(f"{v},{i + 1}\n" for i, v in enumerate(loss)))
    assert _curve(_read(tmp_path / "a"), "train_losses_column1")[0] == list(range(1, 21))
    (tmp_path / "b").mkdir()  # np.savetxt('losses.dat', terms, header='ic cs total')
    (tmp_path / "b" / "losses.dat").write_text("# ic cs total\n" + "".join(f"{v / 3:.6e} {v / 2:.6e} {v:.6e}\n" for v in loss))
    frame = _read(tmp_path / "b")
    assert roles_of(frame)["total"] == "loss" and _curve(frame, "total")[1] == pytest.approx(loss, rel=1e-5)


def test_roles_of_scores_fitness_and_named_errors():
    assert infer_roles(["generation", "avg_fitness", "max_fitness", "std_fitness"]) == {
        "generation": "other", "avg_fitness": "reward", "max_fitness": "reward", "std_fitness": "other"}
    assert infer_roles(["scores", "steps"])["scores"] == "reward"
    assert infer_roles(["Avg_Final_Score_100", "Avg_Reward_100"]) == {"Avg_Final_Score_100": "other",
                                                                      "Avg_Reward_100": "reward"}  # the reward named
    assert infer_roles(["f1_score"])["f1_score"] == "accuracy"
    # a score's threshold is a setting; an error's score (sMAPE) falls as the model improves
    assert infer_roles(["SCORE_THRESH_TEST", "smape_score", "total_loss"]) == {
        "SCORE_THRESH_TEST": "other", "smape_score": "other", "total_loss": "loss"}
    assert infer_roles(["trainmse", "valmse", "train:MSE", "test:ELBO", "train:KLD", "test_bpd", "mean_squared_error"]) == {
        "trainmse": "loss", "valmse": "eval_loss", "train:MSE": "loss", "test:ELBO": "eval_loss", "train:KLD": "kl",
        "test_bpd": "eval_loss", "mean_squared_error": "loss"}


def test_a_finer_step_word_before_the_epoch_and_a_csv_printed_to_an_out_file(tmp_path):
    loss = _losses(20)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "log.csv").write_text("epoch,training_steps,train:ELBO\n" + "".join(
        f"{i // 5},{50 * (i + 1)},{v}\n" for i, v in enumerate(loss)))
    assert _curve(_read(tmp_path / "a"), "train:ELBO")[0] == [50 * (i + 1) for i in range(20)]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "dqn-cartpole-v1.out").write_text("step,score\n" + "".join(f"{10 * (i + 1)},{1 - v / 3}\n" for i, v in enumerate(loss)))
    frame = _read(tmp_path / "b")
    assert roles_of(frame)["score"] == "reward" and _curve(frame, "score")[0][:2] == [10, 20]


def test_an_error_file_of_columns_named_by_the_loss_function(tmp_path):
    loss = _losses(20)
    folder = tmp_path / "catboost_info"  # CatBoost: learn_error.tsv, test_error.tsv (`iter` then the loss function)
    folder.mkdir()
    for name, k in (("learn_error.tsv", 1.0), ("test_error.tsv", 1.1)):
        (folder / name).write_text("iter\tMultiClass\n" + "".join(f"{i}\t{v * k}\n" for i, v in enumerate(loss)))
    runs = [r for r in api.load_runs(folder) if r.frame.height]
    roles = {m: r for run in runs for m, r in roles_of(run.frame).items()}
    assert roles == {"learn_error/MultiClass": "loss", "test_error/MultiClass": "eval_loss"}


def test_a_headerless_table_nothing_names_is_refused_saying_so(tmp_path):
    path = tmp_path / "kt_log.csv"  # f.write('{},{},{}\n'.format(epoch, acc, loss))
    path.write_text("".join(f"{i},{0.5 + i / 100},{v}\n" for i, v in enumerate(_losses(20))))
    assert "with no header: nothing names them" in passedover.reason(path)


def test_a_table_of_runs_is_refused_as_one(tmp_path):
    # optuna: study.trials_dataframe().to_csv(...); a sweep's results with its settings as columns
    (tmp_path / "objective_history.csv").write_text("number,value,params_learning_rate,params_num_leaves,state\n" + "".join(
        f"{i},{0.5 - i / 100},{0.01 * (i + 1)},{8 + i},COMPLETE\n" for i in range(20)))
    assert "a table of runs" in passedover.reason(tmp_path / "objective_history.csv")
    (tmp_path / "test.csv").write_text(",lr,n_layers,dropout,score\n" + "".join(
        f"{i},{0.001 * (i + 1)},{2 + i % 3},{0.1 * (i % 5)},{0.5 + i / 100}\n" for i in range(20)))
    with pytest.raises(SpikelensError, match="a table of runs"):
        api.load_runs(tmp_path)


def test_a_step_cell_that_decorates_its_number(tmp_path):
    # PointNeXt's to_csv: `Step[12]` in the step column
    loss = _losses(20)
    (tmp_path / "train_acc.csv").write_text("time,step,train_loss\n" + "".join(
        f"2024-05-01 12:00:{i:02d},Step[{10 * (i + 1)}],{v}\n" for i, v in enumerate(loss)))
    assert _curve(_read(tmp_path), "train_loss") == ([10 * (i + 1) for i in range(20)], pytest.approx(loss))


def test_a_column_naming_the_run_splits_the_file_into_runs(tmp_path):
    # rows {'Run': run, 'Generation': g, 'Average Fitness': a, 'Best Fitness': b} for several runs in one file
    rows = "".join(f"{r},{g},{0.3 + g / 100 + r / 10},{0.5 + g / 80}\n" for r in (1, 2, 3) for g in range(1, 21))
    (tmp_path / "evolution_data.csv").write_text("Run,Generation,Average Fitness,Best Fitness\n" + rows)
    runs = [r for r in api.load_runs(tmp_path) if r.frame.height]
    assert len(runs) == 3
    for run in runs:
        assert _curve(run.frame, "Best Fitness")[0] == list(range(1, 21))
        assert "Run" not in run.frame["metric"].cast(str).unique().to_list()
    # a setting logged on every row (one block, its step never starting again) splits nothing
    (tmp_path / "evolution_data.csv").write_text("seed,Generation,Best Fitness\n" + "".join(f"7,{g},{g / 10}\n" for g in range(1, 21)))
    assert len([r for r in api.load_runs(tmp_path) if r.frame.height]) == 1


def test_a_file_of_numbers_with_an_extension_no_reader_knows_is_named_with_its_reason(tmp_path):
    (tmp_path / "score.data").write_text("".join(f"{0.3 + i / 100}\n" for i in range(30)))
    (tmp_path / "model.pt").write_bytes(b"\x80\x02" + bytes(range(256)) * 4)
    with pytest.raises(SpikelensError, match=r"1 file looked at \(.*score\.data: "):
        api.load_runs(tmp_path)
