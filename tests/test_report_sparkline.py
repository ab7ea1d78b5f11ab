"""The small terminal chart of a finding's neighbourhood."""
from __future__ import annotations

import numpy as np

from report_cases import nan_run, resumed_run, spiky_run
from spikelens.report.sparkline import BLOCKS, NONFINITE, Window, chart, live_series, neighbourhood, sparkline, window


def test_sparkline_keeps_a_one_point_spike_among_many_points():
    value = np.full(10_000, 2.0)
    value[6_789] = 9.0
    line = sparkline(value, width=40)
    assert len(line) == 40
    assert line.count("█") == 1 and set(line) == {"▁", "█"}
    assert line.index("█") == 6_789 * 40 // 10_000


def test_sparkline_marks_nonfinite_and_scales_levels():
    line = sparkline(np.array([1.0, 2.0, 3.0, np.nan, np.inf, 4.0, 5.0, 6.0, 7.0, 8.0]))
    assert line[3] == NONFINITE and line[4] == NONFINITE
    assert line[0] == BLOCKS[1] and line[-1] == BLOCKS[-1]
    levels = [BLOCKS.index(c) for c in line if c != NONFINITE]
    assert levels == sorted(levels)


def test_sparkline_of_a_constant_is_flat():
    assert set(sparkline(np.ones(30))) == {BLOCKS[1]}


def test_chart_has_the_range_on_the_left_and_the_anchor_below():
    step = np.arange(100, 200)
    value = np.full(100, 3.0)
    value[50] = 12.0
    lines = chart(Window("loss", step, value, anchor=150), width=50, height=3)
    assert len(lines) == 5
    assert lines[0].lstrip().startswith("12 ┤") and lines[2].lstrip().startswith("3 ┤")
    bar = lines[0].index("█")
    assert lines[3][bar] == "▲" and lines[3].strip() == "▲150"
    assert "loss, steps 100–199" in lines[4]


def test_window_covers_the_finding_with_context_and_stays_in_bounds():
    step = np.arange(0, 1000, 10)
    w = window(step, step.astype(float), 500, 600, 520, "loss", pad_points=5)
    assert w.step[0] == 450 and w.step[-1] == 650
    w = window(step, step.astype(float), 0, None, 0, "loss", pad_points=5)
    assert w.step[0] == 0 and w.step[-1] == 50


def test_live_series_drops_superseded_points():
    run = resumed_run()
    step, value = live_series(run.frame, "loss")
    assert step.size == 4000 and np.all(np.diff(step) > 0)


def test_neighbourhood_uses_the_main_loss_for_run_level_findings():
    run = resumed_run()
    overlap = next(f for f in run.findings if f.kind == "resume_overlap")
    win = neighbourhood(run, overlap)
    assert win.metric == "loss" and win.step[0] < 2000 < win.step[-1]


def test_neighbourhood_of_a_nan_shows_the_blow_up_and_the_nan():
    run = nan_run()
    nan = next(f for f in run.findings if f.kind == "nan" and f.metric == "loss")
    win = neighbourhood(run, nan)
    assert win.has_finite and not np.isfinite(win.value).all()
    assert NONFINITE in chart(win)[0]


def test_neighbourhood_of_a_spike_contains_its_peak():
    run = spiky_run()
    f = run.findings[0]
    win = neighbourhood(run, f)
    assert win.step[np.argmax(win.value)] == f.peak_step
