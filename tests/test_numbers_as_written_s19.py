"""Numbers a person reads through their wrapping and series called by their measure (#24).

Fixtures are written as the scripts write them: `pd.DataFrame(history).to_csv('loss_log.csv')` of a
history whose values are TensorFlow or PyTorch tensors (pandas writes `str(value)` in each cell and
quotes it where it holds a comma: the index column first, its header empty), `json.dump({k: str(v)})`
of tensors, and `json.dump(loss_history, f)` of a bare list into a file named for the list."""
from __future__ import annotations

import csv
import json
import math

import pytest

from spikelens import api
from spikelens.config import Config
from spikelens.errors import SpikelensError
from spikelens.importers.scalarreprs import unwrap_value
from spikelens.importers.seriesnames import plain_name, plain_names
from loaded_runs import one_run, series


def losses(n=40, start=960.0):
    return [round(start * math.exp(-e / 6) + 0.2, 4) for e in range(n)]


def tf_repr(v: float) -> str:
    return f"tf.Tensor({v}, shape=(), dtype=float32)"  # str() of a scalar tf.Tensor


def torch_repr(v: float) -> str:
    return f"tensor({v:.4f}, device='cuda:0', grad_fn=<NllLossBackward0>)"  # str() of a scalar torch tensor


def write_to_csv(path, cols: dict[str, list[str]]):
    """What `pd.DataFrame(cols).to_csv(path)` writes: an unnamed index column, minimal quoting."""
    n = len(next(iter(cols.values())))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["", *cols])
        for i in range(n):
            w.writerow([i, *(c[i] for c in cols.values())])


@pytest.mark.parametrize("wrap", [tf_repr, torch_repr, lambda v: f"tensor([{v}])", lambda v: f"np.float32({v})",
                                  lambda v: f"Decimal('{v}')"])
def test_tensor_cells_of_a_pandas_history_are_their_numbers(tmp_path, wrap):
    train, val = losses(), losses(start=790.0)
    write_to_csv(tmp_path / "loss_log.csv", {"epoch": [str(e) for e in range(40)],
                                             "train_loss": [wrap(v) for v in train],
                                             "valid_loss": [wrap(v) for v in val]})
    run = one_run(tmp_path)
    steps, values = series(run, "train_loss")
    assert steps == list(range(40))
    assert values == pytest.approx(train, rel=1e-4)
    assert series(run, "valid_loss")[1] == pytest.approx(val, rel=1e-4)


def test_a_cell_holding_several_numbers_stays_text():
    assert unwrap_value("tensor([0.5, 0.7])") == "tensor([0.5, 0.7])"
    assert unwrap_value("call(0.5)") == "call(0.5)"
    assert unwrap_value(tf_repr(0.53)) == pytest.approx(0.53)


def test_json_dump_of_str_tensors(tmp_path):
    train = losses(30, 4.7)
    (tmp_path / "history.json").write_text(json.dumps({"loss": [str(tf_repr(v)) for v in train],
                                                       "epoch": list(range(30))}))
    run = one_run(tmp_path)
    assert series(run, "loss") == (list(range(30)), pytest.approx(train))


def test_a_bare_json_list_is_the_measure_its_file_names(tmp_path):
    train = losses(50, 4.7)
    (tmp_path / "loss_history.json").write_text(json.dumps(train))  # json.dump(loss_history, f)
    run = one_run(tmp_path)
    assert set(run.frame["metric"].unique()) == {"loss"}
    assert series(run, "loss")[1] == pytest.approx(train)


def test_history_keys_are_called_by_their_measure(tmp_path):
    train = losses(30, 4.7)
    (tmp_path / "stats.json").write_text(json.dumps({"loss_history": train, "val_acc_list": [0.5] * 30}))
    run = one_run(tmp_path)
    assert {"loss", "val_acc"} <= set(run.frame["metric"].unique())


def test_container_words_leave_names_that_say_nothing_or_clash():
    assert plain_name("loss_history") == "loss" and plain_name("acc_hist") == "acc"
    assert plain_name("history") == "history" and plain_name("value_list") == "value_list"
    assert plain_names(["loss", "loss_history"]) == {"loss": "loss", "loss_history": "loss_history"}


LEDGER_HEAD = "commit\tval_bpb\tmemory_gb\tnum_steps\tstatus\tdescription\n"


