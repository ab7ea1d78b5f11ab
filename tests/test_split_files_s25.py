"""A run's training file and its held-out twin, named the same but for the split word, read as one run
(#25, session 25): `val_loss_deeper.txt`'s loss is the validation loss of `train_loss_deeper.txt`'s run, so
its rise while the training loss falls is overfitting, not a spike that never came back. Files on two
clocks (per-batch and per-epoch values, both counted by their lines) and files named for a setting stay
apart. Fixtures are written here as the scripts print them."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _analyze(path):
    with diagnostics.collecting():
        return api.analyze(str(path))


def _write_split_logs(folder, epochs: int = 40, per_epoch: int = 50) -> None:
    rng = np.random.default_rng(3)
    with (folder / "train_loss_deeper.txt").open("w") as f:  # print(f" iter: {it} loss: {loss} ...")
        for it in range(1, epochs * per_epoch + 1):
            loss = 0.35 + 0.3 * np.exp(-it / 400) + 0.02 * rng.standard_normal()
            f.write(f" iter: {it} loss: {loss:.6f} accuracy: {0.8 + 0.01 * rng.random():.6f} f1: 0.78\n")
    with (folder / "val_loss_deeper.txt").open("w") as f:  # the same script's evaluation after each epoch
        for e in range(1, epochs + 1):
            val = 0.6 - 0.15 * min(e, 15) / 15 + max(0, e - 15) * 0.02 + 0.005 * rng.standard_normal()
            f.write(f"epoch: {e} iter: {e * per_epoch} loss: {val:.6f} accuracy: 0.79 f1: 0.77\n")


def test_a_held_out_twin_file_is_the_runs_validation_and_shows_overfitting(tmp_path):
    _write_split_logs(tmp_path)
    report = _analyze(tmp_path)
    assert len(report.runs) == 1
    run = report.runs[0]
    assert {"loss", "val_loss"} <= set(run.metrics)
    over = [f for f in run.findings if f.kind == "overfitting" and f.metric == "val_loss"]
    assert over and over[0].severity == "warning" and 600 <= over[0].start_step <= 1000
    assert not [f for f in run.findings if f.kind == "spike" and f.severity != "info"]


def test_files_counted_by_their_lines_on_two_clocks_stay_apart(tmp_path):
    rng = np.random.default_rng(4)
    (tmp_path / "train_loss.txt").write_text("".join(f"{0.3 + np.exp(-i / 100) + 0.02 * rng.random():.5f}\n"
                                                     for i in range(500)))  # a value a batch
    (tmp_path / "val_loss.txt").write_text("".join(f"{0.5 + 0.02 * i:.5f}\n" for i in range(10)))  # one an epoch
    report = _analyze(tmp_path)
    assert len(report.runs) == 2
    assert all(len(r.metrics) == 1 for r in report.runs)


def test_files_named_for_a_setting_are_two_runs(tmp_path):
    for lr, rate in (("lr0.1", 1.0), ("lr0.01", 0.5)):  # `train_{lr}.txt` of a sweep: both train, no held-out
        (tmp_path / f"train_{lr}.txt").write_text("".join(f" iter: {i} loss: {1 / (rate * i + 1):.5f}\n"
                                                          for i in range(1, 60)))
    assert len(_analyze(tmp_path).runs) == 2


# -- a folder of measure files (`train_loss.txt`, `train_acc.txt`: np.savetxt of a list each) is one run, and a
# binary classifier whose loss fell from ln 2 only to its class prior's entropy, its accuracy at the majority
# share, learned the base rate and nothing else (detect/priorchance.py)


def _measure_files(folder, loss, acc) -> None:
    np.savetxt(folder / "train_loss.txt", loss, fmt="%.6f")
    np.savetxt(folder / "train_acc.txt", acc, fmt="%.6f")


def _prior_case(majority: float, acc_level: float, n: int = 100):
    rng = np.random.default_rng(21)
    h = -(majority * np.log(majority) + (1 - majority) * np.log(1 - majority))
    loss = h + (np.log(2) - h) * np.exp(-np.arange(n) / 6) + 0.004 * rng.standard_normal(n)
    acc = acc_level - 0.05 * np.exp(-np.arange(n) / 3) + 0.006 * rng.standard_normal(n)
    return loss, acc


def test_measure_files_on_one_clock_are_one_run_and_a_loss_at_the_priors_entropy_never_learned(tmp_path):
    _measure_files(tmp_path, *_prior_case(0.7, 0.70))
    report = _analyze(tmp_path)
    assert len(report.runs) == 1 and {"train_loss", "train_acc"} <= set(report.runs[0].metrics)
    prior = [f for f in report.runs[0].findings if f.evidence.get("reading") == "prior"]
    assert prior and prior[0].severity == "warning" and prior[0].start_step == 0
    assert abs(prior[0].evidence["majority_share"] - 0.70) < 0.01


def test_an_accuracy_above_the_share_the_loss_stands_for_is_no_prior(tmp_path):
    _measure_files(tmp_path, *_prior_case(0.7, 0.86))  # it learned: 86% right at the same loss
    assert not [f for r in _analyze(tmp_path).runs for f in r.findings if f.evidence.get("reading") == "prior"]


def test_measure_files_on_two_clocks_stay_apart(tmp_path):
    loss, _ = _prior_case(0.7, 0.7, n=500)
    np.savetxt(tmp_path / "train_loss.txt", loss, fmt="%.6f")  # a value a batch
    np.savetxt(tmp_path / "train_acc.txt", np.full(10, 0.7), fmt="%.6f")  # one an epoch
    assert len(_analyze(tmp_path).runs) == 2
