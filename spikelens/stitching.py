"""Segments of one run → one timeline, with the resume findings.

A run resumed from a checkpoint has several launches (segments): event files in one
folder, `version_N` folders, W&B folders with one id, a CSV whose steps go back.
Discovery numbers them in launch order; this module lays them on one step axis.

The rule: **the later launch wins from its first step on** (what TensorBoard's data
server and a job rolled back to a checkpoint mean). A point of launch j at a step at
or after the first step of a later launch k is *superseded*: it stays in the frame,
with `superseded = true` and its segment, and only the detectors skip it.

- The launch's first step is the first step of the run's main loss in it (or of
  any metric that starts within two logging intervals before it): a launch re-logs
  all its metrics, so sparse ones (an eval every 500 steps) are superseded from the
  launch's first step too, not from their own first new point.
- A metric the later launch never logs keeps its old points: nothing replaces them,
  and hiding them would only lose data.
- A metric logged on another axis (Megatron's `... vs samples`, a per-epoch value)
  is superseded from its own first new point, as TensorBoard does per tag.
- Inside one launch, a (metric, step) logged twice keeps the last value live.
- A launch whose step counter restarted (W&B offline resumes, a trainer that lost
  its global step) is re-based first (`detect.resume.locate_reset`), so its steps
  are the true ones; the findings say by how much.
- A launch re-logging the last step of the previous one inside the same file (a CSV
  appended after a resume repeats the checkpoint step with new values) is split into
  its own segment here, since discovery only splits where steps go back.
- A file written beside the others rather than after them (an eval-only writer, or
  several ranks that started together) is `parallel`: it supersedes nothing.

Findings per boundary (see `detect.resume`): `resume_overlap`, `step_reset`,
`step_gap`, `wallclock_gap`; `repeated_data` is judged later on the stitched loss.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from .model.finding import Finding
from .detect.base import equal_terms_rank, main_name_score
from .detect.ended import (crashed_before_logging_finding, ended_early_finding, launch_crash_findings,
                           ledger_failure_findings, nan_crash_finding, relaunch_crash_findings)
from .detect.memory import grew_before_oom
from .detect.resume import (Boundary, Curve, boundary_findings, from_scratch, locate_reset, printed_twice_finding,
                            written_twice_finding)
from .detect.stats import median_interval
from .detect.trained import logged_training
from .discover import Run
from .frame import SCHEMA, as_f64, concat, infer_roles


@dataclass
class Stitched:
    frame: pl.DataFrame
    """The run's long frame plus `superseded`; steps are the stitched steps."""
    findings: list[Finding] = field(default_factory=list)
    segments: list[dict] = field(default_factory=list)
    """Per launch: segment, source, first_step, last_step, points, superseded,
    first_wall_time, last_wall_time, step_offset, launch."""
    segment_starts: list[int] = field(default_factory=list)
    """Stitched steps where a resumed launch took over (the `resume` cause uses them)."""
    boundaries: list[Boundary] = field(default_factory=list)
    main: str | None = None
    """The metric launches were placed by (the run's main loss)."""

    @property
    def reruns(self) -> list[int]:
        """Segments that started a new run from the beginning (a log holding several runs); a stub
        appended last (`Boundary.stub`) is none: the run before it is the one judged."""
        return [b.segment for b in self.boundaries if b.launch == "rerun" and not b.stub]


# ------------------------------------------------------------------ the public entry points


def stitch_run(run: Run, *, roles: dict[str, str] | None = None, identical_rtol: float = 1e-6,
               **_ignored: Any) -> Stitched:
    """Lay the launches of one run on one step axis; mark what later launches superseded."""
    frame = run.frame
    if not frame.get_column("seq").is_sorted():  # readers write seq in order: no copy of the frame then
        frame = frame.sort("seq", maintain_order=True)
    if frame.height == 0:  # a log that ends in an error before any value: the crash is the finding
        crashed = crashed_before_logging_finding(run.name, run.meta or {})
        died_of_nan = nan_crash_finding(run.name, run.meta or {}, crashed, None) if crashed else None
        return Stitched(frame=frame.with_columns(superseded=pl.lit(False)),
                        findings=[f for f in (crashed, died_of_nan) if f is not None])
    empty = [int(s["segment"]) for s in run.segments if s.get("points", 1) == 0]
    twice = _logged_twice(frame)
    unsplit = frame
    frame, renumbered = split_relaunches(frame, empty=empty, twice=twice)
    # no (segment, metric, step) logged twice, and no launch split off: shifting a whole
    # launch's steps cannot make one, so _supersede need not look again
    none_twice = frame is unsplit and not twice.any()
    metrics = frame.get_column("metric").unique(maintain_order=True).to_list()
    metric_roles = infer_roles(metrics, roles)
    main = main_metric(frame, metric_roles)
    data_numbers = {o: n for o, n in renumbered.items() if o not in set(empty)}
    layout = _Layout.of(frame, main, *_declared_starts(run, data_numbers))
    offsets, boundaries = _place_launches(frame, layout, main)
    stubs = _trailing_stubs(frame, boundaries, layout, main)
    if offsets.any():  # a run of one launch (or launches that need no shift) keeps its step column
        frame = frame.with_columns(
            (pl.col("step") + pl.col("segment").replace_strict(
                dict(enumerate(offsets.tolist())), return_dtype=pl.Int64)).alias("step"))
    frame = _supersede(frame, layout, offsets, boundaries, main, identical_rtol, none_twice=none_twice, stubs=stubs)
    segments = _segment_table(frame, layout, offsets, boundaries)
    segments = _with_empty_launches(segments, run.segments, renumbered)
    live = {s["segment"] for s in segments if s["points"] > s["superseded"]}
    starts = sorted({b.first_step for b in boundaries if b.segment in live})
    findings = boundary_findings(run.name, boundaries, segments)
    if not none_twice and main is not None:
        findings.extend(_written_twice(run.name, frame, main))
    if main is not None:
        findings.extend(_printed_twice(run.name, frame, main, no_step_twice=none_twice))
    # how the log ended is its last launch's business, a stub's too (a relaunch killed at its first step)
    ended_on = frame.with_columns(superseded=pl.col("superseded") & ~pl.col("segment").is_in(list(stubs))) \
        if stubs else frame
    ended = _ended_early(run, ended_on, main, trained=main is not None and logged_training(metric_roles))
    if ended is not None:
        findings.append(ended)
    grew = grew_before_oom(run.name, frame, metric_roles, ended)
    if grew is not None:
        findings.append(grew)
    died_of_nan = _died_of_nan(run, frame, main, ended)
    if died_of_nan is not None:
        findings.append(died_of_nan)
    findings.extend(launch_crash_findings(run.name, run.meta or {}))
    findings.extend(ledger_failure_findings(run.name, run.meta or {}))  # experiments of a ledger that failed
    findings.extend(relaunch_crash_findings(run.name, run.meta or {}, boundaries,  # deaths a relaunch tells
                                            _epochs_by_launch(frame) if len(boundaries) else None))
    return Stitched(frame=frame, findings=findings, segments=segments,
                    segment_starts=starts, boundaries=boundaries, main=main)


