"""Spinning Up's `progress.txt`, Flair's `loss.tsv` and Chainer's `log` read as their users read them (#24).

The writers are not installed here; their few lines are reproduced exactly:

- Spinning Up `Logger.dump_tabular` (`spinup/utils/logx.py`): `"\\t".join(self.log_headers)` on the first
  row, then `"\\t".join(map(str, vals))`; `EpochLogger.log_tabular(key, with_min_and_max=True)` writes
  `Average<key>`, `Std<key>`, `Max<key>`, `Min<key>`. PPO logs `LossPi`, `LossV`, `DeltaLossPi`, `DeltaLossV`
  (how much the update lowered each loss: changes, not losses), `Entropy`, `KL`, `ClipFrac`, `StopIter`.
- Flair 0.4.0 `ModelTrainer.train`: the header `EPOCH\\tTIMESTAMP\\tBAD_EPOCHS\\tLEARNING_RATE\\tTRAIN_LOSS\\t
  {Metric.tsv_header("TRAIN")}\\tDEV_LOSS\\t...`, a row `...{train_loss}\\t{train_metric_str}\\t{dev_loss}...`
  where an unmeasured split is `Metric.to_empty_tsv()` = `"\\t_\\t_\\t_\\t_"`: its leading tab makes every row
  one field wider than the header, and every value after it sits one name to the right.
- Chainer `LogReport`: `json.dump(self._log, f, indent=4)` to `result/log` (no extension), one dict an interval.
"""
from __future__ import annotations

import datetime
import json
import math

from spikelens import api
from spikelens.frame import roles_of
from spikelens.stitching import main_metric

SPINUP_KEYS = ["Epoch", "AverageEpRet", "StdEpRet", "MaxEpRet", "MinEpRet", "EpLen", "AverageVVals", "StdVVals",
               "MaxVVals", "MinVVals", "TotalEnvInteracts", "LossPi", "LossV", "DeltaLossPi", "DeltaLossV", "Entropy",
               "KL", "ClipFrac", "StopIter", "Time"]


def spinup_row(epoch: int) -> list[float]:
    ret = -300.0 + 12.0 * epoch
    loss_v = 900.0 / (1 + epoch) + 5.0
    return [epoch, ret, 40.0, ret + 60, ret - 80, 1000.0, ret / 10, 2.0, ret / 10 + 5, ret / 10 - 5,
            4000 * (epoch + 1), -0.01 * math.sin(epoch), loss_v, -0.012 - 0.001 * (epoch % 3), -0.2 * loss_v,
            1.4 - 0.01 * epoch, 0.008 + 0.001 * (epoch % 4), 0.05, 79, 11.5 * (epoch + 1)]


