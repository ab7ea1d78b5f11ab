"""The stitcher on runs built in memory: which points a later launch supersedes, how a
reset step counter is re-based, what each boundary reports (ids carry the codes).

Every expected number comes from how the case was built, never from the output.
"""
from __future__ import annotations

import sys

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from spikelens.config import Config
from spikelens.discover import Run
from spikelens.frame import SCHEMA, validate
from spikelens.pipeline.run import analyze_run
from spikelens.stitching import _logged_twice, merge_runs, split_relaunches, stitch_run

sys.path.insert(0, str(FIXTURES))
from writers._curves import clean_run  # noqa: E402

T0 = 1_700_000_000.0


def make_run(launches: list[dict[str, tuple]], name: str = "r", walls: list[float] | None = None,
             meta: dict | None = None) -> Run:
    """A run whose launch k logs `{metric: (steps, values)}` (rows in step order, metrics
    interleaved as a logger writes them); wall time = start of launch + 0.5 s per step."""
    parts, seq = [], 0
    for k, launch in enumerate(launches):
        rows = []
        for metric, (steps, values) in launch.items():
            for s, v in zip(np.asarray(steps).tolist(), np.asarray(values, dtype=float).tolist()):
                rows.append((int(s), metric, v))
        rows.sort(key=lambda r: r[0])
        start = walls[k] if walls else T0 + 10_000.0 * k
        first = rows[0][0] if rows else 0
        f = pl.DataFrame({
            "run": name, "source": f"launch{k}.log", "segment": k,
            "seq": np.arange(seq, seq + len(rows)),
            "step": [r[0] for r in rows], "wall_time": [start + 0.5 * (r[0] - first) for r in rows],
            "metric": [r[1] for r in rows], "value": [r[2] for r in rows],
        }, schema_overrides={"segment": pl.UInt32, "seq": pl.UInt64})
        parts.append(f.select([pl.col(c).cast(t) for c, t in SCHEMA.items()]))
        seq += len(rows)
    frame = pl.concat(parts)
    segments = [{"segment": k} for k in range(len(launches))]
    return Run(name=name, frame=frame, sources=[f"launch{k}.log" for k in range(len(launches))],
               formats=["test"], segments=segments, meta=meta or {})


def curve(n: int, seed: int, interval: int = 1) -> dict[str, np.ndarray]:
    return clean_run(n_steps=n, seed=seed, interval=interval, warmup=50)


def part(c: dict[str, np.ndarray], lo: int, hi: int, *, shift: int = 0,
         metrics=(("train/loss", "loss"), ("lr", "lr"), ("grad_norm", "grad_norm"))) -> dict[str, tuple]:
    keep = (c["step"] >= lo) & (c["step"] <= hi)
    return {tag: (c["step"][keep] - shift, c[key][keep]) for tag, key in metrics}


def live(frame: pl.DataFrame, metric: str) -> pl.DataFrame:
    return frame.filter((pl.col("metric") == metric) & ~pl.col("superseded")).sort("step")


def told(st) -> list:
    """The findings of the launches' boundaries, less the death of a launch a relaunch tells
    (`detect.ended.relaunch_crash_findings`, asserted where it matters)."""
    return [f for f in st.findings if not f.evidence.get("launch_died")]


def died(st) -> list[int]:
    """The launches (1-based) a relaunch says died."""
    return [d["launch"] for f in st.findings if f.evidence.get("launch_died") for d in f.evidence["died_launches"]]


def kinds(st) -> list[str]:
    return [f.kind for f in told(st)]


# ------------------------------------------------------------------ the later launch wins