def _ended_early(run: Run, frame: pl.DataFrame, main: str | None, *, trained: bool = True) -> Finding | None:
    """SL306 when the run crashed or stopped short of its declared plan (`detect.ended`)."""
    meta = run.meta or {}
    planned = any(k.startswith("plan.") or k in ("plan_steps", "hf.max_steps") for k in meta)
    if not planned and not any(_ETA.match(str(m)) for m in frame.get_column("metric").unique().to_list()):
        return None
    live = frame.filter(~pl.col("superseded") & pl.col("value").is_not_null())
    if live.height == 0:
        return None
    if not planned:
        meta = {**meta, **_eta_plan(live)}  # the time left it logged: a plan in steps
        if "plan.steps" not in meta:
            return None
    last = live.sort("step", "seq").tail(1)
    epochs = live.filter(pl.col("metric").cast(pl.String).str.to_lowercase().str.replace(r"^(?:train|training)[/.]", "")
                         == "epoch").get_column("value")
    losses = live.filter(pl.col("metric") == main).sort("step", "seq").get_column("value") if main else None
    first_step, last_step = int(live.get_column("step").min()), int(last.item(0, "step"))
    return ended_early_finding(
        run.name, meta, first_step=first_step, last_step=last_step,
        last_epoch=float(epochs.max()) if epochs.len() and epochs.is_finite().any() else None,
        last_source=str(last.item(0, "source")),
        loss_ended_nonfinite=bool(losses is not None and losses.len() and not np.isfinite(losses[-1])),
        epochs_done=_epochs_done(epochs), plan_is_training=trained,
        epochs_at_most=_epochs_at_most(meta, first_step, last_step) if not epochs.len() else None)


_RECORD_ORDER = ("order", "index", "place")
"""Words of a `step.from` that numbers records rather than counting training (a record every few epochs)."""


_EPOCH_NAME = r"(?i)(?:^|[/.\s_-])epoch$"


