"""What happened where one launch of a run took over from the previous one.

The stitcher (`spikelens.stitching`) finds the boundaries between launches and calls
the helpers here to judge them: was the step counter reset, and where did the new
launch really start (`locate_reset`)? Each judged boundary becomes a finding:

- SL301 `resume_overlap`: the new launch re-logged steps the old one had logged
  (a rollback to a checkpoint); `resume_step`, `rolled_back_from` on the run's axis,
  `start_step` as the file logs it (they differ after a step reset).
- SL302 `step_reset`: the new launch restarted its step counter; `resume_step` is
  the true step it resumed at (the stitched steps are re-based on it), `start_step` the
  step the launch logged there, as the file shows it. Runs appended to one log (each
  back at the run's first step with the loss at its first level, after earlier ones that
  got far) are one info `step_reset` with `evidence.appended_runs`, beside one info
  `resume_overlap` for the steps they logged again; attempts killed early and started
  again are one info `resume_overlap` (`evidence.killed_early`) beside one info
  `step_reset` (the counter went back to the run's first step, however few steps the
  killed attempt logged).
- SL303 `repeated_data` (info) where the log holds the same training twice: runs started
  again from the beginning that replay an earlier run value for value (`evidence.replay`),
  and launches whose every step was written twice by two writers (`evidence.written_twice`).
- SL304 `step_gap`, SL305 `wallclock_gap` (info): steps never logged between two
  launches, and the time the run was down.
- SL307 `empty_launch` (info): launches that logged nothing (a header-only event file,
  a W&B folder without history rows), one finding with their count; where the run also
  restarted from the beginning, the restart finding counts them instead.

SL303 `repeated_data` on the curve (a data loader restarted mid-run) is a curve judgment, so it
is a registered detector (`RepeatedDataDetector`) run on the stitched loss like the others.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .base import Detector, RunContext, Series
from .ended import LISTED_MAX
from ..model.finding import Finding
from .stats import forward_median, global_sigma, log_scale, median_interval, rolling_median

OVERLAP_CODE = "SL301"
RESET_CODE = "SL302"
STEP_GAP_CODE = "SL304"
WALL_GAP_CODE = "SL305"
EMPTY_CODE = "SL307"

MEDIAN_SE = 1.2533
"""Standard error of a median of n normal points is about 1.2533 σ/√n."""


# ------------------------------------------------------------------ boundaries


@dataclass
class Boundary:
    """One launch taking over from the launches before it (numbers on the stitched axis)."""

    segment: int
    previous: int
    launch: str
    """`continue` (steps go on), `rollback` (re-logs earlier steps), `reset` (counter restarted),
    `rerun` (a new run from the beginning, appended)."""
    first_step: int
    """Stitched first step of the new launch."""
    logged_first_step: int
    step_offset: int
    prev_last_step: int
    """Last step logged before this launch (main axis, stitched)."""
    interval: float
    source: str = ""
    prev_source: str = ""
    wall_gap_s: float | None = None
    seconds_per_point: float | None = None
    reset_how: str = ""
    reset_evidence: dict = field(default_factory=dict)
    superseded: int = 0
    """Earlier points this launch superseded."""
    overlap_steps: int = 0
    """Distinct main-metric steps logged by both (after re-basing)."""
    identical: float | None = None
    """Fraction of overlapping main-metric points with identical values (None: no pairs)."""
    max_abs_diff: float | None = None
    identical_distinct: int = 0
    """Distinct values among the overlapping points re-logged identically (a flat curve
    replayed proves nothing; many distinct values replayed exactly prove a replay)."""
    main_metric: str | None = None
    run_first_step: int | None = None
    """First step of the whole run (a launch starting there restarted from scratch)."""
    last_step: int | None = None
    """Stitched last step of the new launch."""
    first_level: float | None = None
    """Where the new launch's main metric started (median of its first points)."""
    run_first_level: float | None = None
    """... and where the run's first launch started."""
    has_main: bool = True
    """The launch logs the run's main metric (an evaluation-only launch does not)."""
    stub: bool = False
    """A run appended last that logged a few points only (`stitching.STUB_POINTS`): the report judges
    the run before it, the longest one, and keeps the stub's points as superseded."""

    @property
    def rolled_back(self) -> bool:
        """Re-logged at least one logging interval beyond the checkpoint step itself."""
        return self.prev_last_step - self.first_step >= max(self.interval, 1)

    @property
    def step_gap(self) -> int:
        return self.first_step - self.prev_last_step


