"""Judge runs while they grow: the rows read so far, re-judged on a trailing window by
the pipeline `analyze` runs (stitch, detectors, causes), each finding reported once.

Why a window: the cost of a poll must follow the new points, not the history. The
detectors judge a point against trailing statistics of a few hundred points at most,
so a window of the new rows plus `context` rows before them judges the new points as
the whole run would. Findings anchored in the first half of that context were judged
at an earlier poll with as much history; they are left alone (the `guard` step).

When a finding is reported: once its metric has logged `settle` points after it (a
one-point blip is told from a spike that holds by the next points; a NaN needs none),
and never before the end for the run-level summaries that the end still changes
(`END_KINDS`: the outliers summary, a plateau, overfitting, a run that ended early).
A finding is known by (run, code, kind, metric, step) where the step is its first step
(`start_step`, stable while a spike's peak may still move), else its anchor step.
It is updated once: when an open outcome closes (a spike that came back).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from ..config import Config
from ..importers.base import Table
from ..model.finding import SEVERITY_RANK, Finding
from ..model.report import LOSS_LIKE, RunReport
from .tail import SourceFrames

END_KINDS = frozenset({"outliers", "plateau", "overfitting", "ended_early", "empty_launch", "level_shift",
                       "excursion", "throughput_drop", "step_time_rise", "memory_growth", "rank_outlier", "settings"})
"""Kinds reported only when the watch ends: what they say depends on the points after
them to the end of the run (the outliers summary counts and ranks every blip of the run,
a plateau lasts until something changes, a run ends early only once it ended) or is
measured against the whole run (a level shift's window, an excursion's trend and a
throughput drop's windows are fractions of the run's length; memory growth is a trend over
the run; ranks and settings compare whole runs)."""

IMMEDIATE_KINDS = frozenset({"nan"})
"""Kinds known at their first point: a NaN needs no confirmation."""

PROVISIONAL_KINDS = frozenset({"divergence"})
"""Kinds judged on the curve up to now: a divergence is a rise from the run's lowest point
to its end, so a rise the run later comes back from is told live (that is the point of
watching) and may be absent from `analyze` of the finished log. Told with
`provisional: true`."""


def needs_end(f: Finding) -> bool:
    """Told only when the watch ends: the END_KINDS, and one-point spikes (whether a blip
    is its own finding or one more of the outliers summary depends on how many blips the
    whole run has: `SpikeDetector.max_isolated`, the dominant outlier)."""
    return f.kind in END_KINDS or (f.kind == "spike" and bool(f.evidence.get("one_point")))


def finding_key(run: str, f: Finding) -> str:
    """(run, code, kind, metric, first step); a provisional kind (a divergence, whose
    turning point moves while the rise goes on) is one finding per metric."""
    step = f.start_step if f.start_step is not None else f.anchor_step
    if f.kind in PROVISIONAL_KINDS:
        step = None
    return f"{run}|{f.code}|{f.kind}|{f.metric or ''}|{step if step is not None else ''}"


@dataclass
class Event:
    """Something to tell: a new finding, or the outcome of one told before."""

    type: str
    """"finding", "update" (its outcome closed) or "withdrawn" (no longer found)."""
    run: str
    finding: Finding
    key: str
    at_end: bool = False
    seen_at: int | None = None
    """The run's last step when it was told (how late the alert came, in steps)."""

    def to_json(self) -> dict[str, Any]:
        return {"event": self.type, "run": self.run, "key": self.key, "at_end": self.at_end,
                "seen_at_step": self.seen_at,
                "provisional": self.finding.kind in PROVISIONAL_KINDS and not self.at_end, **self.finding.to_json()}


class FindingAlert(RuntimeError):
    """Raised in a training loop (a capture callback with watch="raise") at a finding at or
    above its threshold; `.event` holds it."""

    def __init__(self, event: Event):
        super().__init__(f"spikelens: {event.finding.code} {event.finding.kind} at step "
                         f"{event.finding.anchor_step}: {event.finding.message}")
        self.event = event


@dataclass
class RunBook:
    """One run's rows so far (by source table) and what the last judgement said."""

    key: str
    parts: dict[tuple, SourceFrames] = field(default_factory=dict)
    new: dict[tuple, int] = field(default_factory=dict)
    name: str = ""
    status: dict[str, Any] = field(default_factory=dict)
    """last step, main metric, its role and last value (`loss` only where it is one), findings so far."""

    def add(self, ident: tuple, t: Table) -> None:
        part = self.parts.get(ident)
        if part is None:
            part = self.parts[ident] = SourceFrames(table=replace(t, frame=t.frame.clear()))
        part.add(t)
        self.new[ident] = self.new.get(ident, 0) + t.frame.height

    def drop(self, follower: int) -> None:
        for ident in [i for i in self.parts if i[0] == follower]:
            del self.parts[ident]
            self.new.pop(ident, None)

    @property
    def pending(self) -> int:
        return sum(self.new.values())

    @property
    def points(self) -> int:
        return sum(p.rows for p in self.parts.values())


