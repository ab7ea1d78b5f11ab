"""A sweep written as one table, a column an arm (`Epoch,Dropout 0.0,Dropout 0.25,...` in `train.csv`): the file
names the data split the arms were measured on, not the measure. A person reads the falling curves as the training
losses of the sweep's runs; an arm whose name says nothing of what it measured (`lr_sweep.csv`) stays unread
(frame.unmeasured_arm, #24). Written by pandas' `DataFrame.to_csv`, as an exercise's notebook writes it."""
from __future__ import annotations

import math

import pandas as pd
from spikelens import api, diagnostics

DROPOUTS = (0.0, 0.25, 0.5, 0.75)


def _sweep(path, name: str) -> None:
    epochs = range(1, 41)
    table = {"Epoch": list(epochs)}
    for p in DROPOUTS:  # an LM's loss from near ln(vocab) down, slower with more dropout
        table[name.format(p)] = [round(1.4 + p + 2.2 * math.exp(-e / (8 + 10 * p)), 6) for e in epochs]
    pd.DataFrame(table).to_csv(path, index=False)


def test_a_training_tables_sweep_arms_are_read_as_its_training_losses(tmp_path, no_workers):
    path = tmp_path / "train.csv"
    _sweep(path, "Dropout {}")
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    arms = [f"train (Dropout {p})" for p in DROPOUTS]
    assert {m: run.metrics[m] for m in arms} == {m: "loss" for m in arms}
    assert run.stats["main_metric"] == "train (Dropout 0.0)"
    assert not [f for f in run.findings if f.severity in ("warning", "error")]


def test_arms_whose_names_say_no_measure_are_not_guessed(tmp_path, no_workers):
    path = tmp_path / "lr_sweep.csv"
    _sweep(path, "lr={}")
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    assert set(run.metrics.values()) == {"other"}  # the CLI says no loss could be read, and how to name one