def human_duration(seconds: float) -> str:
    """'45 s', '12 min', '3 h 05 min', '2.5 days': a wall-clock gap a person reads at a glance."""
    s = int(round(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    h, m = divmod(s // 60, 60)
    return f"{h} h {m:02d} min" if h < 48 else f"{h / 24:.1f} days"


def _launch_name(b: Boundary) -> str:
    return f"launch {b.segment + 1}"


def wall_gap_is_long(b: Boundary, *, min_seconds: float = 60.0, points: float = 20.0) -> bool:
    """Longer than a minute and than `points` logged points' worth of training time."""
    if b.wall_gap_s is None or not np.isfinite(b.wall_gap_s):
        return False
    typical = (b.seconds_per_point or 0.0) * points
    return b.wall_gap_s > max(min_seconds, typical)


def boundary_evidence(b: Boundary) -> dict:
    ev = {"segment": b.segment, "previous_segment": b.previous, "source": b.source,
          "previous_source": b.prev_source, "logged_first_step": b.logged_first_step,
          "step_offset": b.step_offset, "superseded_points": b.superseded, "interval": b.interval}
    if b.wall_gap_s is not None and np.isfinite(b.wall_gap_s):
        ev["wallclock_gap_s"] = round(float(b.wall_gap_s), 3)
    return ev


def overlap_finding(run: str, b: Boundary) -> Finding:
    """SL301: a rollback; the later launch won on the overlapping steps."""
    same = b.identical is not None and b.identical >= 0.99
    lost = b.prev_last_step - b.first_step
    scratch = from_scratch(b)
    if same:
        what = f"{_launch_name(b)} re-logged steps {b.first_step}–{b.prev_last_step} with identical values"
    elif scratch:
        what = (f"{_launch_name(b)} restarted from the beginning (step {b.first_step}) after the previous launch "
                f"had reached step {b.prev_last_step}: {lost} steps trained again")
    else:
        what = (f"resumed at step {b.first_step} after the previous launch had reached step {b.prev_last_step}: "
                f"{lost} steps rolled back and trained again")
    tail = f"; {b.superseded:,} earlier points kept as superseded"
    if wall_gap_is_long(b):
        tail += f"; down for {human_duration(b.wall_gap_s)}"
    ev = boundary_evidence(b)
    ev.update({"overlap_steps": b.overlap_steps, "rolled_back_steps": lost,
               "identical_fraction": b.identical, "max_abs_diff": b.max_abs_diff, "main_metric": b.main_metric,
               "from_scratch": bool(scratch)})
    return Finding(kind="resume_overlap", code=OVERLAP_CODE, run=run, metric=None,
                   severity="info" if same else "warning", message=what + tail,
                   start_step=b.logged_first_step, end_step=b.prev_last_step, evidence=ev,
                   extra={"resume_step": b.first_step, "rolled_back_from": b.prev_last_step,
                          "identical_values": same})


def killed_at_start(b: Boundary) -> bool:
    """A first attempt that logged only the run's first step, which the next launch logged
    again: killed (or crashed) right after it started, and relaunched from scratch."""
    return (b.superseded > 0 and b.previous is not None and b.run_first_step is not None
            and b.prev_last_step == b.run_first_step == b.first_step)


def killed_finding(run: str, b: Boundary) -> Finding:
    """SL301 (info): the relaunch re-logged the one step a killed first attempt had logged."""
    ev = boundary_evidence(b)
    ev.update({"overlap_steps": 1, "rolled_back_steps": 0, "from_scratch": True, "killed_at_start": True,
               "identical_fraction": b.identical, "main_metric": b.main_metric})
    return Finding(kind="resume_overlap", code=OVERLAP_CODE, run=run, metric=None, severity="info",
                   message=(f"the first attempt stopped after logging step {b.first_step} only; {_launch_name(b)} "
                            f"started again from step {b.first_step} and logged it again"
                            f"{'' if b.identical and b.identical >= 0.99 else ' with other values'}"),
                   start_step=b.logged_first_step, end_step=b.prev_last_step, evidence=ev,
                   extra={"resume_step": b.first_step, "rolled_back_from": b.prev_last_step,
                          "identical_values": bool(b.identical and b.identical >= 0.99)})


def reset_finding(run: str, b: Boundary) -> Finding:
    """SL302: the step counter restarted; steps re-based on where the launch really resumed."""
    msg = (f"{_launch_name(b)} restarted its step counter: it logs step {b.logged_first_step} again, which is "
           f"step {b.first_step} of the run ({b.reset_how}), so its steps were re-based by {b.step_offset:+d}")
    rolled = b.prev_last_step if b.first_step <= b.prev_last_step else None
    if rolled is not None:
        msg += f"; the previous launch had reached step {b.prev_last_step}, so it also rolled back"
    ev = boundary_evidence(b)
    ev.update(b.reset_evidence)
    # start_step is the step as the file shows it (where a reader finds the restart in the log);
    # resume_step, like every other step of the report, is on the run's stitched axis
    return Finding(kind="step_reset", code=RESET_CODE, run=run, metric=None, severity="warning", message=msg,
                   start_step=b.logged_first_step, evidence=ev,
                   extra={"resume_step": b.first_step, "rolled_back_from": rolled,
                          "logged_first_step": b.logged_first_step, "step_offset": b.step_offset})


def step_gap_finding(run: str, b: Boundary) -> Finding:
    """SL304 (info): steps between two launches that nothing logged."""
    missing = max(int(round(b.step_gap / max(b.interval, 1))) - 1, 1)
    ev = boundary_evidence(b)
    ev.update({"gap_steps": b.step_gap, "missing_points": missing})
    return Finding(kind="step_gap", code=STEP_GAP_CODE, run=run, metric=None, severity="info",
                   message=f"no steps logged between {b.prev_last_step} and {b.first_step} where "
                           f"{_launch_name(b)} took over (about {missing:,} logged points missing)",
                   start_step=b.prev_last_step, end_step=b.first_step, evidence=ev,
                   extra={"resume_step": b.first_step})


def wallclock_gap_finding(run: str, b: Boundary) -> Finding:
    """SL305 (info): the run was down between two launches."""
    ev = boundary_evidence(b)
    return Finding(kind="wallclock_gap", code=WALL_GAP_CODE, run=run, metric=None, severity="info",
                   message=f"{_launch_name(b)} started {human_duration(b.wall_gap_s)} after the previous one "
                           f"stopped (step {b.prev_last_step} → {b.first_step})",
                   start_step=b.first_step, evidence=ev, extra={"resume_step": b.first_step})


def from_scratch(b: Boundary) -> bool:
    """The launch started again at the run's first step (a rerun, not a resume)."""
    return b.run_first_step is not None and b.first_step <= b.run_first_step + max(b.interval, 1)


def empty_launches(segments: list[dict] | None) -> list[dict]:
    """Timeline rows of the launches that logged nothing (not writers beside another launch)."""
    return [s for s in segments or () if s.get("launch") == "empty"]


def _launch_count(segments: list[dict], empty: list[dict], from_start: int, first_step: int) -> str:
    """'17 launches: 10 logged nothing, 7 started from step 1' (and how many resumed later)."""
    launches = [s for s in segments if s.get("launch") != "parallel"]
    text = f"{len(launches)} launches: {len(empty)} logged nothing, {from_start} started from step {first_step}"
    later = len(launches) - len(empty) - from_start
    return text + (f", {later} resumed later" if later > 0 else "")


def _empty_evidence(empty: list[dict], segments: list[dict]) -> dict:
    return {"launch_count": sum(1 for s in segments if s.get("launch") != "parallel"),
            "empty_launches": [int(s["segment"]) for s in empty],
            "empty_sources": [str(s.get("source", "")) for s in empty]}


def _restarts_evidence(bs: list[Boundary]) -> dict:
    """What a finding about several relaunches lists of each: where it started again, how far
    the launch before it had got, and the points it superseded."""
    return {"restarts": len(bs), "launches": [b.segment for b in bs], "reached_steps": [b.prev_last_step for b in bs],
            "superseded_points": sum(b.superseded for b in bs)}


def _wall_gaps(bs: list[Boundary]) -> list[float | None]:
    return [round(float(b.wall_gap_s), 3) if b.wall_gap_s is not None else None for b in bs]


def _with_empty_launches(msg: str, ev: dict, segments: list[dict] | None, from_start: int, first_step: int) -> str:
    """The message led by the launch count, and the evidence naming the empty launches,
    when some launches logged nothing."""
    empty = empty_launches(segments)
    if not empty:
        return msg
    ev.update(_empty_evidence(empty, segments))
    return f"{_launch_count(segments, empty, from_start, first_step)}; {msg}"


def launch_list(numbers: list[int]) -> str:
    """'2, 3, 5-9': launch numbers (1-based) with runs of consecutive ones as ranges."""
    out: list[str] = []
    nums = sorted(set(numbers))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if j == i else f"{nums[i]}, {nums[j]}" if j == i + 1 else f"{nums[i]}–{nums[j]}")
        i = j + 1
    return ", ".join(out)


def _level(x: float | None) -> str:
    return "?" if x is None else f"{x:.4g}"


def _same_values(bs: list[Boundary]) -> bool:
    """Every launch re-logged the values before it, and not merely one constant (a loss pinned at -4 in
    every run says nothing about a replay; `REPLAY_MIN_STEPS` distinct values do)."""
    return all(b.identical is not None and b.identical >= 0.99 and b.identical_distinct >= REPLAY_MIN_STEPS
               for b in bs)


def appended_runs_finding(run: str, bs: list[Boundary], segments: list[dict] | None = None) -> Finding:
    """SL302 (info) for new runs appended to the log: each launch went back to the run's
    first step with the loss at its first level (a sweep run one config after another, a
    script run twice, a resubmitted job), one finding listing them. The step counter
    restarted because the run did; nothing was lost, and the report judges the last run
    (earlier runs' points are kept as superseded)."""
    n = len(bs) + 1
    last = ([b for b in bs if b.first_level is not None] or bs)[-1]
    judged = [b for b in bs if not b.stub]
    metric = bs[0].main_metric or "the loss"
    level = ""
    if last.first_level is not None and last.run_first_level is not None:
        level = f" ({metric} starts at {_level(last.first_level)} in the last, {_level(last.run_first_level)} in the first)"
    same = _same_values(bs)
    firsts = sorted({b.first_step for b in bs})
    start = f"step {firsts[0]}" if len(firsts) == 1 else f"its first step ({firsts[0]}–{firsts[-1]})"
    msg = (f"{n} runs appended to this log, each from {start}{level}: launches "
           f"{launch_list([b.segment + 1 for b in bs])} started again after the runs before them had reached "
           f"step {max(b.prev_last_step for b in bs)} at most"
           + ("; each rerun logged the same values" if same else "")
           + (f"; the report judges the last run (steps {last.first_step}–{last.last_step}), the earlier "
              f"runs' {sum(b.superseded for b in bs):,} points are kept as superseded" if not last.stub else
              f"; the last {'run' if len(bs) - len(judged) == 1 else f'{len(bs) - len(judged)} runs'} logged a few "
              f"points only (from step {last.first_step}), so the report judges the run before "
              + (f"(launch {judged[-1].segment + 1}, steps {judged[-1].first_step}–{judged[-1].last_step})" if judged
                 else f"(the first, steps {bs[0].run_first_step}–{bs[0].prev_last_step})")
              + "; the other runs' points are kept as superseded"))
    ev = boundary_evidence(bs[0])
    msg = _with_empty_launches(msg, ev, segments, len(bs) + 1, bs[0].first_step)
    ev.update({"appended_runs": n, **_restarts_evidence(bs), "last_steps": [b.last_step for b in bs],
               "first_levels": [b.first_level for b in bs], "run_first_level": bs[0].run_first_level,
               "identical_values": same, "main_metric": bs[0].main_metric, "wallclock_gaps_s": _wall_gaps(bs)})
    # anchored where the counter went back furthest: the runs' first step as the log shows it
    low = min(bs, key=lambda b: b.logged_first_step)
    return Finding(kind="step_reset", code=RESET_CODE, run=run, metric=None, severity="info", message=msg,
                   start_step=low.logged_first_step, end_step=max(b.prev_last_step for b in bs), evidence=ev,
                   extra={"resume_step": low.first_step, "logged_first_step": low.logged_first_step,
                          "step_offset": 0, "rolled_back_from": None, "appended_runs": n})


def relogged_by_reruns_finding(run: str, bs: list[Boundary]) -> Finding:
    """SL301 (info) beside `appended_runs_finding`: the steps the appended runs logged
    again, which earlier runs had logged (the overlap the timeline resolves; not a
    rollback to a checkpoint)."""
    reached = max(b.prev_last_step for b in bs)
    same = _same_values(bs)
    msg = (f"steps {bs[0].first_step}–{min(reached, max(b.last_step or reached for b in bs))} were logged again "
           f"by the appended run{'s' if len(bs) > 1 else ''} (launch{'es' if len(bs) > 1 else ''} "
           f"{launch_list([b.segment + 1 for b in bs])}), new runs from the beginning, not a rollback"
           + (" (the same values)" if same else ""))
    ev = boundary_evidence(bs[0])
    ev.update({"overlap_steps": sum(b.overlap_steps for b in bs), "rolled_back_steps": reached - bs[0].first_step,
               "identical_fraction": bs[0].identical, "max_abs_diff": bs[0].max_abs_diff,
               "main_metric": bs[0].main_metric, "from_scratch": True, "appended_runs": True,
               **_restarts_evidence(bs)})
    return Finding(kind="resume_overlap", code=OVERLAP_CODE, run=run, metric=None, severity="info", message=msg,
                   start_step=bs[0].logged_first_step, end_step=reached, evidence=ev,
                   extra={"resume_step": bs[0].first_step, "rolled_back_from": reached, "identical_values": same,
                          "restarts": len(bs)})


def killed_attempts_finding(run: str, bs: list[Boundary], segments: list[dict] | None = None) -> Finding:
    """SL301 (info) for attempts killed early and started again from the beginning: each
    got a small part of the way (a crash at start-up, out of memory, a job killed and
    resubmitted), and the relaunch logged those steps again. One finding listing them."""
    if len(bs) == 1 and killed_at_start(bs[0]) and not empty_launches(segments):
        return killed_finding(run, bs[0])
    reached = [b.prev_last_step for b in bs]
    same = _same_values(bs)
    first = bs[0].first_step
    if len(bs) == 1:
        b = bs[0]
        msg = (f"the attempt before {_launch_name(b)} stopped at step {b.prev_last_step}; {_launch_name(b)} started "
               f"again from step {first} and logged steps {first}–{b.prev_last_step} again")
    else:
        msg = (f"{len(bs)} attempts stopped early, after reaching step {max(reached)} at most, and were started "
               f"again from step {first} (launches {launch_list([b.segment + 1 for b in bs])}); their steps were "
               f"logged again")
    if same:
        msg += " with the same values"
    msg += f"; {sum(b.superseded for b in bs):,} earlier points kept as superseded"
    ev = boundary_evidence(bs[0])
    msg = _with_empty_launches(msg, ev, segments, len(bs) + 1, first)
    ev.update({"overlap_steps": sum(b.overlap_steps for b in bs), "rolled_back_steps": max(reached) - first,
               "identical_fraction": bs[0].identical, "max_abs_diff": bs[0].max_abs_diff,
               "main_metric": bs[0].main_metric, "from_scratch": True, "killed_early": True,
               "killed_at_start": all(killed_at_start(b) for b in bs), **_restarts_evidence(bs),
               "wallclock_gaps_s": _wall_gaps(bs)})
    return Finding(kind="resume_overlap", code=OVERLAP_CODE, run=run, metric=None, severity="info", message=msg,
                   start_step=bs[0].logged_first_step, end_step=max(reached), evidence=ev,
                   extra={"resume_step": first, "rolled_back_from": max(reached), "identical_values": same,
                          "restarts": len(bs)})


def restarted_attempts_finding(run: str, bs: list[Boundary]) -> Finding:
    """SL302 (info) beside `killed_attempts_finding`: the step counter went back to the run's
    beginning, since each attempt started training again from scratch (not from a checkpoint).
    What a reader of the log sees first ("it restarted from iteration 0 three times"); the
    overlap note says what the timeline kept."""
    reached = [b.prev_last_step for b in bs]
    first = bs[0].first_step
    times = "once" if len(bs) == 1 else f"{len(bs)} times"
    msg = (f"the step counter went back to step {first} {times}: launch{'es' if len(bs) > 1 else ''} "
           f"{launch_list([b.segment + 1 for b in bs])} started training again from the beginning after the "
           f"attempt{'s' if len(bs) > 1 else ''} before stopped at step{'s' if len(bs) > 1 else ''} "
           f"{', '.join(str(r) for r in reached)}")
    ev = boundary_evidence(bs[0])
    ev.update({"from_scratch": True, "killed_early": True, "main_metric": bs[0].main_metric,
               **_restarts_evidence(bs)})
    return Finding(kind="step_reset", code=RESET_CODE, run=run, metric=None, severity="info", message=msg,
                   start_step=bs[0].logged_first_step, end_step=max(reached), evidence=ev,
                   extra={"resume_step": first, "logged_first_step": bs[0].logged_first_step, "step_offset": 0,
                          "rolled_back_from": max(reached), "restarts": len(bs)})


REPLAY_MIN_STEPS = 2
"""Identical values at two or more steps, with two or more distinct values among them: the
chance that an independent run reproduces two printed losses to the last digit is nil."""


def replayed_runs(bs: list[Boundary]) -> list[Boundary]:
    """The launches that started again from the beginning and logged the same values as the
    run before them at every step they share: the same seeded training run again."""
    return [b for b in bs if b.identical is not None and b.identical >= 0.99
            and b.overlap_steps >= REPLAY_MIN_STEPS and b.identical_distinct >= REPLAY_MIN_STEPS]


def replayed_runs_finding(run: str, bs: list[Boundary]) -> Finding:
    """SL303 (info): runs appended to the log that replay an earlier run value for value. The
    file holds the same training more than once: an average, a curve or a count of epochs
    taken over the whole file weighs those points twice (the report keeps the last copy)."""
    steps = sum(b.overlap_steps for b in bs)
    first = min(bs, key=lambda b: b.logged_first_step)
    metric = bs[0].main_metric or "the loss"
    if len(bs) == 1:
        b = bs[0]
        what = (f"{_launch_name(b)} is a replay: it started again from step {b.first_step} and logged the same "
                f"{metric} as the run before it at all {b.overlap_steps:,} steps they share (steps "
                f"{b.first_step}–{min(b.prev_last_step, b.last_step or b.prev_last_step)})")
    else:
        what = (f"{len(bs)} launches ({launch_list([b.segment + 1 for b in bs])}) are replays: each started "
                f"again from the beginning and logged the same {metric} as the run before it ({steps:,} steps "
                f"in all)")
    msg = (what + "; the same seeded training is in this log more than once, so anything taken over the whole "
           "file counts those points twice; the report keeps the last copy")
    ev = boundary_evidence(first)
    ev.update({"replayed_launches": [b.segment + 1 for b in bs], "identical_steps": steps,
               "identical_fractions": [b.identical for b in bs], "main_metric": bs[0].main_metric,
               "replay": True})
    return Finding(kind="repeated_data", code="SL303", run=run, metric=None, severity="info", message=msg,
                   start_step=first.logged_first_step, end_step=max(b.last_step or b.first_step for b in bs),
                   evidence=ev, extra={"resume_step": first.first_step, "identical_values": True})


def written_twice_finding(run: str, metric: str, segment: int, steps: int, twice: int, spread: float,
                          noise: float, first: int, last: int) -> Finding:
    """SL303 (info): most steps of the main metric written two or more times inside one launch,
    the copies far closer to each other than neighbouring steps are: two writers (ranks, nodes,
    callbacks) appending the same record to one log, so every step counts twice."""
    same = spread == 0
    msg = (f"{twice:,} of the {steps:,} steps of {metric} were written two or more times in launch {segment + 1} "
           + ("with the same value" if same else
              f"with values that differ by {spread:.3g} at the median (neighbouring steps differ by {noise:.3g})")
           + ": two writers append the same record to this log (several ranks, nodes or callbacks), so any "
             "count or average over its lines weighs each step twice; the report keeps one value a step")
    ev = {"main_metric": metric, "segment": segment, "steps": steps, "steps_written_twice": twice,
          "copy_spread": spread, "step_noise": noise, "written_twice": True}
    return Finding(kind="repeated_data", code="SL303", run=run, metric=None, severity="info", message=msg,
                   start_step=first, end_step=last, evidence=ev, extra={"identical_values": same})


def printed_twice_finding(run: str, metric: str, pairs: int, points: int, first: int, last: int) -> Finding:
    """SL303 (info): the main metric holds every value for exactly two logged points in a row and
    changes between the pairs: it is computed half as often as it is printed (a stale variable
    printed again), so half its points are copies and its curve moves at half the steps shown."""
    msg = (f"{metric} repeats each value at the next logged point: {pairs:,} of its {points:,} points are an "
           f"exact copy of the point before, in pairs, changing only between them: it is printed twice as often "
           f"as it is computed (a stale value printed again), so half its points are copies")
    ev = {"main_metric": metric, "copied_points": pairs, "points": points, "printed_twice": True}
    return Finding(kind="repeated_data", code="SL303", run=run, metric=None, severity="info", message=msg,
                   start_step=first, end_step=last, evidence=ev, extra={"identical_values": True})


def empty_launch_finding(run: str, empty: list[dict], segments: list[dict]) -> Finding:
    """SL307 (info): launches that started and stopped before their first logged value,
    one finding with their count. Alone it is a note: an empty restart file beside a
    finished run costs nothing; many of them say the job kept crashing at start-up."""
    ev = _empty_evidence(empty, segments)
    n = ev["launch_count"]
    names = ", ".join(str(int(s["segment"]) + 1) for s in empty)
    before = _last_step_before(segments, empty[0])
    if len(empty) == 1:
        e = empty[0]
        what = f"launch {int(e['segment']) + 1} of {n} logged nothing ({_file_name(e.get('source'), segments)})"
        prev = _data_before(segments, e)
        gap = (e.get("first_wall_time") - prev["last_wall_time"]) if prev is not None and \
            prev.get("last_wall_time") is not None and e.get("first_wall_time") is not None else None
        if prev is not None and gap is not None and gap >= 0:
            what += (f": it started {human_duration(gap)} after launch {int(prev['segment']) + 1} stopped "
                     f"at step {prev['last_step']} and stopped before its first logged value")
            ev["wallclock_gap_s"] = round(float(gap), 3)
        else:
            what += ": it stopped before its first logged value"
    else:
        what = (f"{n} launches: {len(empty)} logged nothing (launches {names}); each stopped before its "
                f"first logged value")
    return Finding(kind="empty_launch", code=EMPTY_CODE, run=run, metric=None, severity="info", message=what,
                   start_step=before, evidence=ev, extra={"empty_launches": len(empty)})


def _data_before(segments: list[dict], seg: dict) -> dict | None:
    """The last launch with data before `seg` on the timeline."""
    prev = [s for s in segments if s.get("points") and s["segment"] < seg["segment"]]
    return prev[-1] if prev else None


def _last_step_before(segments: list[dict], seg: dict) -> int | None:
    prev = _data_before(segments, seg)
    return None if prev is None or prev.get("last_step") is None else int(prev["last_step"])


def _file_name(source, segments: list[dict]) -> str:
    """The file's name, with its folder when other launches' files have the same name
    (every W&B launch writes `run-<id>.wandb`)."""
    def tail(x, k: int) -> str:
        return "/".join(str(x or "").replace("\\", "/").split("/")[-k:])

    same = sum(1 for s in segments if tail(s.get("source"), 1) == tail(source, 1))
    return tail(source, 2 if same > 1 else 1) or str(source or "")


def boundary_findings(run: str, boundaries: list[Boundary], segments: list[dict] | None = None) -> list[Finding]:
    """One finding per judged boundary, except at the run's beginning: new runs appended
    to the log are one `step_reset` (with one `resume_overlap` note for the steps they
    logged again), attempts killed early and started again are one `resume_overlap` note,
    and launches that logged nothing are counted in whichever of them there is, else one
    `empty_launch` note."""
    out: list[Finding] = []
    appended = [b for b in boundaries if b.launch == "rerun"]
    killed = [b for b in boundaries if b.launch == "rollback" and b.has_main and (
        (b.rolled_back and b.superseded and from_scratch(b)) or killed_at_start(b))]
    if appended:
        out.append(appended_runs_finding(run, appended, segments))
        out.append(relogged_by_reruns_finding(run, appended))
    if killed:
        out.append(killed_attempts_finding(run, killed, None if appended else segments))
        # the counter went back to the run's first step however few steps the killed attempt
        # logged: a restart from scratch is what a reader of the log sees first
        out.append(restarted_attempts_finding(run, killed))
    replays = replayed_runs(appended + killed)
    if replays:
        out.append(replayed_runs_finding(run, replays))
    empty = empty_launches(segments)
    if not appended and not killed and empty:
        out.append(empty_launch_finding(run, empty, segments or []))
    grouped = {id(b) for b in appended + killed}
    rollbacks: list[Finding] = []
    for b in boundaries:
        if id(b) in grouped or not b.has_main:
            continue  # a launch without the main metric (evaluation only) took nothing over
        if b.launch == "reset":
            out.append(reset_finding(run, b))
        elif b.launch == "rollback" and b.rolled_back and b.superseded:
            rollbacks.append(overlap_finding(run, b))
        elif b.step_gap > 2 * max(b.interval, 1):
            out.append(step_gap_finding(run, b))
        elif wall_gap_is_long(b):
            out.append(wallclock_gap_finding(run, b))
    out.extend(rollbacks if len(rollbacks) <= LISTED_MAX else [rollbacks_finding(run, rollbacks)])
    return out


def rollbacks_finding(run: str, each: list[Finding]) -> Finding:
    """SL301 for many launches that each resumed before where the launch before them had got (one
    finding, the loudest of theirs: a warning where any re-logged other values), listing them in its
    evidence (`rollbacks`: resumed at, rolled back from, launch)."""
    steps = sorted(each, key=lambda f: f.start_step if f.start_step is not None else 0)
    lost = sum(int(f.evidence.get("rolled_back_steps") or 0) for f in each)
    same = all(f.extra.get("identical_values") for f in each)
    shown = ", ".join(f"{f.extra.get('resume_step')} (from {f.extra.get('rolled_back_from')})" for f in steps[:6])
    msg = (f"{len(each)} launches resumed before the step the launch before them had reached, {lost:,} steps trained "
           f"again in all: at steps {shown}{', …' if len(each) > 6 else ''}"
           + ("; each re-logged the same values" if same else "")
           + f"; {sum(int(f.evidence.get('superseded_points') or 0) for f in each):,} earlier points kept as superseded")
    ev = {"rollbacks": [{"resume_step": f.extra.get("resume_step"), "rolled_back_from": f.extra.get("rolled_back_from"),
                         "launch": int(f.evidence.get("segment", -1)) + 1} for f in steps],
          "restarts": len(each), "rolled_back_steps": lost, "identical_values": same,
          "main_metric": each[0].evidence.get("main_metric")}
    severity = "warning" if any(f.severity == "warning" for f in each) else "info"
    return Finding(kind="resume_overlap", code=OVERLAP_CODE, run=run, metric=None, severity=severity, message=msg,
                   start_step=min(f.start_step for f in each if f.start_step is not None),
                   end_step=max(f.end_step for f in each if f.end_step is not None), evidence=ev,
                   extra={"resume_step": steps[0].extra.get("resume_step"), "identical_values": same,
                          "rolled_back_from": max(f.extra.get("rolled_back_from") or 0 for f in each),
                          "restarts": len(each)})


# ------------------------------------------------------------------ where did a reset launch resume


@dataclass
class Curve:
    """One metric's points on one side of a boundary (sorted by step)."""

    metric: str
    step: np.ndarray
    value: np.ndarray


@dataclass
class ResetFit:
    offset: int
    how: str
    evidence: dict


def _match_z(prev: np.ndarray, new: np.ndarray, window: int):
    """How well the new launch's start matches the old curve from each old point on.

    For a candidate old point i the new launch's first c points are compared with the
    old points i .. i+c (c = `window`, fewer near the old end): both medians cover the
    same stretch of the true timeline, so the trend cancels. Returns the robust z of
    every candidate, the z of "it continues after the old end", and the window.
    """
    y, _ = log_scale(np.concatenate([prev, new]))
    yp, yn = y[: prev.size], y[prev.size:]
    window = min(window, yn.size)
    fwd = forward_median(yp, window)
    count = np.minimum(window, prev.size - np.arange(prev.size))
    head = np.array([np.median(yn[:c]) for c in range(1, window + 1)])
    level_new = head[count - 1]
    sig = max(global_sigma(yp), global_sigma(yn))
    scale = max(float(np.median(np.abs(yn))), 1e-300)
    se = np.maximum(MEDIAN_SE * sig * np.sqrt(2.0 / count), 1e-9 * scale)
    z = np.abs(level_new - fwd) / se
    z = np.where(count >= max(5, window // 4), z, np.inf)
    # "continues after the end": extrapolate the old end's trend one window ahead
    wc = max(min(window, yp.size // 2), 1)
    end1, end2 = float(np.median(yp[-2 * wc:-wc])), float(np.median(yp[-wc:]))
    predicted = end2 + (end2 - end1) * (window / wc + 1) / 2
    se_cont = max(MEDIAN_SE * sig * np.sqrt(1.0 / window + 5.0 / wc), 1e-9 * scale)
    return z, float(abs(head[-1] - predicted) / se_cont)


def locate_reset(prev: Curve, new: Curve, aux: list[tuple[Curve, Curve]], *, interval: float,
                 z_rollback: float = 6.0) -> ResetFit | None:
    """Decide whether a launch whose steps start near 0 restarted its counter, and where
    it really resumed; None when it is a genuine restart from the logged step (a rollback).

    A rollback to step s resumes the loss level the old curve had at step s; a reset
    resumes a level the old curve reached much later (usually at its end). The main loss
    decides; a low-noise companion (the learning rate follows the true step when the
    scheduler state was restored) pins the exact step when it matches sharply somewhere
    the loss finds plausible. Without one the launch is put right after the old one.
    """
    ok_p, ok_n = np.isfinite(prev.value), np.isfinite(new.value)
    ps, pv, ns, nv = prev.step[ok_p], prev.value[ok_p], new.step[ok_n], new.value[ok_n]
    if ps.size < 10 or ns.size < 5:
        return None
    w = int(np.clip(min(ps.size, ns.size) // 4, 5, 200))
    z, z_cont = _match_z(pv, nv, w)
    i0 = min(int(np.searchsorted(ps, ns[0])), ps.size - 1)
    z_roll = float(z[i0]) if np.isfinite(z[i0]) else z_cont
    i_best = int(np.argmin(z))
    z_min = min(float(z[i_best]), z_cont)
    ev = {"z_rollback": round(z_roll, 2), "z_continue": round(float(z_cont), 2), "z_best": round(z_min, 2),
          "window_points": w}
    if not (z_roll > z_rollback and z_min < z_roll / 3):
        return None
    plausible = z <= z_min + 6
    last = int(ps[-1])
    # a low-noise companion that matches one step sharply, where the loss allows it
    best = None
    for p_aux, n_aux in aux:
        hit = _aux_match(p_aux, n_aux)
        if hit is None:
            continue
        t_aux, mis = hit
        t = t_aux - (int(n_aux.step[np.isfinite(n_aux.value)][0]) - int(ns[0]))  # where the loss's first point lands
        if plausible[min(int(np.searchsorted(ps, t)), ps.size - 1)] and (best is None or mis < best[1]):
            best = (p_aux.metric, mis, t, t_aux)
    if best is not None:
        metric, mis, t, t_aux = best
        ev.update(matched_metric=metric, matched_misfit=round(mis, 3))
        return ResetFit(int(t) - int(ns[0]), f"{metric} continues from step {int(t_aux)}", ev)
    if z_cont <= z_min + 3:
        return ResetFit(int(round(last + interval)) - int(ns[0]),
                        f"the loss continues the level of the previous launch's end at step {last}", ev)
    at = _center_of_match(z, i_best, z_min + 1.5)
    return ResetFit(int(ps[at]) - int(ns[0]),
                    f"the loss resumes the level the previous launch had at step {int(ps[at])}", ev)


def _center_of_match(z: np.ndarray, best: int, limit: float) -> int:
    """Middle of the stretch around `best` where the level still matches (z ≤ limit):
    on a slowly falling curve many neighbouring steps match within the noise, and the
    middle of them is a steadier estimate than the single best one."""
    ok = z <= limit
    lo = best
    while lo > 0 and ok[lo - 1]:
        lo -= 1
    hi = best
    while hi < z.size - 1 and ok[hi + 1]:
        hi += 1
    return (lo + hi) // 2


def _aux_match(prev: Curve, new: Curve, points: int = 20) -> tuple[int, float] | None:
    """The true step of `new`'s first point, if its first values continue `prev` at one
    step only: the old curve (interpolated between its logged steps) is laid under the
    new points shifted to every candidate step; a deterministic companion (a schedule)
    fits at one step within its step-to-step change and nowhere else. Returns the step
    and the misfit (in units of the old curve's point-to-point change), or None."""
    ok_p, ok_n = np.isfinite(prev.value), np.isfinite(new.value)
    ps, pv, ns, nv = prev.step[ok_p], prev.value[ok_p], new.step[ok_n], new.value[ok_n]
    if ps.size < 10 or nv.size < 5:
        return None
    k = min(points, nv.size)
    rel, target = (ns[:k] - ns[0]).astype(np.float64), nv[:k]
    sig = max(global_sigma(pv), 1e-9 * float(np.median(np.abs(pv))), 1e-300)

    def misfit(t: np.ndarray) -> np.ndarray:
        laid = np.interp(t[:, None] + rel[None, :], ps, pv, left=np.nan, right=np.nan)
        return np.median(np.abs(laid - target[None, :]), axis=1) / sig

    cand = ps[ps + rel[-1] <= ps[-1]].astype(np.float64)
    if cand.size < 5:
        return None
    stride = max(1, cand.size // 20_000)  # bounded work on very long runs
    cand = cand[::stride]
    coarse = misfit(cand)
    coarse = np.where(np.isfinite(coarse), coarse, np.inf)
    if np.count_nonzero(coarse < 3) > max(7, 0.05 * cand.size):
        return None  # matches in many places: not a schedule that pins one step
    i = int(np.argmin(coarse))
    fine = np.arange(cand[max(i - 1, 0)], cand[min(i + 1, cand.size - 1)] + 1, dtype=np.float64)
    m = misfit(fine)
    j = int(np.nanargmin(m)) if np.isfinite(m).any() else 0
    return (int(fine[j]), float(m[j])) if m[j] < 1.0 else None


# ------------------------------------------------------------------ repeated data


@dataclass(frozen=True, kw_only=True)
class RepeatedDataDetector(Detector):
    """The loss falls below its trend and jumps back once fresh data arrives.

    Detects: a sudden drop of the loss level (robust z of the detrended difference of
    medians before and after) followed by a jump back of similar size. The data loader
    restarted from the beginning, so the repeated span is as long as the steps trained
    before the drop: the jump comes near twice the drop's step (counted from the run's
    start). At a resume boundary the span only has to be roughly right; without one
    (a single file that hides the resume) it has to match closely, the stretch must stay
    low throughout and no other level change as large may happen outside it (a loss
    that flips between two levels is data order, not a repeat). A fall across a hole in
    the logged steps (a launch whose logs are lost) is progress over the missing steps.
    Why it matters: the low loss is false progress (the model re-sees examples it
    memorised); the real curve is the one before the drop, and the data order after a
    resume differs from what the run was meant to see.
    Likely causes: a resume that restored model and optimizer but not the sampler or
    data-loader position; a dataset re-opened from the start; an epoch boundary that
    reshuffled into an already-seen order.
    Evidence: drop and jump steps, levels, sizes in percent, steps trained before the
    drop, the expected return step, whether a resume boundary is at the drop.
    """

    code = "SL303"
    kind = "repeated_data"
    roles = ("loss",)

    z_min: float = 4.0
    """Robust z the drop and the jump back must each exceed."""
    z_pair: float = 10.0
    """... and together (the pair is the evidence, not either alone)."""
    window_fraction: float = 0.05
    """Points on each side of a level change, as a fraction of the series."""
    min_change: float = 0.03
    """Smallest drop reported, as a fraction of the level."""
    size_ratio: tuple = (0.3, 3.0)
    """The jump back must be this many times the drop."""
    span_tolerance: float = 0.15
    """Without a resume boundary: allowed error of the repeated span, as a fraction of it."""
    boundary_span_tolerance: float = 0.4
    """At a resume boundary the span only has to be this close."""

    def detect(self, series: Series, ctx: RunContext) -> list[Finding]:
        step, value = series.finite()
        n = step.size
        if n < 60:
            return []
        period = replay_period(value)
        if period is not None:  # the same values again and again: nothing else about the curve holds
            return [_replay_finding(ctx.run, series, step, value, *period)]
        y, is_log = log_scale(value)
        if not is_log:
            return []
        w = int(np.clip(self.window_fraction * n, 8, 200))
        left = rolling_median(y, w, trailing_exclusive=True, min_samples=w)
        right = forward_median(y, w)
        right[n - w + 1:] = np.nan
        d = right - left
        trend = rolling_median(d, 6 * w + 1, center=True, min_samples=w)
        dd = d - np.where(np.isfinite(trend), trend, 0.0)
        sig = global_sigma(y) * MEDIAN_SE * np.sqrt(2.0 / w)
        if not sig > 0:
            return []
        z = dd / sig
        drops = [_locate_step(y, i, w) for i in _peaks(-z, self.z_min, w)]
        jumps = [_locate_step(y, i, w) for i in _peaks(z, self.z_min, w)]
        if not drops:
            return []
        interval = median_interval(step)
        s0 = int(step[0])
        starts = np.asarray(sorted(relaunch_starts(ctx)), dtype=np.int64)
        big = [i for i in _peaks(np.abs(z), self.z_min, w)]
        out: list[Finding] = []
        for a in drops:
            drop = -d[a]
            if drop < np.log1p(self.min_change) or a < 3 * w:
                continue
            if _gap_at(step, a, w, interval):
                continue  # steps missing there: the fall is progress over the hole, not repeated data
            at = int(step[a])
            near = starts[np.abs(starts - at) <= max(2 * w * interval, 10 * interval)] if starts.size else starts
            resumed = bool(near.size)
            start = int(near[np.argmin(np.abs(near - at))]) if resumed else at
            trained = int(round(start - s0 + interval))
            expect = start + trained
            tol = (self.boundary_span_tolerance if resumed else self.span_tolerance) * trained + 2 * w * interval
            if _lr_changes(ctx, at, 3 * interval):
                continue
            best = None
            for b in jumps:
                if b <= a:
                    continue
                ratio = d[b] / drop
                sb = int(step[b])
                if not (self.size_ratio[0] <= ratio <= self.size_ratio[1]) or abs(sb - expect) > tol \
                        or z[b] - z[a] < self.z_pair:
                    continue
                others = [i for i in big if a + w < i < b - w and abs(d[i]) >= 0.5 * drop]
                if others or _lr_changes(ctx, sb, 3 * interval):
                    continue
                if not resumed and (_switches_levels(big, d, drop, a, b, w) or not _stays_low(y, a, b, w, drop)):
                    continue  # a loss that flips between levels: this pair does not stand out
                if best is None or abs(sb - expect) < abs(int(step[best]) - expect):
                    best = b
            ended_early = resumed and best is None and int(step[-1]) < expect - tol and -z[a] >= self.z_pair
            if best is None and not ended_early:
                continue
            out.append(self._finding(series, ctx, start, at, best, step, y, d, w, trained, expect, resumed))
            break
        return out

    def _finding(self, series, ctx, start, at, b, step, y, d, w, trained, expect, resumed) -> Finding:
        a = int(np.searchsorted(step, at))
        drop_pct = 100 * (1 - np.exp(d[a]))
        before = float(np.exp(np.median(y[max(0, a - w):a])))
        after = float(np.exp(np.median(y[a:a + w])))
        end = int(step[b]) if b is not None else None
        where = "right after the resume" if resumed else "with no resume boundary in the log"
        if end is not None:
            jump_pct = 100 * (np.exp(d[b]) - 1)
            msg = (f"{series.label} fell {drop_pct:.0f}% below its trend at step {start} ({where}) and jumped "
                   f"back {jump_pct:.0f}% at step {end}, {end - start} steps later ≈ the {trained} steps trained "
                   f"before: the data loader restarted from the beginning and the model re-saw data it had "
                   f"already trained on")
        else:
            jump_pct = None
            msg = (f"{series.label} fell {drop_pct:.0f}% below its trend at step {start} ({where}) and stayed "
                   f"low until the run ended; fresh data would come back near step {expect} if the data loader "
                   f"restarted from the beginning")
        ev = {"drop_step": at, "level_before": before, "level_after": after, "drop_pct": drop_pct,
              "jump_pct": jump_pct, "steps_before_drop": trained, "expected_end_step": expect,
              "resume_boundary": resumed, "window_points": w}
        return Finding(kind=self.kind, code=self.code, run=ctx.run, metric=series.metric, severity="warning",
                       message=msg, start_step=start, end_step=end, magnitude=drop_pct / 100, evidence=ev)


REPLAY_SHARE = 0.9
"""Of the points after the first period, the share that must equal the point one period before."""
REPLAY_DISTINCT = 20
"""Distinct values the repeated stretch must hold (a flat loss printed with few digits repeats by chance)."""
REPLAY_MIN_PERIOD = 10


def replay_period(value: np.ndarray) -> tuple[int, int] | None:
    """(period, points equal to the point one period before) where a curve repeats itself exactly: most
    points after the first period equal, to the last bit, the point `period` places before, over many
    distinct values. The candidate period is the commonest distance between equal values (one sort)."""
    n = value.size
    order = np.argsort(value, kind="stable")
    sv = value[order]
    same = sv[1:] == sv[:-1]
    if same.sum() < REPLAY_SHARE * n / 2:
        return None  # too few values repeat at all: no replay (the usual curve, answered here)
    gaps = (order[1:] - order[:-1])[same]
    gaps = gaps[gaps >= REPLAY_MIN_PERIOD]
    if gaps.size == 0:
        return None
    p = int(np.bincount(gaps).argmax())
    if n < 2 * p:
        return None
    equal = int(np.count_nonzero(value[p:] == value[:-p]))
    if equal < REPLAY_SHARE * (n - p) or np.unique(value[:p]).size < REPLAY_DISTINCT:
        return None
    return p, equal


def _replay_finding(run: str, series: Series, step: np.ndarray, value: np.ndarray, period: int, equal: int) -> Finding:
    """SL303 (info): the loss replays itself, value for value, every `period` points."""
    steps = int(np.median(step[period:] - step[:-period]))
    first = int(step[period])
    msg = (f"{series.metric} repeats itself exactly every {steps:,} steps: {equal:,} of its {value.size - period:,} "
           f"points from step {first} on equal, to the last digit, the point {steps:,} steps before "
           f"({np.unique(value[:period]).size:,} distinct values): the same batches in the same order each time, "
           f"on a model whose outputs did not change (weights not updated), or stored values logged again")
    ev = {"period_steps": steps, "period_points": period, "replayed_points": equal, "first_replayed_step": first,
          "replay": True, "periodic": True}
    return Finding(kind="repeated_data", code="SL303", run=run, metric=series.metric, severity="info",
                   message=msg, start_step=first, end_step=int(step[-1]), evidence=ev)


def relaunch_starts(ctx: RunContext, min_seconds: float = 60.0) -> list[int]:
    """The segment starts that are relaunches: not those where the new launch began at the last
    step the previous one logged and ran on from there with no pause, the way an epoch's summary
    line re-logs the epoch's last step (Keras' `625/625 ... val_loss` after its progress bar's
    `625/625`): one step written twice by one process, no second start of the data loader. Where
    the log has no clock, a summary line is told by the keys it adds (`_adds_summary_keys`)."""
    f = ctx.frame
    if not ctx.segment_starts or f is None or not {"segment", "step"} <= set(f.columns):
        return list(ctx.segment_starts)
    import polars as pl

    wall = "wall_time" in f.columns
    segs = f.group_by("segment").agg(pl.col("step").min().alias("first"), pl.col("step").max().alias("last"),
                                     *([pl.col("wall_time").min().alias("w0"), pl.col("wall_time").max().alias("w1")]
                                       if wall else [])).sort("segment").to_dicts()
    out = []
    for s in ctx.segment_starts:
        i = next((j for j, g in enumerate(segs) if j and g["first"] == s), None)
        if i is None or segs[i - 1]["last"] != s:
            out.append(s)
            continue
        prev, new = segs[i - 1], segs[i]
        w0, w1 = (new.get("w0"), prev.get("w1")) if wall else (None, None)
        clocked = w0 is not None and w1 is not None and np.isfinite(w0) and np.isfinite(w1)
        if clocked and w0 - w1 > min_seconds:
            out.append(s)  # a pause between them: a launch that started again at its checkpoint's step
        elif not clocked and not _adds_summary_keys(f, i - 1, i, s):
            out.append(s)  # no clock, the same keys as the steps before it: a relaunch re-logging its checkpoint step
    return out


def _adds_summary_keys(f, prev: int, new: int, s: int) -> bool:
    """Does the new segment's record at step `s` carry a metric the previous segment logged at
    fewer than half its steps (an epoch summary's `val_loss` beside the progress bar's `loss`)?
    A relaunch re-logging its checkpoint step (nanoGPT's `iter 2600: loss ...`) logs the same
    keys as every step before it."""
    import polars as pl

    before = f.filter(pl.col("segment") == prev)
    steps = max(before.get_column("step").n_unique(), 1)
    counts = dict(before.group_by("metric").agg(pl.col("step").n_unique()).iter_rows())
    at = f.filter((pl.col("segment") == new) & (pl.col("step") == s)).get_column("metric").unique().to_list()
    return any(counts.get(m, 0) < 0.5 * steps for m in at)


def _gap_at(step: np.ndarray, a: int, w: int, interval: float, factor: float = 5.0) -> bool:
    """Is there a hole in the logged steps around point `a` (a launch whose logs are lost)?"""
    lo, hi = max(a - w, 1), min(a + w, step.size - 1)
    return bool(lo < hi and np.diff(step[lo - 1:hi + 1]).max() > factor * max(interval, 1.0))


def _switches_levels(big: list[int], d: np.ndarray, drop: float, a: int, b: int, w: int) -> bool:
    """Two or more other level changes as large, outside the pair: the loss switches levels
    (data order, a bimodal mixture) and a drop and a jump back are part of that."""
    outside = [i for i in big if (i < a - w or i > b + w) and abs(d[i]) >= 0.5 * drop]
    return len(outside) >= 2


def _stays_low(y: np.ndarray, a: int, b: int, w: int, drop: float, most: float = 0.3) -> bool:
    """Repeated data keeps the whole stretch low; a loss flipping between two levels has
    many points of the stretch back on the curve. The curve across the stretch is the
    line from the level before the drop to the level after the jump back (log scale)."""
    before = float(np.nanmedian(y[max(0, a - w):a]))
    after = float(np.nanmedian(y[b:b + w]))
    inside = y[a:b]
    line = before + (after - before) * np.linspace(0.0, 1.0, inside.size)
    ok = np.isfinite(inside)
    return bool(ok.any()) and float(np.mean(inside[ok] > line[ok] - 0.5 * drop)) < most


def _peaks(z: np.ndarray, z_min: float, w: int) -> list[int]:
    """Index of the highest point of every stretch where z exceeds z_min (at least w apart)."""
    above = np.where(np.isfinite(z), z, -np.inf) > z_min
    if not above.any():
        return []
    idx = np.flatnonzero(above)
    cuts = np.flatnonzero(np.diff(idx) > w) + 1
    return [int(g[np.argmax(z[g])]) for g in np.split(idx, cuts)]


def _locate_step(y: np.ndarray, i: int, w: int) -> int:
    """Where exactly the level steps, near a detected change at `i`: the split of
    y[i-2w : i+2w] that a line with one common slope plus a step fits best. On a
    falling curve the plain difference of medians peaks a few points early (the trend
    adds to the drop); the common slope takes the trend out."""
    lo, hi = max(0, i - 2 * w), min(y.size, i + 2 * w + 1)
    seg = y[lo:hi]
    ok = np.isfinite(seg)
    idx = np.arange(lo, hi)[ok]
    v = seg[ok]
    n = v.size
    if n < 8:
        return i
    cands = np.arange(max(lo + 3, i - w), min(hi - 3, i + w + 1))
    if cands.size == 0:
        return i
    t = idx.astype(np.float64)
    t = (t - t.mean()) / max(t.std(), 1.0)
    # every split at once (no lstsq per split): with r the residual of the line fit and
    # s_c the step indicator, rss(c) = rss(line) - (r.s_c)^2 / |s_c - P s_c|^2, P the
    # projection onto [1, t]; suffix sums give r.s_c, 1.s_c and t.s_c for every c
    stt = float(t @ t)
    r = v - v.mean() - t * (float(t @ v) / stt)
    first = np.searchsorted(idx, cands)  # the points at or after c are idx[first:]
    n_c = (n - first).astype(np.float64)
    st_c = np.append(np.cumsum(t[::-1])[::-1], 0.0)[first]
    sr_c = np.append(np.cumsum(r[::-1])[::-1], 0.0)[first]
    denom = n_c - n_c * n_c / n - st_c * st_c / stt
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(denom > 1e-9 * n, sr_c * sr_c / denom, 0.0)
    return int(cands[int(np.argmax(gain))])


def _lr_changes(ctx: RunContext, at: int, half: float, ratio: float = 0.8) -> bool:
    """True when a learning rate steps by more than 1/ratio across `at` (a few logged
    points each side): an LR step explains a level change; a smooth decay does not."""
    for s in ctx.by_role("lr"):
        ok = np.isfinite(s.value)
        st, v = s.step[ok], s.value[ok]
        before = v[(st >= at - half) & (st < at)]
        after = v[(st >= at) & (st < at + half)]
        if before.size and after.size:
            lo, hi = sorted((abs(float(np.median(before))), abs(float(np.median(after)))))
            if hi > 0 and lo / hi < ratio:
                return True
    return False
