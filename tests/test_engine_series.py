"""The detectors' series hold less (#28, leaner runs): metrics logged at the same steps share
one read-only step array, and wall times are gathered when a detector first reads them,
with the values an eager gather gives."""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from spikelens.detect import engine
from spikelens.frame import SCHEMA


def _frame(n: int = 300, value_nulls: bool = False, twice: bool = False) -> pl.DataFrame:
    rows = []
    for i in range(n):
        for m in ("train/loss", "train/lr", "train/grad_norm"):
            rows.append((i, 1000.0 + i + (0.1 if m == "train/lr" else 0.0), m, 2.0 - i / n))
        if i % 3 == 0:
            rows.append((i, 1000.5 + i, "eval/loss", None if value_nulls and i == 9 else 1.5))
        if twice and i == 7:
            rows.append((i, 2000.0, "train/loss", 9.0))  # logged twice at step 7
    step, wall, metric, value = zip(*rows)
    return pl.DataFrame({"run": ["r"] * len(rows), "source": ["f"] * len(rows), "segment": [0] * len(rows),
                         "seq": range(len(rows)), "step": step, "wall_time": wall, "metric": metric,
                         "value": value}, schema=SCHEMA).with_columns(superseded=pl.lit(False))


def _eager(frame: pl.DataFrame) -> dict:
    """Every metric's arrays from the sorted frame: what the series must hold."""
    out = {}
    for (metric,), part in frame.filter(pl.col("value").is_not_null()).sort("step", "seq") \
            .group_by("metric", maintain_order=True):
        out[metric] = engine.one_per_step(part["step"].to_numpy(), part["value"].to_numpy().astype(np.float64),
                                          part["wall_time"].to_numpy())
    return out


@pytest.mark.parametrize("nulls,twice", [(False, False), (True, False), (False, True)])
def test_series_hold_the_same_numbers(nulls, twice):
    frame = _frame(value_nulls=nulls, twice=twice)
    series = engine.series_of(frame, {"train/loss": "loss", "eval/loss": "eval_loss", "train/lr": "lr"})
    want = _eager(frame)
    assert list(series) == list(want)
    for metric, (step, value, wall) in want.items():
        s = series[metric]
        assert np.array_equal(s.step, step) and np.array_equal(s.value, value, equal_nan=True)
        assert np.array_equal(s.wall_time, wall) and s.wall_time is s.wall_time  # read once, then kept


def test_metrics_logged_together_share_one_read_only_step_array():
    series = engine.series_of(_frame(), {})
    loss, lr, gn, ev = (series[m] for m in ("train/loss", "train/lr", "train/grad_norm", "eval/loss"))
    assert loss.step is lr.step is gn.step and ev.step is not loss.step
    with pytest.raises(ValueError):
        loss.step[0] = 5  # a detector cannot change another metric's steps


def test_wall_times_are_gathered_only_when_read():
    frame = _frame()
    series = engine.series_of(frame, {})
    assert all(callable(s.__dict__["_wall"]) for s in series.values())
    wall = series["train/lr"].wall_time
    assert wall[0] == 1000.1 and not callable(series["train/lr"].__dict__["_wall"])
    assert callable(series["train/loss"].__dict__["_wall"])
    # a filtered copy of the frame (nulls, superseded points) is not kept alive by the series
    filtered = engine.series_of(_frame(value_nulls=True), {})
    assert not any(callable(s.__dict__["_wall"]) for s in filtered.values())


def test_the_shift_profile_taken_early_is_the_same_and_the_level_memo_is_let_go():
    """`run_detectors(shift_profile=True)` keeps the main loss's level-shift profile on the context
    and drops the level detector's per-point profiles (memory, #28): the profile and the findings
    are those of the detectors run the old way, profile asked at the end."""
    from spikelens.detect.base import RunContext
    from spikelens.detect.levels import LevelShiftDetector

    rng = np.random.default_rng(3)
    n = 2000
    loss = np.exp(np.where(np.arange(n) < 1300, 0.0, -0.3) + 0.02 * rng.standard_normal(n)) * 2.0
    frame = pl.DataFrame({"run": "r", "source": "f", "segment": 0, "seq": np.arange(n), "step": np.arange(n),
                          "wall_time": np.arange(n, dtype=float), "metric": "train/loss", "value": loss},
                         schema=SCHEMA).with_columns(superseded=pl.lit(False))
    roles = {"train/loss": "loss"}

    def run(early: bool):
        ctx = RunContext(run="r", roles=roles, series=engine.series_of(frame, roles), frame=frame)
        dets = engine.build_detectors(classes=(LevelShiftDetector,))  # the one whose memo is let go
        found = engine.run_detectors(ctx, dets, shift_profile=early)
        level = next(d for d in dets if isinstance(d, LevelShiftDetector))
        held = bool(level.__dict__.get("_memo"))
        return found, engine.shift_profile_of(ctx, dets), held

    old, new = run(False), run(True)
    assert [f.to_dict() for f in old[0]] == [f.to_dict() for f in new[0]]
    a, b = old[1], new[1]
    assert a is not None and a.step.size  # the planted shift is in the profile
    for field in ("step", "up", "z", "before", "after", "ratio", "null_z"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert (a.window, a.tolerance_steps, a.min_z) == (b.window, b.tolerance_steps, b.min_z)
    assert old[2] and not new[2]  # the old way holds the memo to the end; the early profile lets it go