def test_SL301_later_launch_wins_and_superseded_points_are_kept():
    a, b = curve(2000, 1), curve(2000, 2)
    run = make_run([part(a, 0, 1199), part(b, 800, 1999)])
    st = stitch_run(run)
    validate(st.frame, "test", stitched=True)
    assert st.frame.height == run.frame.height  # nothing dropped
    loss = live(st.frame, "train/loss")
    np.testing.assert_array_equal(loss.get_column("step").to_numpy(), np.arange(2000))
    want = np.where(np.arange(2000) >= 800, b["loss"], a["loss"])
    np.testing.assert_allclose(loss.get_column("value").to_numpy(), want)
    old = st.frame.filter(pl.col("superseded"))
    assert set(old.get_column("segment").to_list()) == {0}
    assert old.get_column("step").min() == 800 and old.get_column("step").max() == 1199
    assert old.height == 3 * 400  # three metrics, steps 800..1199
    (f,) = told(st)
    assert f.kind == "resume_overlap" and f.code == "SL301" and f.metric is None and f.severity == "warning"
    assert f.extra["resume_step"] == 800 and f.extra["rolled_back_from"] == 1199
    assert f.extra["identical_values"] is False and f.evidence["from_scratch"] is False
    assert "800" in f.message and "1199" in f.message
    assert st.segment_starts == [800]
    seg = {s["segment"]: s for s in st.segments}
    assert (seg[0]["superseded"], seg[1]["superseded"]) == (1200, 0)
    assert (seg[1]["first_step"], seg[1]["last_step"], seg[1]["launch"]) == (800, 1999, "rollback")


def test_a_metric_the_later_launch_never_logs_keeps_its_points():
    a, b = curve(1000, 3), curve(1000, 4)
    first = part(a, 0, 599)
    first["eval/loss"] = (np.arange(0, 600, 100), np.full(6, 3.0))
    run = make_run([first, part(b, 400, 999)])
    st = stitch_run(run)
    assert live(st.frame, "eval/loss").height == 6
    assert live(st.frame, "train/loss").get_column("step").to_list() == list(range(1000))


def test_sparse_metric_is_superseded_from_the_launch_start_not_its_own_first_point():
    a, b = curve(1000, 5), curve(1000, 6)
    first, second = part(a, 0, 599), part(b, 410, 999)
    first["eval/loss"] = (np.arange(100, 600, 100), np.full(5, 3.0))
    second["eval/loss"] = (np.arange(500, 1000, 100), np.full(5, 2.0))
    st = stitch_run(make_run([first, second]))
    ev = live(st.frame, "eval/loss")
    assert ev.get_column("step").to_list() == [100, 200, 300, 400, 500, 600, 700, 800, 900]
    assert ev.filter(pl.col("step") >= 500).get_column("value").to_list() == [2.0] * 5


def test_metric_on_another_axis_is_superseded_from_its_own_first_new_point():
    """Megatron logs `lm loss vs samples` with step = samples (32 per step)."""
    a, b = curve(1000, 7), curve(1000, 8)
    first, second = part(a, 1, 600), part(b, 401, 999)
    first["loss vs samples"] = (a["step"][1:601] * 32, a["loss"][1:601])
    second["loss vs samples"] = (b["step"][401:] * 32, b["loss"][401:])
    st = stitch_run(make_run([first, second]))
    vs = live(st.frame, "loss vs samples")
    assert vs.get_column("step").to_list() == list(range(32, 1000 * 32, 32))
    seg = {s["segment"]: s for s in st.segments}
    assert seg[0]["last_step"] == 600  # the launch's own axis, not the samples axis


def test_a_value_logged_twice_inside_one_launch_keeps_the_last():
    c = curve(300, 9)
    launch = part(c, 0, 299)
    steps, values = launch["train/loss"]
    launch["train/loss"] = (np.concatenate([steps, [150, 150]]), np.concatenate([values, [values[150]] * 2]))
    st = stitch_run(make_run([launch]))
    loss = live(st.frame, "train/loss")
    assert loss.get_column("step").to_list() == list(range(300))
    assert st.frame.filter(pl.col("superseded")).height == 2
    assert st.findings == [] and st.segment_starts == []


