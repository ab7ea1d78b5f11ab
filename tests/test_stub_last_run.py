"""A log of several runs appended one after another whose last run is a stub (`stitching._trailing_stubs`):
a script run again and killed after its first step or two (`python train.py >> train.log`, then Ctrl-C, a
job cancelled, out of memory at the second batch). The report judges the last run that trained, not the
stub's one point (lmqg's grid search ended in one point, and the run was judged on it: "steps 0-0"); the
stub's points are kept as superseded, and the appended-runs finding says so. The log's end is still the
stub's: how it ended is told from it. A last run that trained is still the run judged. Fixtures: console
logs of a training script, run after run, as it prints them."""
from __future__ import annotations

import numpy as np

from appended_runs import clean_loss, script_log
from conftest import analyzed_run


def _runs(*lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [clean_loss(n, rng) for n in lengths]


def _appended(run):
    (f,) = [f for f in run.findings if f.kind == "step_reset" and f.evidence.get("appended_runs")]
    return f


def test_SL302_a_stub_run_last_is_not_the_run_judged(tmp_path):
    run = analyzed_run(script_log(tmp_path / "train.log", _runs(300, 300, 1)))
    assert (run.stats["first_step"], run.stats["last_step"]) == (1, 300)
    f = _appended(run)
    assert "the last run logged a few points only" in f.message and "judges the run before (launch 2" in f.message


def test_SL302_two_stubs_last_leave_the_run_before_them_judged(tmp_path):
    run = analyzed_run(script_log(tmp_path / "train.log", _runs(300, 250, 2, 1, seed=1)))
    assert (run.stats["first_step"], run.stats["last_step"]) == (1, 250)
    assert "the last 2 runs logged a few points only" in _appended(run).message


def test_SL302_a_last_run_that_trained_is_the_run_judged(tmp_path):
    run = analyzed_run(script_log(tmp_path / "train.log", _runs(300, 300, 120, seed=2)))
    assert (run.stats["first_step"], run.stats["last_step"]) == (1, 120)
    assert "the report judges the last run" in _appended(run).message
