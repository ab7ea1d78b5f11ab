"""An outcome every relaunch repeats is told once, on the run that counts now (#25): a script run
twice with `>> train.log` whose loss diverged both times gets one loud divergence (the live run's)
and a note about the first run's, its own severity kept in the evidence. Must stay loud: the first
run's divergence when the live run trained cleanly (an outcome of its own)."""
from __future__ import annotations

import numpy as np

import spikelens

from appended_runs import clean_loss as _clean, script_log as _script_log


def _diverging(n, rng):
    loss = _clean(n, rng)
    loss[100:] = loss[100] * np.exp(np.linspace(0, np.log(6), n - 100))
    return loss


def _divergences(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return [f for f in run.findings if f.kind == "divergence"]


def test_a_divergence_both_runs_repeat_is_loud_once_on_the_live_run(tmp_path):
    rng = np.random.default_rng(0)
    found = _divergences(_script_log(tmp_path / "train.log", [_diverging(200, rng), _diverging(200, rng)]))
    earlier = [f for f in found if "session" in f.evidence]
    live = [f for f in found if "session" not in f.evidence]
    assert live and all(f.severity != "info" for f in live)
    assert earlier and all(f.severity == "info" and f.evidence["note_because"] == "live_run_same" for f in earlier)
    assert all(f.evidence["session"]["severity_alone"] != "info" for f in earlier)


def test_an_earlier_divergence_the_live_run_does_not_repeat_stays_loud(tmp_path):
    rng = np.random.default_rng(0)
    found = _divergences(_script_log(tmp_path / "train.log", [_diverging(200, rng), _clean(200, rng)]))
    (div,) = found
    assert div.evidence["session"]["index"] == 1 and div.severity != "info"