def test_SL301_identical_relaunches_are_overlaps_with_identical_values():
    c = curve(61, 10)
    launch = part(c, 1, 60, metrics=(("lm loss", "loss"), ("learning-rate", "lr")))
    st = stitch_run(make_run([launch, launch, launch]))
    (f,) = [f for f in st.findings if f.kind == "resume_overlap"]  # identical reruns: one finding, a count
    assert f.extra["restarts"] == 2 and f.evidence["launches"] == [1, 2]
    assert f.severity == "info" and f.extra["identical_values"] is True
    assert (f.extra["resume_step"], f.extra["rolled_back_from"]) == (1, 60)
    assert f.evidence["identical_fraction"] == 1.0 and "same values" in f.message
    assert f.evidence["from_scratch"] is True  # each relaunch started at the run's first step
    assert live(st.frame, "lm loss").get_column("segment").unique().to_list() == [2]
    assert st.frame.filter(pl.col("superseded")).height == 2 * 2 * 60


def test_a_run_appended_from_the_beginning_is_a_new_run_not_a_rollback():
    """A second run from step 0 after a first one reached step 599 (60% of the way): a new
    run appended (step_reset, a note), with the steps it logged again as a note; the second
    run supersedes the whole first one."""
    a, b = curve(1000, 11), curve(1000, 12)
    st = stitch_run(make_run([part(a, 0, 599), part(b, 0, 999)]))
    assert sorted(kinds(st)) == ["resume_overlap", "step_reset"]
    by = {f.kind: f for f in st.findings}
    new, relogged = by["step_reset"], by["resume_overlap"]
    assert new.severity == relogged.severity == "info" and new.evidence["appended_runs"] == 2
    assert new.extra["resume_step"] == 0 and new.message.startswith("2 runs appended to this log, each from step 0")
    assert relogged.extra["rolled_back_from"] == 599 and relogged.evidence["from_scratch"] is True
    assert "not a rollback" in relogged.message
    assert st.segments[1]["step_offset"] == 0 and st.segments[1]["launch"] == "rerun"


def test_a_short_first_run_after_which_a_longer_one_goes_past_it_is_the_same_run():
    """A relaunch from step 0 after an attempt that reached step 100 of a 1000-step run
    (10% of the way): an attempt killed early and started again, a note."""
    a, b = curve(1000, 11), curve(1000, 12)
    st = stitch_run(make_run([part(a, 0, 100), part(b, 0, 999)]))
    f, reset = told(st)
    assert f.kind == "resume_overlap" and f.severity == "info" and f.evidence["killed_early"] is True
    assert "stopped at step 100" in f.message and st.segments[1]["launch"] == "rollback"
    # the counter went back to the beginning: told as a restart too (what a reader of the log sees)
    assert (reset.kind, reset.severity, reset.start_step, reset.end_step) == ("step_reset", "info", 0, 100)
    assert "went back to step 0 once" in reset.message
    assert died(st) == [1]  # and the attempt that stopped there died (killed, out of memory, preempted)


def test_appended_runs_supersede_the_longer_earlier_run_whole():
    """A shorter run appended after a longer one: the earlier run's later steps are another
    run's, so the report follows the last run only."""
    a, b = curve(1000, 11), curve(1000, 12)
    st = stitch_run(make_run([part(a, 0, 999), part(b, 0, 400)]))
    assert sorted(kinds(st)) == ["resume_overlap", "step_reset"]
    loss = live(st.frame, "train/loss")
    assert loss.get_column("step").max() == 400 and loss.get_column("segment").unique().to_list() == [1]


# ------------------------------------------------------------------ step counter reset


@pytest.mark.parametrize("interval", [1, 10])
def test_SL302_reset_counter_is_rebased_where_the_lr_continues(interval):
    c = curve(3000, 13, interval)
    resumed_at, last = 1800, 2400
    second = part(c, resumed_at, 2999, shift=resumed_at)  # logged steps restart at 0
    st = stitch_run(make_run([part(c, 0, last), second]))
    (f,) = st.findings
    assert f.kind == "step_reset" and f.code == "SL302" and f.metric is None
    assert f.extra["resume_step"] == resumed_at and f.extra["step_offset"] == resumed_at
    assert f.extra["rolled_back_from"] == last
    assert f.extra["logged_first_step"] == 0
    # where the file shows the restart (its own counter) and where it sits in the run
    assert f.start_step == 0 and f.anchor_step == resumed_at
    assert f"{resumed_at}" in f.message and "re-based" in f.message and "logs step 0 again" in f.message
    loss = live(st.frame, "train/loss")
    np.testing.assert_array_equal(loss.get_column("step").to_numpy(), c["step"])
    np.testing.assert_allclose(loss.get_column("value").to_numpy(), c["loss"])
    assert st.segment_starts == [resumed_at]
    assert st.segments[1]["step_offset"] == resumed_at


