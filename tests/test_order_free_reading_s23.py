"""A table or JSON log reads the same whatever the order of its columns or keys (#24).

The run's main loss and its step column are chosen by what the names say (a plain name the others
extend, a generator over its adversary, a data term over a regulariser, a count named as the step and not
one of a numbered set), then by a stable rule (the name's order, the smallest count), never by where the
writer put a column: each case is written by the writer's own code in its order and reversed, and both
readings must agree with what its users read. Files are written as the scripts and trainers write them
(`csv.writer`/`DictWriter` rows of group_DRO's `CSVBatchLogger`, Chainer's `LogReport`, Ultralytics'
`save_metrics` from `fixtures/writers/trainers.py`)."""
from __future__ import annotations

import csv
import json
import math
import sys

import pytest

from conftest import FIXTURES
from spikelens import api

sys.path.insert(0, str(FIXTURES))
from writers.trainers import write_v8  # noqa: E402


def judged(path) -> tuple[str, int]:
    """The metric the run is judged by and how many steps it has."""
    (run,) = api.analyze(path, jobs=1).runs
    (read,) = api.load_runs(path)
    return run.stats["main_metric"], read.frame.get_column("step").n_unique()


def write_table(path, names: list[str], rows: list[list], reverse: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    order = list(reversed(range(len(names)))) if reverse else list(range(len(names)))
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([names[i] for i in order])
        w.writerows([[r[i] for i in order] for r in rows])


@pytest.mark.parametrize("reverse", [False, True], ids=["as-written", "reversed"])
@pytest.mark.parametrize("terms, main", [
    (["Latest_training_loss", "Average_training_loss", "Training_loss"], "Training_loss"),  # the plain name they extend
    (["train_loss", "loss"], "loss"),
    (["l_cr", "l_freq", "l_pix"], "l_pix"),  # BasicSR: the pixel term over the regularisers, wherever it stands
    (["Loss3", "Loss1", "Loss2"], "Loss1"),
])
def test_loss_terms_of_equal_standing_give_one_main_loss_in_any_column_order(tmp_path, terms, main, reverse):
    scales = [1.0 + 0.3 * k for k in range(len(terms))]
    rows = [[e, *(round(s * (0.4 + 2.0 / (1 + e)) + 0.01 * math.sin(e + k), 6) for k, s in enumerate(scales))]
            for e in range(60)]
    f = tmp_path / "log.csv"
    write_table(f, ["epoch", *terms], rows, reverse)
    assert judged(f) == (main, 60)


@pytest.mark.parametrize("reverse", [False, True], ids=["as-written", "reversed"])
def test_yolo_results_with_columns_reversed_are_judged_on_the_box_loss(tmp_path, reverse):
    f = write_v8(tmp_path / "runs/detect/train", 30, epochs=30)
    rows = list(csv.reader(f.read_text().splitlines()))
    write_table(f, rows[0], rows[1:], reverse)
    assert judged(f) == ("train/box_loss", 30)


@pytest.mark.parametrize("reverse", [False, True], ids=["as-written", "reversed"])
def test_yolo_results_killed_early_keep_their_args_yaml_plan_in_any_column_order(tmp_path, reverse):
    f = write_v8(tmp_path / "runs/detect/train", 5, epochs=100)
    rows = list(csv.reader(f.read_text().splitlines()))
    write_table(f, rows[0], rows[1:], reverse)
    (run,) = api.analyze(f, jobs=1).runs
    (stop,) = [x for x in run.findings if x.kind == "ended_early"]
    assert stop.evidence["planned_epochs"] == 100 and stop.evidence["fraction_done"] == pytest.approx(0.05)


@pytest.mark.parametrize("reverse", [False, True], ids=["as-written", "reversed"])
def test_chainer_gan_log_is_judged_on_its_generator_in_any_key_order(tmp_path, reverse):
    # Chainer's LogReport: `json.dump(self._log, f, indent=4)` of one dict an interval, in `result/log`
    log = []
    for it in range(100, 6100, 100):
        entry = {"epoch": it // 1000, "iteration": it, "gen/loss": 1.2 + 0.3 * math.sin(it / 700),
                 "dis/loss": 1.4 - 0.2 * math.sin(it / 700), "elapsed_time": it * 0.29}
        log.append(dict(reversed(entry.items())) if reverse else entry)
    f = tmp_path / "result" / "log"
    f.parent.mkdir()
    f.write_text(json.dumps(log, indent=4))
    assert judged(f) == ("gen/loss", 60)


def group_dro_rows(epochs: int) -> tuple[list[str], list[list]]:
    """group_DRO's `CSVBatchLogger`: `epoch`, `batch` and `LossComputer.get_stats()` (per-group counts and losses
    named `<stat>_group:<g>`), a row at each log interval (batches 49 and 74 of an epoch)."""
    names = ["epoch", "batch"]
    for g in range(4):
        names += [f"avg_loss_group:{g}", f"exp_avg_loss_group:{g}", f"avg_acc_group:{g}",
                  f"processed_data_count_group:{g}", f"update_data_count_group:{g}", f"update_batch_count_group:{g}"]
    names += ["avg_actual_loss", "avg_per_sample_loss", "avg_acc", "model_norm_sq", "reg_loss"]
    rows = []
    for e in range(epochs):
        for b in (49, 74):
            t = 2 * e + (b == 74)
            loss = 0.4 * math.exp(-t / 10) + 0.002 * math.sin(t)
            row = [e, b]
            for g in range(4):
                row += [loss * (1 + g / 10), loss * (1 + g / 9), 1 - loss, 400 * (g + 1), 400 * (g + 1), 50 if b == 49 else 25]
            row += [loss, loss * 1.02, 1 - loss, 100 + t, 0.01]
            rows.append(row)
    return names, rows


@pytest.mark.parametrize("reverse", [False, True], ids=["as-written", "reversed"])
def test_per_group_counts_are_no_step_and_the_epoch_and_batch_count_the_rows(tmp_path, reverse):
    names, rows = group_dro_rows(40)
    f = tmp_path / "train.csv"
    write_table(f, names, rows, reverse)
    assert judged(f) == ("avg_actual_loss", 80)  # was 2 steps: `update_*_count_group:g` taken for the step


@pytest.mark.parametrize("reverse", [False, True], ids=["as-written", "reversed"])
def test_a_column_counting_the_rows_is_the_step_wherever_it_stands(tmp_path, reverse):
    rows = [[g, round(3.0 / (1 + g) + 0.5, 5), round(4.0 / (1 + g) + 0.7, 5), 250 * (g + 1) + g % 3] for g in range(30)]
    f = tmp_path / "evolution.csv"
    write_table(f, ["Gen", "best_loss", "mean_loss", "evals"], rows, reverse)
    (read,) = api.load_runs(f)
    assert sorted(read.frame.get_column("step").unique().to_list()) == list(range(30))


@pytest.mark.parametrize("reverse", [False, True], ids=["as-written", "reversed"])
def test_a_ppo_table_has_its_value_loss_as_main_loss_in_any_column_order(tmp_path, reverse):
    # a PPO trainer's `csv.writer` rows: the policy's surrogate `pg_loss` hovers near zero whatever the agent
    # learns; the value loss is the regression its users read
    from spikelens.frame import roles_of
    from spikelens.stitching import main_metric

    names = ["time_s", "run_id", "update", "avg_rew", "pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac",
             "explained_var", "ep_ret_mean", "sps"]
    rows = [[round(22.1 * u, 3), 0, 10 * u, 1.3 + 0.01 * u, round(0.003 * math.sin(u), 6), round(0.3 / (1 + u / 8), 6),
             11.5 - 0.05 * u, 0.01, 0.1, 0.98, 24.0 + u, 11600 + u] for u in range(1, 41)]
    f = tmp_path / "metrics.csv"
    write_table(f, names, rows, reverse)
    (read,) = api.load_runs(f)
    assert main_metric(read.frame, roles_of(read.frame)) == "v_loss"
    assert read.frame.get_column("step").n_unique() == 40
