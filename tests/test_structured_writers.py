"""Structured metric files as public training scripts write them (#24, benchmarks/format_writers.py):
each test writes the file the way its writer does and checks the curve a person reads in it."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from spikelens import api
from spikelens.frame import infer_roles, roles_of
from spikelens.importers.base import read_head
from spikelens.importers.jsonhistory import JsonHistoryImporter


def _loss(n: int, start: float = 2.5) -> list[float]:
    return [float(start * np.exp(-i / 30) + 0.3) for i in range(n)]


def _curve(frame, metric: str):
    part = frame.filter(frame["metric"] == metric).sort("seq")
    return part["step"].to_list(), part["value"].to_list()


def _only_run(path):
    (run,) = api.load_runs(path)
    return run.frame


def test_a_file_without_extension_is_read_by_what_it_holds(tmp_path):
    # Chainer's `LogReport` writes a JSON list of per-epoch records to a file named `log`
    records = [{"main/loss": v, "validation/main/loss": v * 1.1, "epoch": e + 1, "iteration": 100 * (e + 1),
                "elapsed_time": 10.0 * e} for e, v in enumerate(_loss(40))]
    (tmp_path / "log").write_text(json.dumps(records, indent=4))
    frame = _only_run(tmp_path)
    steps, values = _curve(frame, "main/loss")
    assert steps == [100 * (e + 1) for e in range(40)] and values[0] == pytest.approx(records[0]["main/loss"])
    assert roles_of(frame)["validation/main/loss"] == "eval_loss"
    notes = tmp_path / "notes"  # a file without extension that holds no log is still not claimed
    notes.write_text("remember to rerun with a lower lr\n")
    assert not JsonHistoryImporter().claims(notes, read_head(notes))


def test_pandas_to_json_columns_keyed_by_row(tmp_path):
    hist = pd.DataFrame({"loss": _loss(60), "val_loss": [v * 1.2 for v in _loss(60)]})
    hist.to_json(tmp_path / "history.json")  # `pd.DataFrame(history.history).to_json(path)`
    frame = _only_run(tmp_path / "history.json")
    steps, values = _curve(frame, "loss")
    assert steps == list(range(60)) and values == pytest.approx(_loss(60))
    assert roles_of(frame) == {"loss": "loss", "val_loss": "eval_loss"}


def test_numbers_keyed_by_their_step_are_the_curve_the_file_names(tmp_path):
    path = tmp_path / "training_loss.json"
    path.write_text(json.dumps({str(10 * (i + 1)): v for i, v in enumerate(_loss(50))}))
    frame = _only_run(path)
    steps, values = _curve(frame, "training_loss")
    assert steps == [10 * (i + 1) for i in range(50)] and values == pytest.approx(_loss(50))
    other = tmp_path / "class_weights.json"  # a mapping a file's name does not call a curve: not claimed
    other.write_text(json.dumps({str(i): 1.0 + i for i in range(20)}))
    assert not JsonHistoryImporter().claims(other, read_head(other))


def test_splits_of_curves_and_folds(tmp_path):
    # xgboost's `evals_result()`: {split: {metric: [...]}}
    evals = {"validation_0": {"logloss": _loss(80)}, "validation_1": {"logloss": [v * 1.1 for v in _loss(80)]}}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "evals_result.json").write_text(json.dumps(evals))
    frame = _only_run(tmp_path / "a" / "evals_result.json")
    assert _curve(frame, "validation_0/logloss")[1] == pytest.approx(_loss(80))
    # k-fold: {metric: [[fold 1 ...], [fold 2 ...]]}
    folds = {"loss_train": [_loss(30, s) for s in (2.0, 2.5, 3.0)], "loss_val": [_loss(30, s) for s in (2.1, 2.6, 3.1)]}
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "training_history.json").write_text(json.dumps(folds))
    frame = _only_run(tmp_path / "b" / "training_history.json")
    assert _curve(frame, "loss_train/2")[1] == pytest.approx(_loss(30, 2.5))
    assert {m for m in roles_of(frame) if m.startswith("loss_val/")} == {"loss_val/1", "loss_val/2", "loss_val/3"}


def test_series_the_file_names_take_its_measure(tmp_path):
    # `json.dump({"train": train_losses, "val": val_losses}, open("loss.json", "w"))`
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "loss.json").write_text(json.dumps({"train": _loss(40), "val": _loss(40, 2.8)}))
    roles = roles_of(_only_run(tmp_path / "a" / "loss.json"))
    assert roles == {"loss/train": "loss", "loss/val": "eval_loss"}
    # a model each in a training history: the models' losses
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "training_history.json").write_text(json.dumps({"Quantum_QVAE": _loss(150), "Classical_AE": [0.7] * 150}))
    roles = roles_of(_only_run(tmp_path / "b" / "training_history.json"))
    assert roles == {"loss/Quantum_QVAE": "loss", "loss/Classical_AE": "loss"}
    # series that name their own measure keep their names
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "loss.json").write_text(json.dumps({"train_loss": _loss(40), "val_acc": [0.5] * 40}))
    assert set(roles_of(_only_run(tmp_path / "c" / "loss.json"))) == {"train_loss", "val_acc"}


def test_lists_of_records_beside_settings(tmp_path):
    doc = {"run_name": "run_20231031_162345", "config": {"learning_rate": 6e-4, "max_iters": 200},
           "training_iterations": [{"iter": i, "loss": v, "time_ms": 40.0} for i, v in enumerate(_loss(200))],
           "eval_steps": [{"iter": i, "train_loss": v, "val_loss": v * 1.05} for i, v in list(enumerate(_loss(200)))[::50]],
           "summary": {"final_train_loss": 0.31}}
    path = tmp_path / "run_20231031_162345.json"
    path.write_text(json.dumps(doc, indent=2))
    frame = _only_run(path)
    steps, values = _curve(frame, "training_iterations/loss")
    assert steps == list(range(200)) and values == pytest.approx(_loss(200))
    assert _curve(frame, "eval_steps/val_loss")[0] == [0, 50, 100, 150]


def test_a_split_column_names_the_held_out_rows(tmp_path):
    import csv

    path = tmp_path / "metrics.csv"
    with path.open("w", newline="") as f:  # `pd.DataFrame(columns=["Epoch","Phase","Loss","Accuracy"])` rows
        w = csv.writer(f)
        w.writerow(["Epoch", "Phase", "Loss", "Accuracy"])
        for e, v in enumerate(_loss(30), start=1):
            w.writerow([e, "train", v, 0.5])
            w.writerow([e, "val", v * 1.2, 0.4])
    roles = roles_of(frame := _only_run(path))
    assert roles["Loss"] == "loss" and roles["val/Loss"] == "eval_loss"
    steps, values = _curve(frame, "Loss")
    assert steps == list(range(1, 31)) and values == pytest.approx(_loss(30))


def test_a_split_field_in_json_lines(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = []
    for i, v in enumerate(_loss(100)):
        lines.append(json.dumps({"step": 10 * (i + 1), "split": "train", "loss": v, "lr": 1e-3}))
        if i % 10 == 9:
            lines.append(json.dumps({"step": 10 * (i + 1), "split": "test", "loss": v * 1.1, "acc": 0.7}))
    path.write_text("\n".join(lines) + "\n")
    frame = _only_run(path)
    assert _curve(frame, "loss")[0] == [10 * (i + 1) for i in range(100)]
    assert _curve(frame, "test/loss")[0] == [100 * (k + 1) for k in range(10)]
    assert "acc" in roles_of(frame)  # only ever measured on the test split: its name is its own


def test_the_loops_own_counter_is_the_step(tmp_path):
    (tmp_path / "a").mkdir()
    rows = ["Round,Epsilon,CumulativeReward,Won"] + [f"{r},{0.9 ** r:.4f},{r * 0.5:.1f},{r % 2}" for r in range(1, 41)]
    (tmp_path / "a" / "training_log.csv").write_text("\n".join(rows) + "\n")  # a Java bot's FileWriter rows
    frame = _only_run(tmp_path / "a")
    assert _curve(frame, "CumulativeReward")[0] == list(range(1, 41))
    (tmp_path / "b").mkdir()
    rows = ["epoch_id,batch_id,loss_total"] + [f"{e},{b},{v}" for e in range(1, 5) for b, v in enumerate(_loss(10))]
    (tmp_path / "b" / "loss_log.csv").write_text("\n".join(rows) + "\n")
    steps, _ = _curve(_only_run(tmp_path / "b"), "loss_total")
    assert steps == sorted(steps) and len(set(steps)) == 40  # epoch and batch counted together


def test_settings_written_before_the_header(tmp_path):
    import csv

    path = tmp_path / "log.csv"
    with path.open("w", newline="") as f:  # a CSVLogger that writes vars(args) first, then a blank row
        w = csv.writer(f)
        for k, v in {"lr": 0.1, "batch_size": 128, "dataset": "cifar10"}.items():
            w.writerow([k, v])
        w.writerow([""])
        d = csv.DictWriter(f, fieldnames=["epoch", "train_loss", "test_acc"])
        d.writeheader()
        for e, v in enumerate(_loss(25), start=1):
            d.writerow({"epoch": e, "train_loss": v, "test_acc": 0.5})
    with pytest.warns(Warning, match="4 line.s. before the header"):
        frame = _only_run(path)
    steps, values = _curve(frame, "train_loss")
    assert steps == list(range(1, 26)) and values == pytest.approx(_loss(25))


def test_a_counter_list_gives_its_mates_steps(tmp_path):
    # PyTorch's MNIST example: train_counter / train_losses, test_counter / test_losses
    train_counter = [640 * (i + 1) for i in range(90)]
    test_counter = [i * 60000 for i in range(4)]
    doc = {"train_counter": train_counter, "train_losses": _loss(90), "test_counter": test_counter,
           "test_losses": [2.3, 0.4, 0.3, 0.25]}
    path = tmp_path / "loss_data.json"
    path.write_text(json.dumps(doc, indent=2))
    frame = _only_run(path)
    assert _curve(frame, "train_losses")[0] == train_counter
    assert _curve(frame, "test_losses")[0] == test_counter
    assert set(roles_of(frame)) == {"train_losses", "test_losses"}


def test_a_commented_header_names_the_columns(tmp_path):
    # `np.savetxt(path, np.column_stack(...), header="iter loss val_loss")` writes `# iter loss val_loss`
    n = 40
    data = np.column_stack([np.arange(1, n + 1) * 10, _loss(n), [v * 1.1 for v in _loss(n)]])
    path = tmp_path / "curves.txt"  # a file name that says nothing: the header does
    np.savetxt(path, data, header="iter loss val_loss")
    frame = _only_run(path)
    steps, values = _curve(frame, "loss")
    assert steps == [10 * (i + 1) for i in range(n)] and values == pytest.approx(_loss(n))
    assert roles_of(frame) == {"loss": "loss", "val_loss": "eval_loss"}


def test_columns_a_file_names_and_counts(tmp_path):
    # Julia: `CSV.write("losses.csv", DataFrame([[0:n]; losses], :auto))`: x1 counts, x2.. are the losses
    n = 30
    rows = ["x1,x2,x3"] + [f"{i},{a},{b}" for i, (a, b) in enumerate(zip(_loss(n), _loss(n, 3.0)))]
    (tmp_path / "losses.csv").write_text("\n".join(rows) + "\n")
    frame = _only_run(tmp_path / "losses.csv")
    assert roles_of(frame) == {"losses/x2": "loss", "losses/x3": "loss"}
    assert _curve(frame, "losses/x2")[0] == list(range(n))
    (tmp_path / "c").mkdir()  # a column that names a count measures it, not what the file's name says
    episodes = ["Episode,Total Steps"] + [f"{e},{8 + e % 5}" for e in range(1, 60)]
    (tmp_path / "c" / "episode_rewards.csv").write_text("\n".join(episodes) + "\n")
    from spikelens.coverage import nothing_read

    refusal = nothing_read(api.analyze(tmp_path / "c", jobs=1), [tmp_path / "c"])
    assert refusal is not None and "Total Steps" in str(refusal)
    (tmp_path / "b").mkdir()  # a table whose name says nothing: its numbers may be anything, not claimed
    (tmp_path / "b" / "table.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(Exception, match="no training logs"):
        api.load_runs(tmp_path / "b")


def test_a_writers_own_extension_is_read_by_its_content(tmp_path):
    # ParlAI's `_save_train_stats`: json.dump({... "train_reports": [...], "valid_reports": [...]}) to model.trainstats
    reports = [{"exs": 100 * (i + 1), "loss": v, "ppl": float(np.exp(v)), "total_train_updates": 50 * (i + 1)}
               for i, v in enumerate(_loss(30))]
    doc = {"parleys": 3000, "train_time": 360.0, "total_epochs": 2.5, "train_reports": reports,
           "valid_reports": [{"exs": 100, "loss": 1.1, "ppl": 3.0}, {"exs": 100, "loss": 0.9, "ppl": 2.5}],
           "best_valid": {"loss": 0.9}}
    (tmp_path / "model.trainstats").write_text(json.dumps(doc, indent=4))
    frame = _only_run(tmp_path)
    assert _curve(frame, "train_reports/loss")[1] == pytest.approx(_loss(30))


def test_an_energy_stands_for_the_loss_of_a_run_that_names_none():
    # a variational Monte Carlo run (JaQMC) logs `energy` and `pmove`: it lowers its energy
    assert infer_roles(["pmove", "energy"]) == {"pmove": "other", "energy": "loss"}
    assert infer_roles(["loss", "energy"])["energy"] == "other"  # beside a loss, a side metric
    assert infer_roles(["episode_reward", "energy"])["energy"] == "other"  # an RL run is judged by its reward
