"""A headerless table appended by a relaunch: the epoch still 0, the iteration started again at 0."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from spikelens import api
from spikelens.errors import FormatError
from spikelens.importers.barenumbers import BareNumbersImporter


def _relaunched_log(path, falls: bool):
    """`writer.writerow([epoch, i, total, part1, part2, flag])` by two launches into one file."""
    rng = np.random.default_rng(1)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        for launch in range(2):
            for i in range(25):
                total = 16 * np.exp(-(i + 25 * launch) / 12) + 0.5 if falls else 16 + rng.normal(0, 0.1)
                w.writerow([0, i, total, total * 0.6, total * 0.4 + rng.uniform(0, 0.01), 0])


def test_a_relaunch_appended_to_a_headerless_table_is_read_by_its_counters(tmp_path):
    path = tmp_path / "trainlog.txt"
    _relaunched_log(path, falls=True)
    imp = BareNumbersImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    frame = imp.read(path)[0].frame
    frame = frame.with_columns(frame["metric"].cast(str))
    loss = frame.filter(frame["metric"].str.contains("loss"))
    assert loss["metric"].unique().to_list() == ["trainlog_loss_column3"]
    # the two counters together, counted again from the relaunch's first row (its counts stand before the
    # row above's): the restart a person sees stays in the steps (#24)
    assert loss["step"].to_list() == list(range(25)) * 2
    assert loss["value"][0] == pytest.approx(16.5)


def test_a_relaunched_table_whose_columns_do_not_fall_is_read_only_when_named_a_training_log(tmp_path):
    # a training log's counted rows: the first measured column is its loss even when it never falls (a run
    # that never learned, #24); the same numbers in a file named for nothing are refused with the reason
    path = tmp_path / "trainlog.txt"
    _relaunched_log(path, falls=False)
    frame = BareNumbersImporter().read(path)[0].frame
    assert "trainlog_loss_column3" in frame["metric"].cast(str).unique().to_list()
    path = tmp_path / "numbers.txt"
    _relaunched_log(path, falls=False)
    with pytest.raises(FormatError, match="no column falls as a loss does"):
        BareNumbersImporter().read(path)


def test_a_relaunch_is_told_as_a_step_reset(tmp_path):
    _relaunched_log(tmp_path / "trainlog.txt", falls=True)
    (run,) = api.analyze(str(tmp_path), jobs=1).runs
    assert [f.kind for f in run.findings if f.kind == "step_reset"] == ["step_reset"]


def test_an_inner_count_starting_again_under_a_new_outer_count_is_no_relaunch(tmp_path):
    # `epoch, i, loss`: i starts again each epoch; the counts together only rise, no step goes back
    rows = [f"{e}, {i}, {4 * np.exp(-(e * 10 + i) / 20) + 0.1:.5f}" for e in range(5) for i in range(10)]
    (tmp_path / "trainlog.txt").write_text("\n".join(rows) + "\n")
    frame = BareNumbersImporter().read(tmp_path / "trainlog.txt")[0].frame
    loss = frame.filter(frame["metric"].cast(str).str.contains("loss"))
    assert loss["step"].to_list() == list(range(50))
    (run,) = api.analyze(str(tmp_path), jobs=1).runs
    assert not [f for f in run.findings if f.kind == "step_reset"]
