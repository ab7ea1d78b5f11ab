"""Step time read where trainers print it without saying so, and a slowdown that crept up (#25):
tqdm's `s/it` and Paddle's `batch_cost` are step times by name; a bare `time` column is the duration of
each epoch when it goes down as durations do, a clock when it never does; a step time that grew tenth
by tenth over the run is a slowdown though no single change shows it. Fixtures are written here as tqdm
and a hand-written CSV print them."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from spikelens.api import analyze
from spikelens.frame import infer_role, roles_of
from tqdm_bars import tqdm_log

LOUD = ("warning", "error")


def _tqdm_log(path, per_it):
    return tqdm_log(path, per_it)


def _rate(path):
    return [f for r in analyze(str(path), jobs=1).runs for f in r.findings
            if f.kind in ("step_time_rise", "throughput_drop")]


@pytest.mark.parametrize("name", ["s/it", "sec/it", "ms/it", "batch_cost_s", "batch_cost"])
def test_seconds_an_iteration_by_name(name):
    assert infer_role(name) == "step_time"


@pytest.mark.parametrize("name", ["time", "Time_s", "epoch_time", "loss/it"])
def test_a_bare_time_is_no_step_time_by_its_name_alone(name):
    assert infer_role(name) != "step_time"


def _frame(metric, values):
    n = len(values)
    return pl.DataFrame({"step": list(range(n)), "metric": [metric] * n, "value": values}) \
        .with_columns(pl.col("metric").cast(pl.Categorical))


def test_a_bare_time_that_goes_down_is_a_duration_one_that_never_does_a_clock():
    rng = np.random.default_rng(1)
    durations = list(12 + rng.standard_normal(40))
    clock = list(1000 + np.cumsum(12 + rng.random(40)))
    assert roles_of(_frame("Time_s", durations))["Time_s"] == "step_time"
    assert roles_of(_frame("time", clock))["time"] == "other"
    assert roles_of(_frame("time", durations[:6]))["time"] == "other"  # too few to tell
    assert roles_of(_frame("time", durations), {"time": "other"})["time"] == "other"  # the user said


def test_a_step_time_that_grew_tenth_by_tenth_is_a_slowdown(tmp_path):
    found = _rate(_tqdm_log(tmp_path / "creep" / "train.log",
                            lambda e, rng: 8 * (1 + 0.8 * e / 119) * (1 + 0.03 * rng.standard_normal())))
    loud = [f for f in found if f.severity in LOUD]
    assert loud and loud[0].metric == "s/it" and "rose steadily" in loud[0].message
    assert loud[0].evidence["steady"] and loud[0].evidence["after"] > 1.5 * loud[0].evidence["before"]


@pytest.mark.parametrize("per_it", [
    lambda e, rng: 8 * (1 + 0.05 * rng.standard_normal()),                      # its pace, noisy
    lambda e, rng: 8 * (1 + 0.3 * np.sin(e / 6)) * (1 + 0.03 * rng.standard_normal()),  # up and down again
    lambda e, rng: 8 * (1 + 0.25 * e / 119) * (1 + 0.03 * rng.standard_normal()),  # a quarter slower: within pace
], ids=["flat", "waves", "small-creep"])
def test_no_creep_no_slowdown(tmp_path, per_it):
    assert not [f for f in _rate(_tqdm_log(tmp_path / "run" / "train.log", per_it)) if f.severity in LOUD]