def write_spinup(path, epochs: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for e in range(epochs):
            if e == 0:
                f.write("\t".join(SPINUP_KEYS) + "\n")
            f.write("\t".join(map(str, spinup_row(e))) + "\n")
            f.flush()


def series(frame, metric):
    g = frame.filter(frame["metric"] == metric).sort("step")
    return g["step"].to_list(), [round(v, 9) for v in g["value"].to_list()]


def test_spinning_up_progress_is_stepped_by_epoch_with_its_losses_apart_from_their_changes(tmp_path):
    f = tmp_path / "data" / "ppo" / "ppo_s0" / "progress.txt"
    write_spinup(f, 40)
    (run,) = api.load_runs(f)
    fr = run.frame
    roles = roles_of(fr)
    assert series(fr, "LossV") == (list(range(40)), [round(spinup_row(e)[12], 9) for e in range(40)])
    assert roles["LossPi"] == roles["LossV"] == "loss"
    assert roles["DeltaLossPi"] == roles["DeltaLossV"] == "other"  # how much an update lowered a loss
    assert roles["AverageEpRet"] == "reward" and roles["KL"] == "kl" and roles["Entropy"] == "entropy"
    assert main_metric(fr, roles) == "LossV"  # the value loss, not the policy's surrogate (was DeltaLossPi)
    (judged,) = api.analyze(f, jobs=1).runs
    assert judged.stats["main_metric"] == "AverageEpRet"  # an RL run is judged by its return


def tsv_header(prefix: str) -> str:
    return "{0}_PRECISION\t{0}_RECALL\t{0}_ACCURACY\t{0}_F-SCORE".format(prefix)


def write_flair_040(path, epochs: int) -> list[float]:
    """Flair 0.4.0's loss.tsv (train metrics not computed); the dev losses it wrote."""
    path.parent.mkdir(parents=True, exist_ok=True)
    dev_losses = []
    with path.open("a") as f:
        for epoch in range(epochs):
            if epoch == 0:
                f.write(f"EPOCH\tTIMESTAMP\tBAD_EPOCHS\tLEARNING_RATE\tTRAIN_LOSS\t{tsv_header('TRAIN')}\tDEV_LOSS\t"
                        f"{tsv_header('DEV')}\tTEST_LOSS\t{tsv_header('TEST')}\n")
            train_loss = 0.9 / (1 + epoch) + 0.01
            dev_loss = 1.1 / (1 + epoch) + 0.02
            dev_losses.append(dev_loss)
            dev = "{}\t{}\t{}\t{}".format(0.8 + epoch / 200, 0.7 + epoch / 200, 0.6 + epoch / 200, 0.75 + epoch / 200)
            test = "{}\t{}\t{}\t{}".format(0.79, 0.69, 0.59, 0.74)
            now = datetime.datetime(2019, 3, 1, 12, 0) + datetime.timedelta(minutes=3 * epoch)
            f.write(f"{epoch}\t{now:%H:%M:%S}\t0\t{0.1:.4f}\t{train_loss}\t{chr(9)}_\t_\t_\t_\t{dev_loss}\t{dev}\t"
                    f"{dev_loss * 1.05}\t{test}\n")
    return dev_losses


def test_old_flair_loss_tsv_reads_each_value_under_its_own_name(tmp_path):
    f = tmp_path / "resources" / "taggers" / "clf" / "loss.tsv"
    dev = write_flair_040(f, 20)
    (run,) = api.load_runs(f)
    fr = run.frame
    assert series(fr, "DEV_LOSS") == (list(range(20)), [round(v, 9) for v in dev])  # was DEV_PRECISION's values
    assert series(fr, "DEV_PRECISION")[1][:2] == [0.8, 0.805]
    assert series(fr, "TEST_F-SCORE")[1][0] == 0.74
    assert "TRAIN_PRECISION" not in set(fr["metric"])  # `_`: not measured
    roles = roles_of(fr)
    assert roles["TRAIN_LOSS"] == "loss" and roles["DEV_LOSS"] == roles["TEST_LOSS"] == "eval_loss"
    assert main_metric(fr, roles) == "TRAIN_LOSS"


def test_a_tab_after_every_row_under_a_header_without_one_loses_no_value(tmp_path):
    f = tmp_path / "loss.tsv"
    rows = [f"{e}\t12:0{e % 10}:00\t0\t0.1000\t{1.0 / (1 + e)}\t{1.2 / (1 + e)}\t{0.5 + e / 100}\t\n" for e in range(12)]
    f.write_text("EPOCH\tTIMESTAMP\tBAD_EPOCHS\tLEARNING_RATE\tTRAIN_LOSS\tDEV_LOSS\tDEV_SCORE\n" + "".join(rows))
    (run,) = api.load_runs(f)
    assert series(run.frame, "DEV_LOSS") == (list(range(12)), [round(1.2 / (1 + e), 9) for e in range(12)])
    assert series(run.frame, "DEV_SCORE")[1][-1] == 0.61


def test_chainer_log_report_is_stepped_by_iteration_with_its_validation_apart(tmp_path):
    log, it = [], 0
    for epoch in range(1, 11):
        for k in range(5):
            it += 50
            entry = {"main/loss": 2.0 / (1 + it / 300), "main/accuracy": 0.5 + it / 6000, "epoch": epoch - (k < 4),
                     "iteration": it, "elapsed_time": it * 0.41}
            if k == 4:  # the Evaluator extension reports once an epoch
                entry.update({"validation/main/loss": 2.1 / (1 + it / 300), "validation/main/accuracy": 0.48 + it / 6000})
            log.append(entry)
    f = tmp_path / "result" / "log"
    f.parent.mkdir()
    f.write_text(json.dumps(log, indent=4))
    (run,) = api.load_runs(f)
    fr = run.frame
    roles = roles_of(fr)
    assert series(fr, "main/loss")[0] == list(range(50, 2550, 50))
    assert series(fr, "validation/main/loss")[0] == list(range(250, 2550, 250))
    assert roles["main/loss"] == "loss" and roles["validation/main/loss"] == "eval_loss"
    assert roles["main/accuracy"] == "accuracy" and roles["elapsed_time"] not in ("loss", "eval_loss")
    assert main_metric(fr, roles) == "main/loss"


def test_old_flair_loss_tsv_under_a_comment_line_is_still_claimed_and_aligned(tmp_path):
    f = tmp_path / "loss.tsv"
    f.write_text("# mood classifier, lr 0.1\n")
    dev = write_flair_040(f, 12)
    (run,) = api.load_runs(f)
    assert series(run.frame, "DEV_LOSS") == (list(range(12)), [round(v, 9) for v in dev])
