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


def only_frame(path):
    """The frame of the one run with points a path gives (runs without points, such as empty launches, left out)."""
    runs = [r for r in api.load_runs(path) if r.frame.height]
    assert len(runs) == 1, [r.frame for r in runs]
    return runs[0].frame


def curve(frame, metric):
    """One metric's steps and values in the order they were read."""
    part = frame.filter(frame["metric"].cast(str) == metric).sort("seq")
    return part["step"].to_list(), part["value"].to_list()
