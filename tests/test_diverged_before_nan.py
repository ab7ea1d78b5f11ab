"""A loss that rises over several logged steps and then turns NaN diverged first: the report lists the
divergence (a note beside the NaN, which keeps the alarm) from where the rise began; a loss that was
falling and turned NaN in one step has the NaN alone. Logs are plain text as a training script prints
them (`step N | loss X`), written by the test; the non-finite value as Python prints it (`nan`)."""
from __future__ import annotations

import numpy as np

import spikelens


def _log(path, losses):
    path.write_text("".join(f"step {i + 1} | loss {v:.6g} | lr 0.0002\n" for i, v in enumerate(losses)))
    return path


def _kinds(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run, {f.kind: f for f in run.findings}


def test_a_short_fine_tune_whose_loss_climbs_then_goes_nan_diverged_before_the_nan(tmp_path):
    # an SFT run: 5.5 at step 1 climbing to 9.5 by step 8, NaN from step 9 on
    losses = [5.47, 7.25, 8.04, 8.47, 8.18, 9.55, 9.52, 8.99] + [float("nan")] * 40
    run, by = _kinds(_log(tmp_path / "sft.log", losses))
    (div,) = [f for f in run.findings if f.kind == "divergence"]  # one rise, one finding
    assert by["nan"].severity == "error" and by["nan"].start_step == 9
    assert div.start_step <= 4 and div.end_step == 8


def test_the_rise_before_a_nan_is_a_note_where_no_other_detector_tells_it():
    # the NaN detector alone (the curve detectors need more points than a 6-step rise gives)
    from spikelens.detect.base import RunContext, Series
    from spikelens.detect.nonfinite import NonFiniteDetector

    value = np.array([5.47, 7.25, 8.04, 8.47, 8.18, 9.55, 9.52, 8.99] + [np.nan] * 40)
    series = Series("loss", "loss", np.arange(1, value.size + 1), value)
    found = NonFiniteDetector().detect(series, RunContext(run="r", roles={"loss": "loss"}, series={"loss": series}))
    div = [f for f in found if f.kind == "divergence"]
    assert [f.kind for f in found] == ["nan", "divergence"]
    assert div[0].severity == "info" and div[0].evidence["before_nan"] and div[0].evidence["nan_step"] == 9
    assert div[0].start_step == 4 and div[0].end_step == 8


def test_a_loss_that_explodes_by_orders_of_magnitude_before_the_nan_keeps_both(tmp_path):
    rng = np.random.default_rng(0)
    falling = list(3.0 * np.exp(-np.arange(40) / 30) + 0.02 * rng.standard_normal(40))
    losses = falling + [1e3, 4e5, 2e7, 9e9, 3e12] + [float("nan")] * 10
    _, by = _kinds(_log(tmp_path / "train.log", losses))
    assert by["divergence"].start_step == 41 and by["divergence"].end_step == 45
    assert by["divergence"].magnitude > 1e6


def test_a_falling_loss_that_turns_nan_in_one_step_has_the_nan_alone(tmp_path):
    rng = np.random.default_rng(1)
    losses = list(3.0 * np.exp(-np.arange(60) / 30) + 0.02 * rng.standard_normal(60)) + [float("nan")] * 10
    run, by = _kinds(_log(tmp_path / "train.log", losses))
    assert "nan" in by and not [f for f in run.findings if f.kind == "divergence"]