def test_a_rollback_after_a_reset_is_measured_from_the_reset_launch_not_the_superseded_one():
    """Launch 1 reached 2400; launch 2 restarted its counter and resumed at 1800 (its steps
    0-400 are 1800-2200), superseding 1800-2400; launch 3 rolled back inside launch 2's
    counter to its 300 (2100). It rolled back from 2200, where launch 2 stopped, not from
    the 2400 that launch 1 had reached and that is no longer on the timeline."""
    c = curve(3000, 13)
    st = stitch_run(make_run([part(c, 0, 2400), part(c, 1800, 2200, shift=1800), part(c, 2100, 2999, shift=1800)]))
    reset, overlap = told(st)
    assert reset.kind == "step_reset" and reset.extra["resume_step"] == 1800
    assert overlap.kind == "resume_overlap" and overlap.extra["resume_step"] == 2100
    assert overlap.extra["rolled_back_from"] == 2200 and overlap.start_step == 300
    assert "2100–2200" in overlap.message


def test_SL302_reset_between_logged_steps_is_pinned_by_the_schedule():
    """Launch 1 logged every 10 steps; launch 2 resumed at 1805 and logs 0, 10, ...:
    the LR laid under the old curve fits at 1805 only."""
    fine = curve(3000, 35)
    old = {k: v[::10] for k, v in fine.items()}
    new = {k: v[1805::10] for k, v in fine.items()}
    new["step"] = new["step"] - 1805
    st = stitch_run(make_run([part(old, 0, 2400), part(new, 0, 3000)]))
    (f,) = st.findings
    assert f.kind == "step_reset" and f.extra["resume_step"] == 1805
    assert f.evidence["matched_metric"] == "lr"


def test_SL302_reset_whose_schedule_restarted_is_judged_on_the_loss():
    """The scheduler restarted with the counter (warm-up again): the LR matches step 0,
    which the loss level rules out; the loss says the launch continued."""
    c = curve(3000, 36)
    second = part(c, 2000, 2999, shift=2000)
    second["lr"] = (second["lr"][0], c["lr"][:1000])
    st = stitch_run(make_run([part(c, 0, 1999), second]))
    (f,) = st.findings
    assert f.kind == "step_reset" and abs(f.extra["resume_step"] - 2000) <= 60
    assert "matched_metric" not in f.evidence


def test_SL302_reset_without_companions_is_located_from_the_loss_level():
    c = curve(3000, 14)
    resumed_at = 1200
    metrics = (("train/loss", "loss"),)
    st = stitch_run(make_run([part(c, 0, 2000, metrics=metrics),
                              part(c, resumed_at, 2999, shift=resumed_at, metrics=metrics)]))
    (f,) = st.findings
    assert f.kind == "step_reset"
    assert abs(f.extra["resume_step"] - resumed_at) <= 0.02 * 3000


def test_SL302_reset_that_continues_at_the_end_is_put_right_after_it():
    c = curve(3000, 15)
    metrics = (("train/loss", "loss"),)
    st = stitch_run(make_run([part(c, 0, 1999, metrics=metrics),
                              part(c, 2000, 2999, shift=2000, metrics=metrics)]))
    (f,) = st.findings
    assert f.kind == "step_reset" and f.extra["rolled_back_from"] is None
    assert abs(f.extra["resume_step"] - 2000) <= 30


