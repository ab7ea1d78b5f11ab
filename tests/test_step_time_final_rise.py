"""A step time that rose only in the last stretch before the log stops (#25): a node failing before a
kill leaves fewer slow points than the tenth a sustained shift needs after its change. Fixtures are
tqdm bars as tqdm prints them; a last slow evaluation or save (one or two points) stays silent."""
from __future__ import annotations


from spikelens.api import analyze
from tqdm_bars import tqdm_log

LOUD = ("warning", "error")


def _tqdm_log(path, per_it, epochs=120):
    return tqdm_log(path, per_it, epochs, seed=1)


def _loud_rises(path):
    return [f for r in analyze(str(path), jobs=1).runs for f in r.findings
            if f.kind == "step_time_rise" and f.severity in LOUD]


def test_rise_in_the_last_stretch_before_the_log_stops_is_told(tmp_path):
    # 600 bars, slower over the last 25: fewer than the tenth (54 points) a sustained shift needs after it
    log = _tqdm_log(tmp_path / "train.log",
                    lambda e, rng: (1.72 if e < 575 else 2.4 + 0.04 * (e - 575)) + 0.01 * rng.standard_normal(), 600)
    found = _loud_rises(log)
    assert found and found[0].metric == "s/it"
    assert 573 <= found[0].evidence["epoch"] <= 577


def test_one_or_two_slow_last_points_stay_silent(tmp_path):
    log = _tqdm_log(tmp_path / "train.log",
                    lambda e, rng: (1.72 if e < 598 else 3.5) + 0.01 * rng.standard_normal(), 600)
    assert _loud_rises(log) == []


def test_a_steady_pace_to_the_end_stays_silent(tmp_path):
    log = _tqdm_log(tmp_path / "train.log", lambda e, rng: 1.72 + 0.02 * rng.standard_normal())
    assert _loud_rises(log) == []
