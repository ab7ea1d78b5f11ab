"""What the HTML report's charts draw, per run: the panels (loss, grad norm, LR, loss
scale, throughput, step time, memory) with their decimated series, superseded points and
NaN/inf steps apart, the segment boundaries, each finding's band and zoom window (`heads`
on a note the verdict speaks of, which is banded too), and apart (`extra_chart`) every
other metric, coarser, for the page's metric picker.

Series travel as base64 little-endian arrays (int32 steps when they fit, float32
values): a tenth of the size of JSON numbers and decoded in a few milliseconds.
Each series keeps its extremes per chart pixel over the whole run, and apart from
those (`detail`), the points inside each finding's window at up to `WINDOW_BUCKETS`
pairs, which the page adds once zoomed in: a zoom on a finding is sharp, the overview
has one density, and the file stays small.
"""
from __future__ import annotations

import base64
import re
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from ..model.finding import Finding
from ..model.report import RunReport
from .decimate import keep_extremes, keep_in_windows
from .verdict import verdict
from .zoom import extent, window

PANELS = (("loss", ("loss", "eval_loss")), ("grad norm", ("grad_norm",)), ("learning rate", ("lr",)),
          ("loss scale", ("loss_scale",)), ("throughput", ("throughput",)), ("step time", ("step_time",)),
          ("memory", ("memory",)))
"""Panels top to bottom: title and the metric roles drawn in it."""
MAX_METRICS = 6
"""Metrics drawn per panel at most (a run logging 40 per-layer grad norms shows six)."""
BUCKETS = {"loss": 700, "grad norm": 250, "learning rate": 120, "loss scale": 120, "throughput": 250,
           "step time": 250, "memory": 120}
"""Min/max pairs over the whole run, per panel: about the chart's width in pixels for
the loss, less for the companions and far less for the smooth schedules."""
DETAILED = ("loss", "grad norm")
"""Panels whose series keep full detail inside every finding's window."""
WINDOW_BUCKETS = 250
"""Min/max pairs inside each finding's window (points beyond are decimated)."""
WINDOW_POINTS_PER_RUN = 6000
"""Budget of window points per series: many findings share it (fewer pairs each)."""
MAX_BAD_STEPS = 400
"""NaN/inf steps marked per series at most (evenly picked, first and last kept)."""
EXTRA_POINTS_PER_RUN = 2400
"""Points (min/max pairs x2) shared by the metrics no panel draws, which the page's picker adds
as charts: about 25 KB a run at most, in their own script element, parsed only when one is added."""
EXTRA_POINTS_PER_PAGE = 300_000
"""The same over the whole page (a sweep of hundreds of runs gets fewer points a run)."""
EXTRA_BUCKETS = (16, 120)
"""Min/max pairs per added metric: as many as the run's share allows, within these bounds
(past `EXTRA_POINTS_PER_RUN // (2 * 16)` metrics, the rest are listed but not embedded)."""
MAX_HEAD_CHECKS = 60
"""Info findings of one kind tried one by one when asking which ones the verdict speaks of."""


