"""Runs appended to one log, judged one by one.

A log that holds several runs, each starting its step counter again (a sweep written to one
file, a script run twice, k folds), is stitched with the last run live and the earlier ones
superseded: the report judges the run that counts now. But an engineer reading the file lists
what happened in each run (the fold that never learned, the configuration whose loss ran away),
so each earlier run is judged on its own points too, on the file's own step axis, and its
findings say which run they are about.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import polars as pl

from .detect.base import RunContext
from .epochs import annotate as annotate_epochs
from .model.finding import Finding

MIN_POINTS = 5
"""An earlier run with fewer points of its main metric than this (a launch killed in its first
steps) has nothing of its own to judge."""
MAX_SESSIONS = 60
"""At most this many earlier runs are judged (the longest): a log of hundreds of one-epoch
debug launches holds no more events than its longest runs show."""
KINDS = ("spike", "nan", "divergence", "plateau", "overfitting", "oscillation", "repeated_data")
"""What an earlier run's findings may report: events of its own curves. Its run-level findings
(how it ended, its throughput) belong to the launch accounting the stitch already did."""
RAN_ITS_COURSE = 0.9
"""An earlier run that reached this share of the last run's last step ran its course (a finished
stage, a script run again to its end): its events keep the severity they have alone. One that stopped
short was an attempt the relaunch replaced: its events are notes."""
MAX_STAGES = 3
"""...when the log holds at most this many runs (stages of one pipeline, a script run twice); a longer
list is a sweep, whose runs' events are notes the verdict sums up (a warning per configuration would
bury the run that counts)."""
OUTCOMES = ("nan", "divergence", "plateau", "overfitting")
"""Kinds that say how an earlier run turned out: kept even where they were notes (a fold whose
val loss turned up 3% is still the fold that overfit); its other notes (a blip) are left out."""


@dataclass
class Session:
    """One earlier run of a log that holds several: its rows, live inside it."""

    index: int
    """1-based, in launch order."""
    of: int
    """How many runs the log holds."""
    segments: list[int]
    frame: pl.DataFrame
    first_step: int
    last_step: int
    ran_its_course: bool = False
    """It reached `RAN_ITS_COURSE` of the last run's last step in a log of at most `MAX_STAGES` runs."""


def earlier_sessions(frame: pl.DataFrame, reruns: list[int], main: str | None) -> list[Session]:
    """The runs before the last in a log whose launches `reruns` (segments) each started a new
    run from the beginning; inside one run a later launch still wins from its first step on."""
    if not reruns or frame.height == 0:
        return []
    segs = sorted(int(s) for s in frame.get_column("segment").unique())
    starts = [segs[0], *sorted(s for s in set(reruns) if s != segs[0])]
    last = starts[-1]
    # one pass over the frame (not one filter of the whole frame per earlier run)
    parts = frame.filter(pl.col("segment") < last).partition_by("segment", as_dict=True, maintain_order=True)
    live = frame.filter(pl.col("segment") >= last)
    live = live.filter(pl.col("metric") == main) if main is not None else live
    live_first, live_last = live.get_column("step").min(), live.get_column("step").max()
    out: list[Session] = []
    for k, lo in enumerate(starts[:-1]):
        hi = starts[k + 1]
        members = [s for s in segs if lo <= s < hi]
        rows = pl.concat([parts[(s,)] for s in members if (s,) in parts])
        rows = _live_inside(rows.drop("superseded") if "superseded" in rows.columns else rows)
        counted = rows.filter(pl.col("metric") == main) if main is not None else rows
        counted = counted.filter(~pl.col("superseded") & pl.col("value").is_not_null())
        if counted.height < MIN_POINTS:
            continue
        steps = counted.get_column("step")
        lo_step, hi_step = int(steps.min()), int(steps.max())
        course = live_last is not None and len(starts) <= MAX_STAGES and \
            hi_step - lo_step >= RAN_ITS_COURSE * (int(live_last) - min(int(live_first), lo_step))
        out.append(Session(index=k + 1, of=len(starts), segments=members, frame=rows,
                           first_step=lo_step, last_step=hi_step, ran_its_course=bool(course)))
    if len(out) > MAX_SESSIONS:
        out = sorted(sorted(out, key=lambda s: -(s.last_step - s.first_step))[:MAX_SESSIONS], key=lambda s: s.index)
    return out


