"""A clock logged as a bare time (`time= 5.3 min` each epoch, the minutes since the start) holds the
step time as its slope: its difference from one logged point to the next, per step, is judged as a
step time (`throughput.clock_durations`). Fixtures: a training script's console lines as a MRI
segmentation script prints them (`epoch= N <tab> time= X min <tab> loss= Y`). Must fire: each epoch
took 70% longer from one epoch on. Silent: a steady clock, a clock whose epochs got faster, a clock
whose last epoch alone was slow (a final save)."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _clock_log(path, per_epoch: np.ndarray, seed: int = 0):
    rng = np.random.default_rng(seed)
    minutes = np.cumsum(per_epoch * (1 + 0.01 * rng.standard_normal(per_epoch.size)))
    loss = 1.5 * np.exp(-np.arange(per_epoch.size) / 20) + 0.6 + 0.005 * rng.standard_normal(per_epoch.size)
    path.write_text("".join(f"epoch= {e} \t time= {t!r} min \t loss= {v!r}\n"
                            for e, (t, v) in enumerate(zip(minutes, loss))))
    return path


def _rises(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return [f for f in run.findings if f.kind == "step_time_rise"]


def test_a_clock_whose_slope_steepened_is_a_step_time_rise(tmp_path):
    per_epoch = np.r_[np.full(60, 0.2), np.full(60, 0.34)]
    (f,) = _rises(_clock_log(tmp_path / "training.out", per_epoch))
    assert f.severity == "warning" and f.metric.startswith("time") and "per-step difference" in f.message
    assert abs(f.start_step - 60) <= 2 and 1.6 < f.magnitude < 1.8
    assert "in stages" not in f.message  # one change: it starts where it was found


def test_a_clock_that_slowed_in_stages_starts_at_its_first_rise(tmp_path):
    per_epoch = np.r_[np.full(10, 0.13), np.full(21, 0.22), np.full(76, 0.32)]  # the first rise inside the warm-up
    (f,) = _rises(_clock_log(tmp_path / "training.out", per_epoch))
    assert abs(f.start_step - 10) <= 2 and "in stages" in f.message and f.evidence["opening_level"] < 0.14


def test_a_steady_clock_is_no_rise(tmp_path):
    assert _rises(_clock_log(tmp_path / "training.out", np.full(120, 0.2))) == []


def test_a_clock_whose_epochs_got_faster_is_no_rise(tmp_path):
    assert _rises(_clock_log(tmp_path / "training.out", np.r_[np.full(60, 0.34), np.full(60, 0.2)])) == []


def test_a_clock_with_one_slow_last_epoch_is_no_rise(tmp_path):
    assert _rises(_clock_log(tmp_path / "training.out", np.r_[np.full(119, 0.2), [0.9]])) == []