def test_a_second_writer_beside_the_first_is_not_a_resume():
    """A train writer and an eval writer in one folder, running at the same time."""
    c = curve(1000, 34)
    train = part(c, 0, 999)
    evals = {"eval/loss": (np.arange(100, 1000, 100), np.full(9, 2.5))}
    st = stitch_run(make_run([train, evals], walls=[T0, T0 + 50]))
    assert st.findings == [] and st.segment_starts == []
    assert [s["launch"] for s in st.segments] == ["start", "parallel"]
    assert st.frame.filter(pl.col("superseded")).height == 0
    # same tags, written at the same time (two ranks): beside each other, nothing superseded
    st = stitch_run(make_run([train, part(c, 0, 999)], walls=[T0, T0 + 1.0]))
    assert st.findings == [] and st.segments[1]["launch"] == "parallel"


# ------------------------------------------------------------------ gaps


def test_SL304_step_gap_and_SL305_wallclock_gap_are_info():
    c = curve(2000, 16)
    run = make_run([part(c, 0, 899), part(c, 1000, 1999)], walls=[T0, T0 + 450 + 7200])
    st = stitch_run(run)
    (gap,) = st.findings
    assert gap.kind == "step_gap" and gap.code == "SL304" and gap.severity == "info"
    assert (gap.start_step, gap.end_step) == (899, 1000)
    assert gap.evidence["missing_points"] == 100
    run = make_run([part(c, 0, 999), part(c, 1000, 1999)], walls=[T0, T0 + 500 + 7200])
    (wall,) = stitch_run(run).findings
    assert wall.kind == "wallclock_gap" and wall.code == "SL305" and wall.severity == "info"
    assert wall.evidence["wallclock_gap_s"] == pytest.approx(7200.5, abs=1)
    assert "2 h" in wall.message
    quick = make_run([part(c, 0, 999), part(c, 1000, 1999)], walls=[T0, T0 + 520])
    assert stitch_run(quick).findings == []


# ------------------------------------------------------------------ relaunches hidden in one file


def _one_file(run: Run) -> Run:
    return Run(name=run.name, frame=run.frame.with_columns(segment=pl.lit(0, pl.UInt32),
                                                           source=pl.lit("metrics.csv")),
               sources=["metrics.csv"], formats=["csv"], segments=[{"segment": 0}])


def test_a_relog_of_the_last_step_inside_one_file_is_a_new_launch():
    a, b = curve(2000, 17), curve(2000, 18)
    run = _one_file(make_run([part(a, 0, 1000), part(b, 1000, 1999)]))
    st = stitch_run(run)
    assert [s["first_step"] for s in st.segments] == [0, 1000]
    assert st.segment_starts == [1000]
    old = st.frame.filter(pl.col("superseded"))
    assert old.get_column("step").unique().to_list() == [1000] and old.height == 3
    assert live(st.frame, "train/loss").filter(pl.col("step") == 1000).get_column("value").item() == b["loss"][1000]


def test_a_value_logged_twice_by_one_process_is_not_a_relaunch():
    """The clock did not jump: the same process logged step 1000 twice (the last wins)."""
    a, b = curve(2000, 29), curve(2000, 30)
    run = _one_file(make_run([part(a, 0, 1000), part(b, 1000, 1999)], walls=[T0, T0 + 500.5]))
    st = stitch_run(run)
    assert len(st.segments) == 1 and st.segment_starts == [] and st.findings == []
    assert live(st.frame, "train/loss").filter(pl.col("step") == 1000).get_column("value").item() == b["loss"][1000]


def test_without_wall_times_a_relaunch_relogs_most_metrics_of_the_step():
    a, b = curve(2000, 31), curve(2000, 32)
    both = _one_file(make_run([part(a, 0, 1000), part(b, 1000, 1999)]))
    nowall = both.frame.with_columns(wall_time=pl.lit(None, pl.Float64))
    run = Run(name="r", frame=nowall, sources=both.sources, formats=both.formats, segments=both.segments)
    assert stitch_run(run).segment_starts == [1000]
    n1 = 3 * 1001  # rows of the first launch
    one_metric = nowall.filter(~((pl.col("step") == 1000) & (pl.col("metric") != "train/loss")
                                 & (pl.col("seq") >= n1)))
    assert one_metric.filter(pl.col("step") == 1000).height == 4
    one = Run(name="r", frame=one_metric, sources=both.sources, formats=both.formats, segments=both.segments)
    assert stitch_run(one).segment_starts == []