def ledger_rows(n, crashed):
    """autoresearch's `results.tsv`: a row an experiment; a crashed one logs zeros (`0.000000 ... crash`)."""
    rows = []
    for i in range(n):
        if i in crashed:
            rows.append(f"c{i:06x}\t0.000000\t0.0\t0\tcrash\tweight tying: OOM\n")
        else:
            rows.append(f"c{i:06x}\t{1.5 - 0.01 * i:.6f}\t5.5\t{600 + i}\t{'keep' if i % 2 else 'discard'}\ttry {i}\n")
    return rows


def test_a_results_ledger_is_a_row_an_experiment_and_its_crashes_log_nothing(tmp_path):
    (tmp_path / "results.tsv").write_text(LEDGER_HEAD + "".join(ledger_rows(30, {9, 20})))
    run = one_run(tmp_path)
    steps, values = series(run, "val_bpb")
    assert steps == [s for s in range(1, 31) if s not in (10, 21)]  # stepped by row; crashed rows not logged
    assert 0.0 not in values and "num_steps" in set(run.frame["metric"])
    (tmp_path / "results.tsv").write_text(LEDGER_HEAD + "".join(ledger_rows(12, {11})))
    report = api.analyze(tmp_path)  # a ledger ending in a crashed experiment ended in a crash
    (r,) = report.runs
    (ended,) = [f for f in r.findings if f.kind == "ended_early"]
    assert ended.severity == "error" and "experiment 12: crash" in ended.message


def test_a_status_column_without_failures_is_no_ledger(tmp_path):
    text = LEDGER_HEAD + "".join(ledger_rows(30, set()))  # no failed row: read as it always was
    (tmp_path / "results.tsv").write_text(text)
    steps, _ = series(one_run(tmp_path), "val_bpb")
    assert steps == [600 + i for i in range(30)]  # its num_steps column counts the rows


def feature_block(epochs: int, start: float) -> dict:
    """One model's block of a `json.dump(stats, f, indent=4)`: its summary, per-class lists, epoch curves."""
    return {"stopped_on": "max_epochs", "epoch": epochs, "test_acc": 70.0,
            "confusion_matrix": [[40, 2, 1], [3, 38, 2], [1, 2, 41]], "precision_per_class": [0.9, 0.8, 0.95],
            "all_train_acc": [50 + 40 * (1 - math.exp(-e / 8)) for e in range(epochs)],
            "all_test_acc": [45 + 25 * (1 - math.exp(-e / 8)) for e in range(epochs)],
            "all_train_loss": [start * math.exp(-e / 10) + 0.05 for e in range(epochs)]}


def test_a_block_per_model_is_a_run_each(tmp_path):
    (tmp_path / "training_statistics.json").write_text(json.dumps(
        {"mfcc": feature_block(50, 1.5), "ft": feature_block(27, 1.2), "tonnetz": feature_block(12, 1.6)}, indent=4))
    runs = {r.name.rsplit("[", 1)[-1].rstrip("]"): r for r in api.load_runs(tmp_path)}
    assert set(runs) == {"mfcc", "ft", "tonnetz"}
    assert series(runs["ft"], "all_train_loss")[0] == list(range(27))
    assert len(series(runs["tonnetz"], "all_test_acc")[1]) == 12
    assert not any(m.startswith(("precision_per_class", "confusion_matrix")) for m in runs["mfcc"].frame["metric"])


def test_splits_stay_one_run(tmp_path):
    loss = losses(30, 2.0)
    (tmp_path / "history.json").write_text(json.dumps({"train": {"loss": loss}, "val": {"loss": [v * 1.1 for v in loss]}}))
    (run,) = api.load_runs(tmp_path)
    assert {"train/loss", "val/loss"} <= set(run.frame["metric"])


def phase_rows(epochs=3):
    """An unlearning loop's `csv.writer` rows: a few contrastive iterations, then ascent and descent a step each."""
    rows = []
    for e in range(epochs):
        rows += [[e, i, round(2000 / (i + 1), 3), "contrastive"] for i in range(4)]
        for i in range(4, 40):
            rows += [[e, i, round(-3 - 0.05 * i, 3), "ascent"], [e, i, round(2 * math.exp(-i / 20) + 0.5, 3), "descent"]]
    return rows


