"""Writers of session 16's fresh harvest (#24): RL progress tables with glued names (Spinning Up's
`AverageEpRet`, rllab/garage's `AverageReturn`), glued split names (`mseTr`, `lossVal`), gradient
boosters' `evals_result` (LightGBM's `l1`/`l2`, XGBoost's `logloss`), headerless number tables whose
file names nothing, folds run side by side in one table, tables of runs (a row a fold or an
environment), and an SB3-shaped table of seeds named by its file. Each file is written as its
writer writes it (csv, json, NumPy) and read for values, steps and roles, beside a neighbour that
must stay as it was or be refused with its reason."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from spikelens import api, diagnostics
from spikelens.errors import FormatError, SpikelensError
from spikelens.frame import infer_role, infer_roles, is_reinforcement, roles_of
from spikelens.importers.barenumbers import BareNumbersImporter
from spikelens.importers.csvlogs import looks_like_runs_table

from test_structured_shapes import _curve, _losses, _read  # noqa: E402  (the structured-shape tests' helpers)


def _dir(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    return d


def _rising(n):
    return [round(0.2 + 0.6 * (1 - float(np.exp(-i / 10))), 6) for i in range(n)]


def _tsv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t")
        if header:
            w.writerow(header)
        w.writerows(rows)


# ------------------------------------------------------------------ roles of glued names


@pytest.mark.parametrize("name, role", [
    ("AverageEpRet", "reward"), ("AverageTestEpRet", "reward"), ("EpRet", "reward"), ("AverageReturn", "reward"),
    ("Evaluation/AverageReturn", "reward"), ("ReturnAverage", "reward"), ("RawReturnAverage", "reward"),
    ("mseTr", "loss"), ("MSETr", "loss"), ("MSEVal", "eval_loss"), ("lossTr", "loss"), ("lossVal", "eval_loss"),
    ("valLoss", "eval_loss"), ("accVal", "accuracy"), ("MeanKL", "kl"), ("LossPi", "loss"),
    ("valid_0/l1", "eval_loss"), ("training/l2", "loss"), ("validation_1/logloss", "eval_loss"), ("mlogloss", "loss"),
    # must stay: spreads of a return, counts, settings, words that only look glued
    ("StdEpRet", "other"), ("MaxEpRet", "other"), ("EpLen", "other"), ("TotalEnvInteracts", "other"),
    ("ReturnCode", "other"), ("numEpochs", "other"), ("maxLen", "other"), ("lambda_l1", "other"),
    ("learningRate", "lr"), ("ValueLoss", "loss"), ("seed_0", "other"),
])
def test_glued_names_are_read_as_their_words(name, role):
    assert infer_role(name) == role


def test_spinning_up_progress_is_judged_by_its_episode_return(tmp_path):
    n = 40
    ret, loss = _rising(n), _losses(n)
    header = ["Epoch", "AverageEpRet", "StdEpRet", "MaxEpRet", "MinEpRet", "EpLen", "TotalEnvInteracts",
              "LossPi", "LossV", "KL", "Time"]
    rows = [[e, ret[e], 0.1, ret[e] + 0.2, ret[e] - 0.2, 200, 4000 * (e + 1), loss[e], loss[e] * 2, 0.01, 10.5 * e]
            for e in range(n)]
    _tsv(tmp_path / "progress.txt", header, rows)  # logx.Logger.dump_tabular: tab-separated, a header
    frame = _read(tmp_path)
    roles = roles_of(frame)
    assert roles["AverageEpRet"] == "reward" and roles["StdEpRet"] == "other" and roles["KL"] == "kl"
    assert is_reinforcement(roles)
    steps, values = _curve(frame, "AverageEpRet")
    assert steps == list(range(n)) and values == pytest.approx(ret)
    (run,) = api.analyze(tmp_path / "progress.txt", jobs=1).runs  # analyze judges the return, not LossPi
    assert run.stats.get("main_metric") == "AverageEpRet"
    # must stay: the same table with no learner's term (a plain score table) is no RL run (an episode's
    # length, `EpLen`, marks a learner in an environment since session 17: the look-alike logs none)
    assert not is_reinforcement(infer_roles(["Epoch", "AverageEpRet", "Time"]))


def test_rllab_and_garage_returns_are_rewards_beside_their_kl(tmp_path):
    n = 30
    ret = _rising(n)
    with open(tmp_path / "progress.csv", "w", newline="") as f:  # rllab's tabular CSV
        w = csv.writer(f)
        w.writerow(["Iteration", "AverageReturn", "MaxReturn", "NumTrajs", "Entropy", "MeanKL", "LossBefore"])
        w.writerows([i, ret[i], ret[i] + 0.3, 20, 1.1, 0.01, 0.5] for i in range(n))
    frame = _read(tmp_path)
    roles = roles_of(frame)
    assert roles["AverageReturn"] == "reward" and roles["MeanKL"] == "kl" and roles["MaxReturn"] == "other"
    assert _curve(frame, "AverageReturn") == (list(range(n)), pytest.approx(ret))
    assert is_reinforcement(roles)


# ------------------------------------------------------------------ gradient boosters' evals_result


def test_gradient_boosters_eval_metrics_are_their_losses(tmp_path):
    n = 60
    l1, l2 = _losses(n, 1.0), _losses(n, 2.0)
    a = _dir(tmp_path, "a")  # json.dump(lgb evals_result): {data set: {metric: [a value a round]}}
    (a / "evals_result.json").write_text(json.dumps({"training": {"l1": l1, "l2": l2},
                                                      "valid_1": {"l1": [v * 1.1 for v in l1], "l2": l2}}))
    frame = _read(a)
    roles = roles_of(frame)
    assert roles["training/l1"] == "loss" and roles["valid_1/l2"] == "eval_loss"
    steps, values = _curve(frame, "training/l1")
    assert steps == list(range(n)) and values == pytest.approx(l1)
    b = _dir(tmp_path, "b")  # XGBoost's evals_result(): validation_0 / validation_1
    (b / "evals_result.json").write_text(json.dumps({"validation_0": {"logloss": l1, "error": l2},
                                                      "validation_1": {"logloss": l2, "error": l1}}))
    roles = roles_of(_read(b))
    assert roles["validation_0/logloss"] == "eval_loss"
    # must stay: a booster's settings are no curve (`lambda_l1`), a GAN's `G_L1` term keeps its own reading
    assert infer_role("lambda_l1") == "other" and infer_role("G_L1") == infer_role("D_L1")


# ------------------------------------------------------------------ headerless number tables


def test_a_headerless_table_named_by_nothing_is_read_by_its_columns_shape(tmp_path):
    n = 60
    loss, acc = _losses(n), _rising(n)
    a = _dir(tmp_path, "a")  # np.savetxt('history.txt', np.c_[epochs, losses], fmt='%d %.6f')
    np.savetxt(a / "history.txt", np.c_[np.arange(1, n + 1), loss], fmt="%d %.6f")
    frame = _read(a)
    assert roles_of(frame) == {"history_loss_column2": "loss"}
    assert _curve(frame, "history_loss_column2") == (list(range(1, n + 1)), pytest.approx(loss))
    b = _dir(tmp_path, "b")  # f.write(f"{epoch} {train_loss} {val_loss} {val_acc}\n"): the first falling one
    (b / "log.txt").write_text("".join(f"{e} {loss[e]} {loss[e] * 1.1} {acc[e]}\n" for e in range(n)))
    frame = _read(b)
    roles = roles_of(frame)
    assert roles["log_loss_column2"] == "loss" and roles["log_column4"] == "other"
    assert _curve(frame, "log_loss_column2")[0] == list(range(n))
    c = _dir(tmp_path, "c")  # a loss that halves in its first epochs and then creeps down (a fifth, first to last)
    fast = [0.1 + 0.1 * float(np.exp(-e / 8)) for e in range(500)]
    np.savetxt(c / "train_log.txt", np.c_[np.arange(500), fast, _rising(500)], fmt="%d %.8f %.6f")
    assert roles_of(_read(c))["train_log_loss_column2"] == "loss"


def test_a_headerless_table_whose_shape_names_nothing_is_refused_with_the_reason(tmp_path):
    n = 60
    a = _dir(tmp_path, "a")  # a counter and a column rising past any score's bounds: nothing tells what it is
    np.savetxt(a / "data.txt", np.c_[np.arange(n), 1000 * np.asarray(_rising(n))], fmt="%d %.6f")
    path = a / "data.txt"
    imp = BareNumbersImporter()
    assert imp.claims(path, path.read_bytes())
    with pytest.raises(FormatError, match="no column falls as a loss does") as err:
        imp.read(path)
    assert "\n" not in str(err.value)
    with diagnostics.collecting() as diag:  # discovery says it in one line, and reads nothing
        assert not [r for r in api.load_runs(a) if r.frame.height]
    assert [ln for ln in diag.lines if "data.txt" in ln and "no column falls as a loss does" in ln]
    noisy = 1 + 0.1 * np.random.default_rng(0).standard_normal(n)  # a noisy flat column falls by chance only
    noisy[:3] = [1.4, 1.35, 1.3]
    np.savetxt(a / "data.txt", np.c_[np.arange(n), np.abs(noisy)], fmt="%d %.6f")
    with pytest.raises(FormatError, match="no column falls as a loss does"):
        imp.read(path)
    np.savetxt(a / "data.txt", np.c_[np.arange(n), _rising(n)], fmt="%d %.6f")  # (s19: a rise within [0, 1] is a score)
    assert "data_score_column2" in set(imp.read(path)[0].frame["metric"])
    b = _dir(tmp_path, "b")  # no counter leads the rows (features, predictions): not claimed at all
    np.savetxt(b / "data.txt", np.c_[np.linspace(0.1, 5, n), _losses(n)], fmt="%.4f")
    assert not BareNumbersImporter().claims(b / "data.txt", (b / "data.txt").read_bytes())


# ------------------------------------------------------------------ folds side by side, tables of runs


def test_folds_run_side_by_side_in_one_table_are_a_curve_each(tmp_path):
    n, folds = 30, 3
    loss = _losses(n)
    a = _dir(tmp_path, "a")
    with open(a / "cv_log.csv", "w", newline="") as f:  # DictWriter(['fold','epoch','train_loss','val_loss'])
        w = csv.DictWriter(f, fieldnames=["fold", "epoch", "train_loss", "val_loss"])
        w.writeheader()
        for e in range(n):
            for k in range(folds):
                w.writerow({"fold": k, "epoch": e + 1, "train_loss": loss[e] + k / 10, "val_loss": loss[e] * 1.1})
    frame = _read(a)
    for k in range(folds):
        steps, values = _curve(frame, f"fold_{k}/train_loss")
        assert steps == list(range(1, n + 1)) and values == pytest.approx([v + k / 10 for v in loss])
    assert roles_of(frame)["fold_1/val_loss"] == "eval_loss"
    b = _dir(tmp_path, "b")  # must stay: a setting logged on every row is a metric column, not a key
    with open(b / "log.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epoch", "batch_size", "loss"])
        w.writerows([e + 1, 64, loss[e]] for e in range(n))
    frame = _read(b)
    assert _curve(frame, "loss") == (list(range(1, n + 1)), pytest.approx(loss))


def test_tables_of_runs_are_refused_as_no_curve(tmp_path):
    a = _dir(tmp_path, "a")
    with open(a / "fold_results.csv", "w", newline="") as f:  # a row a fold: its best epoch and scores
        w = csv.writer(f)
        w.writerow(["fold", "best_epoch", "best_val_loss", "test_acc"])
        w.writerows([k, 10 + k, 0.5 - k / 100, 0.8] for k in range(5))
    with pytest.raises(SpikelensError, match="no training logs found"):
        api.load_runs(a)
    assert looks_like_runs_table(["algo", "env_id", "mean_reward", "std_reward", "n_timesteps", "n_episodes"])
    assert looks_like_runs_table(["id", "datetime", "model_type", "runtime", "n_epochs", "batch_size", "lr", "f1"])
    # must stay: one run's curves, per seed or per fold, are no table of runs
    assert not looks_like_runs_table(["seed", "step", "reward_mean", "reward_std"])
    assert not looks_like_runs_table(["fold", "epoch", "train_loss", "val_loss"])
    assert not looks_like_runs_table(["Epoch", "AverageEpRet", "StdEpRet"])
    assert not looks_like_runs_table(["run", "n_iter", "loss_mean", "loss_std"])  # a curve counted by n_iter


def test_seed_columns_beside_timesteps_measure_what_the_file_names(tmp_path):
    n = 40
    ret = _rising(n)
    a = _dir(tmp_path, "a")
    with open(a / "returns_per_seed.csv", "w", newline="") as f:  # {'timesteps': t, 'seed_0': r0, ...}
        w = csv.writer(f)
        w.writerow(["timesteps", "seed_0", "seed_1"])
        w.writerows([1000 * (i + 1), ret[i], ret[i] * 0.9] for i in range(n))
    frame = _read(a)
    roles = roles_of(frame)
    assert roles == {"returns_per_seed/seed_0": "reward", "returns_per_seed/seed_1": "reward"}
    assert _curve(frame, "returns_per_seed/seed_0") == ([1000 * (i + 1) for i in range(n)], pytest.approx(ret))
    b = _dir(tmp_path, "b")  # must stay: an SB3 progress.csv whose columns name their measures
    with open(b / "progress.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rollout/ep_rew_mean", "time/total_timesteps", "train/approx_kl"])
        w.writerows([ret[i], 2048 * (i + 1), 0.01] for i in range(n))
    assert set(roles_of(_read(b))) == {"rollout/ep_rew_mean", "train/approx_kl"}