def test_lines_of_a_relaunch_before_the_steps_go_back_join_that_launch():
    """nanoGPT prints `step 100: ... val loss` at the resumed step before `iter 100`
    goes back: discovery leaves that line in the old launch; it belongs to the new one."""
    c = curve(200, 33)
    first = part(c, 0, 130, metrics=(("train_loss", "loss"),))
    first["val_loss"] = (np.array([100]), np.array([2.6]))
    run = make_run([first, part(c, 100, 199, metrics=(("train_loss", "loss"),))])
    frame = run.frame.with_columns(wall_time=pl.lit(None, pl.Float64), source=pl.lit("train.log"))
    relog = frame.filter(pl.col("metric") == "val_loss").with_columns(value=pl.lit(2.7), seq=pl.lit(0, pl.UInt64))
    n0 = frame.filter(pl.col("segment") == 0).height
    frame = pl.concat([frame.filter(pl.col("segment") == 0), relog, frame.filter(pl.col("segment") == 1)])
    frame = frame.with_columns(seq=pl.int_range(pl.len(), dtype=pl.UInt64))
    assert frame.row(n0, named=True)["metric"] == "val_loss"
    st = stitch_run(Run(name="r", frame=frame, sources=["train.log"], formats=["text"], segments=run.segments))
    assert len(st.segments) == 2 and st.segment_starts == [100]
    val = live(st.frame, "val_loss")
    assert val.get_column("value").to_list() == [2.7] and val.get_column("segment").to_list() == [1]
    assert kinds(st) == ["resume_overlap"]


def test_identical_repeats_and_per_step_repeats_do_not_split_a_file():
    c = curve(500, 19)
    launch = part(c, 0, 499)
    steps, values = launch["train/loss"]
    same = _one_file(make_run([launch, {"train/loss": (steps[-1:], values[-1:])}]))
    assert split_relaunches(same.frame.sort("seq"))[0].get_column("segment").unique().to_list() == [0]
    # gradient accumulation: the same tag logged 4 times per step, all different
    acc = {"train/loss": (np.repeat(steps, 4), np.repeat(values, 4) * np.tile([1.0, 1.1, 0.9, 1.05], steps.size))}
    frame, _ = split_relaunches(make_run([acc]).frame)
    assert frame.get_column("segment").unique().to_list() == [0]


# ------------------------------------------------------------------ declared starts, merging, edges


def test_branch_point_declares_where_the_child_takes_over():
    a, b = curve(600, 20), curve(600, 21)
    child = part(b, 320, 599)  # first logged 320, but the rewind was at step 300
    run = make_run([part(a, 0, 499), child],
                   meta={"segment_meta": {1: {"wandb.branch_point": {"run": "x", "step": 300, "metric": "_step"}}}})
    st = stitch_run(run)
    loss = live(st.frame, "train/loss")
    assert loss.filter(pl.col("step") <= 300).get_column("segment").unique().to_list() == [0]
    assert loss.filter((pl.col("step") > 300) & (pl.col("step") < 320)).height == 0
    (f,) = st.findings
    assert f.kind == "resume_overlap" and f.extra["resume_step"] == 301


@pytest.mark.parametrize("meta,first", [({"purge_steps": [300]}, 305),  # known for the run only
                                        ({"segment_meta": {1: {"purge_steps": [300]}}}, 340)])
def test_purge_step_from_tensorboard_meta_is_honoured(meta, first):
    a, b = curve(600, 22), curve(600, 23)
    run = make_run([part(a, 0, 499), part(b, first, 599)], meta=meta)
    st = stitch_run(run)
    assert live(st.frame, "train/loss").filter((pl.col("step") >= 300) & (pl.col("step") < first)).height == 0
    assert live(st.frame, "train/loss").filter(pl.col("step") < 300).get_column("segment").unique().to_list() == [0]
    assert st.findings[0].extra["resume_step"] == 300