def test_a_phase_column_splits_the_curves(tmp_path):
    with open(tmp_path / "losses.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["epoch", "iter", "loss", "phase"])
        w.writerows(phase_rows())
    run = one_run(tmp_path)
    names = set(run.frame["metric"])
    assert {"ascent/loss", "descent/loss", "contrastive/loss"} <= names and "loss" not in names
    assert all(v < 0 for v in series(run, "ascent/loss")[1])


def test_a_column_of_notes_is_no_phase(tmp_path):
    with open(tmp_path / "losses.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["step", "loss", "type"])
        w.writerows([[i, round(2 * math.exp(-i / 20) + 0.5, 3), f"note {i}"] for i in range(40)])  # every row its own text
    assert set(one_run(tmp_path).frame["metric"]) == {"loss"}


def test_phases_that_follow_each_other_once_are_one_curve(tmp_path):
    with open(tmp_path / "log.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["step", "loss", "phase"])
        w.writerows([[i, round(2 * math.exp(-i / 20) + 0.5, 3), "warmup" if i < 10 else "decay"] for i in range(60)])
    assert set(one_run(tmp_path).frame["metric"]) == {"loss"}


def test_a_comma_header_over_tab_rows_names_them(tmp_path):
    """`f.write('epoch,step,grad_step,tr_loss,tr_ppl\\n')` then `f.write('\\t'.join(map(str, row)) + '\\n')`,
    the header written again by a relaunch appending to the file."""
    text = "epoch,step,grad_step,tr_loss,tr_ppl\n"
    for g in range(1, 41):
        text += f"1\t{16 * g}\t{g}\t{7.5 * math.exp(-g / 15) + 1:.4f}\t{1.9 - g * 0.01:.4f}\n"
    text += "epoch,step,grad_step,tr_loss,tr_ppl\n"
    text += "".join(f"1\t{16 * g}\t{g}\t{3.0 * math.exp(-g / 15) + 1:.4f}\t{1.5 - g * 0.01:.4f}\n" for g in range(1, 21))
    (tmp_path / "train_log.txt").write_text(text)
    run = one_run(tmp_path)
    assert {"tr_loss", "tr_ppl"} <= set(run.frame["metric"])
    assert len(series(run, "tr_loss")[1]) == 60


def spsa_lines(n=40, fail_last=True):
    """An optimiser loop's `f.write(json.dumps(rec) + '\\n')`: an init record, a record a step `k` with its two
    costs, a failed job's event record between them, a new session's record, and (maybe) a failure last."""
    recs = [{"k": -1, "t_wall": 0.0, "note": "init"}]
    for k in range(n):
        recs.append({"k": k, "t_wall": 60.0 * k, "used_qsec": 28.0 * k, "Jp": 3.8 * math.exp(-k / 15) + 0.1,
                     "Jm": 2.9 * math.exp(-k / 15) + 0.1, "job_id": f"d4sn{k:04d}"})
        if k == 7:
            recs.append({"k": 7, "event": "job_failed", "err": "RuntimeJobFailureError('Session has been closed')"})
        if k == 20:
            recs.append({"k": 20, "event": "session_start", "account": "acctB", "t_wall": 0.0})
    if fail_last:
        recs.append({"k": n, "event": "job_failed", "err": "IBMRuntimeError('Failed to run program: 400')"})
    return "".join(json.dumps(r) + "\n" for r in recs)


def test_records_counted_by_a_bare_k_and_a_last_failure(tmp_path):
    (tmp_path / "log.jsonl").write_text(spsa_lines())
    run = one_run(tmp_path)
    steps, _ = series(run, "Jp")
    assert steps == list(range(40))
    report = api.analyze(tmp_path, config=Config(roles={"Jp": "loss"}))
    (ended,) = [f for r in report.runs for f in r.findings if f.kind == "ended_early"]
    assert ended.severity == "error" and "job_failed" in ended.message


def test_an_error_survived_mid_file_is_no_end(tmp_path):
    (tmp_path / "log.jsonl").write_text(spsa_lines(fail_last=False))
    report = api.analyze(tmp_path, config=Config(roles={"Jp": "loss"}))
    assert not [f for r in report.runs for f in r.findings if f.kind == "ended_early"]


def test_a_dataset_of_records_with_ids_is_no_log(tmp_path):
    rows = [{"id": 3 * i + 7, "text": f"sample {i}", "label": i % 2} for i in range(30)]  # ids not counting by one
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SpikelensError):
        api.load_runs(tmp_path)


def test_json_lines_of_str_tensors(tmp_path):
    """`f.write(json.dumps({'step': i, 'loss': str(loss)}) + '\\n')` with `loss` a CUDA tensor."""
    train = losses(30, 2.0)
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "loss": torch_repr(v)}) + "\n"
                                                    for i, v in enumerate(train)))
    assert series(one_run(tmp_path), "loss") == (list(range(30)), pytest.approx(train, abs=1e-4))