def _live_inside(rows: pl.DataFrame) -> pl.DataFrame:
    """`superseded` inside one run: a launch supersedes the earlier launches' points from its own
    first step on, and a (metric, step) logged twice keeps its last value."""
    first = rows.group_by("segment").agg(pl.col("step").min().alias("_first"))
    later = {int(s): f for s, f in first.iter_rows()}
    order = sorted(later)
    # the smallest first step of any later launch of this run, per launch
    cut = {s: min((later[t] for t in order if t > s), default=None) for s in order}
    cuts = pl.DataFrame({"segment": list(cut), "_cut": [c for c in cut.values()]},
                        schema={"segment": rows.schema["segment"], "_cut": pl.Int64})
    rows = rows.join(cuts, on="segment", how="left")
    twice = pl.col("seq") != pl.col("seq").max().over("metric", "step")
    return rows.with_columns(superseded=(pl.col("_cut").is_not_null() & (pl.col("step") >= pl.col("_cut")))
                             | twice).drop("_cut")


def judge_sessions(sessions: list[Session], judge: Callable[[pl.DataFrame], tuple[list[Finding], RunContext]]
                   ) -> list[Finding]:
    """Each earlier run judged alone (`judge` detects and explains one frame); its loud findings of
    `KINDS` kept, named after their run. An earlier run that ran its course (`Session.ran_its_course`:
    a stage of a pipeline, a script run again to its end) keeps the severity of how it turned out
    (`OUTCOMES`: it diverged, went NaN, never learned, overfit) as judged alone: an outcome of its
    own; what happened on the way (a spike it recovered from) is a note. The events of one that
    stopped short are notes: an attempt the relaunch replaced is context for the run that counts now,
    not an alarm about it (its severity as judged alone is kept in the evidence either way)."""
    out: list[Finding] = []
    for s in sessions:
        found, ctx = judge(s.frame)
        annotate_epochs(found, ctx)
        for f in found:
            if f.kind not in KINDS or (f.severity == "info" and f.kind not in OUTCOMES):
                continue  # a blip that was a note about that run is not worth one about this log
            judged = f.severity
            own = s.ran_its_course and f.kind in OUTCOMES
            if not own:
                f.severity = "info"
            how = "ran its course before the next started again" if s.ran_its_course else "replaced by the later runs"
            f.message = (f"run {s.index} of {s.of} appended to this log (steps {s.first_step}-{s.last_step}, "
                         f"{how}): {f.message}")
            f.evidence["session"] = {"index": s.index, "of": s.of, "first_step": s.first_step,
                                     "last_step": s.last_step, "severity_alone": judged,
                                     "ran_its_course": s.ran_its_course}
            out.append(f)
    return out


def told_by_live(earlier: list[Finding], live: list[Finding]) -> list[Finding]:
    """`earlier` with each loud outcome the live run also has (the same kind on the same metric,
    loud there too) made a note: a relaunch that ends the way the run that counts now ends (each
    attempt sat at ln 2, each collapsed) is one story, told once on the live run; the earlier run's
    own severity stays in its evidence."""
    loud = {(f.kind, f.metric) for f in live if f.severity != "info" and f.kind in OUTCOMES}
    for f in earlier:
        if f.severity != "info" and (f.kind, f.metric) in loud:
            f.severity = "info"
            f.message += "; the run that counts now ended the same way (its own finding): a note"
            f.evidence["note_because"] = "live_run_same"
    return earlier