def encode(values: np.ndarray, kind: str) -> dict[str, str]:
    """{'t': 'i4'|'f8'|'f4', 'b': base64} of little-endian values."""
    if kind == "step":
        fits = values.size == 0 or (values.min() >= -(2 ** 31) and values.max() < 2 ** 31)
        dtype, tag = ("<i4", "i4") if fits else ("<f8", "f8")
    else:
        dtype, tag = "<f4", "f4"
    return {"t": tag, "b": base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")}


def panel_metrics(run: RunReport, present: set[str]) -> list[tuple[str, list[str]]]:
    """(panel title, its metrics) for the panels this run has data for."""
    out = []
    for title, roles in PANELS:
        metrics = sorted((m for m, r in run.metrics.items() if r in roles and m in present),
                         key=lambda m: (roles.index(run.metrics[m]), m != run.stats.get("main_metric"), m))
        if metrics:
            out.append((title, metrics[:MAX_METRICS]))
    return out


def finding_view(f: Finding, fid: str, first: float, last: float) -> dict[str, Any] | None:
    """A finding's band and zoom window, or None when it names no step."""
    ext = extent(f, last)
    if ext is None:
        return None
    lo, hi = window(ext, first, last)
    return {"id": fid, "kind": f.kind, "sev": f.severity, "metric": f.metric, "x0": ext.x0, "x1": ext.x1,
            "line": ext.line, "lo": lo, "hi": hi}


def heading_notes(run: RunReport) -> set[int]:
    """ids of the info findings the run's verdict speaks of (a plateau that says 'never
    learned', an info resume or spike it names): the verdict reads otherwise without them.
    A verdict of 'clean (N notes)' only counts its notes: none heads it. Notes are tried a
    kind at a time first (a run's many outlier notes cost one verdict, not one each)."""
    infos = [f for f in run.findings if f.severity == "info"]
    if not infos:
        return set()
    text = verdict(run)
    if text.startswith(("clean", "no loss-like")):
        return set()

    def changes(without: list[Finding]) -> bool:
        gone = {id(f) for f in without}
        return verdict(replace(run, findings=[g for g in run.findings if id(g) not in gone])) != text

    out: set[int] = set()
    for kind in sorted({f.kind for f in infos}):
        of_kind = [f for f in infos if f.kind == kind]
        if not changes(of_kind):
            continue
        out.update(id(f) for f in of_kind[:MAX_HEAD_CHECKS] if len(of_kind) == 1 or changes([f]))
    return out


def metric_parts(run: RunReport) -> dict[str, pl.DataFrame]:
    """The run's points per metric (`step, seq, value[, superseded]`), nulls dropped."""
    frame = run.frame
    if frame is None or frame.height == 0:
        return {}
    cols = ["metric", "step", "seq", "value"] + (["superseded"] if "superseded" in frame.columns else [])
    return {key[0] if isinstance(key, tuple) else key: part for key, part in
            frame.select(cols).filter(pl.col("value").is_not_null())
            .partition_by("metric", as_dict=True, include_key=False).items()}


def run_chart(run: RunReport, finding_ids: dict[int, str],
              by_metric: dict[str, pl.DataFrame] | None = None) -> dict[str, Any]:
    """The chart payload of one run. `finding_ids` maps id(finding) → the id its card
    carries in the page, for the findings that get a band and a zoom; every finding that
    needs attention gets a band, and so does a note the verdict speaks of (`heads`)."""
    frame = run.frame
    if frame is None or frame.height == 0:
        return {"panels": [], "findings": [], "segments": []}
    by_metric = metric_parts(run) if by_metric is None else by_metric
    steps = frame.get_column("step")
    first, last = float(steps.min()), float(steps.max())
    heads = heading_notes(run)
    views = []
    for f in run.findings:
        if id(f) in finding_ids:
            v = finding_view(f, finding_ids[id(f)], first, last)
            if v is not None:
                if id(f) in heads:
                    v["heads"] = True
                views.append(v)
    major = [v for v in views if v["sev"] != "info"]  # notes heading the verdict get a band, not extra detail
    windows = [(v["lo"], v["hi"]) for v in major]
    per_window = max(40, min(WINDOW_BUCKETS, WINDOW_POINTS_PER_RUN // (2 * max(1, len(windows)))))
    panels = []
    drawn: set[str] = set()
    for title, metrics in panel_metrics(run, set(by_metric)):
        # the smooth schedules (LR, loss scale) get full detail only around their own findings
        sharp = {m: windows if title in DETAILED else [(v["lo"], v["hi"]) for v in major if v["metric"] == m]
                 for m in metrics}
        series = [_series(m, run.metrics.get(m, "other"), by_metric[m], BUCKETS[title], sharp[m], per_window)
                  for m in metrics]
        drawn.update(metrics)
        panels.append({"title": title, "series": series,
                       "positive": all(s["positive"] for s in series)})
    # findings about a metric no panel draws (a per-source loss) still get their zoom
    extra = sorted({v["metric"] for v in views if v["metric"] and v["metric"] not in drawn
                    and v["metric"] in by_metric})
    zoom_only = [_series(m, run.metrics.get(m, "other"), by_metric[m], 0, windows, per_window) for m in extra]
    data = [s for s in run.segments if s.get("points", 1)]  # launches that logged nothing draw no line
    segments = [float(s["first_step"]) for s in data[1:] if s.get("first_step") is not None]
    main = run.stats.get("main_metric")
    smooth = default_smoothing(by_metric[main].sort("step", "seq").get_column("value").to_numpy().astype(np.float64)) \
        if main in by_metric else 0.0
    return {"panels": panels, "zoom_only": zoom_only, "findings": views, "segments": segments,
            "first": first, "last": last, "main": main, "smooth": smooth}


def natural_key(name: str) -> list:
    """'layers/2' before 'layers/10'."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name)]


def drawn_metrics(run: RunReport, by_metric: dict[str, pl.DataFrame]) -> set[str]:
    """The metrics the run's panels draw (`run_chart`)."""
    return {m for _, metrics in panel_metrics(run, set(by_metric)) for m in metrics}


def extra_chart(run: RunReport, by_metric: dict[str, pl.DataFrame],
                budget: int = EXTRA_POINTS_PER_RUN) -> tuple[dict[str, Any], list[str]]:
    """Every metric with values that no panel draws (accuracy, MFU, a reward, per-layer norms),
    decimated for the page's metric picker within `budget` points: (payload, the metrics left
    out past that budget, listed in the picker as not embedded)."""
    drawn = drawn_metrics(run, by_metric)
    rest = sorted((m for m in by_metric if m not in drawn),
                  key=lambda m: (run.metrics.get(m, "other") == "other", natural_key(m)))
    lo, hi = EXTRA_BUCKETS
    fits = rest[:budget // (2 * lo)]
    buckets = max(lo, min(hi, budget // (2 * max(1, len(fits)))))
    series = [_series(m, run.metrics.get(m, "other"), by_metric[m], buckets, [], 0) for m in fits]
    for s in series:
        s["bad"] = s["bad"][:50]
    return {"series": series}, rest[len(fits):]


NOISE_SMOOTHING = ((0.01, 0.0), (0.03, 0.6), (0.1, 0.85))
"""(relative point-to-point noise below, EMA weight): a smooth curve is drawn as it is; a curve whose
trend hides in its noise (batch size 4, RL returns) gets up to 0.95."""


def default_smoothing(values: np.ndarray) -> float:
    """The loss chart's starting smoothing, from the run's own noise: the median step-to-step change
    relative to the median level. The page shows it and the slider changes it."""
    y = np.asarray(values, dtype=np.float64)
    y = y[np.isfinite(y)]
    if y.size < 20:
        return 0.0
    noise = float(np.median(np.abs(np.diff(y))) / max(float(np.median(np.abs(y))), 1e-12))
    return next((weight for limit, weight in NOISE_SMOOTHING if noise < limit), 0.95)


def _series(metric: str, role: str, part: pl.DataFrame, buckets: int, windows: list[tuple[float, float]],
            per_window: int) -> dict[str, Any]:
    """One metric: live points, superseded points and NaN/inf steps, each decimated."""
    part = part.sort("step", "seq")
    step = part.get_column("step").to_numpy()
    value = part.get_column("value").to_numpy().astype(np.float64, copy=False)
    sup = part.get_column("superseded").to_numpy().astype(bool) if "superseded" in part.columns \
        else np.zeros(step.size, bool)
    finite = np.isfinite(value)
    out: dict[str, Any] = {"name": metric, "role": role}
    live = finite & ~sup
    x, y = step[live], value[live]
    out["live"] = _pick(x, y, buckets, windows, per_window)
    old = finite & sup
    out["superseded"] = _pick(step[old], value[old], buckets, windows, per_window) if old.any() else None
    bad = step[~finite]
    if bad.size > MAX_BAD_STEPS:
        bad = bad[np.unique(np.linspace(0, bad.size - 1, MAX_BAD_STEPS).astype(np.int64))]
    out["bad"] = [float(s) for s in bad]
    out["positive"] = bool((value[finite] > 0).all())
    return out


def _pick(x: np.ndarray, y: np.ndarray, buckets: int, windows: list[tuple[float, float]],
          per_window: int) -> dict[str, Any]:
    """The whole-run points, and apart (`detail`) the extra points inside the finding
    windows: the page draws those only once zoomed in, so the overview has one density."""
    keep = keep_extremes(x, y, buckets) if buckets else np.empty(0, np.int64)
    out: dict[str, Any] = {"x": encode(x[keep], "step"), "y": encode(y[keep], "value"), "n": int(keep.size)}
    extra = np.setdiff1d(keep_in_windows(x, y, windows, per_window), keep) if windows else keep[:0]
    if extra.size:
        out["detail"] = {"x": encode(x[extra], "step"), "y": encode(y[extra], "value"), "n": int(extra.size)}
    return out