def test_merge_runs_orders_parts_by_start_time_else_by_natural_name():
    c = curve(400, 24)
    r1 = make_run([part(c, 0, 199)], name="version_9")
    r2 = make_run([part(c, 200, 399)], name="version_10")
    merged = merge_runs([r2, r1])
    assert merged.name == "version_9"  # wall times equal starts → name order, 9 before 10
    first = merged.frame.filter(pl.col("segment") == 0).get_column("step")
    assert first.min() == 0 and first.max() == 199
    nowall = [Run(name=r.name, frame=r.frame.with_columns(wall_time=pl.lit(None, pl.Float64)), sources=r.sources,
                  formats=r.formats, segments=r.segments) for r in (r2, r1)]
    assert merge_runs(nowall).name == "version_9"
    later = make_run([part(c, 200, 399)], name="version_10", walls=[T0 + 100])
    st = stitch_run(merge_runs([later, r1], name="joined"))
    assert st.findings == [] and st.segment_starts == [200]
    assert st.frame.get_column("run").unique().to_list() == ["joined"]


def test_merge_runs_without_runs_is_a_usage_error():
    from spikelens.errors import UsageError

    with pytest.raises(UsageError):
        merge_runs([])


def test_empty_run_stitches_to_an_empty_frame():
    run = Run(name="e", frame=pl.DataFrame(schema=SCHEMA), sources=[], formats=[], segments=[])
    st = stitch_run(run)
    assert st.frame.height == 0 and "superseded" in st.frame.columns and st.findings == []


def test_stitching_is_pure_and_deterministic():
    a, b = curve(1500, 25), curve(1500, 26)
    run = make_run([part(a, 0, 999), part(b, 0, 1499, shift=0)])
    before = run.frame.clone()
    one, two = stitch_run(run), stitch_run(run)
    assert run.frame.equals(before)
    assert one.frame.equals(two.frame)
    assert [f.to_json() for f in one.findings] == [f.to_json() for f in two.findings]


def test_analyze_run_gives_a_spike_after_a_resume_the_resume_cause():
    a, b = curve(3000, 27), curve(3000, 28)
    second = part(b, 1500, 2999)
    steps, values = second["train/loss"]
    values = values.copy()
    values[(steps >= 1501) & (steps <= 1510)] *= 2.5  # optimizer state lost: a spike at the resume
    second["train/loss"] = (steps, values)
    report = analyze_run(make_run([part(a, 0, 1999), second]), Config())
    spikes = [f for f in report.findings if f.kind == "spike" and f.metric == "train/loss"]
    assert spikes and abs(spikes[0].peak_step - 1505) <= 10
    assert spikes[0].causes and spikes[0].causes[0].cause == "resume"
    assert any(f.kind == "resume_overlap" and f.extra["resume_step"] == 1500 for f in report.findings)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["loss", "lr", "eval/loss"]),
                          st.one_of(st.integers(-5, 5), st.integers(-(2 ** 62), 2 ** 62))), max_size=40))
def test_rows_logged_twice_are_exactly_the_repeated_keys(rows):
    """The packed-integer check and the hash fallback (huge step ranges) both find
    exactly the (segment, metric, step) keys that occur more than once."""
    frame = pl.DataFrame({"segment": [r[0] for r in rows], "metric": [r[1] for r in rows],
                          "step": [r[2] for r in rows]},
                         schema={"segment": pl.UInt32, "metric": SCHEMA["metric"], "step": pl.Int64})
    seen: dict[tuple, int] = {}
    for r in rows:
        seen[r] = seen.get(r, 0) + 1
    assert _logged_twice(frame).to_list() == [seen[r] > 1 for r in rows]


def test_the_public_functions_stay_functions_after_use():
    """`spikelens.stitch` once was shadowed by the `spikelens.stitch` module as soon as
    any analysis imported it; every exported name must stay what `__all__` promises."""
    import subprocess

    code = ("import spikelens, inspect; spikelens.analyze(%r); "
            "print(all(inspect.isfunction(getattr(spikelens, n)) for n in spikelens.__all__ if n != '__version__'))"
            % str(FIXTURES / "jsonl" / "custom"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr
