"""One run's analysis: stitch its segments, run the detectors, explain the findings.

`analyze_group` is the unit every executor ships: a group of sources in, its runs'
reports and warnings out, a pure function of its arguments, so it runs the same in this
process, a worker process or a Ray task."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .. import diagnostics
from ..config import Config
from ..detect.base import RunContext
from ..detect.engine import build_detectors, run_detectors, series_of, shift_profile_of
from ..detect.reconcile import reconcile
from ..discover import Run, Source, read_group
from ..epochs import annotate as annotate_epochs
from ..explain.engine import explain
from ..frame import is_perplexity, roles_of, validate
from ..model.report import RunReport
from ..remedy import attach as attach_remedies
from ..sessions import earlier_sessions, judge_sessions, told_by_live
from ..stitching import stitch_run


def analyze_run(run: Run, cfg: Config, *, detector_params: dict | None = None,
                stitch_params: dict | None = None) -> RunReport:
    """Stitch, detect and explain one run."""
    stitched = stitch_run(run, **{"roles": cfg.roles, **(stitch_params or {})})
    frame = validate(stitched.frame, f"stitch of {run.name}", stitched=True)
    roles = roles_of(frame, cfg.roles)
    ctx = RunContext(run=run.name, roles=roles, series=series_of(frame, roles),
                     segment_starts=stitched.segment_starts, frame=frame)
    params = {**cfg.detectors, **(detector_params or {})}
    detectors = build_detectors(params)
    findings = run_detectors(ctx, detectors, shift_profile=True)  # the profile taken early: less memory held
    findings = explain(reconcile(stitched.findings + findings, ctx), ctx)
    attach_remedies(findings, ctx, run.sources)
    annotate_epochs(findings, ctx)  # the epoch at each finding's step, where the run logs one
    earlier = judge_sessions(earlier_sessions(frame, stitched.reruns, stitched.main), lambda f: _judged(
        run.name, f, cfg, detectors))  # the earlier runs of a log that holds several (sessions.py)
    earlier = told_by_live(earlier, findings)  # an outcome the live run repeats is told once, there
    # a metric's NaN/inf in replaced launches is told once, over all of them (detect.nonfinite)
    # (and a NaN the live timeline already tells: a key the later runs no longer print keeps its points live)
    told = {f.metric for f in findings if f.kind == "nan" and ("replaced_launch" in f.evidence
                                                               or "superseded_nonfinite_points" in f.evidence)}
    live_nan = {(f.metric, f.start_step) for f in findings if f.kind == "nan"}
    findings += [f for f in earlier
                 if not (f.kind == "nan" and (f.metric in told or (f.metric, f.start_step) in live_nan))]
    findings.sort(key=lambda f: (f.anchor_step if f.anchor_step is not None else -1, f.kind))
    return RunReport(run=run.name, sources=run.sources, segments=stitched.segments, metrics=roles,
                     findings=findings, formats=run.formats, points=run.frame.height,
                     stats=run_stats(ctx), frame=frame, shift_profile=shift_profile_of(ctx, detectors))


def _judged(name: str, frame, cfg: Config, detectors: list) -> tuple[list, RunContext]:
    """One earlier run of a log that holds several, detected and explained on its own points."""
    roles = roles_of(frame, cfg.roles)
    ctx = RunContext(run=name, roles=roles, series=series_of(frame, roles), frame=frame)
    return explain(reconcile(run_detectors(ctx, detectors), ctx), ctx), ctx


def run_stats(ctx: RunContext) -> dict[str, Any]:
    # an RL learner by its episode return, else the loss (held-out where no training loss is logged),
    # a run that logs only rewards by them, a classifier that logs only accuracy by it (RunContext.judged)
    main = ctx.judged()
    rates = rate_stats(ctx)
    if main is None:
        return {"rates": rates} if rates else {}
    first, last = float(main.value[0]), float(main.value[-1])
    if is_perplexity(main.metric):  # judged as its log (the loss); shown as logged
        first, last = math.exp(first), math.exp(last)
    return {"main_metric": main.metric, "first_step": int(main.step[0]), "last_step": int(main.step[-1]),
            "first_value": first, "last_value": last, "points": len(main), **({"rates": rates} if rates else {})}


def rate_stats(ctx: RunContext) -> dict[str, Any]:
    """The median throughput and step time of the run (ranks are compared on them, see detect.ranks)."""
    out = {}
    for role in ("throughput", "step_time"):
        s = ctx.main(role)
        if s is not None and s.finite()[1].size:
            out[role] = {"metric": s.metric, "median": float(np.median(s.finite()[1]))}
    return out


def analyze_group(group: list[Source], roots: list[Path], cfg: Config, detector_params: dict | None,
                  keep_frames: bool) -> tuple[list[RunReport], list[str]]:
    """Read and analyse one group; warnings are returned, not printed (they may come
    from a worker process)."""
    with diagnostics.collecting() as diag:
        reports = []
        for run in read_group(group, roots):
            validate(run.frame, f"import of {run.name}")
            reports.append(report_run(run, cfg, detector_params, keep_frames))
    return reports, diag.lines


def report_run(run: Run, cfg: Config, detector_params: dict | None, keep_frames: bool) -> RunReport:
    """`analyze_run`, the frame dropped from the report unless kept (large sweeps need none)."""
    rep = analyze_run(run, cfg, detector_params=detector_params)
    if not keep_frames:
        rep.frame = None
    return rep