def _epochs_by_launch(frame: pl.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per launch (segment), the steps and values of the epoch counter it logged, in step order: where
    each launch was in its epochs (`ended.other_epochs` tells another configuration from a relaunch)."""
    ep = frame.filter(pl.col("metric").cast(pl.String).str.contains(_EPOCH_NAME) & pl.col("value").is_finite())
    if ep.height == 0:
        return {}
    ep = ep.select("segment", "step", "value").sort("segment", "step")
    return {int(k[0]): (g.get_column("step").to_numpy(), g.get_column("value").to_numpy())
            for k, g in ep.partition_by("segment", as_dict=True, maintain_order=True).items()}


def _epochs_at_most(meta: dict, first: int, last: int) -> int | None:
    """How many epochs a run that logs no epoch counter can have got through at most: each epoch moves a
    counted step on by one at least (the step counts epochs, or the batches inside them), so no more
    epochs than steps it spans. None where the step numbers records (`step.from`: a record every few
    epochs breaks the bound)."""
    how = str(meta.get("step.from") or "")
    if any(w in how for w in _RECORD_ORDER):
        return None
    return last - first + 1


_ETA = re.compile(r"(?i)^(?:.*[/_.])?(?:eta|time_left|remaining_time)(?:_?s|_sec(?:onds)?|_seconds)?$")
"""A metric of the time a run's trainer says is left (detectron2's `eta_seconds`)."""


def _eta_plan(live: pl.DataFrame) -> dict:
    """`plan.steps` from the time left a run logs (`_ETA`), where nothing else states its plan: the steps
    still to go are the last value over the rate the value falls by a step (its own units cancel), so a
    detectron2 `metrics.json` whose last record says `eta_seconds: 3731` at 17 s a step was 220 steps short.
    {} where it does not fall steadily or is the rate of no run (a few points)."""
    rows = live.filter(pl.col("metric").cast(pl.String).str.contains(_ETA.pattern)).sort("step", "seq")
    step, eta = rows.get_column("step").to_numpy(), as_f64(rows.get_column("value"))
    ok = np.isfinite(eta) & (eta >= 0)
    step, eta = step[ok], eta[ok]
    if step.size < 4 or not (np.diff(step) > 0).all():
        return {}
    fall = -np.diff(eta) / np.diff(step)
    if (fall > 0).mean() < 0.8:
        return {}  # an ETA that does not count down (a per-epoch bar's, a restarted one)
    rate = float(np.median(fall))
    if not rate > 0:
        return {}
    plan = int(round(step[-1] + eta[-1] / rate))
    return {"plan.steps": plan, "plan.from": f"the time left it logs ({eta[-1]:.0f} at step {int(step[-1])}, "
                                             f"falling {rate:.3g} a step)"}


def _epochs_done(epochs: pl.Series) -> float | None:
    """How many epochs the `epoch` metric says the run got through: its last value where it counts
    progress (HF's `epoch: 0.57`) or from 1 (`Epoch 5/100` printed 1-based), one more where it
    counts from 0 (Lightning's `epoch` 0..N-1); None when it logs none."""
    ep = epochs.filter(epochs.is_finite())
    if ep.len() == 0:
        return None
    last, first = float(ep.max()), float(ep.min())
    counts_progress = bool((ep != ep.round()).any())
    return last if counts_progress or first >= 1 else last + 1.0


def _died_of_nan(run: Run, frame: pl.DataFrame, main: str | None, ended: Finding | None) -> Finding | None:
    """SL201 when the log says after its last value that values went NaN (`detect.ended.nan_crash_finding`),
    unless the main loss's own last point is already non-finite (its nan finding says so)."""
    meta = run.meta or {}
    if not meta.get("plan.error_nan"):
        return None
    live = frame.filter(~pl.col("superseded") & pl.col("value").is_not_null())
    if main is not None:
        loss = live.filter(pl.col("metric") == main).sort("step", "seq").get_column("value")
        if loss.len() and not np.isfinite(loss[-1]):
            return None
    return nan_crash_finding(run.name, meta, ended, int(live.get_column("step").max()) if live.height else None)


def merge_runs(runs: list[Run], name: str | None = None) -> Run:
    """Treat every run given to `spikelens stitch` as launches of one run, in launch order:
    by start time when every part has wall times, else by name (numbers compared as
    numbers, so `version_10` comes after `version_9`)."""
    if not runs:
        from .errors import UsageError

        raise UsageError("nothing to stitch: no run was found under the paths given")
    if len(runs) == 1 and name is None:
        return runs[0]

    def start(r: Run) -> float | None:
        w = r.frame.get_column("wall_time").drop_nulls().drop_nans() if r.frame.height else None
        return float(w.min()) if w is not None and w.len() else None

    starts = [start(r) for r in runs]
    if all(s is not None for s in starts):
        order = sorted(range(len(runs)), key=lambda i: (starts[i], _natural(runs[i].name)))
    else:
        order = sorted(range(len(runs)), key=lambda i: _natural(runs[i].name))
    runs = [runs[i] for i in order]
    nm = name or runs[0].name
    frames, segments, offset, seq0 = [], [], 0, 0
    seg_meta: dict[int, dict] = {}
    for r in runs:
        n_seg = int(r.frame.get_column("segment").max()) + 1 if r.frame.height else 0
        n_seg = max([n_seg, *(int(s["segment"]) + 1 for s in r.segments)])  # launches that logged nothing too
        for k, m in (r.meta.get("segment_meta") or {}).items():
            seg_meta[int(k) + offset] = m
        frames.append(r.frame.with_columns(
            run=pl.lit(nm, dtype=SCHEMA["run"]),
            segment=(pl.col("segment") + offset).cast(pl.UInt32),
            seq=(pl.col("seq") + seq0).cast(pl.UInt64),
        ))
        segments.extend({**s, "segment": s["segment"] + offset} for s in r.segments)
        offset += n_seg
        seq0 += r.frame.height
    frame = concat(frames) if frames else pl.DataFrame(schema=SCHEMA)  # Float32 beside Float64 values: Float64
    meta = {k: v for r in runs for k, v in r.meta.items()}
    meta["segment_meta"] = seg_meta
    return Run(name=nm, frame=frame, sources=sorted({s for r in runs for s in r.sources}),
               formats=sorted({f for r in runs for f in r.formats}), segments=segments, meta=meta)


def _natural(text: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


# ------------------------------------------------------------------ relaunches hidden in one file


def split_relaunches(frame: pl.DataFrame, *, max_steps: int = 3, max_fraction: float = 0.005,
                      empty: tuple[int, ...] | list[int] = (), twice: pl.Series | None = None
                      ) -> tuple[pl.DataFrame, dict[int, int]]:
    """Give a launch that re-logged the previous launch's last step, inside the same
    file, its own segment; also return the new number of every old segment (the
    `empty` ones, launches that logged nothing, included: they keep their place).

    The sign is a (metric, step) logged again in the same segment with a different
    value. A logger that writes some tag several times per step (gradient accumulation)
    does it at many steps; only a few such steps (`max_steps`, or `max_fraction` of
    the steps) count as relaunches. Identical repeats (rank-duplicated lines, the
    `epoch` of HF train and eval entries) never do. `twice`: `_logged_twice(frame)`
    when the caller has it.
    """
    key = ["segment", "metric", "step"]
    same_numbers = {int(x): int(x) for x in frame.get_column("segment").unique()} | {int(e): int(e) for e in empty}
    twice = _logged_twice(frame) if twice is None else twice
    if not twice.any():
        return frame, same_numbers
    v = pl.col("value")
    fv = v.first().over(key)
    same = (v == fv).fill_null(False) | (v.is_nan() & fv.is_nan()).fill_null(False) | (v.is_null() & fv.is_null())
    f = frame.with_row_index("_row")
    dups = f.filter(twice).with_columns(_rep=~pl.struct(key).is_first_distinct(), _diff=~same)
    cand = dups.filter(pl.col("_rep") & pl.col("_diff"))
    if cand.height == 0:
        cand = _first_record_again(f, dups)  # a first attempt killed after its first record, relaunched
        if cand.height == 0:
            return frame, same_numbers
    seg = f.get_column("segment").to_numpy()
    rep = np.zeros(f.height, dtype=bool)
    rep[dups.filter(pl.col("_rep")).get_column("_row").to_numpy()] = True
    step = f.get_column("step").to_numpy()
    wall = f.get_column("wall_time").fill_null(np.nan).to_numpy()
    cuts: dict[int, list[int]] = {}
    for (s,), part in cand.group_by("segment", maintain_order=True):
        steps = part.get_column("step").unique(maintain_order=True).to_list()
        n_steps = frame.filter(pl.col("segment") == s).get_column("step").n_unique()
        if len(steps) > max(max_steps, int(max_fraction * n_steps)):
            continue
        rows = []
        for st in steps:
            first = int(part.filter(pl.col("step") == st).get_column("_row").min())
            r = first
            while r > 0 and seg[r - 1] == s and rep[r - 1] and step[r - 1] == st:
                r -= 1  # identical repeats just before (the same relaunched row) go with it
            if _looks_relaunched(f, seg, rep, step, wall, int(s), st, r) or _leads_into_next(f, seg, step, r):
                rows.append(r)
        if rows:
            cuts[int(s)] = sorted(rows)
    if not cuts:
        return frame, same_numbers
    sub = np.zeros(f.height, dtype=np.int64)
    row = np.arange(f.height)
    source = f.get_column("source").to_numpy()
    seg = seg.astype(np.int64)
    for s, rows in cuts.items():
        mask = seg == s
        sub[mask] = np.searchsorted(np.asarray(rows), row[mask], side="right")
        # the relaunch's first lines before discovery's own split (an eval printed at the
        # resumed step, then the steps that went back) belong to the launch that follows
        tail = np.flatnonzero(mask & (sub == len(rows)))
        nxt = tail[-1] + 1 if tail.size else f.height
        if nxt < f.height and seg[nxt] != s and source[nxt] == source[tail[-1]] and step[tail].max() <= step[nxt]:
            seg[tail], sub[tail] = seg[nxt], 0
    width = int(sub.max()) + 1
    combined = seg.astype(np.int64) * width + sub
    empty_codes = np.asarray(sorted(int(e) for e in empty), dtype=np.int64) * width
    codes = np.unique(np.concatenate([combined, empty_codes]))
    new = pl.Series(np.searchsorted(codes, combined), dtype=pl.UInt32)
    out = f.with_columns(_old=pl.col("segment"), segment=new)
    mapping = {int(o): int(n) for o, n in out.group_by("_old").agg(pl.col("segment").min()).iter_rows()}
    mapping |= {int(c) // width: int(np.searchsorted(codes, c)) for c in empty_codes}
    return out.select(frame.columns), mapping


def _first_record_again(f: pl.DataFrame, dups: pl.DataFrame) -> pl.DataFrame:
    """The repeats of a launch's first record, when they are the only repeats in it, and every metric of
    that record came again, right after it, with the same values: a first attempt killed after logging its
    first step, relaunched with the same seed (it logs the same first values), then training on. A writer
    that writes every record twice repeats every step, not the first alone. Rows as `split_relaunches`
    cuts at (none when this is not the case)."""
    none = dups.clear()
    reps = dups.filter(pl.col("_rep"))
    segs = reps.get_column("segment").unique()
    if segs.len() != 1:
        return none
    (s,) = segs.to_list()
    part = f.filter(pl.col("segment") == s)
    first = int(part.get_column("step").min())
    if reps.get_column("step").n_unique() != 1 or int(reps.item(0, "step")) != first \
            or part.get_column("step").n_unique() < 3:
        return none
    at = part.filter(pl.col("step") == first)
    again = reps.get_column("metric").n_unique()
    rows = at.get_column("_row").to_numpy()
    if again < 2 or again < at.get_column("metric").n_unique() or not (np.diff(rows) == 1).all():
        return none  # some of the record, or with other lines between: not the record logged again
    return reps.head(1)


def _looks_relaunched(f: pl.DataFrame, seg: np.ndarray, rep: np.ndarray, step: np.ndarray, wall: np.ndarray,
                      s: int, st: int, r: int) -> bool:
    """Is the repeat of step `st` starting at row `r` a new launch, not a value logged
    twice by the same process? With wall times: the clock jumped there (the job was
    down). Without: most of the metrics the step had were logged again."""
    rows = np.flatnonzero(seg == s)
    before = rows[rows < r]
    w_before, w_at = wall[before], wall[r]
    if before.size and np.isfinite(w_at) and np.isfinite(w_before).any():
        dt = np.diff(wall[rows][np.isfinite(wall[rows])])
        dt = dt[dt > 0]
        typical = float(np.median(dt)) if dt.size else 0.0
        return w_at - np.nanmax(w_before) > max(60.0, 20 * typical)
    metric = f.get_column("metric").to_numpy()
    at_step = rows[step[rows] == st]
    old = set(metric[at_step[at_step < r]])
    again = set(metric[at_step[(at_step >= r) & rep[at_step]]])
    return len(again) >= 2 and len(again) >= 0.5 * len(old)


def _leads_into_next(f: pl.DataFrame, seg: np.ndarray, step: np.ndarray, r: int) -> bool:
    """Rows from `r` to the end of their segment that run straight into the next segment
    of the same file, at or below its first step: the first lines of that launch (an
    eval printed at the resumed step before the steps that went back)."""
    end = r
    while end + 1 < seg.size and seg[end + 1] == seg[r]:
        end += 1
    nxt = end + 1
    if nxt >= seg.size or end - r > 50:
        return False
    source = f.get_column("source")
    return source[nxt] == source[r] and int(step[r:end + 1].max()) <= int(step[nxt])


def _packed_key(frame: pl.DataFrame) -> pl.Series | None:
    """(segment, metric, step) as one Int64, exactly (no hash), when the ranges fit."""
    step, segment = frame.get_column("step"), frame.get_column("segment")
    codes = frame.get_column("metric").to_physical()
    lo = int(step.min())
    n_codes, n_segments, span = int(codes.max()) + 1, int(segment.max()) + 1, int(step.max()) - lo + 1
    if n_segments * n_codes * span >= 1 << 62:
        return None
    return (segment.cast(pl.Int64) * n_codes + codes.cast(pl.Int64)) * span + (step - lo)


def _steps_rise_per_metric(frame: pl.DataFrame, max_metrics: int = 64) -> bool:
    """True when, for each metric in row order, the segment never goes back and the step
    rises strictly within a segment (how readers write a log with no repeats): then no
    (segment, metric, step) occurs twice, found with one pass a metric (no hash of 1M keys)."""
    if frame.height == 0:
        return False
    codes = frame.get_column("metric").to_physical().to_numpy()
    present = np.flatnonzero(np.bincount(codes))
    if present.size > max_metrics:
        return False
    step, segment = frame.get_column("step").to_numpy(), frame.get_column("segment").to_numpy()
    for c in present.tolist():
        rows = np.flatnonzero(codes == c)
        st, sg = step[rows], segment[rows]
        if not ((sg[1:] > sg[:-1]) | ((sg[1:] == sg[:-1]) & (st[1:] > st[:-1]))).all():
            return False
    return True


def _logged_twice(frame: pl.DataFrame) -> pl.Series:
    """True for rows whose (segment, metric, step) occurs more than once. Packed into
    one integer when the ranges allow, counting distinct keys answers 'none' cheaply;
    otherwise a hash first, and the few candidates are checked exactly."""
    key = ["segment", "metric", "step"]
    if _steps_rise_per_metric(frame):
        return pl.Series(np.zeros(frame.height, dtype=bool))
    packed = _packed_key(frame) if frame.height else None
    if packed is not None:
        if packed.n_unique() == frame.height:
            return pl.Series(np.zeros(frame.height, dtype=bool))
        return packed.is_duplicated()
    h = frame.select(pl.struct(key).hash(seed=7)).to_series()
    maybe = h.is_duplicated()
    if not maybe.any():
        return maybe
    rows = frame.with_row_index("_r").filter(maybe)
    exact = rows.filter(pl.struct(key).is_duplicated()).get_column("_r")
    return pl.Series(np.isin(np.arange(frame.height), exact.to_numpy()))


# ------------------------------------------------------------------ which metric, which axis


_OBJECTIVES = ("eval_loss", "reward", "accuracy", "perplexity")
"""What a run that names no loss is judged by, in this order: its evaluation loss, the reward
of an RL run, the accuracy or score of a classifier (MXNet's `Train-accuracy` alone)."""


def main_metric(frame: pl.DataFrame, roles: dict[str, str]) -> str | None:
    """The loss with the most finite points (the curve launches are judged on), else the
    objective of a run that names no loss (`_OBJECTIVES`); among losses logged as often,
    the total (`total_loss` over its components), then by name as `RunContext.main` ranks terms of equal
    standing (`equal_terms_rank`), never by the columns' order."""
    counts = (frame.select("metric", "value").filter(pl.col("value").is_finite()).group_by("metric").len()
              .sort(["len", "metric"], descending=[True, False]))
    if counts.height == 0:
        return None
    names, lens = counts.get_column("metric").to_list(), counts.get_column("len").to_list()
    losses = [(m, n) for m, n in zip(names, lens) if roles.get(m) == "loss"]
    if not losses:  # a run that names no loss: its objective (what it trains to lower or raise)
        return next((m for role in _OBJECTIVES for m in names if roles.get(m) == role), names[0])
    most = losses[0][1]
    tied = [m for m, n in losses if n >= 0.98 * most]
    if len(tied) == 1:
        return tied[0]
    score = {m: main_name_score(str(m), "loss", tied) for m in tied}
    best = [str(m) for m in tied if score[m] == max(score.values())]  # then as `RunContext.main` ranks them
    return min(best, key=lambda m: equal_terms_rank(m, best))


@dataclass
class _Layout:
    """Per launch and metric: first and last logged step (as logged), and the launch axis."""

    segments: list[int]
    first: dict[int, int]
    """A launch's first step on its main axis (as logged)."""
    last: dict[int, int]
    per_metric: dict[int, dict[str, tuple[int, int]]]
    on_axis: dict[int, dict[str, bool]]
    interval: dict[int, float]
    source: dict[int, str]
    wall: dict[int, tuple[float | None, float | None]]
    declared: dict[int, int]
    """Launch starts the writer declared (as logged), where it did."""
    has_main: dict[int, bool]
    parallel: set[int] = field(default_factory=set)
    """Files written beside the others (not a later launch): they supersede nothing."""
    reruns: set[int] = field(default_factory=set)
    """Launches that are new runs from the beginning (appended): they supersede every earlier
    point of the metrics they log, not only those from their first step on."""

    @classmethod
    def of(cls, frame: pl.DataFrame, main: str | None, branch: dict[int, int], purge: list[int]) -> "_Layout":
        logged = frame.filter(pl.col("value").is_not_null()) if frame.get_column("value").null_count() else frame
        stats = _first_last_steps(logged)
        segs = _segment_spans(frame)
        main_steps = _steps_by_segment(logged, main)
        per_metric: dict[int, dict[str, tuple[int, int]]] = {}
        for s, m, a, b in stats.iter_rows():
            per_metric.setdefault(int(s), {})[m] = (int(a), int(b))
        lay = cls(segments=[int(s) for s in segs.get_column("segment")], first={}, last={}, per_metric=per_metric,
                  on_axis={}, interval={}, source={}, wall={}, declared=dict(branch), has_main={})
        for s, src, w0, w1 in segs.iter_rows():
            s = int(s)
            lay.source[s] = src
            lay.wall[s] = (w0, w1)
            mets = per_metric.get(s, {})
            st = main_steps.get(s)
            lay.has_main[s] = st is not None and st.size > 0
            if lay.has_main[s]:
                first, last, iv = int(st[0]), int(st[-1]), median_interval(st)
            else:
                first = min((a for a, _ in mets.values()), default=0)
                last = max((b for _, b in mets.values()), default=first)
                iv = 1.0
            early = [a for a, _ in mets.values() if first - 2 * iv <= a < first]
            first = min([first, *early])
            lay.first[s], lay.last[s], lay.interval[s] = first, last, iv
            lay.on_axis[s] = {m: first <= a <= last for m, (a, _) in mets.items()}
            # a purge step just before the first logged step is where this launch took over
            near = [p for p in purge if first - 10 * iv <= p <= first]
            if near and s != lay.segments[0] and s not in lay.declared:
                lay.declared[s] = max(near)
        return lay

    def cut(self, s: int, metric: str, offset: int) -> int | None:
        """Stitched step from which launch `s` supersedes earlier points of `metric`."""
        span = self.per_metric.get(s, {}).get(metric)
        if span is None:
            return None
        if s in self.reruns:
            return -(1 << 62)  # a new run: the earlier runs' later steps are not this run's
        start = self.first[s]
        if s in self.declared:
            start = min(start, self.declared[s])
        return (start if self.on_axis[s][metric] else span[0]) + offset


def _one_segment(frame: pl.DataFrame) -> int | None:
    """The frame's only segment, when it has rows of one segment alone (most runs)."""
    seg = frame.get_column("segment")
    return int(seg[0]) if frame.height and seg.min() == seg.max() else None


def _first_last_steps(logged: pl.DataFrame) -> pl.DataFrame:
    """`segment, metric, first, last`: the first and last step of each metric in each
    launch. Grouped by the metric alone when there is one launch, else by one integer
    packing (segment, metric): a group-by on the two columns builds ~80 MB of hash
    tables for a 1M-point run, these 0-17 MB (same rows; order is not relied on)."""
    agg = (pl.col("step").min().alias("first"), pl.col("step").max().alias("last"))
    one = _one_segment(logged)
    if one is not None:
        return logged.group_by("metric", maintain_order=True).agg(*agg).select(
            pl.lit(one, dtype=pl.UInt32).alias("segment"), "metric", "first", "last")
    key = pl.col("segment").cast(pl.UInt64) * (1 << 32) + pl.col("metric").to_physical().cast(pl.UInt64)
    return logged.group_by(key.alias("_key"), maintain_order=True).agg(
        pl.col("segment").first(), pl.col("metric").first(), *agg).drop("_key")


def _segment_spans(frame: pl.DataFrame) -> pl.DataFrame:
    """`segment, source, w0, w1` per launch, sorted: its file and first and last wall time."""
    one = _one_segment(frame)
    if one is not None:
        wall = frame.get_column("wall_time").drop_nans()
        # (`source` is a constant the reader did not write out: `select` reads it as one, `get_column` would
        # write out a code a row, 4 MB at 1M points, that the frame then keeps)
        return pl.DataFrame({"segment": pl.Series([one], dtype=pl.UInt32),
                             "source": frame.select(pl.col("source").first()).to_series(),
                             "w0": pl.Series([wall.min()], dtype=pl.Float64),
                             "w1": pl.Series([wall.max()], dtype=pl.Float64)})
    return (frame.group_by("segment").agg(
        pl.col("source").first(), pl.col("wall_time").drop_nans().min().alias("w0"),
        pl.col("wall_time").drop_nans().max().alias("w1")).sort("segment"))


def _steps_by_segment(logged: pl.DataFrame, metric: str | None) -> dict[int, np.ndarray]:
    """Sorted steps of one metric in each segment that logs it (in NumPy: no Python list
    of every step)."""
    if metric is None:
        return {}
    rows = logged.filter(pl.col("metric") == metric)
    seg = rows.get_column("segment").to_numpy()
    step = rows.get_column("step").to_numpy().astype(np.int64, copy=False)
    if seg.size > 1 and not ((seg[1:] > seg[:-1]) | ((seg[1:] == seg[:-1]) & (step[1:] >= step[:-1]))).all():
        order = np.lexsort((step, seg))
        seg, step = seg[order], step[order]
    cuts = np.flatnonzero(seg[1:] != seg[:-1]) + 1
    heads = np.concatenate([[0], cuts]) if seg.size else cuts
    return {int(seg[h]): part for h, part in zip(heads.tolist(), np.split(step, cuts))}


def _declared_starts(run: Run, renumbered: dict[int, int]) -> tuple[dict[int, int], list[int]]:
    """Launch starts the writers declared, by (stitched) segment: a W&B rewind/fork
    `branch_point` (the child takes over after step N) and a TensorBoard `purge_step`
    (SessionLog START: the writer orphaned everything from step N on). Purge steps
    only known for the whole run are returned apart; `_Layout` gives each to the
    launch whose first step it precedes."""
    per_segment = dict(run.meta.get("segment_meta") or {})
    for seg in run.segments:
        if seg.get("meta"):
            per_segment.setdefault(seg["segment"], seg["meta"])
    declared: dict[int, int] = {}
    for seg, metas in per_segment.items():
        if int(seg) not in renumbered or int(seg) == min(renumbered):
            continue
        starts = _numbers(metas.get("purge_steps", metas.get("purge_step")))
        bp = metas.get("branch_point", metas.get("wandb.branch_point"))
        step = bp.get("step", bp.get("value")) if isinstance(bp, dict) else None
        starts += [s + 1 for s in _numbers(step)]
        if starts:
            declared[renumbered[int(seg)]] = min(starts)
    run_level = [] if any("purge_steps" in m or "purge_step" in m for m in per_segment.values()) else \
        _numbers(run.meta.get("purge_steps", run.meta.get("purge_step")))
    return declared, sorted(set(run_level))


def _numbers(x) -> list[int]:
    items = x if isinstance(x, (list, tuple)) else [x]
    return [int(v) for v in items if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)]


# ------------------------------------------------------------------ laying launches on one axis


def _curves(frame: pl.DataFrame, seg: int, metric: str | None = None) -> dict[str, tuple[np.ndarray, ...]]:
    part = frame.filter((pl.col("segment") == seg) & pl.col("value").is_not_null())
    if metric is not None:
        part = part.filter(pl.col("metric") == metric)
    out = {}
    for (m,), p in part.sort("step", "seq").group_by("metric", maintain_order=True):
        out[m] = (p.get_column("step").to_numpy(), as_f64(p.get_column("value")),
                  p.get_column("wall_time").to_numpy())
    return out


def _place_launches(frame: pl.DataFrame, lay: _Layout, main: str | None) -> tuple[np.ndarray, list[Boundary]]:
    """Offset of every launch's steps, and how each launch took over."""
    n = max(lay.segments) + 1 if lay.segments else 0
    offsets = np.zeros(n, dtype=np.int64)
    boundaries: list[Boundary] = []
    if not lay.segments:
        return offsets, boundaries
    if len(lay.segments) == 1:  # one launch: nothing to place (and no curve to read)
        return offsets, boundaries
    first_seg = lay.segments[0]
    run_first = lay.first[first_seg]
    prev_last = lay.last[first_seg]
    last_wall = lay.wall[first_seg][1]
    tl = _curves(frame, first_seg, main).get(main) if main else None
    run_first_level = _head_level(tl)
    prev = first_seg
    seen = set(lay.per_metric.get(first_seg, {}))
    wall_starts = [w for w in (lay.wall[first_seg][0],) if w is not None]
    stage_first = run_first
    for s in lay.segments[1:]:
        beside = _runs_beside(lay, s, seen, last_wall, wall_starts)
        if lay.wall[s][0] is not None:
            wall_starts.append(lay.wall[s][0])
        if beside:
            lay.parallel.add(s)
            seen |= set(lay.per_metric.get(s, {}))
            prev_last = max(prev_last, lay.last[s])
            if lay.wall[s][1] is not None:
                last_wall = max(last_wall, lay.wall[s][1]) if last_wall is not None else lay.wall[s][1]
            continue
        seen |= set(lay.per_metric.get(s, {}))
        # a launch inside the counter a reset launch started (a rollback after a step reset)
        # is re-based with it; one whose counter starts again is judged afresh
        base = offsets[prev] if offsets[prev] != 0 and lay.first[s] > stage_first else 0
        first = lay.first[s] + int(base)
        if s in lay.declared:
            first = min(first, lay.declared[s] + int(base))
        interval = median_interval(tl[0]) if tl is not None and tl[0].size > 1 else lay.interval[prev]
        launch, fit = ("continue" if first > prev_last else "rollback"), None
        span = max(prev_last - run_first, 1)
        near_start = first - run_first <= max(5 * interval, 0.02 * span)
        far_below = prev_last - first >= max(20 * interval, 0.1 * span)
        new_main = _curves(frame, s, main).get(main) if main else None
        # in a log already known to hold several runs, a start at the run's first step is one more run
        another_run = bool(lay.reruns) and first <= run_first + max(interval, 1)
        if launch == "rollback" and near_start and far_below and tl is not None and new_main is not None \
                and not another_run:
            fit = locate_reset(Curve(main, tl[0], tl[1]), Curve(main, new_main[0] + base, new_main[1]),
                               _aux_pairs(frame, prev, s, main, offsets[prev], base), interval=interval)
        offset = int(base) + (fit.offset if fit else 0)
        offsets[s] = offset
        if fit is not None:
            launch = "reset"
            first = lay.first[s] + offset
            stage_first = lay.first[s]
        elif launch == "rollback" and _new_run(lay, s, prev, first, prev_last, run_first, interval, tl, new_main):
            launch = "rerun"
            lay.reruns.add(s)
        w0 = lay.wall[s][0]
        gap = (w0 - last_wall) if (w0 is not None and last_wall is not None and w0 >= last_wall) else None
        spp = None
        if tl is not None and tl[2].size > 1:
            dw = np.diff(tl[2].astype(np.float64))
            dw = dw[np.isfinite(dw) & (dw > 0)]
            spp = float(np.median(dw)) if dw.size else None
        boundaries.append(Boundary(
            segment=s, previous=prev, launch=launch, first_step=int(first), logged_first_step=lay.first[s],
            step_offset=offset, prev_last_step=int(prev_last), interval=float(interval), source=lay.source[s],
            prev_source=lay.source[prev], wall_gap_s=gap, seconds_per_point=spp,
            reset_how=fit.how if fit else "", reset_evidence=fit.evidence if fit else {}, main_metric=main,
            run_first_step=int(run_first), last_step=int(lay.last[s] + offset),
            first_level=_head_level(new_main), run_first_level=run_first_level,
            has_main=main is None or bool(lay.has_main.get(s))))
        if new_main is not None:
            ns = new_main[0] + offset
            keep = tl[0] < first if tl is not None else None
            tl = (np.concatenate([tl[0][keep], ns]), np.concatenate([tl[1][keep], new_main[1]]),
                  np.concatenate([tl[2][keep], new_main[2]])) if tl is not None else (ns, new_main[1], new_main[2])
        # a reset launch placed under the old curve supersedes everything after its start: the
        # run's live frontier is its own last step, not the step the superseded launch reached
        prev_last = lay.last[s] + offset if launch in ("reset", "rerun") else max(prev_last, lay.last[s] + offset)
        if lay.wall[s][1] is not None:
            last_wall = max(last_wall, lay.wall[s][1]) if last_wall is not None else lay.wall[s][1]
        prev = s
    if any(b.launch == "rerun" for b in boundaries):  # a log of several runs: every start from the beginning is one
        for b in boundaries:
            if b.launch == "rollback" and from_scratch(b) and lay.has_main.get(b.segment):
                b.launch = "rerun"
                lay.reruns.add(b.segment)
    return offsets, boundaries


STUB_POINTS = 3
"""A run appended last that logged its main metric at this many steps at most, short of `ATTEMPT_SHARE` of the longest
run, is a stub (a relaunch killed at its first steps, a rerun started and dropped): the run is judged by
the last run before it that trained, not by a handful of points."""


def _trailing_stubs(frame: pl.DataFrame, boundaries: list[Boundary], lay: "_Layout", main: str | None) -> set[int]:
    """The runs appended at the log's end that are stubs (`STUB_POINTS`), each marked `stub`, where a
    run before them trained (the appended runs' findings then name the run judged)."""
    reruns = [b for b in boundaries if b.launch == "rerun"]
    if main is None or not reruns or boundaries[-1].launch != "rerun":
        return set()
    points = dict(frame.filter((pl.col("metric") == main) & pl.col("value").is_not_null())
                  .group_by("segment").agg(pl.col("step").n_unique()).iter_rows())  # steps logged
    span = {s: lay.last[s] - lay.first[s] for s in lay.segments}
    longest = max([span[s] for s in lay.segments if lay.has_main.get(s)] or [0])
    if longest <= 0:
        return set()
    stubs: list[Boundary] = []
    for b in reversed(boundaries):  # the trailing stubs, from the log's end back to the run judged
        s = b.segment
        if b.launch != "rerun" or points.get(s, 0) > STUB_POINTS or span[s] >= ATTEMPT_SHARE * max(longest, 1):
            break
        stubs.append(b)
    for b in stubs:
        b.stub = True
    return {b.segment for b in stubs}


ATTEMPT_SHARE = 0.15
"""A launch from the beginning after attempts that got less than this share of the run's
longest launch is a relaunch of a killed attempt; after a longer one it is a new run appended."""


def _new_run(lay: _Layout, s: int, prev: int, first: int, prev_last: int, run_first: int, interval: float,
             tl, new_main) -> bool:
    """Is launch `s`, which went back to the run's first step, a new run appended to the log
    rather than a relaunch of an attempt killed early? Going back to the beginning, its loss
    starts again from the first level (a rollback to the first checkpoint is the same thing):
    what tells them apart is how far the earlier attempt had got (a killed attempt gets a
    small part of the way the longest launch went; a run appended after a finished or long
    one got far), and whether
    the launch logs on another grid (a first step before the run's, another logging
    interval: another configuration, so another run)."""
    if first > run_first + max(interval, 1) or new_main is None or not new_main[0].size:
        return False
    if first < run_first:
        return True
    longest = max([lay.last[k] - lay.first[k] for k in lay.segments if lay.has_main.get(k)] or [1])
    if prev_last - run_first >= ATTEMPT_SHARE * max(longest, 1):
        return True
    if tl is not None and new_main is not None and tl[0].size >= 3 and new_main[0].size >= 3:
        a, b = median_interval(tl[0]), median_interval(new_main[0])
        return bool(min(a, b) > 0 and max(a, b) / min(a, b) > 1.5)
    return False


def _head_level(curve, points: int = 5) -> float | None:
    """The median of a launch's first few finite main-metric values (where it started)."""
    if curve is None:
        return None
    v = np.asarray(curve[1], dtype=np.float64)
    v = v[np.isfinite(v)][:points]
    return float(np.median(v)) if v.size else None


def _runs_beside(lay: _Layout, s: int, seen: set[str], last_wall: float | None, starts: list[float]) -> bool:
    """A file written beside the others, not a later launch: it shares no metric with
    them (a second writer for eval tags), or it started together with one of them and
    before they stopped (several ranks writing the same tags). A resumed launch starts
    after the previous one stopped, so neither holds for it."""
    if not set(lay.per_metric.get(s, {})) & seen:
        return True
    w0 = lay.wall[s][0]
    if w0 is None or last_wall is None or not starts:
        return False
    if any(lay.source[k] == lay.source[s] for k in lay.segments if k < s):
        return False  # writers beside each other in one file interleave (one launch); this one came after
    margin = max(60.0, 0.05 * (last_wall - min(starts)))
    return w0 < last_wall - margin and min(abs(w0 - x) for x in starts) < margin


def _aux_pairs(frame: pl.DataFrame, prev: int, new: int, main: str, prev_offset: int, base: int):
    """Companion metrics logged by both launches, on the axes `locate_reset` compares."""
    old, cur = _curves(frame, prev), _curves(frame, new)
    pairs = []
    for m in sorted(set(old) & set(cur) - {main}):
        (ps, pv, _), (ns, nv, _) = old[m], cur[m]
        pairs.append((Curve(m, ps + prev_offset, pv), Curve(m, ns + base, nv)))
    return pairs


# ------------------------------------------------------------------ superseded points


def _supersede(frame: pl.DataFrame, lay: _Layout, offsets: np.ndarray, boundaries: list[Boundary],
               main: str | None, rtol: float, none_twice: bool = False, stubs: set[int] = frozenset()) -> pl.DataFrame:
    """Mark superseded points: earlier launches' points from a later launch's start on,
    and earlier copies of a (metric, step) logged twice inside one launch; a stub appended last
    (`_trailing_stubs`) supersedes nothing, its own points are superseded."""
    frame = frame.with_columns(superseded=pl.lit(False))
    if stubs:
        frame = frame.with_columns(superseded=pl.col("segment").is_in(sorted(stubs)))
    for b in boundaries:
        k = b.segment
        if k in stubs:
            continue
        cuts = {m: lay.cut(k, m, int(offsets[k])) for m in lay.per_metric.get(k, {})}
        if not cuts:
            continue
        cut = pl.col("metric").replace_strict(cuts, default=None, return_dtype=pl.Int64)
        hit = (pl.col("segment") < k) & ~pl.col("superseded") & (pl.col("step") >= cut).fill_null(False)
        frame = frame.with_columns(_new=hit).with_columns(superseded=pl.col("superseded") | pl.col("_new"))
        b.superseded = int(frame.get_column("_new").sum())
        if main is not None and b.superseded:
            _compare_overlap(frame, b, main, rtol)
        frame = frame.drop("_new")
    key = ["segment", "metric", "step"]
    if none_twice:
        return frame
    twice = _logged_twice(frame)
    if not twice.any():
        return frame
    later = pl.col("seq").filter(pl.col("value").is_not_null()).max().over(key)
    dup = pl.col("value").is_not_null() & (pl.col("seq") < later).fill_null(False)
    earlier = frame.filter(twice).filter(dup).select("seq")
    return frame.with_columns(superseded=pl.col("superseded") | pl.col("seq").is_in(earlier.get_column("seq").implode()))


def _compare_overlap(frame: pl.DataFrame, b: Boundary, main: str, rtol: float) -> None:
    """How many overlapping main-metric points the new launch re-logged with identical values."""
    old = frame.filter(pl.col("_new") & (pl.col("metric") == main)).select("step", old=pl.col("value"))
    new = (frame.filter((pl.col("segment") == b.segment) & (pl.col("metric") == main))
           .group_by("step").agg(new=pl.col("value").last()))
    pairs = old.join(new, on="step", how="inner")
    b.overlap_steps = int(pairs.get_column("step").n_unique())
    if pairs.height == 0:
        return
    a, c = as_f64(pairs.get_column("old")), as_f64(pairs.get_column("new"))
    both_nan = np.isnan(a) & np.isnan(c)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - c)
        same = both_nan | (diff <= rtol * np.maximum(np.abs(a), np.abs(c))) | (a == c)
    b.identical = float(same.mean())
    b.identical_distinct = int(np.unique(a[same & np.isfinite(a)]).size)
    finite = np.isfinite(diff)
    b.max_abs_diff = float(diff[finite].max()) if finite.any() else None


def _written_twice(run: str, frame: pl.DataFrame, main: str, most: float = 0.5, min_steps: int = 10,
                   closer: float = 0.1) -> list[Finding]:
    """Launches where `most` of the main metric's steps (at least `min_steps`) were written
    two or more times, the copies of a step `closer` to each other than neighbouring steps
    are (the run's own noise): one record appended by two writers. A logger that writes
    several batches' losses under one step (an epoch counter) has copies as far apart as
    the noise, and is not this."""
    rows = (frame.lazy().select("segment", "step", "metric", "value")  # only the columns it reads
            .filter((pl.col("metric") == main) & pl.col("value").is_finite()))
    if not rows.select(pl.struct("segment", "step").is_duplicated().any()).collect().item():
        return []  # no step written twice: nothing to measure (the usual run)
    per_step = (rows.group_by("segment", "step")
                .agg(n=pl.len(), spread=pl.col("value").max() - pl.col("value").min(), mean=pl.col("value").mean())
                .sort("segment", "step").collect())
    out = []
    for (seg,), part in per_step.group_by("segment", maintain_order=True):
        n = part.get_column("n").to_numpy()
        twice = int((n >= 2).sum())
        if twice < max(min_steps, most * n.size):
            continue
        mean = part.get_column("mean").to_numpy()
        noise = float(np.median(np.abs(np.diff(mean)))) if mean.size > 2 else 0.0
        spread = float(np.median(part.get_column("spread").to_numpy()[n >= 2]))
        if not noise > 0 or spread > closer * noise:
            continue
        steps = part.get_column("step").to_numpy()
        out.append(written_twice_finding(run, main, int(seg), int(n.size), twice, spread, noise,
                                         int(steps[0]), int(steps[-1])))
    return out


def _printed_twice(run: str, frame: pl.DataFrame, main: str, most: float = 0.8, min_pairs: int = 5,
                   no_step_twice: bool = False) -> list[Finding]:
    """The main metric, in the order it was logged within each launch, held for exactly two points
    at a time: `most` of its points (and at least `min_pairs` pairs) sit in runs of exactly two
    equal values. A value that stays where it is for a while (a flat loss printed with few
    digits, a frozen one) makes runs of every length, not pairs."""
    if no_step_twice:  # the usual run: an upper bound from the values alone, in NumPy (no Polars sort)
        part = frame.lazy().filter((pl.col("metric") == main) & pl.col("value").is_finite()).select("seq", "value")
        got = part.collect()
        v = as_f64(got.get_column("value"))[np.argsort(got.get_column("seq").to_numpy(), kind="stable")]
        if int(np.count_nonzero(v[1:] == v[:-1])) < max(min_pairs, 0.5 * most * v.size):
            return []  # each pair holds one repeat: too few repeats for most points to sit in pairs
    rows = (frame.lazy().select("segment", "seq", "step", "metric", "value")  # only the columns it reads
            .filter((pl.col("metric") == main) & pl.col("value").is_finite()).sort("segment", "seq")
            .unique(subset=["segment", "step"], keep="last", maintain_order=True)  # one step written twice is not this
            .select("segment", "step", "value").collect())
    if rows.height < 2 * min_pairs:
        return []
    runs = (rows.with_columns(_r=((pl.col("value") != pl.col("value").shift(1))
                                  | (pl.col("segment") != pl.col("segment").shift(1))).fill_null(True).cum_sum())
            .group_by("_r").agg(n=pl.len()).get_column("n"))
    pairs = int((runs == 2).sum())
    if pairs < min_pairs or 2 * pairs < most * rows.height:
        return []
    steps = rows.get_column("step")
    return [printed_twice_finding(run, main, pairs, rows.height, int(steps.min()), int(steps.max()))]


# ------------------------------------------------------------------ the segment timeline


def _segment_table(frame: pl.DataFrame, lay: _Layout, offsets: np.ndarray,
                   boundaries: list[Boundary]) -> list[dict]:
    one = _one_segment(frame)
    if one is not None:  # one launch: no group-by over every row
        count = {one: (frame.height, int(frame.get_column("superseded").sum()))}
    else:
        counts = frame.group_by("segment").agg(pl.len().alias("points"), pl.col("superseded").sum().alias("sup"))
        count = {int(s): (int(p), int(x)) for s, p, x in counts.iter_rows()}
    launch = {b.segment: b.launch for b in boundaries} | {s: "parallel" for s in lay.parallel}
    out = []
    for s in lay.segments:
        off = int(offsets[s])
        w0, w1 = lay.wall[s]
        out.append({
            "segment": s, "source": lay.source[s],
            "first_step": lay.first[s] + off, "last_step": lay.last[s] + off,
            "points": count.get(s, (0, 0))[0], "superseded": count.get(s, (0, 0))[1],
            "first_wall_time": w0, "last_wall_time": w1, "step_offset": off,
            "launch": launch.get(s, "start"),
        })
    return out


BESIDE_S = 60.0
"""An empty file opened this close to the start of a launch with data, before its last
point (or while it ran), is a writer beside it (another rank's SummaryWriter), not a
launch that logged nothing."""


def _with_empty_launches(segments: list[dict], discovered: list[dict], renumbered: dict[int, int]) -> list[dict]:
    """The timeline with the launches that logged nothing in their place (0 points,
    launch `empty`, their source and start time); an empty file written beside a launch
    with data is `parallel`."""
    data = [s for s in discovered if s.get("points", 1)]

    def beside(t: float | None) -> bool:
        if t is None:
            return False
        for d in data:
            t0, w0, w1 = d.get("start_time"), d.get("first_wall_time"), d.get("last_wall_time")
            if (t0 is not None and abs(t - t0) <= BESIDE_S and (w1 is None or t <= w1)) or \
                    (w0 is not None and w1 is not None and w0 <= t <= w1):
                return True
        return False

    empty = [{"segment": renumbered.get(int(s["segment"]), int(s["segment"])), "source": s.get("source", ""),
              "first_step": None, "last_step": None, "points": 0, "superseded": 0,
              "first_wall_time": s.get("first_wall_time"), "last_wall_time": None, "step_offset": 0,
              "launch": "parallel" if beside(s.get("first_wall_time")) else "empty"}
             for s in discovered if s.get("points", 1) == 0]
    if not empty:
        return segments
    return sorted(segments + empty, key=lambda s: s["segment"])