@dataclass
class Judge:
    """Runs the pipeline on a run's window; keeps the ledger of what was told."""

    cfg: Config
    detector_params: dict | None = None
    context: int = 20_000
    """Rows of history judged with the new rows (per source table)."""
    settle: int = 3
    """Points of a metric after a finding before it is told."""
    ledger: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)
    """Provisional findings seen but not told yet: the last step of their metric then."""

    def window(self, book: RunBook, whole: bool = False) -> tuple[list[Table], int | None]:
        """The tables cut to the window, and the guard step (None: the whole run)."""
        frames = {i: p.frame() for i, p in book.parts.items()}
        cut = guard = None
        if not whole:
            for i, f in frames.items():
                keep = book.new.get(i, 0) + self.context
                if f.height > keep:
                    lo = f.height - keep
                    s = f.get_column("step").slice(lo, keep).min()
                    g = f.get_column("step").slice(lo + self.context // 2, keep - self.context // 2).min()
                    cut = s if cut is None else max(cut, s)
                    guard = g if guard is None else max(guard, g)
        tables = []
        for i, p in book.parts.items():
            f = frames[i]
            if cut is not None:
                keep = book.new.get(i, 0) + self.context
                tail = f.slice(max(f.height - keep, 0))
                f = tail.filter(pl.col("step") >= cut)
            tables.append(replace(p.table, frame=f))
        return tables, guard

    def judge(self, book: RunBook, whole: bool = False) -> tuple[RunReport | None, int | None]:
        """Stitch, detect and explain the run's window (its whole history when `whole`)."""
        from ..discover import assemble
        from ..frame import validate
        from ..pipeline.run import analyze_run

        tables, guard = self.window(book, whole)
        book.new = {i: 0 for i in book.new}
        runs = assemble(tables, [])
        if not runs or runs[0].frame.height == 0:
            return None, guard
        run = runs[0]
        validate(run.frame, f"import of {run.name}")
        rep = (analyze_run(run, self.cfg, detector_params=self.detector_params) if whole
               else analyze_live(run, self.cfg, self.detector_params))
        book.name = rep.run
        return rep, guard

    def events(self, rep: RunReport, guard: int | None, *, final: bool = False) -> list[Event]:
        """The findings of a judgement not told yet, the outcomes that closed, and the
        findings told before that this judgement no longer gives (folded into a later
        finding, or a provisional one the curve came back from): withdrawn, once."""
        out: list[Event] = []
        after = None if final else _settled_before(rep.frame, self.settle)
        last_step = rep.frame.get_column("step").max() if rep.frame is not None and rep.frame.height else None
        seen: set[str] = set()
        for f in rep.findings:
            key = finding_key(rep.run, f)
            seen.add(key)
            step = f.start_step if f.start_step is not None else f.anchor_step
            told = self.ledger.get(key)
            if told is None:
                if not final:
                    if needs_end(f) or (guard is not None and step is not None and step < guard):
                        continue
                    if f.kind not in IMMEDIATE_KINDS and not _settled(f, after):
                        continue
                    if f.kind in PROVISIONAL_KINDS and not self._lasted(key, f, rep.frame):
                        continue
                self.ledger[key] = {"run": rep.run, "code": f.code, "kind": f.kind, "metric": f.metric,
                                    "step": step, "severity": f.severity, "recovery": f.recovery,
                                    "message": f.message, "updated": False, "withdrawn": False, "at_end": final}
                out.append(Event("finding", rep.run, f, key, at_end=final))
            elif told.get("withdrawn") and not told.get("again"):
                # found again (a repeated-data drop whose jump back came): told again, once, and kept
                told.update(withdrawn=False, again=True, severity=f.severity, recovery=f.recovery, message=f.message)
                out.append(Event("finding", rep.run, f, key, at_end=final))
            elif not told.get("updated") and not told.get("withdrawn") and told.get("recovery") in (None, "none") \
                    and f.recovery not in (None, "none"):
                told.update(updated=True, recovery=f.recovery, severity=f.severity, message=f.message)
                out.append(Event("update", rep.run, f, key, at_end=final))
        for key in [k for k in self.pending if k.startswith(rep.run + "|") and k not in seen]:
            del self.pending[key]  # gone before it lasted: never told
        for key, told in self.ledger.items():
            if told.get("run") != rep.run or told.get("withdrawn") or told.get("again") or key in seen:
                continue
            step = told.get("step")
            if guard is not None and (step is None or step < guard):
                continue  # before the window: not judged this time
            if not final and told.get("at_end"):
                continue
            if step is not None and (last_step is None or step > last_step):
                continue  # after the points judged (a file truncated and read again): not judged
            told["withdrawn"] = True
            gone = Finding(kind=told["kind"], code=told["code"], run=rep.run, metric=told.get("metric"),
                           severity=told["severity"], message=f"no longer found: {told['message']}",
                           start_step=step)
            out.append(Event("withdrawn", rep.run, gone, key, at_end=final))
        for ev in out:
            ev.seen_at = None if last_step is None else int(last_step)
        return out

    def _lasted(self, key: str, f: Finding, frame: pl.DataFrame | None) -> bool:
        """A provisional finding is told once it is still found `settle` points of its
        metric after it was first found (the rise is not the first points of a spike)."""
        steps = _metric_steps(frame, f.metric)
        if steps is None:
            return False
        first = self.pending.setdefault(key, int(steps[-1]))
        return int((steps > first).sum()) >= self.settle

    def status(self, book: RunBook, rep: RunReport) -> None:
        told = [v for v in self.ledger.values() if v.get("run") == rep.run and not v.get("withdrawn")]
        worst = max((v["severity"] for v in told), key=SEVERITY_RANK.__getitem__, default=None)
        metric = rep.stats.get("main_metric")
        role = rep.main_role()  # an RL run is judged by its return: no loss
        last = rep.stats.get("last_value")
        book.status = {"run": rep.run, "last_step": rep.stats.get("last_step"), "metric": metric, "role": role,
                       "last_value": last, "loss": last if role in LOSS_LIKE else None,
                       "findings": len(told), "worst": worst, "points": book.points}


def analyze_live(run, cfg: Config, detector_params: dict | None) -> RunReport:
    """`pipeline.run.analyze_run` without the detectors whose every finding is told at
    the end (END_KINDS: a plateau, overfitting...): they judge the whole run, and cost most
    of a poll. The same stitch, detectors, reconciling, causes and remedies otherwise
    (`test_live_analysis_is_analyze_run` holds the two together)."""
    from ..detect.base import RunContext
    from ..detect.engine import build_detectors, run_detectors, series_of
    from ..detect.reconcile import reconcile
    from ..explain.engine import explain
    from ..frame import roles_of, validate
    from ..pipeline.run import run_stats
    from ..stitching import stitch_run

    stitched = stitch_run(run, roles=cfg.roles)
    frame = validate(stitched.frame, f"stitch of {run.name}", stitched=True)
    roles = roles_of(frame, cfg.roles)
    ctx = RunContext(run=run.name, roles=roles, series=series_of(frame, roles),
                     segment_starts=stitched.segment_starts, frame=frame)
    detectors = [d for d in build_detectors({**cfg.detectors, **(detector_params or {})})
                 if d.kind not in END_KINDS]
    findings = explain(reconcile(stitched.findings + run_detectors(ctx, detectors), ctx), ctx)
    try:  # what to do about each finding, where the pipeline has it (tests compare with analyze_run)
        from ..remedy import attach as attach_remedies
    except ImportError:
        attach_remedies = None
    if attach_remedies is not None:
        attach_remedies(findings, ctx, run.sources)
    findings.sort(key=lambda f: (f.anchor_step if f.anchor_step is not None else -1, f.kind))
    return RunReport(run=run.name, sources=run.sources, segments=stitched.segments, metrics=roles,
                     findings=findings, formats=run.formats, points=run.frame.height, stats=run_stats(ctx),
                     frame=frame)


def _settled_before(frame: pl.DataFrame | None, settle: int) -> dict[str | None, int]:
    """Per metric (and None for the run), the step a finding must come before to have
    `settle` points of its metric after it."""
    if frame is None or frame.height == 0:
        return {}
    live = frame.filter(~pl.col("superseded")) if "superseded" in frame.columns else frame
    per = (live.group_by("metric").agg(pl.col("step").unique().sort().tail(settle).first().alias("s"),
                                       pl.col("step").n_unique().alias("n")))
    out: dict[str | None, int] = {}
    for metric, s, n in per.iter_rows():
        if n >= settle:
            out[str(metric)] = int(s)
    steps = live.get_column("step").unique().sort()
    if steps.len() >= settle:
        out[None] = int(steps[-settle])
    return out


def _metric_steps(frame: pl.DataFrame | None, metric: str | None):
    if frame is None or metric is None:
        return None
    steps = frame.filter(pl.col("metric") == metric).get_column("step").unique().sort().to_numpy()
    return steps if steps.size else None


def _settled(f: Finding, before: dict[str | None, int] | None) -> bool:
    if before is None:
        return True
    step = max((s for s in (f.start_step, f.peak_step, f.extra.get("resume_step")) if s is not None), default=None)
    limit = before.get(f.metric) if f.metric is not None else before.get(None)
    return step is not None and limit is not None and step < limit


