"""Reading a fixture through the public API, as the reader tests of session 19 do: the one run a path
gives, and one metric's steps and values in step order."""
from __future__ import annotations

from spikelens import api


def one_run(path):
    (run,) = api.load_runs(path)
    return run


def series(run, metric):
    part = run.frame.filter(run.frame["metric"] == metric).sort("step")
    return part["step"].to_list(), part["value"].to_list()
